"""Checks of the concurrent-load test: what a held snapshot must return, and what the directories must hold.

:class:`Reference` follows the writers' journal and answers "which rows must snapshot S show", settling from the
metastore any visible transaction whose outcome a killed writer never journaled. :func:`check_held_read` opens a
snapshot, notes every file it selects, holds it (while compaction and cleaning go on), reads, and reports each
broken invariant: a result that differs from the model, a read that fails, a selected file that disappeared before
the reader closed. :func:`leftover_directories` is the end-of-run check that nothing obsolete or aborted remains.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow.compute as pc

from airflow_acid.acid.codes import TxnState
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import AcidState, get_acid_state
from airflow_acid.acid.writeids import ValidTxnList, ValidWriteIdList
from airflow_acid.client.table_io import PartitionTarget, ReadSnapshot
from airflow_acid.client.warehouse import AcidWarehouse
from tests.reliability.actors import MARKERS, timed_out
from tests.reliability.model import Journal, Kind, Model, Outcome, UnresolvedIntent, describe_difference


class Reference:
    """The model, kept up to date from the journal, plus settling of outcomes the journal lacks."""

    def __init__(self, wh: AcidWarehouse, journal: Journal) -> None:
        self.wh = wh
        self.journal = journal
        self.model = Model()
        self._offset = 0
        self._lock = threading.Lock()

    def refresh(self) -> Model:
        with self._lock:
            records, self._offset = self.journal.records(self._offset)
            self.model.feed(records)
        return self.model

    def outcome_now(self, txn: int) -> Outcome | None:
        """The outcome of ``txn`` by the metastore (None while it is open). When housekeeping has already removed
        its TXNS row, the marker row every writer transaction inserts tells whether it committed."""
        state = self.wh.metastore.txns.txn_state(txn)
        if state is TxnState.OPEN:
            return None
        if state is not None:
            return Outcome.COMMITTED if state is TxnState.COMMITTED else Outcome.ABORTED
        markers = self.wh.read(MARKERS, filter=pc.field("k") == txn)
        return Outcome.COMMITTED if markers.num_rows else Outcome.ABORTED

    def settle_writer(self, writer: str, timeout_s: float, *, by: str = "killer") -> dict[int, Outcome]:
        """Journal the outcome of every intent of a dead ``writer``; an intent still open in the metastore (the
        process died before or during its commit) is waited for until housekeeping aborts it."""
        deadline = time.monotonic() + timeout_s
        settled: dict[int, Outcome] = {}
        for txn in self.refresh().unresolved(writer):
            while (outcome := self.outcome_now(txn)) is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"transaction {txn} of dead {writer} is still open after {timeout_s:g} s; "
                                       "is the HouseKeeper running?")
                time.sleep(0.2)
            self.journal.append({"kind": Kind.RESOLVED.value, "txn": txn, "outcome": outcome.value, "by": by})
            settled[txn] = outcome
        self.refresh()
        return settled

    def expected(self, table: str, txns: ValidTxnList) -> tuple[Counter, list[str]]:
        """The rows ``table`` must show at a snapshot with ``txns``, and problems met while working it out."""
        problems: list[str] = []
        model = self.refresh()
        while True:
            try:
                if table == MARKERS:
                    return model.markers_at(txns.is_txn_valid), problems
                return model.table_at(txns.is_txn_valid), problems
            except UnresolvedIntent as unresolved:
                outcome = self.outcome_now(unresolved.txn)
                if outcome is None:
                    problems.append(f"transaction {unresolved.txn} is valid in snapshot {txns.to_string()} but "
                                    "still open in the metastore")
                    outcome = Outcome.ABORTED
                model.settle(unresolved.txn, outcome)


@dataclass
class ReadReport:
    """One checked read: which table, at which snapshot, how many rows, and the broken invariants found."""

    table: str
    txn_id: int | None
    rows: int = 0
    selected_files: int = 0
    problems: list[str] = field(default_factory=list)
    timed_out: bool = False
    """The reader's txn was aborted for missing heartbeats while held: nothing protected its files, no check."""


def selection(wh: AcidWarehouse, target: PartitionTarget, write_ids: ValidWriteIdList,
              txns: ValidTxnList) -> AcidState:
    """getAcidState of one partition directory for one snapshot (an empty directory when it does not exist)."""
    storage = storage_for(target.location, wh.filesystem)
    try:
        files = storage.list_files()
    except FileNotFoundError:
        files = []
    return get_acid_state(files, write_ids, txns, metadata_reader=lambda p: storage.read_bytes(p).decode())


def selected_files(wh: AcidWarehouse, snap: ReadSnapshot) -> list[str]:
    """Every data file an open snapshot selects (base and delta bucket files, original files), as full paths."""
    out = []
    for target in snap.targets:
        storage = storage_for(target.location, wh.filesystem)
        state = selection(wh, target, snap.write_ids, snap.txns)
        entries = list(state.deltas) + ([state.base_directory] if state.base_directory is not None else [])
        out += [storage.full_path(f.path) for e in entries for f in (*e.files, *e.original_files)]
        out += [storage.full_path(f.path) for f in state.originals]
    return out


def snapshot_rows(wh: AcidWarehouse, snap: ReadSnapshot) -> Counter:
    """What an open snapshot returns, as a multiset of row tuples in the model's column order."""
    names = ["k", "slot"] if snap.info.full_name == MARKERS else ["k", "v", "w", "p"]
    rows: Counter = Counter()
    for target in snap.targets:
        part = wh.io.read_partition(snap.info, target, snap.write_ids, snap.txns)
        rows.update(zip(*(part.column(n).to_pylist() for n in names)))
    return rows


def check_held_read(wh: AcidWarehouse, reference: Reference, table: str, hold: Callable[[], object]) -> ReadReport:
    """Open a snapshot of ``table``, note the files it selects, ``hold()`` it, read it, and check that the read
    equals the model at that snapshot and that every selected file still exists while the snapshot is open."""
    report = ReadReport(table, None)
    info = wh.transactional_table(table)
    with wh.read_snapshot(info) as snap:
        report.txn_id = snap.txn_id
        files = selected_files(wh, snap)
        report.selected_files = len(files)
        hold()
        try:
            actual = snapshot_rows(wh, snap)
            failure = None
        except Exception as exc:  # noqa: BLE001 - an open snapshot must always be readable
            actual, failure = None, f"{type(exc).__name__}: {exc}"
        gone = [f for f in files if not os.path.exists(f)]
        state = wh.metastore.txns.txn_state(snap.txn_id)
        if state is not TxnState.OPEN:
            if timed_out(wh, snap.txn_id):
                report.timed_out = True
                return report
            report.problems.append(f"reader txn {snap.txn_id} on {table} ended ({state}) while it was held")
    if failure is not None:
        report.problems.append(f"read of {table} at {snap.txns.to_string()} (reader txn {snap.txn_id}) failed: "
                               f"{failure}")
    if gone:
        report.problems.append(f"{len(gone)} file(s) selected by open reader txn {snap.txn_id} on {table} were "
                               f"deleted before it closed, e.g. {gone[:3]}")
    expected, problems = reference.expected(table, snap.txns)
    report.problems += problems
    if actual is not None:
        report.rows = sum(actual.values())
        if actual != expected:
            report.problems.append(f"read of {table} by txn {snap.txn_id} at snapshot {snap.txns.to_string()} "
                                   f"({snap.write_ids.to_string()}) differs from the model: "
                                   f"{describe_difference(actual, expected)}")
    return report


def leftover_directories(wh: AcidWarehouse, table: str) -> dict[str, list[str]]:
    """Per partition location: directories a fresh snapshot calls obsolete or aborted, and hidden temporary
    directories (``_tmp…``) — after the final compaction and cleaning there must be none."""
    info = wh.table(table)
    txns = wh.metastore.snapshots.valid_txn_list()
    write_ids = wh.metastore.snapshots.valid_write_id_list(info.full_name, txns)
    out = {}
    for target in wh.io.partition_targets(info):
        state = selection(wh, target, write_ids, txns)
        storage = storage_for(target.location, wh.filesystem)
        hidden = [p.rsplit("/", 1)[-1] for p in storage.fs.ls(storage.root, detail=False)
                  if p.rsplit("/", 1)[-1].startswith("_tmp")] if storage.fs.exists(storage.root) else []
        left = [f"obsolete {d}" for d in state.obsolete] + [f"aborted {d}" for d in state.aborted] + \
               [f"temporary {d}" for d in hidden]
        if left:
            out[target.location] = left
    return out


__all__ = ["ReadReport", "Reference", "check_held_read", "leftover_directories", "selected_files", "selection",
           "snapshot_rows"]
