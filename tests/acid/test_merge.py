"""Merge-on-read against explicit layouts and a Python model of ACID writes (hypothesis)."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.delete_events import _DeleteSet, _KeyRuns, _sorted_hits
from airflow_acid.acid.errors import AcidSchemaError, NotEnoughHistoryError
from airflow_acid.acid.event_schema import AcidKey, delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, write_event_file
from airflow_acid.acid.merge import iter_acid_batches, read_acid_table
from airflow_acid.acid.writeids import ValidReaderWriteIdList, txn_list

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def wil(hwm, open=(), aborted=()):
    return ValidReaderWriteIdList(table="db.t", high_watermark=hwm, open=tuple(open), aborted=tuple(aborted))


@dataclass
class Table:
    """Writes Hive-shaped directories and keeps the model: ROW__ID -> (write id, value)."""

    root: str
    inserts: dict[AcidKey, tuple[int, tuple]] = field(default_factory=dict)
    deletes: dict[AcidKey, list[int]] = field(default_factory=lambda: defaultdict(list))
    next_row: dict[tuple[int, int, int], int] = field(default_factory=lambda: defaultdict(int))

    def insert(self, w: int, rows: list[tuple], bucket: int = 0, stmt: int = 0) -> list[AcidKey]:
        prop = bucket_codec.encode(bucket, stmt)
        start = self.next_row[(w, bucket, stmt)]
        self.next_row[(w, bucket, stmt)] += len(rows)
        data = pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=SCHEMA)
        d = names.format_delta(w, w, stmt)
        existing = self.read_dir(d, bucket)
        events = insert_events(data, w, prop, start)
        if existing is not None:
            events = pa.concat_tables([existing, events])
        write_event_file(f"{self.root}/{d}", bucket, events)
        keys = [AcidKey(w, prop, start + i) for i in range(len(rows))]
        for key, row in zip(keys, rows):
            self.inserts[key] = (w, row)
        return keys

    def delete(self, w: int, keys: list[AcidKey], stmt: int = 0) -> None:
        by_bucket = defaultdict(list)
        for key in keys:
            by_bucket[bucket_codec.decode(key.bucket).bucket_id].append(key)
            self.deletes[key].append(w)
        d = names.format_delta(w, w, stmt, delete=True)
        for bucket, ks in by_bucket.items():
            events = delete_events(sorted(ks), w, SCHEMA)
            existing = self.read_dir(d, bucket)
            if existing is not None:
                events = pa.concat_tables([existing, events])
            write_event_file(f"{self.root}/{d}", bucket, events)

    def read_dir(self, d: str, bucket: int):
        import os
        path = f"{self.root}/{d}/{names.format_bucket_file(bucket)}"
        return po.ORCFile(path).read().cast(pa.schema(insert_events(pa.table({"k": [1], "v": ["x"]},
                                                       schema=SCHEMA), 1, 0).schema)) if os.path.exists(path) else None

    def expected(self, snapshot: ValidReaderWriteIdList) -> list[tuple]:
        rows = []
        for key, (w, row) in self.inserts.items():
            if not snapshot.is_write_id_valid(w):
                continue
            if any(snapshot.is_write_id_valid(dw) for dw in self.deletes.get(key, [])):
                continue
            rows.append((bucket_codec.decode(key.bucket).bucket_id, key, row))
        return [(k.original_transaction, k.bucket, k.row_id, *row) for _, k, row in sorted(rows)]


def actual(root: str, snapshot, **kw) -> list[tuple]:
    t = read_acid_table(root, snapshot, include_row_ids=True, **kw)
    return [tuple(r.values()) for r in t.to_pylist()]


@pytest.fixture
def table(tmp_path):
    return Table(str(tmp_path / "t"))


def test_deltas_and_delete_deltas_at_several_snapshots(table):
    a = table.insert(1, [(1, "a"), (2, "b"), (3, "c")])
    table.insert(2, [(4, "d")])
    table.delete(3, [a[1]])
    b = table.insert(4, [(5, "e"), (6, "f")])
    table.delete(5, [a[0], b[1]])
    for snap in [wil(0), wil(1), wil(2), wil(3), wil(4), wil(5), wil(5, open=[3]), wil(5, aborted=[4]),
                 wil(5, open=[1, 5]), wil(4, open=[2])]:
        assert actual(table.root, snap) == table.expected(snap), snap
    assert [r[3] for r in actual(table.root, wil(5))] == [3, 4, 5]


def test_aborted_write_ids_are_ignored(table):
    table.insert(1, [(1, "a")])
    k = table.insert(2, [(2, "aborted")])
    table.delete(3, k + [AcidKey(1, bucket_codec.encode(0), 0)])   # an aborted delete
    snap = wil(3, aborted=[2, 3])
    assert actual(table.root, snap) == table.expected(snap) == [(1, bucket_codec.encode(0), 0, 1, "a")]


def test_multi_statement_transaction_and_update(table):
    a = table.insert(1, [(1, "a"), (2, "b")])
    # txn 2: statement 0 inserts, statement 1 updates row 1 (split update: delete + insert), both write id 2
    table.insert(2, [(3, "c")], stmt=0)
    table.delete(2, [a[0]], stmt=1)
    table.insert(2, [(1, "a2")], stmt=1)
    for snap in [wil(1), wil(2), wil(2, open=[2])]:
        assert actual(table.root, snap) == table.expected(snap)
    rows = actual(table.root, wil(2))
    assert [(r[0], bucket_codec.decode(r[1]).statement_id, r[3], r[4]) for r in rows] == \
        [(1, 0, 2, "b"), (2, 0, 3, "c"), (2, 1, 1, "a2")]


def test_bucketed_layout_and_order(table):
    table.insert(1, [(i, f"b1-{i}") for i in range(3)], bucket=1)
    table.insert(1, [(i, f"b0-{i}") for i in range(3)], bucket=0)
    k = table.insert(2, [(9, "b2")], bucket=2)
    table.delete(3, [AcidKey(1, bucket_codec.encode(1), 1), k[0]])
    snap = wil(3)
    rows = actual(table.root, snap)
    assert rows == table.expected(snap)
    assert [bucket_codec.decode(r[1]).bucket_id for r in rows] == [0, 0, 0, 1, 1]


def test_base_written_from_a_merge_and_deltas_after_it(table):
    a = table.insert(1, [(1, "a"), (2, "b")])
    table.insert(2, [(3, "c")])
    table.delete(3, [a[1]])
    merged = read_acid_table(table.root, wil(3), include_row_ids=True)
    n = merged.num_rows
    events = pa.table({"operation": pa.array([0] * n, pa.int32()), "originalTransaction": merged["originalTransaction"],
                       "bucket": merged["bucket"], "rowId": merged["rowId"],
                       "currentTransaction": merged["originalTransaction"],
                       "row": pa.StructArray.from_arrays([merged["k"].combine_chunks(), merged["v"].combine_chunks()],
                                                         fields=list(SCHEMA))})
    write_event_file(f"{table.root}/base_0000003_v0000010", 0, events, kind=FileKind.BASE)
    table.delete(4, [a[0]])
    table.insert(5, [(4, "d")])
    txns = txn_list(20)
    for snap in [wil(3), wil(4), wil(5), wil(5, open=[4])]:
        assert actual(table.root, snap) == table.expected(snap)
        assert read_acid_table(table.root, snap, txns).num_rows == len(table.expected(snap))
    # a compacted base whose compaction txn is still open is invisible: deltas are read instead
    assert read_acid_table(table.root, wil(5), txn_list(9, open=[10])).num_rows == len(table.expected(wil(5)))
    with pytest.raises(NotEnoughHistoryError):
        read_acid_table(table.root, wil(3, open=[2]), txns)


def test_original_files_with_deltas_and_load_data(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    po.write_table(pa.table({"k": [10, 11, 12], "v": ["x", "y", "z"]}, schema=SCHEMA), str(root / "000000_0"))
    po.write_table(pa.table({"k": [13], "v": ["w"]}, schema=SCHEMA), str(root / "000000_0_copy_1"))
    po.write_table(pa.table({"k": [20], "v": ["q"]}, schema=SCHEMA), str(root / "000001_0"))
    b0 = bucket_codec.encode(0)
    write_event_file(str(root / "delete_delta_0000001_0000001_0000"), 0,
                     delete_events([AcidKey(0, b0, 1), AcidKey(0, b0, 3)], 1, SCHEMA))
    (root / "delta_0000002_0000002_0000").mkdir()
    po.write_table(pa.table({"k": [30, 31], "v": ["l", "m"]}, schema=SCHEMA),
                   str(root / "delta_0000002_0000002_0000" / "000000_0"))     # LOAD DATA: raw file in a delta
    rows = actual(str(root), wil(2))
    assert rows == [(0, b0, 0, 10, "x"), (0, b0, 2, 12, "z"), (2, b0, 0, 30, "l"), (2, b0, 1, 31, "m"),
                    (0, bucket_codec.encode(1), 0, 20, "q")]
    assert len(actual(str(root), wil(0))) == 5


@pytest.mark.parametrize("slice_bytes", [1, 40, 1 << 30])
def test_stripes_merged_in_slices_give_the_same_rows(tmp_path, monkeypatch, slice_bytes):
    """Slicing decoded stripes (merge.SLICE_BYTES) changes nothing a reader sees: deletes, aborted write ids, original
    files' synthetic row ids across slices."""
    from airflow_acid.acid import merge

    reference = actual_of_a_mixed_table(tmp_path / "ref")
    monkeypatch.setattr(merge, "SLICE_BYTES", slice_bytes)
    assert actual_of_a_mixed_table(tmp_path / "sliced") == reference
    assert len(reference) == 47  # 20 original rows + 30 inserted - 3 deleted; the aborted row invisible


def actual_of_a_mixed_table(root) -> list[tuple]:
    root.mkdir()
    po.write_table(pa.table({"k": list(range(20)), "v": [f"o{i}" for i in range(20)]}, schema=SCHEMA),
                   str(root / "000000_0"))
    b0 = bucket_codec.encode(0)
    write_event_file(str(root / "delta_0000001_0000001_0000"), 0,
                     insert_events(pa.table({"k": list(range(100, 130)), "v": ["d"] * 30}, schema=SCHEMA), 1, b0))
    write_event_file(str(root / "delta_0000002_0000002_0000"), 0,  # write id 2 is aborted below
                     insert_events(pa.table({"k": [999], "v": ["aborted"]}, schema=SCHEMA), 2, b0))
    write_event_file(str(root / "delete_delta_0000003_0000003_0000"), 0,
                     delete_events([AcidKey(0, b0, 3), AcidKey(0, b0, 17), AcidKey(1, b0, 0)], 3, SCHEMA))
    return actual(str(root), wil(3, aborted=[2]))


def test_columns_filter_and_row_ids(table):
    table.insert(1, [(i, f"v{i}") for i in range(10)])
    t = read_acid_table(table.root, wil(1), columns=["v"], filter=pc.field("k") >= 7)
    assert t.column_names == ["v"] and t["v"].to_pylist() == ["v7", "v8", "v9"]
    t = read_acid_table(table.root, wil(1), columns=["k"], filter=pc.field("rowId") < 2, include_row_ids=True)
    assert t.column_names == ["originalTransaction", "bucket", "rowId", "k"] and t["k"].to_pylist() == [0, 1]
    assert read_acid_table(table.root, wil(1), columns=["v", "k"]).column_names == ["v", "k"]
    assert read_acid_table(table.root, wil(0), schema=SCHEMA).schema == SCHEMA
    with pytest.raises(AcidSchemaError, match="unknown column.*nope"):
        read_acid_table(table.root, wil(1), columns=["nope"])
    with pytest.raises(AcidSchemaError, match="filter"):
        read_acid_table(table.root, wil(1), filter=pc.field("missing") == 1)
    batches = list(iter_acid_batches(table.root, wil(1), columns=["k"]))
    assert sum(b.num_rows for b in batches) == 10 and all(b.schema.names == ["k"] for b in batches)


def test_empty_location_and_schema(tmp_path):
    assert read_acid_table(str(tmp_path / "none"), wil(5)).num_rows == 0
    assert read_acid_table(str(tmp_path / "none"), wil(5), schema=SCHEMA).schema == SCHEMA


# -- hypothesis: random sequences of transactions against the model ---------------------------------

txn_strategy = st.lists(
    st.tuples(
        st.booleans(),                                                  # aborted
        st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=2),
    ),
    min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(txns=txn_strategy, data=st.data())
def test_model(txns, data):
    with tempfile.TemporaryDirectory() as tmp:
        table = Table(f"{tmp}/t")
        aborted: list[int] = []
        for w, (is_aborted, statements) in enumerate(txns, start=1):
            for stmt, (n_insert, bucket, n_delete) in enumerate(statements):
                snap_now = wil(w - 1, aborted=aborted)
                live = [AcidKey(*r[:3]) for r in table.expected(snap_now)]
                if live and n_delete:
                    picks = data.draw(st.lists(st.sampled_from(live), max_size=n_delete, unique=True))
                    if picks:
                        table.delete(w, picks, stmt=stmt)
                if n_insert:
                    table.insert(w, [(w * 100 + i, f"w{w}s{stmt}") for i in range(n_insert)], bucket=bucket, stmt=stmt)
            if is_aborted:
                aborted.append(w)
        top = len(txns)
        hwm = data.draw(st.integers(0, top))
        opened = data.draw(st.lists(st.integers(1, max(1, hwm)), unique=True, max_size=2)) if hwm else []
        opened = [o for o in opened if o not in aborted]
        snap = wil(hwm, open=opened, aborted=[a for a in aborted if a <= hwm and a not in opened])
        assert actual(table.root, snap) == table.expected(snap)


@settings(max_examples=200, deadline=None)
@given(deleted=st.sets(st.integers(0, 300), max_size=40), rows=st.sets(st.integers(0, 300), max_size=300),
       shuffled=st.booleans())
def test_delete_lookup_matches_set_membership_both_ways(deleted, rows, shuffled):
    """Both lookup directions (rows into deletes; few deletes into a long sorted run) mark exactly the deleted rows,
    and an unsorted run never takes the run-ordered path."""
    d = np.array(sorted(deleted), dtype=np.int64)
    r = np.array(sorted(rows), dtype=np.int64)
    if shuffled:
        r = np.random.default_rng(len(rows)).permutation(r)
    expected = np.isin(r, d) if len(d) else np.zeros(len(r), dtype=bool)
    if not len(d):
        return
    assert _sorted_hits(d, r).tolist() == expected.tolist()


@pytest.mark.parametrize("loop_runs", [4096, 0], ids=["pair by pair", "one sort"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 1), st.integers(0, 50)), max_size=30),
                      max_size=6),
       probe=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 1), st.integers(0, 50)), max_size=60))
def test_delete_set_keeps_each_pairs_distinct_row_ids(monkeypatch, loop_runs, files, probe):
    """Delete keys of several delete deltas (each sorted, repeated keys, the same keys in several files) become, per
    (originalTransaction, bucket), the sorted distinct rowIds, whichever way they are gathered; survivors() marks
    exactly the rows not deleted."""
    from airflow_acid.acid import delete_events as merge

    monkeypatch.setattr(merge, "_LOOP_RUNS", loop_runs)
    buckets = [bucket_codec.encode(0), bucket_codec.encode(1)]
    runs = _KeyRuns()
    model: dict[tuple[int, int], set[int]] = defaultdict(set)
    for keys in files:
        keys = sorted((o, buckets[b], r) for o, b, r in keys)  # a delete delta is sorted by key
        for o, b, r in keys:
            model[(o, b)].add(r)
        runs.add(*(np.array(column, dtype=dtype) for column, dtype in
                   zip(zip(*keys) if keys else ([], [], []), (np.int64, np.int32, np.int64))))
    deletes = _DeleteSet.from_runs(runs)
    if not model:
        assert deletes is None
        return
    assert deletes is not None
    assert {k: v.tolist() for k, v in deletes.row_ids.items()} == {k: sorted(v) for k, v in model.items()}
    o = np.array([p[0] for p in probe], dtype=np.int64)
    b = np.array([buckets[p[1]] for p in probe], dtype=np.int32)
    r = np.array([p[2] for p in probe], dtype=np.int64)
    mask = deletes.survivors(o, b, r)
    survives = [p[2] not in model.get((p[0], buckets[p[1]]), set()) for p in probe]
    assert (mask.to_pylist() if mask is not None else [True] * len(probe)) == survives
