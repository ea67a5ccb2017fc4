"""Large unbucketed inserts written by parallel writers (issue 17): one ``bucket_N`` file per writer id, as Hive's
parallel tasks write an unbucketed table — every row read back once, distinct ROW__IDs, UPDATE/DELETE reaching rows
of every file, and a MAJOR compaction keeping them."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_acid.acid import bucket_codec, statement_writer
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.statement_writer import write_base, write_statement
from airflow_acid.acid.writeids import ValidReaderWriteIdList
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.errors import AcidInputError
from airflow_acid.spark.runners import LocalRunner
from tests.services.support import CONF, unique

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _rows(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "name": pa.array([f"n{i}" for i in ids])})


@pytest.fixture
def small_writer_share(monkeypatch):
    """Every writer's share is 1 KiB, so a few thousand rows are split; the client runs three writers."""
    monkeypatch.setattr(statement_writer, "WRITER_MIN_BYTES", 1024)
    monkeypatch.setattr("airflow_acid.client.transaction.writer_threads", lambda: 3)


def test_unbucketed_insert_is_split_into_one_file_per_writer(tmp_path, small_writer_share):
    rows = _rows(10_000)
    written = write_statement(str(tmp_path), 4, 2, SCHEMA, inserts=rows, max_writers=3)
    assert [p.rsplit("/", 1)[-1] for p in written.files] == ["bucket_00000", "bucket_00001", "bucket_00002"]
    seen = []
    for writer, path in enumerate(written.files):
        events = open_orc_file(path).read()
        assert set(events["bucket"].to_pylist()) == {bucket_codec.encode(writer, 2)}
        assert events["rowId"].to_pylist() == list(range(events.num_rows))
        seen += events["row"].combine_chunks().field("id").to_pylist()
    assert seen == rows["id"].to_pylist()  # contiguous slices, in order: every row once


def test_one_writer_or_a_small_insert_stays_one_file(tmp_path, small_writer_share):
    assert len(write_statement(str(tmp_path / "a"), 1, 0, SCHEMA, inserts=_rows(10_000)).files) == 1
    assert len(write_statement(str(tmp_path / "b"), 1, 0, SCHEMA, inserts=_rows(5), max_writers=3).files) == 1


def test_overwrite_base_is_split_too(tmp_path, small_writer_share):
    written = write_base(str(tmp_path), 3, SCHEMA, _rows(9_000), max_writers=3)
    assert written.delta == "base_0000003" and len(written.files) == 3


def test_a_failing_writer_fails_the_statement(tmp_path, small_writer_share, monkeypatch):
    real = statement_writer._write_bucket

    def failing(directory, bucket_id, *args, **kwargs):
        if bucket_id == 1:
            raise OSError("disk full")
        return real(directory, bucket_id, *args, **kwargs)
    monkeypatch.setattr(statement_writer, "_write_bucket", failing)
    with pytest.raises(OSError, match="disk full"):
        write_statement(str(tmp_path), 1, 0, SCHEMA, inserts=_rows(10_000), max_writers=3)


def test_client_insert_update_delete_and_compaction_over_parallel_files(wh, small_writer_share):
    name = f"db1.{unique('par')}"
    wh.create_table(name, [("id", "bigint"), ("name", "string")])
    with wh.transaction() as txn:
        txn.insert(name, _rows(9_000))
    location = wh.table(name).location
    [delta] = [d for d in os.listdir(location) if d.startswith("delta_")]
    assert sorted(f for f in os.listdir(os.path.join(location, delta)) if f.startswith("bucket_")) == [
        "bucket_00000", "bucket_00001", "bucket_00002"]

    # rows of every writer's file: 10 (file 0), 4_000 (file 1), 8_500 (file 2)
    with wh.transaction() as txn:
        txn.update(name, set={"name": "changed"}, where=pc.field("id").isin([10, 4_000, 8_500]))
        txn.delete(name, where=pc.field("id").isin([11, 4_001, 8_501]))
    expected = {i: f"n{i}" for i in range(9_000)}
    expected.update({10: "changed", 4_000: "changed", 8_500: "changed"})
    for gone in (11, 4_001, 8_501):
        del expected[gone]

    def check() -> None:
        rows = wh.read(name)
        assert dict(zip(rows["id"].to_pylist(), rows["name"].to_pylist(), strict=True)) == expected
        table = read_acid_table(location, ValidReaderWriteIdList(table=name, high_watermark=2), schema=SCHEMA,
                                include_row_ids=True)
        keys = list(zip(table["originalTransaction"].to_pylist(), table["bucket"].to_pylist(),
                        table["rowId"].to_pylist(), strict=True))
        assert len(set(keys)) == len(keys) == len(expected)
    check()

    cq = wh.metastore.compactions.enqueue(*name.split("."), None, CompactionType.MAJOR).id
    outcome = Worker(wh.metastore, CONF, runner=LocalRunner(), host="w").run_next()
    assert outcome.status is WorkerStatus.COMPACTED and outcome.compaction_id == cq, outcome.message
    check()


def test_writer_threads_setting(monkeypatch):
    monkeypatch.setenv(statement_writer.WRITER_THREADS_ENV, "3")
    assert statement_writer.writer_threads() == 3
    monkeypatch.setenv(statement_writer.WRITER_THREADS_ENV, "0")
    with pytest.raises(AcidInputError, match="AIRFLOW_ACID_WRITER_THREADS='0' is not a positive integer"):
        statement_writer.writer_threads()
    monkeypatch.delenv(statement_writer.WRITER_THREADS_ENV)
    assert 1 <= statement_writer.writer_threads() <= statement_writer.MAX_WRITERS
