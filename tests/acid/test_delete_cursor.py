"""The streamed delete cursor (acid/delete_cursor.py) against the in-memory delete set and the model of ACID writes:
same rows for random delete patterns (aborted and open write ids, overlapping delete deltas, several buckets and
statements, original files), and a bounded number of delete events held."""

from __future__ import annotations

import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec, delete_cursor
from airflow_acid.acid.delete_cursor import DeleteCursor
from airflow_acid.acid.delete_events import DeleteEvents
from airflow_acid.acid.errors import UnsortedEventsError
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.event_schema import AcidKey, delete_events
from airflow_acid.acid.event_writer import write_event_file
from airflow_acid.acid.merge import _listing_and_plan, read_plan
from tests.acid.test_merge import SCHEMA, Table, wil

B0, B1 = bucket_codec.encode(0), bucket_codec.encode(1)
S1 = bucket_codec.encode(0, 1)
"""Bucket 0, statement 1: another bucket property in bucket file 0."""


@pytest.fixture
def tiny_batches(monkeypatch):
    """Every delete delta read 2 events at a time: many windows, every seam exercised; more than 2 delete deltas are
    first merged into sorted run files."""
    monkeypatch.setattr(delete_cursor, "MIN_BATCH_ROWS", 1)
    monkeypatch.setattr(delete_cursor, "MAX_BATCH_ROWS", 2)
    monkeypatch.setattr(delete_cursor, "MAX_OPEN_FILES", 2)


def rows(root: str, snapshot, events_mem: int) -> list[tuple]:
    storage, plan = _listing_and_plan(root, snapshot, None, None)
    table = read_plan(storage, plan, snapshot, schema=SCHEMA, include_row_ids=True, events_mem=events_mem)
    return [tuple(r.values()) for r in table.to_pylist()]


txns = st.lists(st.tuples(st.booleans(),  # aborted
                          st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2), st.integers(0, 4)),
                                   min_size=1, max_size=2)),
                min_size=1, max_size=7)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(txns=txns, data=st.data())
def test_streamed_and_in_memory_deletes_give_the_models_rows(tiny_batches, txns, data):
    """Random transactions (inserts into 3 buckets, several statements, deletes of any row ever inserted — so the
    same key is deleted by several delete deltas, some aborted or open), then a random snapshot: the streamed path
    (threshold 0) gives exactly the in-memory path's rows, and both the model's."""
    with tempfile.TemporaryDirectory() as tmp:
        table = Table(f"{tmp}/t")
        aborted: list[int] = []
        for w, (is_aborted, statements) in enumerate(txns, start=1):
            for stmt, (n_insert, bucket, n_delete) in enumerate(statements):
                ever = list(table.inserts)
                if ever and n_delete:
                    picks = data.draw(st.lists(st.sampled_from(ever), max_size=n_delete, unique=True))
                    if picks:
                        table.delete(w, picks, stmt=stmt)
                if n_insert:
                    table.insert(w, [(w * 100 + i, f"w{w}s{stmt}") for i in range(n_insert)], bucket=bucket, stmt=stmt)
            if is_aborted:
                aborted.append(w)
        hwm = data.draw(st.integers(0, len(txns)))
        opened = [o for o in data.draw(st.lists(st.integers(1, max(1, hwm)), unique=True, max_size=2))
                  if o not in aborted] if hwm else []
        snap = wil(hwm, open=opened, aborted=[a for a in aborted if a <= hwm and a not in opened])
        in_memory = rows(table.root, snap, events_mem=1 << 40)
        assert rows(table.root, snap, events_mem=0) == in_memory
        assert in_memory == table.expected(snap)


def test_original_files_and_load_data_streamed(tmp_path, tiny_batches):
    """Synthetic ROW__IDs of original files (root and LOAD DATA in a delta) meet streamed delete events."""
    root = tmp_path / "t"
    root.mkdir()
    po.write_table(pa.table({"k": [10, 11, 12], "v": ["x", "y", "z"]}, schema=SCHEMA), str(root / "000000_0"))
    po.write_table(pa.table({"k": [13], "v": ["w"]}, schema=SCHEMA), str(root / "000000_0_copy_1"))
    po.write_table(pa.table({"k": [20, 21], "v": ["q", "p"]}, schema=SCHEMA), str(root / "000001_0"))
    write_event_file(str(root / "delete_delta_0000001_0000001_0000"), 0,
                     delete_events([AcidKey(0, B0, 1), AcidKey(0, B0, 3)], 1, SCHEMA))
    write_event_file(str(root / "delete_delta_0000001_0000001_0000"), 1, delete_events([AcidKey(0, B1, 0)], 1, SCHEMA))
    write_event_file(str(root / "delete_delta_0000003_0000003_0000"), 0,
                     delete_events([AcidKey(0, B0, 1), AcidKey(2, B0, 1)], 3, SCHEMA))   # overlaps write id 1's
    (root / "delta_0000002_0000002_0000").mkdir()
    po.write_table(pa.table({"k": [30, 31], "v": ["l", "m"]}, schema=SCHEMA),
                   str(root / "delta_0000002_0000002_0000" / "000000_0"))     # LOAD DATA: raw file in a delta
    expected = [(0, B0, 0, 10, "x"), (0, B0, 2, 12, "z"), (2, B0, 0, 30, "l"), (0, B1, 1, 21, "p")]
    assert rows(str(root), wil(3), events_mem=0) == expected == rows(str(root), wil(3), events_mem=100)
    with_aborted = [(0, B0, 0, 10, "x"), (0, B0, 2, 12, "z"), (2, B0, 0, 30, "l"), (2, B0, 1, 31, "m"),
                    (0, B1, 1, 21, "p")]
    assert rows(str(root), wil(3, aborted=[3]), events_mem=0) == with_aborted


def _delete_delta(root, w: int, keys: list[tuple[int, int, int]]) -> str:
    path = f"{root}/delete_delta_{w:07d}_{w:07d}_0000"
    write_event_file(path, 0, delete_events([AcidKey(*k) for k in sorted(keys)], w, SCHEMA))
    return f"{path}/bucket_00000"


key_lists = st.lists(st.tuples(st.integers(1, 4), st.sampled_from([B0, S1]), st.integers(0, 40)), max_size=40)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(files=st.lists(key_lists, min_size=1, max_size=7), invalid=st.sets(st.integers(10, 14), max_size=2),
       probes=st.lists(st.lists(st.tuples(st.integers(1, 4), st.sampled_from([B0, S1]), st.integers(0, 40)),
                                min_size=1, max_size=30), min_size=1, max_size=5),
       batch=st.integers(1, 5), in_order=st.booleans(), max_open=st.sampled_from([None, 2, 3]))
def test_cursor_answers_like_a_set_and_holds_a_bounded_batch(monkeypatch, files, invalid, probes, batch, in_order,
                                                             max_open):
    """Delete deltas (write ids 10.., some invalid in the snapshot) against batches of rows, in key order or not:
    survivors() is set membership of the valid deletes, and the cursor never holds more than 1.5 batches a file."""
    monkeypatch.setattr(delete_cursor, "MIN_BATCH_ROWS", batch)
    monkeypatch.setattr(delete_cursor, "MAX_BATCH_ROWS", batch)
    snapshot = wil(20, aborted=sorted(invalid))
    with tempfile.TemporaryDirectory() as tmp:
        opened, deleted = [], set()
        for i, keys in enumerate(files):
            if not keys:
                continue
            opened.append(open_orc_file(_delete_delta(tmp, 10 + i, keys)))
            if 10 + i not in invalid:
                deleted |= set(keys)
        if not opened:
            return
        cursor = DeleteCursor(opened, snapshot, window_events=0, max_open_files=max_open)
        assert cursor.batch_rows == batch
        assert (cursor.run_files > 0) == (max_open is not None and len(opened) > max_open)
        files_read = len(cursor._streams)
        if in_order:
            probes = [sorted(set(p)) for p in sorted(probes)]
        for probe in probes:
            o, b, r = (np.array(c, dtype=t) for c, t in zip(zip(*probe), (np.int64, np.int32, np.int64)))
            mask = cursor.survivors(o, b, r)
            assert (mask.to_pylist() if mask is not None else [True] * len(probe)) == \
                [k not in deleted for k in probe]
            assert cursor.may_touch(probe[0], probe[-1])
        assert files_read <= (max_open or len(opened))
        assert cursor.peak_events <= files_read * (batch + (batch - 1) // 2)
        assert all(s.held <= batch + (batch - 1) // 2 for s in cursor._streams)


def test_rows_in_key_order_read_each_delete_delta_once(tmp_path):
    """Rows asked in key order never start the files over; one asked below the window does (and is still right)."""
    keys = [(1, B0, r) for r in range(0, 10_000, 3)]
    f = open_orc_file(_delete_delta(tmp_path, 5, keys))
    cursor = DeleteCursor([f], wil(5), window_events=0)
    assert cursor.batch_rows == delete_cursor.MIN_BATCH_ROWS
    for start in range(0, 10_000, 1000):
        r = np.arange(start, start + 1000, dtype=np.int64)
        mask = cursor.survivors(np.ones(1000, np.int64), np.full(1000, B0, np.int32), r)
        assert mask is not None and mask.to_numpy(zero_copy_only=False).tolist() == (r % 3 != 0).tolist()
    assert cursor.restarts == 0 and cursor.windows >= 3
    assert cursor.peak_events <= cursor.batch_rows + cursor.batch_rows // 2
    again = cursor.survivors(np.ones(2, np.int64), np.full(2, B0, np.int32), np.array([0, 1], np.int64))
    assert again is not None and again.to_pylist() == [False, True] and cursor.restarts == 1


def test_threshold_chooses_the_path_from_the_footers(tmp_path):
    f = open_orc_file(_delete_delta(tmp_path, 5, [(1, B0, r) for r in range(10)]))
    assert not DeleteEvents((f,), wil(5), events_mem=10).streamed      # Hive: more than the threshold streams
    assert isinstance(DeleteEvents((f,), wil(5), events_mem=9).filter(), DeleteCursor)
    assert DeleteEvents((), wil(5), events_mem=0).filter() is None


def test_unsorted_delete_delta_cannot_be_streamed(tmp_path):
    """A delete delta out of key order (not Hive's or airflow-acid's) is refused, naming the setting to raise."""
    path = tmp_path / "bucket_00000"
    events = delete_events([AcidKey(1, B0, 5), AcidKey(1, B0, 2)], 5, SCHEMA)
    po.write_table(events, str(path))
    cursor = DeleteCursor([open_orc_file(str(path))], wil(5))
    with pytest.raises(UnsortedEventsError, match="hive.transactional.events.mem"):
        cursor.survivors(np.ones(1, np.int64), np.full(1, B0, np.int32), np.zeros(1, np.int64))


@settings(max_examples=200, deadline=None)
@given(keys=st.sets(st.tuples(st.integers(1, 3), st.sampled_from([B0, S1]), st.integers(0, 30)), max_size=30),
       ends=st.lists(st.tuples(st.integers(0, 4), st.sampled_from([B0, S1]), st.integers(0, 31)), min_size=2,
                     max_size=2))
def test_delete_set_may_touch_a_key_range_exactly_when_a_key_lies_in_it(keys, ends):
    """The in-memory set answers the key-range question exactly (no false negatives, no false positives)."""
    from airflow_acid.acid.delete_events import _DeleteSet, _KeyRuns

    first, last = sorted(ends)
    runs = _KeyRuns()
    ordered = sorted(keys)
    if ordered:
        runs.add(*(np.array(c, dtype=t) for c, t in zip(zip(*ordered), (np.int64, np.int32, np.int64))))
    deletes = _DeleteSet.from_runs(runs)
    expected = any(first <= k <= last for k in keys)
    assert (deletes.may_touch(first, last) if deletes is not None else False) == expected
