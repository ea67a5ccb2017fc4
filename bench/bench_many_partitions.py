"""Many small partitions: one Spark application for all minor compactions vs one application per partition.

Builds P partitions × D single-statement deltas (a few rows each), then
* runs ONE spark-submit with a plan of all P minor compactions (wall time, JVM start-up included), and
* runs one spark-submit per partition for a SAMPLE of partitions (default 5) and extrapolates the mean to P
  (marked ``extrapolated`` in the JSON), on a fresh copy of the same data.
The ratio is per_partition_total / one_application (target >= 10). Prints one JSON object.

Usage: python bench/bench_many_partitions.py [--partitions 100] [--deltas 12] [--sample 5] [--master local[2]]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from goals import Goal, emit

from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.planner import compose_for_directory
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.spark.submit import SparkSubmitOptions, run_spark_submit

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def build(root: Path, partitions: int, deltas: int) -> list[Path]:
    locs = []
    for p in range(partitions):
        loc = root / f"p={p}"
        for w in range(1, deltas + 1):
            ids = list(range(w * 10, w * 10 + 5))
            write_statement(str(loc), w, 0, SCHEMA, inserts=pa.table({"id": pa.array(ids, pa.int64()),
                                                                      "name": [f"r{i}" for i in ids]}))
        locs.append(loc)
    return locs


def plan_for(locs: list[Path], deltas: int, txn: int) -> CompactionPlan:
    wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="bench.t", high_watermark=deltas))
    return CompactionPlan(tuple(compose_for_directory(str(loc), wil, txn, "minor", compaction_id=loc.name) for loc in locs))


GOALS = [Goal("100 small partitions: one Spark application vs one each >= 10x",
              "ratio_per_partition_over_one_application", ">=", 10.0)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--deltas", type=int, default=12)
    ap.add_argument("--sample", type=int, default=5, help="partitions run one application each (extrapolated)")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-many-"))
    locs = build(work / "t", args.partitions, args.deltas)
    pristine = work / "pristine"
    shutil.copytree(work / "t", pristine)
    opts = SparkSubmitOptions(master=args.master)

    t0 = time.perf_counter()
    result = run_spark_submit(plan_for(locs, args.deltas, 500), str(work / "job-all"), opts, timeout=1800)
    one_app = time.perf_counter() - t0
    failed = [c.id for c in result.compactions if c.status != "succeeded"]

    shutil.rmtree(work / "t")
    shutil.copytree(pristine, work / "t")
    per = []
    for i, loc in enumerate(locs[:args.sample]):
        t0 = time.perf_counter()
        r = run_spark_submit(plan_for([loc], args.deltas, 600 + i), str(work / f"job-{i}"), opts, timeout=600)
        per.append(time.perf_counter() - t0)
        failed += [c.id for c in r.compactions if c.status != "succeeded"]
    mean = sum(per) / len(per)
    per_total = mean * args.partitions
    emit({
        "benchmark": "minor compaction of many small partitions: one application vs one application per partition",
        "master": args.master, "partitions": args.partitions, "deltas_per_partition": args.deltas,
        "one_application_seconds": round(one_app, 2),
        "per_partition_application_seconds_sample": [round(s, 2) for s in per],
        "per_partition_mean_seconds": round(mean, 2),
        "per_partition_total_seconds": round(per_total, 1),
        "per_partition_total_is": f"extrapolated: mean of {len(per)} measured applications x {args.partitions}",
        "ratio_per_partition_over_one_application": round(per_total / one_app, 2),
        "failed": failed,
    }, GOALS)


if __name__ == "__main__":
    main()
