"""The harder compaction anchor: major compaction of ONE bucket in one process (one core) vs pyarrow reading the same
ORC files and writing their rows as one ORC file in one process — the Python stack's limit — and the peak RSS of each.

The input is one bucket: a base holding 70 % of the rows, 50 insert deltas and a delete delta every fifth write id
(``bench_major_compaction.build_table``). Each side runs in a fresh subprocess that reports its own peak RSS
(``VmHWM``) and peak anonymous memory (``RssAnon``, sampled); each is run ``--repeat`` times alternately and keeps
its fastest run. A merge that streams stripe by stripe keeps the compaction's RSS at a few stripes (64 MiB each)
whatever the bucket's size; the pyarrow baseline holds the whole table. Prints one JSON object. Usage:
python bench/bench_compaction_anchor.py [--gib 0.25] [--repeat 2]    (issue 17: --gib 1 for a 1 GiB bucket)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_major_compaction import build_table
from goals import Goal, emit

from airflow_acid.job.plan import OrcSettings

GOALS = [Goal("major compaction bytes/s per core vs pyarrow read + write of the same ORC bytes >= 0.5x",
              "ratio_vs_pyarrow", ">=", 0.5)]

ANON_SAMPLER = """
import threading
PEAK_ANON = [0]
def _sample_anon():
    while True:
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                PEAK_ANON[0] = max(PEAK_ANON[0], int(line.split()[1]) * 1024)
        time.sleep(0.02)
threading.Thread(target=_sample_anon, daemon=True).start()
"""
"""Peak anonymous memory, sampled every 20 ms: VmHWM also counts the pages of memory-mapped input files that were
read (clean page cache the kernel can drop), which grow with the input; RssAnon is what the process itself holds."""

COMPACT = """
import json, sys, time
""" + ANON_SAMPLER + """
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.planner import compose_for_directory
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.spark.runners import LocalRunner
loc, hwm = sys.argv[1], int(sys.argv[2])
wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="bench.t", high_watermark=hwm))
plan = compose_for_directory(loc, wil, 1000, "major", compaction_id="anchor")
t0 = time.perf_counter()
(res,) = LocalRunner().run(CompactionPlan((plan,)), job_name="anchor", spark_conf={}).compactions
seconds = time.perf_counter() - t0
assert res.status == "succeeded", res.error
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(json.dumps({"seconds": seconds, "rows_in": res.rows_in, "rows_out": res.rows_out, "bytes_out": res.bytes,
                  "rss": int(hwm) * 1024, "anon": PEAK_ANON[0]}))
"""

PYARROW = """
import json, sys, time
""" + ANON_SAMPLER + """
from pathlib import Path
import pyarrow as pa, pyarrow.orc as po
loc, out = Path(sys.argv[1]), sys.argv[2]
files = sorted(p for p in loc.rglob("bucket_*") if "_v" not in p.parent.name)
t0 = time.perf_counter()
table = pa.concat_tables([po.ORCFile(str(f)).read() for f in files], promote_options="permissive")
po.write_table(table, out, compression="zlib")
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(json.dumps({"seconds": time.perf_counter() - t0, "rows": table.num_rows, "rss": int(hwm) * 1024,
                  "anon": PEAK_ANON[0]}))
"""


def run(script: str, *args: str) -> tuple[dict, int]:
    """Run ``script`` in a fresh Python; its JSON line and its own peak RSS in bytes (VmHWM of that process: unlike
    ru_maxrss it starts afresh at exec, so the parent's memory at fork time is not counted)."""
    out = subprocess.run([sys.executable, "-c", script, *args], check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result, int(result["rss"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=0.25, help="approximate input size of the one bucket in GiB")
    ap.add_argument("--deltas", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-anchor-"))
    try:
        loc = work / "t"
        info = build_table(loc, args.gib, 1, args.deltas, OrcSettings())
        compaction, pyarrow_side = [], []
        compaction_rss = pyarrow_rss = compaction_anon = pyarrow_anon = 0
        for _ in range(max(1, args.repeat)):
            for d in loc.glob("base_*_v*"):
                shutil.rmtree(d)  # the previous run's output
            result, rss = run(COMPACT, str(loc), str(info["write_ids"]))
            compaction.append(result)
            compaction_rss = max(compaction_rss, rss)
            compaction_anon = max(compaction_anon, int(result["anon"]))
            result, rss = run(PYARROW, str(loc), str(work / "plain.orc"))
            pyarrow_side.append(result)
            pyarrow_rss = max(pyarrow_rss, rss)
            pyarrow_anon = max(pyarrow_anon, int(result["anon"]))
        best_c = min(compaction, key=lambda r: r["seconds"])
        best_p = min(pyarrow_side, key=lambda r: r["seconds"])
        size = info["input_bytes"]
        emit({
            "benchmark": "compaction_anchor", "buckets": 1, "deltas": args.deltas,
            "input_bytes": size, "input_gib": round(size / (1 << 30), 3), "rows_inserted": info["rows_inserted"],
            "compaction": {"seconds": round(best_c["seconds"], 2), "rows_in": best_c["rows_in"],
                           "rows_out": best_c["rows_out"], "bytes_out": best_c["bytes_out"],
                           "bytes_per_s_per_core": round(size / best_c["seconds"]),
                           "peak_rss_bytes": compaction_rss, "peak_rss_mib": round(compaction_rss / (1 << 20), 1),
                           "peak_anon_mib": round(compaction_anon / (1 << 20), 1),
                           "runs": [round(r["seconds"], 2) for r in compaction]},
            "pyarrow": {"what": "pyarrow.orc read of every input file + one write_table (zlib), one process",
                        "seconds": round(best_p["seconds"], 2), "rows": best_p["rows"],
                        "bytes_per_s_per_core": round(size / best_p["seconds"]),
                        "peak_rss_bytes": pyarrow_rss, "peak_rss_mib": round(pyarrow_rss / (1 << 20), 1),
                        "peak_anon_mib": round(pyarrow_anon / (1 << 20), 1),
                        "runs": [round(r["seconds"], 2) for r in pyarrow_side]},
            "ratio_vs_pyarrow": round(best_p["seconds"] / best_c["seconds"], 3),
            "stripe_size_mib": OrcSettings().stripe_size / (1 << 20),
            "compaction_rss_in_stripes": round(compaction_rss / OrcSettings().stripe_size, 1),
            "compaction_anon_in_stripes": round(compaction_anon / OrcSettings().stripe_size, 1),
            "rss_is": "peak_rss: VmHWM, which counts the read pages of memory-mapped input files (page cache the "
                      "kernel can drop; grows with the input); peak_anon: RssAnon sampled every 20 ms",
        }, GOALS)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
