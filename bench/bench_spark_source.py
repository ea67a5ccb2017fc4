"""The ``hive_acid`` PySpark data source vs Spark's own ORC source, in one local[2] SparkSession.

Read: a table with a base + 20 insert deltas + 5 delete deltas, read whole (``write.format("noop")`` forces every
row) vs Spark reading the same rows from plain ORC. Append: ``df.write.format("hive_acid")`` (one transaction) vs
``df.write.orc`` of the same DataFrame. Prints one JSON object. Usage:
python bench/bench_spark_source.py [--rows 1000000] [--append-rows 10000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from goals import Goal, emit
from timing import fastest

from airflow_acid.client.spark_source import register
from airflow_acid.client.warehouse import AcidWarehouse

GOALS = [Goal("Spark read via hive_acid (base + 20 deltas + 5 delete deltas) vs Spark plain ORC >= 0.5x",
              "read.ratio_vs_baseline", ">=", 0.5),
         Goal("Spark append via hive_acid vs Spark writing plain ORC >= 0.7x", "append.ratio_vs_baseline", ">=", 0.7)]


def rows(n: int, start: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int32)
    return pa.table({"id": ids, "amount": ids * 0.5, "name": pa.array([f"name-{i % 1000}" for i in range(n)])})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows in the base")
    ap.add_argument("--delta-rows", type=int, default=10_000, help="rows per insert delta")
    ap.add_argument("--deletes", type=int, default=10_000, help="rows deleted per delete delta")
    ap.add_argument("--append-rows", type=int, default=10_000_000, help="issue 18: 10 M")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench hive_acid")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    rng = np.random.default_rng(42)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'metastore.db'}"
        wh = AcidWarehouse(url, Path(tmp) / "wh")
        wh.create_table("bench.t", [("id", "int"), ("amount", "double"), ("name", "string")])
        t0 = time.perf_counter()
        with wh.transaction() as txn:
            txn.insert_overwrite("bench.t", rows(args.rows, 0))  # base_1
        for i in range(20):
            with wh.transaction() as txn:
                txn.insert("bench.t", rows(args.delta_rows, args.rows + i * args.delta_rows))
        for _ in range(5):
            ids = rng.choice(args.rows, size=args.deletes, replace=False)
            with wh.transaction() as txn:
                txn.delete("bench.t", f"id IN ({','.join(map(str, ids.tolist()))})")
        setup = time.perf_counter() - t0
        opts = {"metastore_url": url}
        acid_df = lambda: spark.read.format("hive_acid").options(**opts).load("bench.t")  # noqa: E731
        surviving = acid_df().count()
        plain = str(Path(tmp) / "plain_orc")
        acid_df().write.orc(plain)
        read_s = fastest(lambda: acid_df().write.format("noop").mode("overwrite").save(), args.repeat)
        base_read_s = fastest(lambda: spark.read.orc(plain).write.format("noop").mode("overwrite").save(), args.repeat)

        wh.create_table("bench.a", [("id", "int"), ("amount", "double"), ("name", "string")])
        source = spark.range(args.append_rows, numPartitions=2).selectExpr(
            "cast(id as int) as id", "id * 0.5 as amount", "concat('name-', id % 1000) as name").cache()
        source.count()
        append_s = fastest(lambda: source.write.format("hive_acid").options(**opts).mode("append").save("bench.a"),
                        args.repeat)
        orc_out = str(Path(tmp) / "append_orc")
        base_append_s = fastest(lambda: source.write.mode("overwrite").orc(orc_out), args.repeat)
        appended = wh.read("bench.a", columns=["id"]).num_rows
        assert appended == args.repeat * args.append_rows, appended
        wh.close()
    spark.stop()
    emit({
        "benchmark": "spark_source", "spark": "local[2]",
        "read": {"base_rows": args.rows, "insert_deltas": 20, "delta_rows": args.delta_rows, "delete_deltas": 5,
                 "surviving_rows": surviving, "seconds": round(read_s, 3),
                 "rows_per_s": round(surviving / read_s), "baseline": "spark.read.orc of the same rows",
                 "baseline_seconds": round(base_read_s, 3), "ratio_vs_baseline": round(base_read_s / read_s, 3)},
        "append": {"rows": args.append_rows, "seconds": round(append_s, 3),
                   "rows_per_s": round(args.append_rows / append_s), "baseline": "df.write.orc of the same rows",
                   "baseline_seconds": round(base_append_s, 3),
                   "ratio_vs_baseline": round(base_append_s / append_s, 3)},
        "setup_seconds": round(setup, 2),
    }, GOALS)


if __name__ == "__main__":
    main()
