"""Run inside an environment of the matrix, on the warehouse of ``AIRFLOW_ACID_HOME``: read table ``default.emp``
with PySpark (local[1]) and print one JSON line.

``plain``: the plain read helper (``client.pyspark_reader.read_acid``, any Spark), and what importing the
``hive_acid`` data source says on this Spark. ``auto``: ``spark.read.format("hive_acid")`` without ``register``
(Spark 4 finds ``pyspark_hive_acid``).
"""

from __future__ import annotations

import importlib
import json
import sys


def read(mode: str) -> dict[str, object]:
    import pyspark
    from pyspark.sql import SparkSession

    from airflow_acid import AcidWarehouse

    found: dict[str, object] = {"pyspark": pyspark.__version__}
    try:
        importlib.import_module("airflow_acid.client.spark_source")
        found["data_source_import"] = "ok"
    except ImportError as exc:
        found["data_source_import"] = str(exc)
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    try:
        if mode == "plain":
            from airflow_acid.client.pyspark_reader import read_acid

            with AcidWarehouse() as wh:
                df = read_acid(spark, wh, "default.emp")
        else:
            df = spark.read.format("hive_acid").load("default.emp")
        found["ids"] = sorted(row["id"] for row in df.collect())
    finally:
        spark.stop()
    return found


if __name__ == "__main__":
    print("READS " + json.dumps(read(sys.argv[1])))
