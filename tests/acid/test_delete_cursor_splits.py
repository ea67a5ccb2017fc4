"""Stripe-range splits of a large event file read only the delete events in their key interval (Hive's
OrcRawRecordMerger): the union of the splits' rows is the whole bucket's, in memory and streamed, with or without
``hive.acid.key.index`` in the data file and the delete deltas, and a split reads fewer delete-delta stripes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec, delete_cursor, names
from airflow_acid.acid.delete_cursor import DeleteCursor
from airflow_acid.acid.delete_events import DeleteEvents, KeyInterval, _BoundedFilter
from airflow_acid.acid.event_reader import FileFormat, OrcDataFile, open_data_file, open_orc_file
from airflow_acid.acid.event_schema import AcidKey, delete_events, insert_events
from airflow_acid.acid.event_writer import KEY_INDEX_KEY, FileKind, OrcWriteOptions, write_event_file
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import BucketPlan, DataSource, MergePlan, SourceKind, _Reader, read_plan
from tests.acid.test_merge import SCHEMA, wil

B0, S1 = bucket_codec.encode(0), bucket_codec.encode(0, 1)
BASE = "base_0000003"


def _options(rows_per_stripe: int) -> OrcWriteOptions:
    """A stripe every ``rows_per_stripe`` rows; no compression, so the footer's bytes can be edited."""
    return OrcWriteOptions(stripe_size=1, buffer_size=1024, batch_size=rows_per_stripe, compression="NONE")


def _drop_key_index(path: str) -> None:
    """Rename the file's ``hive.acid.key.index`` (same length, uncompressed footer): a file without a key index."""
    data = Path(path).read_bytes()
    assert KEY_INDEX_KEY.encode() in data
    Path(path).write_bytes(data.replace(KEY_INDEX_KEY.encode(), b"x" * len(KEY_INDEX_KEY)))


def _write_table(root: str, inserted: dict[tuple[int, int], int], per_stripe: int, deletes: list[list[AcidKey]],
                 delete_stripes: list[int], no_index: set[int]) -> list[AcidKey]:
    """A base of write ids 1..3 (rowIds 0..n-1 for each (write id, bucket property) of ``inserted``) and one delete
    delta per list of ``deletes`` (write ids 4..); ``no_index`` names files without a key index (0: the base,
    i: the i-th delete delta). The base's keys, in order."""
    parts = [insert_events(pa.table({"k": list(range(n)), "v": [f"{o}.{b}.{i}" for i in range(n)]}, schema=SCHEMA),
                           o, b) for (o, b), n in sorted(inserted.items()) if n]
    write_event_file(f"{root}/{BASE}", 0, pa.concat_tables(parts), kind=FileKind.BASE, options=_options(per_stripe))
    if 0 in no_index:
        _drop_key_index(f"{root}/{BASE}/bucket_00000")
    for i, (keys, stripe_rows) in enumerate(zip(deletes, delete_stripes), start=1):
        if not keys:
            continue
        d = f"{root}/{names.format_delta(3 + i, 3 + i, 0, delete=True)}"
        write_event_file(d, 0, delete_events(sorted(set(keys)), 3 + i, SCHEMA), options=_options(stripe_rows))
        if i in no_index:
            _drop_key_index(f"{d}/bucket_00000")
    return sorted(AcidKey(o, b, r) for (o, b), n in inserted.items() for r in range(n))


def _plan(root: str, stripes: tuple[int, int] | None) -> MergePlan:
    storage = storage_for(root)
    listed = {f.path: f for f in storage.list_files()}
    base = listed[f"{BASE}/bucket_00000"]
    deletes = tuple(DataSource(p, f.size, SourceKind.EVENTS, p.split("/")[0])
                    for p, f in sorted(listed.items()) if p.startswith("delete_delta_") and p.endswith("bucket_00000"))
    return MergePlan((BucketPlan(0, (DataSource(base.path, base.size, SourceKind.EVENTS, BASE, stripes=stripes),),
                                 deletes),))


def _rows(root: str, snapshot, stripes: tuple[int, int] | None, events_mem: int) -> list[tuple]:
    table = read_plan(storage_for(root), _plan(root, stripes), snapshot, schema=SCHEMA, include_row_ids=True,
                      events_mem=events_mem)
    return [tuple(r.values()) for r in table.to_pylist()]


key = st.tuples(st.integers(0, 4), st.sampled_from([B0, S1]), st.integers(0, 25)).map(lambda k: AcidKey(*k))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(inserted=st.dictionaries(st.tuples(st.integers(1, 3), st.sampled_from([B0, S1])), st.integers(0, 25),
                                min_size=1, max_size=6),
       per_stripe=st.integers(1, 9), deletes=st.lists(st.lists(key, max_size=30), min_size=1, max_size=4),
       delete_stripes=st.lists(st.integers(1, 7), min_size=4, max_size=4), aborted=st.sets(st.integers(4, 7)),
       no_index=st.sets(st.integers(0, 4), max_size=2), cuts=st.sets(st.integers(1, 40), max_size=6),
       batch=st.integers(1, 4))
def test_union_of_split_reads_is_the_whole_bucket(monkeypatch, inserted, per_stripe, deletes, delete_stripes,
                                                  aborted, no_index, cuts, batch):
    """Random base rows, delete deltas (some aborted, some deleting keys the base never had) and split boundaries:
    the splits' rows, in order, are the whole bucket's and the model's — reading the deletes in memory and streamed
    (``events_mem=0``, a few events a batch so windows and restarts happen inside a split)."""
    monkeypatch.setattr(delete_cursor, "MIN_BATCH_ROWS", batch)
    monkeypatch.setattr(delete_cursor, "MAX_BATCH_ROWS", batch)
    monkeypatch.setattr(delete_cursor, "MAX_OPEN_FILES", 3)  # 4 delete deltas: sorted run files first
    if not sum(inserted.values()):
        return
    snapshot = wil(7, aborted=sorted(aborted))
    with tempfile.TemporaryDirectory() as root:
        base = _write_table(root, inserted, per_stripe, deletes, delete_stripes, no_index)
        deleted = {k for i, keys in enumerate(deletes, start=4) if i not in aborted for k in keys}
        expected = [k for k in base if k not in deleted]
        stripes = open_orc_file(f"{root}/{BASE}/bucket_00000").num_stripes
        bounds = [0, *sorted(c for c in cuts if c < stripes), stripes]
        for events_mem in (1 << 40, 0):
            whole = _rows(root, snapshot, None, events_mem)
            assert [AcidKey(*r[:3]) for r in whole] == expected
            union = [r for a, b in zip(bounds, bounds[1:]) for r in _rows(root, snapshot, (a, b), events_mem)]
            assert union == whole


def _large(root: str, rows: int = 600, per_stripe: int = 20) -> tuple[OrcDataFile, list[OrcDataFile]]:
    """A base of ``rows`` keys in stripes of ``per_stripe`` and two delete deltas deleting every third and every
    fifth of them, in stripes of 10."""
    _write_table(root, {(1, B0): rows}, per_stripe,
                 [[AcidKey(1, B0, r) for r in range(0, rows, 3)], [AcidKey(1, B0, r) for r in range(0, rows, 5)]],
                 [10, 10], set())
    storage = storage_for(root)
    files = [open_data_file(storage, f.path, f.size, expect=FileFormat.ACID) for f in storage.list_files()
             if f.path.startswith("delete_delta_") and f.path.endswith("bucket_00000")]
    return open_orc_file(f"{root}/{BASE}/bucket_00000"), files


def test_a_split_reads_fewer_delete_delta_stripes(tmp_path, monkeypatch):
    """A split of a third of the base's stripes opens about a third of each delete delta's stripes (counted as the
    files give them, not timed), streamed and in memory; the rows are the whole read's."""
    base, files = _large(str(tmp_path))
    total = sum(f.num_stripes for f in files)
    third = (base.num_stripes // 3, 2 * base.num_stripes // 3)
    interval = base.key_interval(third)
    assert interval.after == (1, B0, 20 * third[0] - 1) and interval.upto == (1, B0, 20 * third[1] - 1)

    whole = DeleteCursor(files, wil(5), window_events=0)
    split = DeleteCursor(files, wil(5), window_events=0, bounds=interval)
    assert whole.stripes_read == total
    assert split.stripes_read <= total // 3 + 2 * len(files)  # a stripe more at each end of each file at most

    stripes_read: list[tuple[int, int] | None] = []
    iter_batches = OrcDataFile.iter_batches

    def counting(self, *args, **kwargs):
        if self.path.endswith("bucket_00000") and "delete_delta_" in self.path:
            stripes_read.append(kwargs.get("stripes"))
        return iter_batches(self, *args, **kwargs)

    monkeypatch.setattr(OrcDataFile, "iter_batches", counting)
    loaded = DeleteEvents(tuple(files), wil(5), bounds=interval).load()
    assert loaded is not None
    read = sum((e - s) if r is not None else f.num_stripes for r, f in zip(stripes_read, files)
               for s, e in [r or (0, 0)])
    assert read <= total // 3 + 2 * len(files)
    events = sum(len(rows) for rows in loaded.row_ids.values())
    assert events == len({r for r in range(20 * third[0], 20 * third[1]) if r % 3 == 0 or r % 5 == 0})

    for events_mem in (1 << 40, 0):
        assert _rows(str(tmp_path), wil(5), third, events_mem) == \
            [r for r in _rows(str(tmp_path), wil(5), None, events_mem) if third[0] * 20 <= r[2] < third[1] * 20]


def test_split_bounds_come_from_the_data_files_key_index(tmp_path):
    """The merge bounds a split by its stripes' keys, whole files not at all, and a base without a key index not
    at all (every delete event read: the current behaviour)."""
    base, _files = _large(str(tmp_path))
    storage = storage_for(str(tmp_path))
    reader = _Reader(storage, wil(5), SCHEMA, [0, 1])
    (bucket,) = _plan(str(tmp_path), (3, 7)).buckets
    assert reader.split_bounds(bucket) == base.key_interval((3, 7)) == KeyInterval((1, B0, 59), (1, B0, 139))
    assert reader.delete_events(bucket).bounds == KeyInterval((1, B0, 59), (1, B0, 139))
    assert reader.split_bounds(_plan(str(tmp_path), (0, base.num_stripes)).buckets[0]) == KeyInterval()
    assert reader.split_bounds(_plan(str(tmp_path), None).buckets[0]) == KeyInterval()
    _drop_key_index(os.path.join(tmp_path, BASE, "bucket_00000"))
    assert open_orc_file(os.path.join(tmp_path, BASE, "bucket_00000")).stripe_keys is None
    assert reader.split_bounds(_plan(str(tmp_path), (3, 7)).buckets[0]) == KeyInterval()
    assert _rows(str(tmp_path), wil(5), (3, 7), 0) == \
        [r for r in _rows(str(tmp_path), wil(5), None, 0) if 60 <= r[2] < 140]


def test_rows_outside_the_interval_read_every_delete_event(tmp_path):
    """A key index that does not describe its file (rows outside the split's interval) never gives a wrong answer:
    the bounded filter then reads every delete event."""
    _base, files = _large(str(tmp_path))
    for events_mem in (1 << 40, 0):
        bounded = DeleteEvents(tuple(files), wil(5), events_mem,
                               KeyInterval((1, B0, 100), (1, B0, 200))).filter()
        assert isinstance(bounded, _BoundedFilter)
        o, b = pa.array([1] * 3, pa.int64()).to_numpy(), pa.array([B0] * 3, pa.int32()).to_numpy()
        inside = bounded.survivors(o, b, pa.array([150, 151, 153], pa.int64()).to_numpy())
        assert inside is not None and inside.to_pylist() == [False, True, False]
        assert not bounded.fell_back
        assert bounded.may_touch((1, B0, 101), (1, B0, 101)) == (events_mem == 0)  # a cursor always may
        assert bounded.may_touch((1, B0, 10), (1, B0, 11))  # outside: may
        outside = bounded.survivors(o, b, pa.array([3, 4, 5], pa.int64()).to_numpy())
        assert outside is not None and outside.to_pylist() == [False, True, False]
        assert bounded.fell_back
