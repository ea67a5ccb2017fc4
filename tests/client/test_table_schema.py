"""client/table_schema.py: char(n)/varchar(n) columns in the table's Arrow schema, data conformed to them as Hive
does (cut to n code points, char padded with spaces), on every client write path and each metastore backend
(issue 29 item 5)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from airflow_acid.acid.event_schema import row_orc_type
from airflow_acid.acid.hive_chars import CharType, char_type_of
from airflow_acid.acid.orc_tail import column_char_types, read_tail
from airflow_acid.client import WhenMatched, WhenNotMatched
from airflow_acid.client.sql_eval import Sql, conform
from airflow_acid.client.table_schema import arrow_field, arrow_schema, to_arrow_table
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.catalog import ColumnInfo as Column

COLUMNS = [("id", "int"), ("v", "varchar(4)"), ("c", "char(3)")]


def test_arrow_schema_carries_char_types_nested_too():
    field = arrow_field("x", "struct<a:varchar(4),l:array<char(3)>,m:map<varchar(2),char(5)>,s:string>")
    assert row_orc_type(pa.schema([field])) == \
        "struct<x:struct<a:varchar(4),l:array<char(3)>,m:map<varchar(2),char(5)>,s:string>>"
    schema = arrow_schema([Column(n, t) for n, t in COLUMNS])
    assert [char_type_of(f) for f in schema] == [None, CharType("varchar", 4), CharType("char", 3)]
    assert schema == pa.schema([("id", pa.int32()), ("v", pa.string()), ("c", pa.string())])  # Arrow types as before


def test_every_kind_of_data_is_cut_and_padded():
    schema = arrow_schema([Column(n, t) for n, t in COLUMNS])
    stored = [{"id": 1, "v": "abcd", "c": "😀😀😀"}, {"id": 2, "v": None, "c": "   "}, {"id": 3, "v": "", "c": None}]
    given = [(1, "abcdé", "😀😀😀😀"), (2, None, ""), (3, "", None)]
    frames = [
        given,
        [dict(zip(("id", "v", "c"), r)) for r in given],
        pd.DataFrame(given, columns=["id", "v", "c"]),
        pa.table({"id": [1, 2, 3], "v": pa.array(["abcdé", None, ""], pa.large_string()),
                  "c": ["😀😀😀😀", "", None]}),
    ]
    for data in frames:
        table = to_arrow_table(data, schema, table="t")
        assert table.to_pylist() == stored, type(data)
        assert [char_type_of(f) for f in table.schema][1:] == [CharType("varchar", 4), CharType("char", 3)]


def test_evaluated_values_are_cut_and_padded():
    """UPDATE / MERGE values come from expressions (DuckDB): conform() gives them the table's char/varchar."""
    schema = arrow_schema([Column(n, t) for n, t in COLUMNS])
    rows = pa.table({"id": pa.array([1], pa.int64()), "v": ["vvvvvv"], "c": ["c"]})
    assert conform(rows, schema, what="u").to_pylist() == [{"id": 1, "v": "vvvv", "c": "c  "}]


def _files(location: Path) -> list[Path]:
    return [p for p in location.rglob("*") if p.is_file() and p.name.startswith(("bucket_", "0"))]


def test_client_write_paths_store_what_hive_stores(empty_db_url, tmp_path):
    """INSERT, UPDATE (expression), MERGE (clause engine), INSERT OVERWRITE, streaming and an insert-only table:
    each file records varchar(4)/char(3) and the table reads back cut and padded."""
    with AcidWarehouse(empty_db_url, tmp_path / "wh") as wh:
        t = Path(wh.create_table("t", COLUMNS).location.removeprefix("file://"))
        with wh.transaction() as txn:
            txn.insert("t", [(1, "abcdef", "x"), (2, "é😀xyz", "😀😀😀😀"), (3, None, ""), (4, "", "abc")])
        with wh.transaction() as txn:
            txn.update("t", {"v": Sql("concat(v, 'tail')"), "c": Sql("concat(c, 'z')")}, "id = 4")
        with wh.transaction() as txn:
            txn.merge("t", [(1, "merged!", "m"), (5, "inserted", "insert")], on=["id"], when=[
                WhenMatched(update={"v": Sql("s.v"), "c": Sql("s.c")}), WhenNotMatched()])
        with wh.streaming_connection("t") as conn:
            conn.write([(6, "streamed", "s")])
            conn.commit()
        expected = [(1, "merg", "m  "), (2, "é😀xy", "😀😀😀"), (3, None, "   "), (4, "tail", "abc"),
                    (5, "inse", "ins"), (6, "stre", "s  ")]
        assert sorted(tuple(r.values()) for r in wh.read("t").to_pylist()) == expected
        iow = Path(wh.create_table("iow", COLUMNS).location.removeprefix("file://"))
        with wh.transaction() as txn:
            txn.insert_overwrite("iow", [(1, "overwritten", "o")])
        mm = Path(wh.create_table("mm", COLUMNS, transactional_properties="insert_only").location
                  .removeprefix("file://"))
        with wh.transaction() as txn:
            txn.insert("mm", [(1, "insert-only", "i")])
        assert [tuple(r.values()) for r in wh.read("iow").to_pylist()] == [(1, "over", "o  ")]
        assert [tuple(r.values()) for r in wh.read("mm").to_pylist()] == [(1, "inse", "i  ")]
        files = _files(t) + _files(iow) + _files(mm)
        assert len(files) >= 8
        for path in files:
            assert set(column_char_types(read_tail(path.read_bytes()).footer).values()) == {
                CharType("varchar", 4), CharType("char", 3)}, path
