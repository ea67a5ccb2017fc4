"""Every kind of ORC file the project writes, read back with Hive 4's Java reader (issue 16 item 7).

One scenario writes, through the project's own writers, a full-ACID table (client delta, client delete delta, a
streaming delta — its first flushed prefix too — then a minor, a major and a REBALANCE compaction with the LocalRunner)
and an insert-only table (client deltas, a compacted base). :data:`KINDS` names each kind of file and what it must hold;
adding a kind is one entry. The slow test reads them all in ONE JVM with orc-core from the
pyspark wheel (``java/ReadOrcValues.java``: proleptic Gregorian, UTC timestamps, as Hive 4 reads) and compares every
value — dates before 1582, timestamps at 0001-01-01 and 9999-12-31, decimals, maps, structs, arrays — with what
was written. The fast test checks the footers' calendar and that our own reader returns the same rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest

from airflow_acid.acid import streaming_event_writer
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.orc_tail import PROLEPTIC_GREGORIAN, read_tail
from airflow_acid.client.warehouse import AcidWarehouse
from tests.spark.orc_files import BUCKET0, compact, java_reads, one, stream

COLUMNS = [("id", "int"), ("d", "date"), ("ts", "timestamp"), ("dec", "decimal(12,3)"), ("m", "map<string,int>"),
           ("st", "struct<t:timestamp,l:array<date>,s:string>")]
ROW_TYPE = "struct<" + ",".join(f"{n}:{t}" for n, t in COLUMNS) + ">"
ROWS: list[tuple[Any, ...]] = [
    (0, dt.date(1, 1, 1), dt.datetime(1, 1, 1), Decimal("-999999999.999"), {"a": 1, "b": 2},
     {"t": dt.datetime(9999, 12, 31, 23, 59, 59, 999999), "l": [dt.date(1500, 1, 1), dt.date(1582, 10, 4)], "s": "x"}),
    (1, dt.date(1500, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999), Decimal("0.001"), {}, None),
    (2, dt.date(1582, 10, 4), dt.datetime(1500, 1, 1, 12, 30), Decimal("123.450"), None,
     {"t": None, "l": [], "s": "y"}),
    (3, dt.date(1582, 10, 15), dt.datetime(1582, 10, 4, 23, 59, 59), Decimal("1"), {"z": None},
     {"t": dt.datetime(1, 1, 1, 0, 0, 1), "l": None, "s": None}),
    (4, dt.date(9999, 12, 31), dt.datetime(1970, 1, 1), None, {"k": -7}, {"t": None, "l": [None], "s": ""}),
    (5, dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 1, 2, 3, 456789), Decimal("-0.5"), {"q": 0},
     {"t": dt.datetime(1677, 9, 21), "l": [dt.date(9999, 12, 31)], "s": "z"}),
]


def render(value: Any) -> str:
    """A value as ReadOrcValues.java prints it."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    if isinstance(value, Map):
        return "map(" + ",".join(f"{render(k)}:{render(v)}" for k, v in value.items) + ")"
    if isinstance(value, dt.datetime):
        delta = value - dt.datetime(1970, 1, 1)
        return f"{delta.days * 86400 + delta.seconds}.{delta.microseconds * 1000:09d}"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return f"{value:.3f}"
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class Map:
    items: tuple[tuple[Any, Any], ...]


def rendered(row: tuple[Any, ...]) -> str:
    """A written row as the reader prints it (maps keep their order)."""
    values = {name: (Map(tuple(v.items())) if isinstance(v, dict) and ty.startswith("map") else v)
              for (name, ty), v in zip(COLUMNS, row)}
    return render(values)


@dataclass
class Scenario:
    acid: Path
    mm: Path
    stream_prefix: Path
    """A copy of the streaming file cut at its first flush length (an intermediate footer)."""
    iow: Path
    """A table written by INSERT OVERWRITE (a base_W of insert events, no visibility suffix)."""
    stripes: Path
    """A table streamed into with pyarrow-written stripes (streaming_event_writer.piece_min_rows() = 0)."""
    stripes_prefix: Path


@dataclass(frozen=True)
class Expect:
    """What a file holds: rows (sorted renders) and, for ACID files, each event's keys (sorted) or None."""

    rows: list[str]
    keys: list[str] | None


def _inserts(rows: list[tuple[Any, ...]], keys: list[str] | None = None) -> Expect:
    return Expect(sorted(rendered(r) for r in rows), None if keys is None else sorted(keys))


KINDS: dict[str, Callable[[Scenario], tuple[Path, Expect]]] = {
    "client delta": lambda s: (one(s.acid, "delta_0000001_0000001_0000/bucket_*"),
                               _inserts(ROWS[:3], [f"0,1,{BUCKET0},{i},1" for i in range(3)])),
    "client delete delta": lambda s: (one(s.acid, "delete_delta_0000002_0000002_0000/bucket_*"),
                                      Expect(["null"], [f"2,1,{BUCKET0},0,2"])),
    "streaming delta": lambda s: (one(s.acid, "delta_0000003_0000004/bucket_00000"),
                                  _inserts(ROWS[3:], [f"0,3,{BUCKET0},0,3", f"0,3,{BUCKET0},1,3",
                                                      f"0,4,{BUCKET0},0,4"])),
    "streaming delta at its first flush": lambda s: (s.stream_prefix, _inserts(ROWS[3:5])),
    "streaming delta of appended pyarrow stripes": lambda s: (
        one(s.stripes, "delta_0000001_0000002/bucket_00000"),
        _inserts(ROWS, [f"0,1,{BUCKET0},{i},1" for i in range(4)] + [f"0,2,{BUCKET0},{i},2" for i in range(2)])),
    "streaming delta of appended pyarrow stripes at its first flush": lambda s: (s.stripes_prefix, _inserts(ROWS[:4])),
    "minor compaction delta": lambda s: (one(s.acid, "delta_0000001_0000004_v*/bucket_*"), _inserts(ROWS)),
    "minor compaction delete delta": lambda s: (one(s.acid, "delete_delta_0000001_0000004_v*/bucket_*"),
                                                Expect(["null"], [f"2,1,{BUCKET0},0,2"])),
    "major compaction base": lambda s: (one(s.acid, "base_0000004_v0000104/bucket_*"), _inserts(ROWS[1:])),
    "rebalance compaction base": lambda s: (one(s.acid, "base_0000004_v0000200/bucket_*"),
                                            _inserts(ROWS[1:], [f"0,{w},{BUCKET0},{i},{w}" for i, w in
                                                                enumerate((1, 1, 3, 3, 4))])),
    "insert overwrite base": lambda s: (one(s.iow, "base_0000001/bucket_*"),
                                        _inserts(ROWS, [f"0,1,{BUCKET0},{i},1" for i in range(len(ROWS))])),
    "insert-only client delta": lambda s: (one(s.mm, "delta_0000001_0000001_0000/0*"), _inserts(ROWS[:4])),
    "insert-only compacted base": lambda s: (one(s.mm, "base_0000002_v*/0*"), _inserts(ROWS)),
}


def _scenario(wh: AcidWarehouse, tmp_path: Path) -> Scenario:
    import pyarrow.compute as pc

    acid = Path(wh.create_table("t", COLUMNS).location.removeprefix("file://"))
    with wh.transaction() as txn:  # write id 1: client delta
        txn.insert("t", ROWS[:3])
    with wh.transaction() as txn:  # write id 2: client delete delta
        txn.delete("t", pc.field("id") == 0)
    prefix = tmp_path / "stream_prefix.orc"
    stream(wh, "t", acid / "delta_0000003_0000004", prefix, (ROWS[3:5], ROWS[5:]))  # write ids 3-4
    stripes = Path(wh.create_table("stripes", COLUMNS).location.removeprefix("file://"))
    with mock.patch.object(streaming_event_writer, "piece_min_rows", lambda: 0):
        stream(wh, "stripes", stripes / "delta_0000001_0000002", tmp_path / "stripes_prefix.orc",
                (ROWS[:4], ROWS[4:]))
    compact(acid, "minor", 4, row_schema=ROW_TYPE)
    compact(acid, "major", 4, row_schema=ROW_TYPE)
    # new ROW__IDs in one bucket, from the major base
    compact(acid, "rebalance", 4, row_schema=ROW_TYPE, txn=200, number_of_buckets=1)
    mm = Path(wh.create_table("mm", COLUMNS, transactional_properties="insert_only").location.removeprefix("file://"))
    for part in (ROWS[:4], ROWS[4:]):
        with wh.transaction() as txn:
            txn.insert("mm", part)
    compact(mm, "major", 2, row_schema=None, insert_only=True)
    iow = Path(wh.create_table("iow", COLUMNS).location.removeprefix("file://"))
    with wh.transaction() as txn:
        txn.insert_overwrite("iow", ROWS)
    return Scenario(acid, mm, prefix, iow, stripes, tmp_path / "stripes_prefix.orc")


@pytest.fixture
def written(warehouse, tmp_path) -> dict[str, tuple[Path, Expect]]:
    scenario = _scenario(warehouse, tmp_path)
    return {kind: select(scenario) for kind, select in KINDS.items()}


def _python_values(table: pa.Table, column: str, typ: pa.DataType) -> list[Any]:
    values = table.column(column).to_pylist()
    if pa.types.is_map(typ):
        return [None if v is None else Map(tuple(v)) for v in values]
    return values


def test_every_writer_marks_the_calendar_and_reads_back_as_written(written):
    """Footers say proleptic Gregorian; our reader (pyorc fallback for years outside 1677–2262) gives the rows."""
    for kind, (path, expect) in written.items():
        assert read_tail(path.read_bytes()).calendar == PROLEPTIC_GREGORIAN, kind
        data = open_orc_file(str(path)).read()
        rows = data.column("row").combine_chunks() if "row" in data.column_names else None
        table = pa.Table.from_struct_array(rows) if rows is not None else data
        got = []
        for i in range(table.num_rows):
            if rows is not None and not rows[i].is_valid:
                got.append("null")
                continue
            got.append(render({name: _python_values(table.slice(i, 1), name, table.schema.field(name).type)[0]
                               for name in table.column_names}))
        assert sorted(got) == expect.rows, kind


@pytest.mark.slow
def test_hive4_java_reader_reads_every_kind_of_file_as_written(written, tmp_path):
    lines = java_reads([path for path, _expect in written.values()], tmp_path)
    for kind, (path, expect) in written.items():
        mine = [(keys, row) for file, keys, row in lines if file == str(path)]
        assert ("calendar", "proleptic") in mine, kind
        events = [(keys, row) for keys, row in mine if keys not in ("calendar", "schema")]
        assert sorted(row for _k, row in events) == expect.rows, kind
        if expect.keys is not None:
            assert sorted(keys for keys, _r in events) == expect.keys, kind
