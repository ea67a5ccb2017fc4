"""One statement → Hive-named delta/delete_delta directories, per bucket, readable by merge-on-read."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.event_reader import open_orc_file
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
