"""Major compaction (base + 50 deltas + delete deltas) vs a plain Spark read-and-rewrite of the same ORC bytes.

Both run in one local SparkSession (JVM start-up excluded from both), on the same input directory, with the same
ORC compression (Spark's ORC writer and the compactor both use ORC's default settings otherwise: 64 MiB stripes,
dictionary key threshold 0.8, "speed" compression strategy). With ``--repeat N`` the two are run alternately N times
and each keeps its fastest run, so a busy shared machine skews the ratio less. The ratio is
plain_seconds / compaction_seconds (target >= 0.7). Prints one JSON object.

Usage: python bench/bench_major_compaction.py [--gib 0.1] [--buckets 4] [--master local[2]] [--compression ZLIB]
       [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from goals import Goal, emit

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.event_schema import delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, write_acid_version_file
from airflow_acid.acid.fast_event_writer import write_acid_orc
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.planner import compose_for_directory
from airflow_acid.job.plan import CompactionPlan, OrcSettings

BYTES_PER_ROW = 10  # measured on this schema with ZLIB (~10 bytes per event); used only to size the input


def _rows(start: int, n: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "amount": rng.random(n) * 1000,
                     "name": pa.array(np.char.add("customer-", (ids % 50_000).astype(str))),
                     "qty": pa.array(rng.integers(0, 100, n, dtype=np.int32))})


def build_table(loc: Path, gib: float, buckets: int, deltas: int, orc: OrcSettings) -> dict:
    rng = np.random.default_rng(7)
    total = max(int(gib * (1 << 30) / BYTES_PER_ROW), 20_000 * buckets)
    base_rows = int(total * 0.7) // buckets
    delta_rows = max(1, (total - base_rows * buckets) // (deltas * buckets))
    storage = storage_for(str(loc))
    next_id = 0
    for b in range(buckets):
        prop = bucket_codec.encode(b, 0)
        ev = insert_events(_rows(next_id, base_rows, rng), 1, prop)
        next_id += base_rows
        write_acid_orc(storage, f"base_0000001/bucket_{b:05d}", ev, kind=FileKind.BASE, orc=orc)
    write_acid_version_file(storage.child("base_0000001"))
    schema = ev.schema.field("row").type
    for w in range(2, deltas + 2):
        d = names.format_delta(w, w, 0)
        for b in range(buckets):
            ev = insert_events(_rows(next_id, delta_rows, rng), w, bucket_codec.encode(b, 0))
            next_id += delta_rows
            write_acid_orc(storage, f"{d}/bucket_{b:05d}", ev, kind=FileKind.DELTA, orc=orc)
        write_acid_version_file(storage.child(d))
        if w % 5 == 0:  # every fifth write id deletes 1 % of the base rows of every bucket
            dd = names.format_delta(w, w, 0, delete=True)
            for b in range(buckets):
                row_ids = np.sort(rng.choice(base_rows, base_rows // 100, replace=False))
                keys = pa.table({"originalTransaction": pa.array(np.ones(len(row_ids), np.int64)),
                                 "bucket": pa.array(np.full(len(row_ids), bucket_codec.encode(b, 0), np.int32)),
                                 "rowId": pa.array(row_ids.astype(np.int64))})
                ev = delete_events(keys, w, pa.schema(list(schema)))
                write_acid_orc(storage, f"{dd}/bucket_{b:05d}", ev, kind=FileKind.DELTA, orc=orc)
            write_acid_version_file(storage.child(dd))
    size = sum(f.size for f in storage.list_files())
    return {"rows_inserted": next_id, "input_bytes": size, "write_ids": deltas + 1}


GOALS = [Goal("major compaction vs plain Spark ORC rewrite of the same bytes >= 1x", "ratio_plain_over_compaction",
              ">=", 1.0)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=0.1, help="approximate input size in GiB")
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--deltas", type=int, default=50)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--compression", default="ZLIB")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--repeat", type=int, default=1, help="alternate both N times, keep each one's fastest run")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-major-"))
    loc = work / "t"
    if loc.exists():
        shutil.rmtree(loc)
    orc = OrcSettings(compression=args.compression)
    t0 = time.perf_counter()
    info = build_table(loc, args.gib, args.buckets, args.deltas, orc)
    build_s = time.perf_counter() - t0

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from airflow_acid.spark.submit import run_plan_in_session

    spark = (SparkSession.builder.master(args.master).appName("bench-major")
             .config("spark.sql.orc.compression.codec", args.compression.lower())
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.parallelize(range(4), 2).count()  # start executors' Python workers

    hwm = info["write_ids"]
    wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="bench.t", high_watermark=hwm))
    c = compose_for_directory(str(loc), wil, 1000, "major", compaction_id="bench",
                       table_properties={"orc.compress": args.compression})
    out = work / "plain-rewrite"
    inputs = [str(loc / d) for d in sorted(os.listdir(loc)) if not d.startswith(("_", ".")) and "_v" not in d]
    compaction_runs, plain_runs = [], []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        result = run_plan_in_session(CompactionPlan((c,)), spark)  # a rerun replaces the earlier output
        compaction_runs.append(time.perf_counter() - t0)
        (res,) = result.compactions
        if res.status != "succeeded":
            raise SystemExit(f"compaction failed: {res.error}")
        t0 = time.perf_counter()
        spark.read.orc(inputs).write.mode("overwrite").orc(str(out))
        plain_runs.append(time.perf_counter() - t0)
    compaction_s, plain_s = min(compaction_runs), min(plain_runs)
    import pyarrow.orc as po
    plain_rows = sum(po.ORCFile(str(f)).nrows for f in out.glob("part-*"))
    plain_bytes = sum(f.stat().st_size for f in out.glob("part-*"))
    spark.stop()
    emit({
        "benchmark": "major compaction vs plain Spark ORC read-and-rewrite of the same bytes",
        "master": args.master, "buckets": args.buckets, "deltas": args.deltas, "compression": args.compression,
        "input_bytes": info["input_bytes"], "input_gib": round(info["input_bytes"] / (1 << 30), 3),
        "input_files": sum(1 for _ in loc.rglob("bucket_*")) - res.files,
        "compaction": {"seconds": round(compaction_s, 2), "rows_in": res.rows_in, "rows_out": res.rows_out,
                       "output_bytes": res.bytes, "files": res.files,
                       "runs": [round(x, 2) for x in compaction_runs]},
        "plain_rewrite": {"seconds": round(plain_s, 2), "rows": plain_rows, "output_bytes": plain_bytes,
                          "runs": [round(x, 2) for x in plain_runs]},
        "ratio_plain_over_compaction": round(plain_s / compaction_s, 3),
        "build_seconds": round(build_s, 1),
    }, GOALS)


if __name__ == "__main__":
    main()
