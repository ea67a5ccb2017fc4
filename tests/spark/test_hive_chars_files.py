"""char(n)/varchar(n) columns on every write path, read back by our reader and by Java's ORC reader (issue 29 item 5).

One scenario writes a table with ``varchar(4)``, ``char(3)`` and a struct holding a ``varchar(2)`` through client
INSERT, UPDATE, MERGE, streaming (pyorc rows and pyarrow stripes), INSERT OVERWRITE, an insert-only table, and
MINOR / MAJOR / REBALANCE / insert-only MAJOR compaction. Over-long values (emoji and accented letters counted as one
character each, as Hive's HiveVarchar counts code points) are cut, char values padded with spaces; NULL and an empty
varchar stay as they are. Every file's footer must record ``varchar(4)``/``char(3)`` as Hive's writer does; Java's
reader (``java/ReadOrcValues.java``) must print that schema and the same values as our reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow.compute as pc
import pytest

from airflow_acid.acid import streaming_event_writer
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.hive_chars import CharType
from airflow_acid.acid.orc_tail import column_char_types, read_tail
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.runners import LocalRunner
from tests.spark.helpers import compactor_snapshot, plan_one
from tests.spark.orc_files import java_reads

COLUMNS = [("id", "int"), ("v", "varchar(4)"), ("c", "char(3)"), ("st", "struct<w:varchar(2)>")]
ROW_TYPE = "struct<" + ",".join(f"{n}:{t}" for n, t in COLUMNS) + ">"
FIRST = [(1, "abcdef", "x", {"w": "xyz"}), (2, "é😀xyz", "😀😀😀😀", {"w": "😀😀😀"}), (3, None, "", None),
         (4, "", "abc", {"w": ""})]
"""Inserted as given; :data:`FIRST_STORED` is what Hive stores for them."""
FIRST_STORED = [(1, "abcd", "x  ", {"w": "xy"}), (2, "é😀xy", "😀😀😀", {"w": "😀😀"}), (3, None, "   ", None),
                (4, "", "abc", {"w": ""})]
STREAMED = [(6, "streamed", "s", {"w": "www"}), (7, "ok", "abcd", None)]
STREAMED_STORED = [(6, "stre", "s  ", {"w": "ww"}), (7, "ok", "abc", None)]


def _java_row(row: tuple[Any, ...]) -> str:
    """A row as ReadOrcValues.java prints it. ORC's Java reader hands CHAR values over with the trailing spaces
    stripped (Hive compares CHAR stripped, HiveChar.getStrippedValue), so the char column is shown stripped."""
    rendered = []
    for (name, typ), value in zip(COLUMNS, row):
        if typ.startswith("char") and value is not None:
            value = value.rstrip(" ")
        if isinstance(value, dict):
            value = "{" + ",".join(f"{k}={'null' if v is None else v}" for k, v in value.items()) + "}"
        rendered.append(f"{name}={'null' if value is None else value}")
    return "{" + ",".join(rendered) + "}"


def _compact(location: Path, ctype: str, high: int, *, txn: int | None = None, **kw: Any) -> None:
    plan = plan_one(str(location), ctype, txn or 100 + high, compactor_snapshot(high), **kw)
    (result,) = LocalRunner().run(CompactionPlan((plan,)), job_name="chars", spark_conf={}).compactions
    assert result.status == JobStatus.SUCCEEDED, result.error


def _stream(wh: AcidWarehouse, table: str, parts: list[list[tuple[Any, ...]]]) -> None:
    with wh.streaming_connection(table, batch_size=len(parts)) as conn:
        for part in parts:
            conn.write(part)
            conn.commit()


def _location(wh: AcidWarehouse, name: str, **kw: Any) -> Path:
    return Path(wh.create_table(name, COLUMNS, **kw).location.removeprefix("file://"))


@pytest.fixture
def tables(warehouse) -> dict[str, tuple[Path, list[tuple[Any, ...]]]]:
    """Each table's location and the rows Hive holds in it at the end."""
    wh = warehouse
    acid = _location(wh, "t")
    with wh.transaction() as txn:  # write id 1
        txn.insert("t", FIRST)
    with wh.transaction() as txn:  # write id 2: UPDATE with an over-long literal
        txn.update("t", {"v": "zzzzzz", "c": "q"}, pc.field("id") == 1)
    with wh.transaction() as txn:  # write id 3: MERGE updating row 4, inserting row 5
        txn.merge("t", [(4, "mmmmmm", "long!", {"w": "qqq"}), (5, "nnnnnnn", "n", {"w": None})], on="id",
                  when_matched_update=True, when_not_matched_insert=True)
    _stream(wh, "t", [STREAMED[:1], STREAMED[1:]])  # write ids 4-5, pyorc rows
    final = [(1, "zzzz", "q  ", {"w": "xy"}), *FIRST_STORED[1:3], (4, "mmmm", "lon", {"w": "qq"}),
             (5, "nnnn", "n  ", {"w": None}), *STREAMED_STORED]
    _compact(acid, "minor", 5, row_schema=ROW_TYPE)
    _compact(acid, "major", 5, row_schema=ROW_TYPE)
    _compact(acid, "rebalance", 5, txn=200, number_of_buckets=1, row_schema=ROW_TYPE)
    stripes = _location(wh, "stripes")
    with mock.patch.object(streaming_event_writer, "piece_min_rows", lambda: 0):
        _stream(wh, "stripes", [FIRST, STREAMED])
    iow = _location(wh, "iow")
    with wh.transaction() as txn:
        txn.insert_overwrite("iow", FIRST)
    mm = _location(wh, "mm", transactional_properties="insert_only")
    for part in (FIRST, STREAMED):
        with wh.transaction() as txn:
            txn.insert("mm", part)
    _compact(mm, "major", 2, insert_only=True)  # row schema inferred from the newest file's footer
    return {"t": (acid, final), "stripes": (stripes, FIRST_STORED + STREAMED_STORED), "iow": (iow, FIRST_STORED),
            "mm": (mm, FIRST_STORED + STREAMED_STORED)}


def _files(location: Path) -> list[Path]:
    return sorted(p for p in location.rglob("*") if p.is_file() and not p.name.startswith(("_", "."))
                  and "flush_length" not in p.name)


def test_every_path_stores_hive_types_and_values(warehouse, tables):
    """Footers record varchar(4)/char(3)/varchar(2); our reader returns Hive's values for every table."""
    for name, (location, rows) in tables.items():
        files = _files(location)
        assert files, name
        for path in files:
            assert set(column_char_types(read_tail(path.read_bytes()).footer).values()) == {
                CharType("varchar", 4), CharType("char", 3), CharType("varchar", 2)}, path
        got = sorted(tuple(r.values()) for r in warehouse.read(name).to_pylist())
        assert got == sorted(rows, key=lambda r: r[0]), name


def test_files_hold_the_stored_values(tables):
    """Every insert event in every file (read without the table's schema) already holds a cut/padded value, as
    Hive's writer stores it: files never rely on the reader to fix them."""
    stored = [r for _loc, rows in tables.values() for r in rows] + FIRST_STORED
    for name, (location, _rows) in tables.items():
        for path in _files(location):
            data = open_orc_file(str(path)).read()
            rows = data.column("row").to_pylist() if "row" in data.column_names else data.to_pylist()
            for row in rows:
                if row is not None:
                    assert tuple(row.values()) in stored, (name, path, row)


@pytest.mark.slow
def test_java_reader_sees_hive_types_and_the_same_values(tables, tmp_path):
    files = [p for location, _rows in tables.values() for p in _files(location)]
    lines = java_reads(files, tmp_path)
    for path in files:
        mine = [(keys, row) for file, keys, row in lines if file == str(path)]
        (schema,) = [row for keys, row in mine if keys == "schema"]
        assert "v:varchar(4),c:char(3),st:struct<w:varchar(2)>" in schema, (path, schema)
        java_rows = sorted(row for keys, row in mine if keys not in ("calendar", "schema") and row != "null")
        data = open_orc_file(str(path)).read()
        ours = data.column("row").to_pylist() if "row" in data.column_names else data.to_pylist()
        assert java_rows == sorted(_java_row(tuple(r.values())) for r in ours if r is not None), path
