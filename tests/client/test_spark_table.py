"""DataFrame-level DELETE / UPDATE / MERGE through Spark: the same rows as the Python client's statements, one
transaction each, delete events and new row versions laid out as the client writes them, Hive's cardinality check."""

from __future__ import annotations

import pathlib

import pytest

from airflow_acid.client import Sql, WhenMatched, WhenNotMatched
from airflow_acid.client.errors import SchemaMismatchError, UnsupportedOperationError
from airflow_acid.client.spark_table import AcidTable

pytestmark = pytest.mark.slow

COLUMNS = [("id", "int"), ("name", "string"), ("amount", "decimal(10,2)")]


def _url(wh) -> str:
    return wh.metastore.db.engine.url.render_as_string(hide_password=False)


def _rows(wh, table) -> list[tuple]:
    return sorted((r["id"], r["name"], r["amount"], r["ds"]) for r in wh.read(table).to_pylist())


def test_delete_update_merge_equal_the_python_client(spark, warehouse):
    import decimal

    for name in ("via_spark", "via_client"):
        warehouse.create_table(name, COLUMNS, partition_by=[("ds", "string")])
        with warehouse.transaction() as txn:
            txn.insert(name, [{"id": i, "name": f"n{i}", "amount": decimal.Decimal(i) / 4, "ds": "a" if i % 2 else "b"}
                              for i in range(20)])
    table = AcidTable(spark, "default.via_spark", metastore_url=_url(warehouse))

    assert table.delete("id % 5 = 0") == 4
    with warehouse.transaction() as txn:
        txn.delete("via_client", "id % 5 = 0")
    assert _rows(warehouse, "via_spark") == _rows(warehouse, "via_client")

    assert table.update({"name": Sql("upper(name)"), "amount": Sql("amount * 1.1")}, "ds = 'a'") == 8
    with warehouse.transaction() as txn:
        txn.update("via_client", {"name": Sql("upper(name)"), "amount": Sql("amount * 1.1")}, "ds = 'a'")
    assert _rows(warehouse, "via_spark") == _rows(warehouse, "via_client")

    source_rows = [(1, "x", "d", "a"), (2, "y", "u", "b"), (3, "z", "u", "a"), (100, "new", "i", "c"),
                   (101, "skip", "x", "c")]
    source = spark.createDataFrame(source_rows, "id int, name string, op string, ds string")
    clauses = [WhenMatched(delete=True, condition="s.op = 'd'"), WhenMatched(update={"name": Sql("s.name")}),
               WhenNotMatched(insert={"id": Sql("s.id"), "name": Sql("s.name"), "amount": 0, "ds": Sql("s.ds")},
                              condition="s.op = 'i'")]
    assert table.merge(source, ["id"], clauses) == 4
    with warehouse.transaction() as txn:
        txn.merge("via_client", [dict(zip(("id", "name", "op", "ds"), r)) for r in source_rows], ["id"], when=clauses)
    assert _rows(warehouse, "via_spark") == _rows(warehouse, "via_client")
    location = pathlib.Path(warehouse.table("via_spark").location.removeprefix("file://"))
    dirs = {p.name.rsplit("_", 1)[0] for p in location.glob("ds=*/*delta_*")}
    # write ids 1 (insert), 2 (delete), 3 (update: delete_delta + delta), 4 (merge): one transaction each
    assert dirs == {"delta_0000001_0000001", "delete_delta_0000002_0000002", "delete_delta_0000003_0000003",
                    "delta_0000003_0000003", "delete_delta_0000004_0000004", "delta_0000004_0000004"}


def test_merge_cardinality_and_refusals_change_nothing(spark, warehouse):
    warehouse.create_table("card", [("id", "int"), ("name", "string")])
    with warehouse.transaction() as txn:
        txn.insert("card", [{"id": 1, "name": "a"}])
    table = AcidTable(spark, "default.card", metastore_url=_url(warehouse))
    dup = spark.createDataFrame([(1, "x"), (1, "y")], "id int, name string")
    with pytest.raises(SchemaMismatchError, match="cardinality"):
        table.merge(dup, ["id"], [WhenMatched(update={"name": Sql("s.name")})])
    with pytest.raises(SchemaMismatchError, match="unknown column"):
        table.update({"nope": 1})
    assert warehouse.read("card").to_pylist() == [{"id": 1, "name": "a"}]
    location = pathlib.Path(warehouse.table("card").location.removeprefix("file://"))
    assert sorted(p.name for p in location.iterdir()) == ["delta_0000001_0000001_0000"]
    warehouse.create_table("mm", [("id", "int")], transactional_properties="insert_only")
    with pytest.raises(UnsupportedOperationError, match="insert-only"):
        AcidTable(spark, "default.mm", metastore_url=_url(warehouse))
