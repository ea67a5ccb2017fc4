"""The PySpark reader returns what AcidWarehouse.read returns, distributed by bucket (local[2] Spark)."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

from airflow_acid.client.pyspark_reader import read_acid

pytestmark = pytest.mark.slow


def test_read_acid_matches_the_python_reader(spark, warehouse):
    warehouse.create_table("sales", [("id", "bigint"), ("amount", "double")], partition_by=[("ds", "string")],
                           bucket_by=["id"], num_buckets=3)
    with warehouse.transaction() as txn:
        txn.insert("sales", [{"id": i, "amount": float(i), "ds": f"d{i % 2}"} for i in range(30)])
    with warehouse.transaction() as txn:
        txn.update("sales", set={"amount": -1.0}, where=pc.field("id") < 5)
        txn.delete("sales", where=pc.field("id") >= 25)
    with warehouse.streaming_connection("sales", {"ds": "d9"}, batch_size=4) as conn:
        conn.write([(100, 1.0), (101, 2.0)])
        conn.commit()
        conn.write([(102, 3.0)])
        conn.abort()
    expected = sorted(tuple(r.values()) for r in warehouse.read("sales").to_pylist())
    df = read_acid(spark, warehouse, "sales")
    assert df.rdd.getNumPartitions() >= 3
    assert df.columns == ["id", "amount", "ds"]
    assert sorted(tuple(r) for r in df.collect()) == expected
    assert len(expected) == 27
    assert warehouse.metastore.txns.show_transactions()[-1].state.value == "a"  # only the streaming abort
    part = read_acid(spark, warehouse.metastore.url, "sales", partition={"ds": "d1"}, columns=["id"])
    assert sorted(r.id for r in part.collect()) == [i for i in range(1, 25, 2)]
