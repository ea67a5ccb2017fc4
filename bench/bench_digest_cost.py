"""The cost of proving a compaction's output (``[acid] compaction_verify``) on the compaction anchor: major
compaction of ONE bucket in one process (one core) with ``verify`` off, count and digest.

The input is the anchor's (``bench_major_compaction.build_table``: a base holding 70 % of the rows, 50 insert deltas
and a delete delta every fifth write id). Each mode runs in a fresh subprocess, ``--repeat`` times in turn, keeping
its fastest run (wall and CPU seconds). ``digest_extra`` (the goal's figure) is the CPU the digest runs take over
the CPU the runs without a check take (CPU seconds: less disturbed than wall time by other processes on a shared
machine; ``wall_extra`` gives the wall-clock figures). ``proof_thread_share`` is measured inside the digest runs:
the CPU seconds of the compacting thread in the proof (digesting the merged rows as they are written, reading the
output back and digesting it) over the CPU of the rest — a lower bound, as decoding threads of the read-back are not
counted. Prints one JSON object. Usage: python bench/bench_digest_cost.py [--gib 0.28] [--repeat 2]
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
from airflow_acid.spark import output_check
from airflow_acid.spark.runners import LocalRunner
PROOF = {"cpu": 0.0, "wall": 0.0}

def timed(fn):
    def run(*args, **kwargs):
        c0, w0 = time.thread_time(), time.perf_counter()  # this thread only: the writer may spool in another
        try:
            return fn(*args, **kwargs)
        finally:
            PROOF["cpu"] += time.thread_time() - c0
            PROOF["wall"] += time.perf_counter() - w0
    return run

output_check.Expected._add = timed(output_check.Expected._add)  # digesting the rows read
output_check.Expected.check = timed(output_check.Expected.check)  # reading the files back and digesting them
loc, hwm, verify = sys.argv[1], int(sys.argv[2]), sys.argv[3]
wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="bench.t", high_watermark=hwm))
plan = dataclasses.replace(compose_for_directory(loc, wil, 1000, "major", compaction_id="anchor"), verify=verify)
c0, t0 = time.process_time(), time.perf_counter()
(res,) = LocalRunner().run(CompactionPlan((plan,)), job_name="anchor", spark_conf={}).compactions
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
assert res.status == "succeeded", res.error
assert all(c.read_digest == c.written_digest and c.rows_read == c.rows_written for c in res.checks), res.checks
print(json.dumps({"seconds": seconds, "cpu": cpu, "proof_cpu": PROOF["cpu"], "proof_wall": PROOF["wall"],
                  "rows_out": res.rows_out, "checks": len(res.checks),
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
        cpu = {m: min(r["cpu"] for r in rs) for m, rs in runs.items()}
        # within each digest run: the CPU the proof took over the CPU of the rest of the compaction (immune to other
        # processes slowing whole runs down, which wall-clock differences between runs are not on a shared machine)
        shares = [r["proof_cpu"] / (r["cpu"] - r["proof_cpu"]) for r in runs["digest"]]
        size = info["input_bytes"]
        emit({
            "benchmark": "digest_cost", "buckets": 1, "deltas": args.deltas, "input_bytes": size,
            "input_gib": round(size / (1 << 30), 3), "rows_out": runs["digest"][0]["rows_out"],
            "seconds": {m: round(s, 2) for m, s in best.items()},
            "runs": {m: [round(r["seconds"], 2) for r in rs] for m, rs in runs.items()},
            "digest": runs["digest"][0]["digest"],
            "cpu_seconds": {m: round(s, 2) for m, s in cpu.items()},
            "proof_cpu_seconds": [round(r["proof_cpu"], 2) for r in runs["digest"]],
            "wall_extra": {"count": round(best["count"] / best["off"] - 1, 3),
                           "digest": round(best["digest"] / best["off"] - 1, 3)},
            "cpu_extra": {"count": round(cpu["count"] / cpu["off"] - 1, 3),
                          "digest": round(cpu["digest"] / cpu["off"] - 1, 3)},
            "proof_thread_share": round(min(shares), 3),
            "digest_extra": round(cpu["digest"] / cpu["off"] - 1, 3),
        }, GOALS)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
