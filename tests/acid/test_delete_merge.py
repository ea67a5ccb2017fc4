"""The streamed merge of a bucket's delete events (acid/delete_merge.py, a MINOR compaction's delete side above
hive.transactional.events.mem) against the in-memory concatenate-and-sort of spark/units.py: the same events in the
same order over random delete deltas (duplicate keys within and across files, aborted and above-watermark write ids,
non-delete events, many files merged into run files first), and a bounded number of events held."""

from __future__ import annotations

import tempfile
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec, delete_cursor
from airflow_acid.acid.delete_merge import MergedDeleteEvents
from airflow_acid.acid.errors import UnsortedEventsError
from airflow_acid.acid.event_reader import OrcDataFile, open_data_file
from airflow_acid.acid.event_schema import event_arrow_schema
from airflow_acid.acid.event_writer import FileKind
from airflow_acid.acid.fast_event_writer import write_acid_orc
from airflow_acid.acid.fs import Storage, storage_for
from airflow_acid.acid.merge import BucketPlan
from airflow_acid.acid.writeids import ValidCompactorWriteIdList
from airflow_acid.job.plan import OrcSettings
from airflow_acid.spark.units import delete_events_of

ROW = pa.schema([("k", pa.int64()), ("v", pa.string())])
SCHEMA = event_arrow_schema(ROW)
B0, S1 = bucket_codec.encode(0), bucket_codec.encode(0, 1)

Event = tuple[int, int, int, int, int]
"""(operation, originalTransaction, bucket, rowId, currentTransaction)."""


def _table(events: list[Event]) -> pa.Table:
    cols = list(zip(*events)) if events else [(), (), (), (), ()]
    return pa.Table.from_arrays([pa.array(c, t) for c, t in zip(cols, SCHEMA.types[:5])]
                                + [pa.nulls(len(events), SCHEMA.field(5).type)], schema=SCHEMA)


def _write(storage: Storage, i: int, events: list[Event]) -> OrcDataFile:
    relative = f"delete_delta_{i:07d}/bucket_00000"
    written = write_acid_orc(storage, relative, _table(events), kind=FileKind.DELTA, orc=OrcSettings())
    return open_data_file(storage, relative, written.bytes)


def _streamed(files, write_ids, **kw) -> tuple[pa.Table, MergedDeleteEvents]:
    merge = MergedDeleteEvents(files, write_ids, **kw)
    tables = list(merge.tables(ROW))
    return (pa.concat_tables(tables) if tables else SCHEMA.empty_table()), merge


def _in_memory(storage, files, write_ids) -> pa.Table:
    return delete_events_of(storage, BucketPlan(0, (), ()), write_ids, ROW, tuple(files))


@pytest.fixture
def batch_of(monkeypatch):
    """Every file read ``n`` events at a time, whatever the number of files."""
    def fix(n: int) -> None:
        monkeypatch.setattr(delete_cursor, "MIN_BATCH_ROWS", n)
        monkeypatch.setattr(delete_cursor, "MAX_BATCH_ROWS", n)
    return fix


event = st.tuples(st.sampled_from([2, 2, 2, 2, 0, 1]), st.integers(1, 4), st.sampled_from([B0, S1]),
                  st.integers(0, 25), st.integers(1, 12))
delete_deltas = st.lists(st.lists(event, max_size=30).map(lambda es: sorted(es, key=lambda e: e[1:4])),
                         min_size=1, max_size=9)


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(deltas=delete_deltas, hwm=st.integers(0, 12), aborted=st.sets(st.integers(1, 12), max_size=3),
       batch=st.integers(1, 5), max_open=st.sampled_from([None, 2, 3]))
def test_streamed_merge_writes_the_in_memory_events_in_the_same_order(batch_of, deltas, hwm, aborted, batch,
                                                                      max_open):
    """Equal keys within a file and across files (several currentTransactions and operations: each event keeps its
    own, and equal keys stay in file order), events of aborted or above-watermark write ids and non-delete events
    dropped as in memory."""
    batch_of(batch)
    write_ids = ValidCompactorWriteIdList(table="db.t", high_watermark=hwm, aborted=tuple(sorted(aborted)))
    with tempfile.TemporaryDirectory() as tmp:
        storage = storage_for(tmp)
        files = [_write(storage, i, es) for i, es in enumerate(deltas) if es]
        expected = _in_memory(storage, files, write_ids)
        got, merge = _streamed(files, write_ids, max_open_files=max_open)
        assert got.equals(expected)
        opened = min(len(files), max_open or 64)
        repeats = max(Counter(e[1:4] for es in deltas for e in es).values(), default=1)
        assert merge.peak_events <= opened * (batch + max((batch - 1) // 2, repeats))


def test_memory_holds_a_few_batches_per_file_however_many_events(batch_of):
    """20 delete deltas of 2,000 distinct keys each, interleaved, read 100 at a time: never more than 1.5 batches a
    file held (with 5 files open at most: 4 run files first), while the output holds all 40,000 events in order."""
    batch_of(100)
    write_ids = ValidCompactorWriteIdList(table="db.t", high_watermark=30, aborted=(7,))
    with tempfile.TemporaryDirectory() as tmp:
        storage = storage_for(tmp)
        files = [_write(storage, i, [(2, 1, B0, int(r), i + 1) for r in np.arange(i, 40_000, 20)]) for i in range(20)]
        got, merge = _streamed(files, write_ids, max_open_files=5)
        assert merge.run_files == 4
        assert got.num_rows == 38_000  # write id 7 aborted
        assert got.equals(_in_memory(storage, files, write_ids))
        assert 0 < merge.peak_events <= 5 * (100 + 49)


def test_an_unsorted_delete_delta_is_refused(tmp_path, batch_of):
    """A file not sorted by key cannot be merged as a stream: the caller sorts the bucket in memory instead."""
    batch_of(2)
    storage = storage_for(str(tmp_path))
    po.write_table(_table([(2, 1, B0, 5, 3), (2, 1, B0, 4, 3), (2, 1, B0, 6, 3)]), str(tmp_path / "bucket_00000"))
    f = open_data_file(storage, "bucket_00000")
    with pytest.raises(UnsortedEventsError):
        _streamed([f], ValidCompactorWriteIdList(table="db.t", high_watermark=5))
