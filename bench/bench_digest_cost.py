"""The cost of proving a compaction's output (``[acid] compaction_verify``) on the compaction anchor: major
compaction of ONE bucket in one process (one core) with ``verify`` off, count and digest.

The input is the anchor's (``bench_major_compaction.build_table``: a base holding 70 % of the rows, 50 insert deltas
and a delete delta every fifth write id). Each mode runs in a fresh subprocess, ``--repeat`` times in turn, keeping
its fastest run; ``digest_extra`` is (digest - off) / off, the share of compaction time the proof adds (digesting
the merged rows as they are written, then reading the output back from storage and digesting it). Prints one JSON
object. Usage: python bench/bench_digest_cost.py [--gib 0.28] [--repeat 2]
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

GOALS = [Goal("compaction_verify=digest adds <= 15 % to the compaction time of the anchor", "digest_extra", "<=",
              0.15)]

COMPACT = """
import dataclasses, json, sys, time
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.planner import compose_for_directory
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.spark.runners import LocalRunner
loc, hwm, verify = sys.argv[1], int(sys.argv[2]), sys.argv[3]
wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="bench.t", high_watermark=hwm))
plan = dataclasses.replace(compose_for_directory(loc, wil, 1000, "major", compaction_id="anchor"), verify=verify)
t0 = time.perf_counter()
(res,) = LocalRunner().run(CompactionPlan((plan,)), job_name="anchor", spark_conf={}).compactions
seconds = time.perf_counter() - t0
assert res.status == "succeeded", res.error
assert all(c.read_digest == c.written_digest and c.rows_read == c.rows_written for c in res.checks), res.checks
print(json.dumps({"seconds": seconds, "rows_out": res.rows_out, "checks": len(res.checks),
                  "digest": res.checks[0].written_digest if res.checks else None}))
"""

MODES = ("off", "count", "digest")


def run(loc: Path, write_ids: int, verify: str) -> dict:
    for d in loc.glob("base_*_v*"):
        shutil.rmtree(d)  # the previous run's output
    out = subprocess.run([sys.executable, "-c", COMPACT, str(loc), str(write_ids), verify], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=0.28, help="approximate input size of the one bucket in GiB")
    ap.add_argument("--deltas", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-digest-"))
    try:
        loc = work / "t"
        info = build_table(loc, args.gib, 1, args.deltas, OrcSettings())
        runs: dict[str, list[dict]] = {m: [] for m in MODES}
        for _ in range(max(1, args.repeat)):
            for mode in MODES:
                runs[mode].append(run(loc, info["write_ids"], mode))
        best = {m: min(r["seconds"] for r in rs) for m, rs in runs.items()}
        size = info["input_bytes"]
        emit({
            "benchmark": "digest_cost", "buckets": 1, "deltas": args.deltas, "input_bytes": size,
            "input_gib": round(size / (1 << 30), 3), "rows_out": runs["digest"][0]["rows_out"],
            "seconds": {m: round(s, 2) for m, s in best.items()},
            "runs": {m: [round(r["seconds"], 2) for r in rs] for m, rs in runs.items()},
            "digest": runs["digest"][0]["digest"],
            "count_extra": round(best["count"] / best["off"] - 1, 3),
            "digest_extra": round(best["digest"] / best["off"] - 1, 3),
        }, GOALS)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
