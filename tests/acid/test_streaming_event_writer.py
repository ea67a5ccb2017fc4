"""StreamingEventFileWriter: a Hive Streaming bucket file, flushed transaction by transaction
(docs/hive-acid.md#flush-length)."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyorc
import pytest
from fsspec.implementations.local import LocalFileSystem

from airflow_acid.acid import bucket_codec, streaming_event_writer
from airflow_acid.acid.errors import AcidFileError, AcidSchemaError, UnstorableTimestampError
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.event_schema import AcidKey, insert_events
from airflow_acid.acid.event_writer import KEY_INDEX_KEY, STATS_KEY, parse_key_index
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.streaming_event_writer import StreamingEventFileWriter
from airflow_acid.acid.writeids import ValidReaderWriteIdList
from tests.acid.streaming_files import B0, SCHEMA, acid_footer_of, write_flushed_stream
from tests.acid.streaming_files import events as _events


def _read(table, high: int = 10) -> list[int]:
    return sorted(read_acid_table(str(table), ValidReaderWriteIdList(high_watermark=high))["a"].to_pylist())


@pytest.fixture(params=["pyarrow stripes", "pyorc rows"])
def mode(request, monkeypatch):
    monkeypatch.setattr(streaming_event_writer, "piece_min_rows",
                        lambda: 0 if request.param == "pyarrow stripes" else 10**9)
    return request.param


def test_each_flush_is_a_readable_prefix_and_aborted_events_never_reach_the_file(tmp_path, mode):
    table = tmp_path / "t"
    delta = table / "delta_0000001_0000003"
    side = delta / "bucket_00000_flush_length"
    w = StreamingEventFileWriter(str(delta), 0, SCHEMA)
    w.write(_events([1, 2], 1))
    first = w.flush()
    assert struct.unpack(">q", side.read_bytes()) == (first,)
    w.write(_events([3], 2))
    w.discard()  # txn 2 aborted
    w.write(_events([4, 5], 3))
    assert _read(table) == [1, 2]  # a reader sees the flushed prefix only
    second = w.flush()
    assert struct.unpack(">qq", side.read_bytes()) == (first, second)
    assert _read(table) == [1, 2, 4, 5]
    info = w.close()
    assert not side.exists() and (delta / "_orc_acid_version").read_bytes() == b"2"
    assert info is not None and info.rows == 4 and info.flush_lengths == (first, second)
    assert info.key_index[-1] == AcidKey(3, B0, 1)
    assert (info.stats.inserts, info.stats.deletes) == (4, 0)
    with open(delta / "bucket_00000", "rb") as fh:
        meta = pyorc.Reader(fh).user_metadata
    assert parse_key_index(meta[KEY_INDEX_KEY].decode()) == list(info.key_index)
    assert meta[STATS_KEY] == b"4,0,0"
    assert _read(table) == [1, 2, 4, 5]


class _OpenCounting(LocalFileSystem):
    cachable = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.opened: list[tuple[str, str]] = []

    def _open(self, path, mode="rb", *args, **kwargs):
        self.opened.append((path.rsplit("/", 1)[-1], mode))
        return super()._open(path, mode, *args, **kwargs)


def test_the_side_file_is_opened_once_and_only_grows(tmp_path, mode):
    """Hive's OrcRecordUpdater keeps the side file open and appends a length per flush; rewriting it per flush would
    show a concurrent reader an empty file between the truncate and the write."""
    fs = _OpenCounting()
    delta = tmp_path / "t" / "delta_0000001_0000003"
    side = delta / "bucket_00000_flush_length"
    w = StreamingEventFileWriter(str(delta), 0, SCHEMA, filesystem=fs)
    lengths = []
    for txn in (1, 2, 3):
        w.write(_events([txn * 10, txn * 10 + 1], txn))
        lengths.append(w.flush())
        assert struct.unpack(f">{txn}q", side.read_bytes()) == tuple(lengths)
    assert [m for name, m in fs.opened if name == side.name] == ["wb"]
    w.close()
    assert not side.exists()


def test_every_flush_footer_carries_the_acid_metadata_of_the_stripes_before_it(tmp_path, monkeypatch, mode):
    """Issue 29 item 7: as Hive's OrcRecordUpdater writes them (its footer callback runs for every intermediate
    footer), on both streaming paths: the file cut at each flush length has one key index entry per stripe, the last
    key of each, the stats of its events and the ACID version."""
    data, lengths = write_flushed_stream(tmp_path / "t" / "delta_0000001_0000004", monkeypatch)
    seen = []
    for length in lengths:
        keys, _meta = acid_footer_of(data[:length])
        seen.append(keys)
    assert [k[-1] for k in seen] == [AcidKey(1, B0, 4), AcidKey(3, B0, 3), AcidKey(3, B0, 3), AcidKey(4, B0, 0)]
    assert seen[1] == seen[2] and all(a == b[:len(a)] for a, b in zip(seen, seen[1:]))  # each prefix grows the last
    assert len(seen[0]) > 1  # a flush of several stripes
    final, meta = acid_footer_of(data)
    assert final == seen[-1] and meta[STATS_KEY] == b"10,0,0"


def test_a_stripe_worth_of_pending_events_is_appended_before_the_flush(tmp_path, monkeypatch):
    monkeypatch.setattr(streaming_event_writer, "piece_min_rows", lambda: 0)
    delta = tmp_path / "t" / "delta_0000001_0000001"
    w = StreamingEventFileWriter(str(delta), 0, SCHEMA)
    w._stripe_bytes = 1  # every write fills a stripe
    w.write(_events([1, 2], 1))
    w.write(_events([3], 1, first_row_id=2))
    assert w.rows == 3 and not (delta / "bucket_00000_flush_length").exists()  # appended, no footer yet
    w.flush()
    info = w.close()
    assert info is not None and info.stripes == 2
    assert list(info.key_index) == [AcidKey(1, B0, 1), AcidKey(1, B0, 2)]
    assert _read(tmp_path / "t") == [1, 2, 3]


def test_small_first_flush_uses_the_row_writer_and_large_one_pyarrow(tmp_path):
    small = StreamingEventFileWriter(str(tmp_path / "a" / "delta_0000001_0000001"), 0, SCHEMA)
    small.write(_events([1], 1))
    small.flush()
    large = StreamingEventFileWriter(str(tmp_path / "b" / "delta_0000001_0000001"), 0, SCHEMA)
    large.write(_events(list(range(streaming_event_writer.piece_min_rows())), 1))
    large.flush()
    assert small._row_writer is not None and large._file is not None and large._row_writer is None
    small.close()
    large.close()


def test_unsorted_or_foreign_events_are_refused_before_anything_is_written(tmp_path, mode):
    delta = tmp_path / "t" / "delta_0000001_0000002"
    w = StreamingEventFileWriter(str(delta), 0, SCHEMA)
    w.write(_events([1, 2], 2))
    w.flush()
    with pytest.raises(AcidFileError, match="not sorted"):
        w.write(_events([3], 1))
    with pytest.raises(AcidFileError, match="does not belong"):
        w.write(insert_events(pa.table({"a": [4], "s": ["x"]}, schema=SCHEMA), 2, bucket_codec.encode(1), 5))
    w.close()
    assert _read(tmp_path / "t") == [1, 2]


def _rows(values: list[int]) -> pa.Table:
    return pa.table({"a": values, "s": [f"v{v}" for v in values]}, schema=SCHEMA)


def test_write_inserts_gives_the_same_file_as_the_events_it_stands_for(tmp_path, mode):
    files = []
    for name, write in (("events", lambda w, vals, wid, first: w.write(_events(vals, wid, first))),
                        ("inserts", lambda w, vals, wid, first: w.write_inserts(_rows(vals), wid, B0, first))):
        w = StreamingEventFileWriter(str(tmp_path / name / "delta_0000001_0000002"), 0, SCHEMA)
        write(w, [1, 2], 1, 0)
        write(w, [3], 1, 2)
        w.flush()
        write(w, [4, 5], 2, 0)
        w.flush()
        files.append(w.close())
        assert _read(tmp_path / name) == [1, 2, 3, 4, 5]
    by_events, by_inserts = files
    assert by_events is not None and by_inserts is not None
    assert (by_inserts.key_index, by_inserts.stats, by_inserts.rows) == (by_events.key_index, by_events.stats, 5)
    events = open_orc_file(by_inserts.path).read()
    assert list(zip(*(events[k].to_pylist() for k in ("operation", "originalTransaction", "bucket", "rowId",
                                                       "currentTransaction")))) == [
        (0, w, B0, r, w) for w, r in ((1, 0), (1, 1), (1, 2), (2, 0), (2, 1))]


def test_write_inserts_refuses_keys_that_do_not_follow_or_another_bucket(tmp_path, mode):
    w = StreamingEventFileWriter(str(tmp_path / "t" / "delta_0000001_0000002"), 0, SCHEMA)
    w.write_inserts(_rows([1, 2]), 2, B0, 0)
    w.flush()
    for write_id, first in ((1, 5), (2, 1), (2, -1)):  # an earlier txn, an overlapping rowId, a negative one
        with pytest.raises(AcidFileError, match="not sorted"):
            w.write_inserts(_rows([3]), write_id, B0, first)
    with pytest.raises(AcidFileError, match="does not belong in bucket file bucket_00000"):
        w.write_inserts(_rows([4]), 2, bucket_codec.encode(1), 2)
    w.write_inserts(_rows([5]), 2, B0, 2)  # nothing of the refused calls was held
    w.close()
    assert _read(tmp_path / "t") == [1, 2, 5]


def test_write_inserts_conforms_rows_that_need_it(tmp_path, mode):
    """Rows of the writer's own plain types go in as they are; others are still cast, and a timestamp ORC cannot
    store is refused with nothing held (the rows need not come from the streaming connection)."""
    w = StreamingEventFileWriter(str(tmp_path / "t" / "delta_0000001_0000002"), 0, SCHEMA)
    w.write_inserts(pa.table({"a": pa.array([1, 2], pa.int32()), "s": ["x", "y"]}), 1, B0, 0)  # cast to int64
    w.write_inserts(_rows([3]), 1, B0, 2)
    with pytest.raises(AcidSchemaError, match="do not fit"):
        w.write_inserts(pa.table({"a": ["not a number"], "s": ["z"]}), 1, B0, 3)
    w.flush()
    info = w.close()
    assert _read(tmp_path / "t") == [1, 2, 3] and info is not None and info.stats.inserts == 3
    ts_schema = pa.schema([("a", pa.int64()), ("t", pa.timestamp("us"))])
    w = StreamingEventFileWriter(str(tmp_path / "u" / "delta_0000001_0000002"), 0, ts_schema)
    bad = pa.table({"a": [1], "t": pa.array([-5_000], pa.timestamp("us"))}, schema=ts_schema)  # 1969-12-31 23:59:59.995
    with pytest.raises(UnstorableTimestampError):
        w.write_inserts(bad, 1, B0, 0)
    w.write_inserts(pa.table({"a": [2], "t": pa.array([5_000], pa.timestamp("us"))}, schema=ts_schema), 1, B0, 0)
    w.flush()
    info = w.close()
    assert info is not None and info.stats.inserts == 1 and info.rows == 1


def test_a_file_that_never_got_events_is_not_created_and_abort_removes_one(tmp_path, mode):
    delta = tmp_path / "t" / "delta_0000001_0000002"
    w = StreamingEventFileWriter(str(delta), 0, SCHEMA)
    w.write(_events([1], 1))
    w.discard()
    assert w.close() is None and not (delta / "bucket_00000").exists()
    w = StreamingEventFileWriter(str(delta), 0, SCHEMA)
    w.write(_events([1], 1))
    w.flush()
    w.abort()
    assert not (delta / "bucket_00000").exists() and not (delta / "bucket_00000_flush_length").exists()
