"""MERGE's clause rules, shared by the client and the Spark MERGE, and the keyword API as shorthand for clauses: the
same rows, ROW__IDs and errors either way."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_acid.client.errors import SchemaMismatchError, UnsupportedOperationError
from airflow_acid.client.merge_clauses import (
    SourceColumn,
    WhenMatched,
    WhenNotMatched,
    cardinality_error,
    checked_clauses,
    clause_chooser,
    insert_values,
    on_condition,
    set_values,
)
from airflow_acid.client.predicates import source
from airflow_acid.client.sql_eval import Sql
from tests.warehouse_support import EMPLOYEE, SEED_ROWS

COLUMNS = ["id", "k", "v", "ds"]
UPDATABLE = ["id", "v"]  # k is a bucket column, ds a partition column


def test_clauses_keep_their_order_and_need_one():
    when = [WhenNotMatched(), WhenMatched(delete=True, condition="s.op = 'd'"), WhenMatched(update={"v": 1})]
    matched, unmatched = checked_clauses(when, what="MERGE into t")
    assert [i for i, _ in matched] == [1, 2] and [i for i, _ in unmatched] == [0]
    assert clause_chooser(matched, str.upper) == "CASE WHEN (S.OP = 'D') THEN 1 WHEN TRUE THEN 2 ELSE -1 END"
    with pytest.raises(SchemaMismatchError, match="needs at least one WHEN clause"):
        checked_clauses([], what="MERGE into t")


def test_on_condition_from_columns_or_text():
    assert on_condition(["id", "ds"], "t", "s", what="m") == "`t`.`id` = `s`.`id` AND `t`.`ds` = `s`.`ds`"
    assert on_condition("t.id = s.id + 1", "t", "s", what="m") == "t.id = s.id + 1"
    with pytest.raises(SchemaMismatchError, match="ON columns"):
        on_condition([], "t", "s", what="m")


def test_set_refuses_unknown_partition_and_bucket_columns():
    assert set_values({"V": Sql("s.v")}, COLUMNS, UPDATABLE, what="m") == {"v": Sql("s.v")}
    with pytest.raises(SchemaMismatchError, match="unknown column 'x'"):
        set_values({"x": 1}, COLUMNS, UPDATABLE, what="m")
    for column in ("k", "ds"):
        with pytest.raises(UnsupportedOperationError, match="partition and bucket columns"):
            set_values({column: 1}, COLUMNS, UPDATABLE, what="m")


def test_insert_values_per_column():
    assert insert_values(None, COLUMNS, ["ID", "k", "v", "ds", "extra"], what="m") == [
        SourceColumn(c) for c in COLUMNS]
    assert insert_values({"V": 2, "id": Sql("s.id")}, COLUMNS, [], what="m") == [Sql("s.id"), None, 2, None]
    assert insert_values([1, "a", 2, "x"], COLUMNS, [], what="m") == [1, "a", 2, "x"]
    with pytest.raises(SchemaMismatchError, match=r"needs column\(s\) \['ds'\]"):
        insert_values(None, COLUMNS, ["id", "k", "v"], what="m")
    with pytest.raises(SchemaMismatchError, match="unknown column"):
        insert_values({"nope": 1}, COLUMNS, [], what="m")
    with pytest.raises(SchemaMismatchError, match="has 1 value"):
        insert_values([1], COLUMNS, [], what="m")


def test_cardinality_error_names_the_row_id():
    assert "ROW__ID (1, 536870912, 4) with 2 source rows" in str(cardinality_error("db.t", (1, 536870912, 4), 2))


def _merged(wh, table: str, on, **merge) -> tuple[list[dict], tuple[int, ...]]:
    wh.create_table(table, EMPLOYEE)
    with wh.transaction() as txn:
        txn.insert(table, SEED_ROWS)
    with wh.transaction() as txn:
        result = txn.merge(table, [(2, "Tom", 100), (3, "Ann", 200), (9, "New", 300)], on, **merge)
    with wh.transaction() as txn:
        rows = txn.read(table, row_ids=True).to_pylist()
    return sorted(rows, key=lambda r: (r["ROW__ID"]["writeid"], r["ROW__ID"]["bucketid"], r["ROW__ID"]["rowid"])), \
        result.statement_ids


def test_keywords_are_the_clauses_they_stand_for(warehouse):
    keywords, keyword_ids = _merged(warehouse, "kw", "id", when_not_matched_insert=True,
                                    when_matched_update={"salary": pc.field("salary") + source("salary")})
    clauses, clause_ids = _merged(warehouse, "cl", ["id"], when=[
        WhenNotMatched(), WhenMatched(update={"salary": Sql("t.salary + s.salary")})])
    assert keywords == clauses and keyword_ids == clause_ids == (0, 1)
    assert {r["id"]: r["salary"] for r in keywords} == {1: 5000, 2: 8100, 3: 6200, 9: 300}


def test_keyword_update_alone_keeps_statement_ids_s_and_s_plus_1(warehouse):
    rows, ids = _merged(warehouse, "upd", "id", when_matched_update=["salary"])
    assert ids == (0, 1)
    assert {r["ROW__ID"]["bucketid"] for r in rows if r["id"] in (2, 3)} == {536870913}  # bucket 0, statement 1
    assert {r["id"]: r["salary"] for r in rows} == {1: 5000, 2: 100, 3: 200}


def test_merge_keeps_timestamps_outside_the_nanosecond_span(warehouse):
    """A keyword MERGE on a table holding 0001-01-01 (read at microseconds) updates and inserts, and every other
    value keeps its microseconds; the same MERGE on in-span data keeps Hive's nanoseconds."""
    low, pre_1970 = dt.datetime(1, 1, 1), dt.datetime(1500, 1, 1, 12, 34, 56, 123456)
    warehouse.create_table("wide", [("id", "int"), ("t", "timestamp"), ("s", "string")])
    with warehouse.transaction() as txn:
        txn.insert("wide", [(1, low, "a"), (2, pre_1970, "b")])
    with warehouse.transaction() as txn:
        txn.merge("wide", [(2, pre_1970, "B"), (3, low, "c")], "id", when_matched_update=["s"],
                  when_not_matched_insert=True)
    assert sorted(warehouse.read("wide").to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "t": low, "s": "a"}, {"id": 2, "t": pre_1970, "s": "B"}, {"id": 3, "t": low, "s": "c"}]

    nanos = pa.array([-1_000_000_001, 987654321], pa.timestamp("ns"))  # 1969-12-31 23:59:58.999999999, 1970-01-01 …
    warehouse.create_table("narrow", [("id", "int"), ("t", "timestamp"), ("s", "string")])
    with warehouse.transaction() as txn:
        txn.insert("narrow", pa.table({"id": pa.array([1, 2], pa.int32()), "t": nanos, "s": ["a", "b"]}))
    with warehouse.transaction() as txn:
        txn.merge("narrow", pa.table({"id": pa.array([2], pa.int32()), "t": nanos.slice(1), "s": ["B"]}), "id",
                  when_matched_update=["s"])
    assert warehouse.read("narrow").sort_by("id").column("t").combine_chunks() == nanos
