"""One statement → Hive-named delta/delete_delta directories, per bucket, readable by merge-on-read."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyorc

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.event_schema import delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, sort_events, write_event_file
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.acid.writeids import ValidReaderWriteIdList

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _rows(keys):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"v{k}" for k in keys]})


def test_insert_then_update_writes_twin_directories(tmp_path):
    loc = str(tmp_path)
    first = write_statement(loc, 1, 0, SCHEMA, inserts=_rows([1, 2, 3]))
    assert first.delta == "delta_0000001_0000001_0000" and first.delete_delta is None
    snap = ValidReaderWriteIdList(table="d.t", high_watermark=1)
    old = read_acid_table(loc, snap, include_row_ids=True).filter(pc.field("k") == 2)
    second = write_statement(loc, 2, 0, SCHEMA, inserts=pa.table({"k": pa.array([2], pa.int64()), "v": ["new"]}),
                             deletes=old.select(["originalTransaction", "bucket", "rowId"]))
    assert (second.delta, second.delete_delta) == ("delta_0000002_0000002_0000", "delete_delta_0000002_0000002_0000")
    rows = read_acid_table(loc, ValidReaderWriteIdList(table="d.t", high_watermark=2))
    assert sorted(zip(rows["k"].to_pylist(), rows["v"].to_pylist())) == [(1, "v1"), (2, "new"), (3, "v3")]


def test_rows_go_to_their_bucket_files_with_statement_bits(tmp_path):
    loc = str(tmp_path)
    written = write_statement(loc, 7, 3, SCHEMA, inserts=_rows(range(10)),
                              bucket_of=lambda t: np.asarray(t["k"].to_numpy() % 3))
    assert sorted(p.rsplit("/", 1)[-1] for p in written.files) == ["bucket_00000", "bucket_00001", "bucket_00002"]
    for path in written.files:
        bucket_id = int(path.rsplit("_", 1)[-1])
        events = open_orc_file(path).read()
        assert set(events["bucket"].to_pylist()) == {bucket_codec.encode(bucket_id, 3)}
        assert all(k % 3 == bucket_id for k in events["row"].combine_chunks().field("k").to_pylist())
        assert events["rowId"].to_pylist() == list(range(events.num_rows))


def test_empty_statement_writes_nothing(tmp_path):
    written = write_statement(str(tmp_path), 1, 0, SCHEMA, inserts=_rows([]))
    assert written.files == () and written.delta is None
    assert list(tmp_path.iterdir()) == []


RICH = pa.schema([("id", pa.int32()), ("name", pa.string()), ("amount", pa.decimal128(10, 2)),
                  ("score", pa.float64()), ("day", pa.date32()), ("at", pa.timestamp("us")),
                  ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.string(), pa.int64())),
                  ("addr", pa.struct([("city", pa.string()), ("zip", pa.int32())]))])


def _rich_rows(n: int) -> pa.Table:
    from datetime import date, datetime, timedelta
    from decimal import Decimal
    return pa.table({
        "id": pa.array(range(n), pa.int32()),
        "name": [None if i % 7 == 0 else f"name-{i % 5}" for i in range(n)],
        "amount": [Decimal(i) / 4 for i in range(n)], "score": [i * 1.5 for i in range(n)],
        "day": [date(2024, 1, 1) + timedelta(days=i) for i in range(n)],
        "at": [datetime(2024, 1, 1, 12) + timedelta(seconds=i, microseconds=i) for i in range(n)],
        "tags": [[f"t{i}"] * (i % 3) for i in range(n)],
        "attrs": [[(f"k{i}", i)] if i % 2 else None for i in range(n)],
        "addr": [{"city": f"c{i}", "zip": i} for i in range(n)]}, schema=RICH)


def _orc_facts(path: str) -> dict:
    """What Hive and ORC readers see of a file, minus the writer's physical choices (buffer size, byte layout)."""
    with open(path, "rb") as fh:
        reader = pyorc.Reader(fh)
        stats = []
        for i in range(reader.schema.find_column_id("row.addr.zip") + 1):  # the last column of RICH
            st = dict(reader[i].statistics)
            st.pop("total_length", None)  # encoded bytes depend on the writer's block sizes
            stats.append(st)
        return {"metadata": reader.user_metadata, "schema": str(reader.schema), "rows": len(reader),
                "stripes": reader.num_of_stripes, "compression": reader.compression,
                "row_index_stride": reader.row_index_stride, "stats": stats}


def test_statement_files_match_the_pyorc_event_writer(tmp_path):
    """Same keys, acid version, schema, column statistics and events as EventFileWriter writes for those events."""
    rows = _rich_rows(300)
    bucket = bucket_codec.encode(0, 2)
    deletes = pa.table({"originalTransaction": pa.array([4, 3, 3], pa.int64()), "bucket": [bucket] * 3,
                        "rowId": pa.array([1, 9, 2], pa.int64())})  # unsorted on purpose
    fast = write_statement(str(tmp_path / "fast"), 5, 2, RICH, inserts=rows, deletes=deletes)
    reference = {
        fast.delta: insert_events(rows, 5, bucket),
        fast.delete_delta: sort_events(delete_events(deletes, 5, RICH)),
    }
    for directory, events in reference.items():
        info = write_event_file(str(tmp_path / "ref" / directory), 0, events, row_schema=RICH, kind=FileKind.DELTA)
        ours = str(tmp_path / "fast" / directory / "bucket_00000")
        assert _orc_facts(ours) == _orc_facts(info.path)
        assert open_orc_file(ours).read().equals(open_orc_file(info.path).read())
        assert (tmp_path / "fast" / directory / "_orc_acid_version").read_bytes() == b"2"
    assert _orc_facts(ours)["metadata"]["hive.acid.key.index"] == b"4,%d,1;" % bucket
