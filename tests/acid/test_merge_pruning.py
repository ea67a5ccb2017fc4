"""Merge-on-read decodes only what it needs: projections equal full reads projected, and the pruned path (key
columns only for files a delete may touch, currentTransaction/operation only where needed, no order check when the
directory names prove it) gives the rows of the unpruned one."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec, merge, names
from airflow_acid.acid.delete_events import _DeleteSet, _KeyRuns
from airflow_acid.acid.event_reader import OrcDataFile
from airflow_acid.acid.event_schema import AcidKey, delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, write_event_file
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.writeids import ValidReaderWriteIdList

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("x", pa.float64())])


def wil(hwm: int, open: list[int] | tuple[int, ...] = (), aborted: list[int] | tuple[int, ...] = ()
        ) -> ValidReaderWriteIdList:
    return ValidReaderWriteIdList(table="db.t", high_watermark=hwm, open=tuple(open), aborted=tuple(aborted))


def data(start: int, n: int) -> pa.Table:
    return pa.table({"k": list(range(start, start + n)), "v": [f"v{i}" for i in range(start, start + n)],
                     "x": [i * 0.5 for i in range(start, start + n)]}, schema=SCHEMA)


@contextmanager
def unpruned():
    """Every event file read as before pruning: all key columns, currentTransaction and operation decoded, every
    delete lookup made, the key order checked."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(merge, "_event_key_range", lambda f, src: (merge._LOWEST_KEY, merge._HIGHEST_KEY, None))
        mp.setattr(merge, "_ordered_by_names", lambda plan: False)
        mp.setattr(OrcDataFile, "stats", property(lambda self: None))
        yield


def both(root: str, snapshot: ValidReaderWriteIdList, **kw) -> tuple[pa.Table, pa.Table]:
    pruned = read_acid_table(root, snapshot, schema=SCHEMA, **kw)
    with unpruned():
        reference = read_acid_table(root, snapshot, schema=SCHEMA, **kw)
    return pruned, reference


# -- a random table: originals or a base, insert deltas, delete deltas, aborted write ids --------------------------

start_strategy = st.sampled_from(["none", "originals", "base"])
txn_strategy = st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "both"]), st.integers(0, 1), st.integers(1, 6), st.booleans()),
    min_size=1, max_size=7)


Choose = Callable[[list[AcidKey], int, int, int], list[AcidKey]]
"""Keys to delete: (live keys, at most how many, write id, bucket) -> keys, possibly of no row."""


def drawn(draw) -> Choose:
    def choose(keys: list[AcidKey], n: int, w: int, bucket: int) -> list[AcidKey]:
        picks = draw(st.lists(st.sampled_from(keys), max_size=n, unique=True)) if keys else []
        if draw(st.booleans()):  # a key of no row: inside a file's key range, or beyond every file
            picks.append(AcidKey(draw(st.integers(0, w)), bucket_codec.encode(bucket), draw(st.integers(0, 50))))
        return picks
    return choose


def build(root: Path, start: str, txns: list[tuple[str, int, int, bool]], choose: Choose) -> tuple[int, list[int]]:
    """Write the table; returns the last write id and the aborted ones."""
    root.mkdir(parents=True)
    first = 1
    if start == "originals":
        po.write_table(data(0, 5), str(root / "000000_0"))
        po.write_table(data(5, 3), str(root / "000000_0_copy_1"))
        po.write_table(data(100, 4), str(root / "000001_0"))
    elif start == "base":
        for bucket in (0, 1):
            write_event_file(str(root / names.format_base(1)), bucket,
                             insert_events(data(bucket * 100, 6), 1, bucket_codec.encode(bucket)), kind=FileKind.BASE)
        first = 2
    aborted: list[int] = []
    w = first - 1
    for w, (kind, bucket, n, is_aborted) in enumerate(txns, start=first):
        if kind in ("delete", "both"):
            live = read_acid_table(str(root), wil(w - 1, aborted=aborted), include_row_ids=True, schema=SCHEMA)
            keys = [AcidKey(*k) for k in zip(*(live[c].to_pylist() for c in merge.ROW_ID_COLUMNS))]
            picks = choose(keys, n, w, bucket)
            by_bucket: dict[int, list[AcidKey]] = {}
            for key in picks:
                by_bucket.setdefault(bucket_codec.decode(key.bucket).bucket_id, []).append(key)
            for b, ks in by_bucket.items():
                write_event_file(str(root / names.format_delta(w, w, 0, delete=True)), b,
                                 delete_events(sorted(set(ks)), w, SCHEMA))
        if kind in ("insert", "both"):
            write_event_file(str(root / names.format_delta(w, w, 0)), bucket,
                             insert_events(data(1000 * w, n), w, bucket_codec.encode(bucket)))
        if is_aborted:
            aborted.append(w)
    return w, aborted


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=start_strategy, txns=txn_strategy, data_=st.data())
def test_pruned_reads_equal_unpruned_reads(start, txns, data_):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        top, aborted = build(root, start, txns, drawn(data_.draw))
        hwm = data_.draw(st.integers(0, top))
        opened = [o for o in data_.draw(st.lists(st.integers(1, max(1, hwm)), unique=True, max_size=2)) if hwm
                  and o not in aborted]
        snap = wil(hwm, open=opened, aborted=[a for a in aborted if a <= hwm and a not in opened])
        columns = data_.draw(st.one_of(st.none(), st.lists(st.sampled_from(SCHEMA.names), min_size=1, max_size=3,
                                                           unique=True)))
        for kw in ({}, {"include_row_ids": True}, {"columns": columns}, {"columns": columns, "include_row_ids": True},
                   {"columns": columns, "filter": pc.field("x") > 3.0},
                   {"columns": columns, "filter": pc.field("rowId") >= 1}):
            pruned, reference = both(str(root), snap, **kw)
            assert pruned.equals(reference), kw
            full = read_acid_table(str(root), snap, include_row_ids=True, schema=SCHEMA)
            if "filter" not in kw:
                wanted = ([*merge.ROW_ID_COLUMNS] if kw.get("include_row_ids") else []) + list(columns or SCHEMA.names)
                if "columns" in kw:  # a projection equals the full read projected
                    assert pruned.equals(full.select(wanted)), kw


def test_projection_equals_full_read_projected_with_deletes_and_originals(tmp_path):
    root = tmp_path / "t"
    top, aborted = build(root, "originals", [("insert", 0, 5, False), ("delete", 0, 3, False),
                                             ("both", 1, 4, True), ("both", 0, 6, False)],
                         lambda keys, n, w, bucket: [*keys[::2][:n], AcidKey(0, bucket_codec.encode(bucket), 40)])
    snap = wil(top, aborted=aborted)
    full = read_acid_table(str(root), snap)
    for columns in (["k"], ["x", "v"], ["v", "k", "x"]):
        assert read_acid_table(str(root), snap, columns=columns).equals(full.select(columns))
        batches = list(merge.iter_acid_batches(str(root), snap, columns=columns))
        assert pa.Table.from_batches(batches).equals(full.select(columns))


# -- what is decoded ---------------------------------------------------------------------------------------------

def decoded_keys(monkeypatch) -> dict[str, set[str]]:
    """The ACID columns each event file is read with."""
    seen: dict[str, set[str]] = {}
    original = OrcDataFile.iter_batches

    def spy(self, row_columns=None, *, keys=True, stripes=None):
        chosen = set(merge.KEY_FIELDS) | {"operation", "currentTransaction"} if keys is True else set(keys or ())
        seen.setdefault(self.path.split("/t/", 1)[1], set()).update(chosen)
        return original(self, row_columns, keys=keys, stripes=stripes)

    monkeypatch.setattr(OrcDataFile, "iter_batches", spy)
    return seen


def settled(monkeypatch) -> None:
    """Decisions wait for the bucket's delete set (the reader decodes a file's keys when it is still loading)."""
    may_touch = merge.Deletes.may_touch

    def waiting(self, lo, hi):
        if self.pending is not None:
            self.pending.result()
        return may_touch(self, lo, hi)

    monkeypatch.setattr(merge.Deletes, "may_touch", waiting)


def test_key_columns_are_decoded_only_for_files_a_delete_can_touch(tmp_path, monkeypatch):
    root = tmp_path / "t"
    b0 = bucket_codec.encode(0)
    write_event_file(str(root / names.format_base(1)), 0, insert_events(data(0, 50), 1, b0), kind=FileKind.BASE)
    for w in (2, 3):
        write_event_file(str(root / names.format_delta(w, w, 0)), 0, insert_events(data(100 * w, 10), w, b0))
    d45 = names.format_delta(4, 5)  # a streamed or compacted delta of two write ids
    write_event_file(str(root / d45), 0, pa.concat_tables([insert_events(data(400, 10), 4, b0),
                                                           insert_events(data(500, 10), 5, b0)]))
    write_event_file(str(root / names.format_delta(6, 6, 0, delete=True)), 0,
                     delete_events([AcidKey(1, b0, 7), AcidKey(3, b0, 2)], 6, SCHEMA))
    seen = decoded_keys(monkeypatch)
    settled(monkeypatch)
    table = read_acid_table(str(root), wil(7, aborted=[7]), columns=["k"])
    assert sorted(table["k"].to_pylist()) == sorted(set(range(50)) - {7} | set(range(200, 210))
                                                    | set(range(300, 310)) - {302} | set(range(400, 410))
                                                    | set(range(500, 510)))
    base, d2, d3, d4 = (f"{d}/bucket_00000" for d in (names.format_base(1), names.format_delta(2, 2, 0),
                                                      names.format_delta(3, 3, 0), d45))
    key_triple = set(merge.KEY_FIELDS)
    assert key_triple <= seen[base] and key_triple <= seen[d3]  # a delete lies in their key ranges
    assert not seen[d2] and not seen[d4]  # every write id valid, no delete in range, no delete events: row only
    # an aborted write id inside a delta's range: its currentTransaction is read, its keys are not
    seen.clear()
    table = read_acid_table(str(root), wil(7, aborted=[5]), columns=["k"])
    assert seen[d4] == {"currentTransaction"} and 505 not in table["k"].to_pylist()
    # the ROW__IDs asked for: read everywhere, operation and currentTransaction still only where needed
    seen.clear()
    read_acid_table(str(root), wil(7), include_row_ids=True)
    assert seen[d2] == key_triple


def test_a_delta_newer_than_every_delete_delta_is_read_without_keys(tmp_path, monkeypatch):
    """A delete delta older than a delta's write ids cannot delete its rows (Hive's isQualifiedDeleteDeltaForSplit):
    that delta is read without keys even before the delete set is loaded."""
    root = tmp_path / "t"
    b0 = bucket_codec.encode(0)
    write_event_file(str(root / names.format_delta(1, 1, 0)), 0, insert_events(data(0, 5), 1, b0))
    write_event_file(str(root / names.format_delta(2, 2, 0, delete=True)), 0,
                     delete_events([AcidKey(1, b0, 0)], 2, SCHEMA))
    write_event_file(str(root / names.format_delta(3, 3, 0)), 0, insert_events(data(10, 5), 3, b0))
    pending = merge.Deletes(None, 2)
    assert not pending.may_touch((3, 0, 0), (3, 1 << 30, 1 << 40))
    seen = decoded_keys(monkeypatch)
    assert read_acid_table(str(root), wil(3), columns=["k"])["k"].to_pylist() == [1, 2, 3, 4, 10, 11, 12, 13, 14]
    assert not seen[f"{names.format_delta(3, 3, 0)}/bucket_00000"]


@given(deleted=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 20)), max_size=30),
       lo=st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 20)),
       hi=st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 20)))
def test_delete_set_touches_a_key_range_exactly_when_a_key_lies_in_it(deleted, lo, hi):
    runs = _KeyRuns()
    for o, b, r in deleted:
        runs.add(np.array([o], np.int64), np.array([b], np.int32), np.array([r], np.int64))
    delete_set = _DeleteSet.from_runs(runs)
    expected = any(lo <= key <= hi for key in deleted)
    assert (delete_set is not None and delete_set.may_touch(lo, hi)) == expected


def test_order_is_proven_by_names_only_for_disjoint_write_ids(tmp_path):
    b0 = bucket_codec.encode(0)
    root = tmp_path / "t"
    write_event_file(str(root / names.format_delta(1, 1, 0)), 0, insert_events(data(0, 3), 1, b0))
    write_event_file(str(root / names.format_delta(2, 2, 0)), 0, insert_events(data(3, 3), 2, b0))
    storage, plan = merge._listing_and_plan(str(root), wil(2), None, None)
    assert merge._ordered_by_names(plan)
    # two statements of one write id: same range, their order is read from the keys
    write_event_file(str(root / names.format_delta(2, 2, 1)), 0,
                     insert_events(data(6, 2), 2, bucket_codec.encode(0, 1)))
    storage, plan = merge._listing_and_plan(str(root), wil(2), None, None)
    assert not merge._ordered_by_names(plan)
    pruned, reference = both(str(root), wil(2))
    assert pruned.equals(reference) and pruned["k"].to_pylist() == list(range(8))
