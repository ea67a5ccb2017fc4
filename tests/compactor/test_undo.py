"""Issue 30 item 2, the undo window: with delayed cleanup the Cleaner keeps a compaction's inputs for the retention
time, and inside that window ``undo`` aborts the compaction's output so the old files are current again — refused
when it would lose data (REBALANCE followed by deletes/updates, a later compaction built on it) or is too late. Readers
and writers keep working throughout. On SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import dataclasses
import os

import pyarrow.compute as pc
import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import get_acid_state
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.undo import RemovalStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.errors import UndoRefusedError
from airflow_acid.metastore.schema import COMPACTION_QUEUE, TXN_COMPONENTS
from airflow_acid.services import undo_compaction
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import CONF, acid_dirs, enqueue, history, make_warehouse, new_table, rows

HOUR_MS = 3_600_000
WINDOW = dataclasses.replace(CONF, delayed_cleanup_enabled=True, cleaner_retention_time_s=3600.0)


@pytest.fixture
def uwh(empty_db_url, tmp_path):
    """A warehouse whose Cleaner keeps obsolete directories for an hour (the undo window)."""
    w = make_warehouse(empty_db_url, tmp_path / "wh", WINDOW)
    yield w
    w.metastore.close()


def _compact(wh, kind: str, table: str = "db.t") -> int:
    cq = enqueue(wh, kind, table)
    outcome = Worker(wh.metastore, runner=LocalRunner()).run_next()
    assert outcome.status == WorkerStatus.COMPACTED, outcome.message
    return cq


def _output(location: str, txn_id: int) -> list[str]:
    return [d for d in acid_dirs(location) if d.endswith(f"_v{txn_id:07d}")]


def _age(wh, cq: int, ms: int) -> None:
    """Move the compaction's commit ``ms`` into the past (as if the window had been running that long)."""
    cq_table = COMPACTION_QUEUE
    wh.metastore.db.run(lambda conn: conn.execute(sa.update(cq_table).where(cq_table.c.CQ_ID == cq).values(
        CQ_COMMIT_TIME=cq_table.c.CQ_COMMIT_TIME - ms)))


def _refused(wh, cq: int) -> str:
    result = undo_compaction(wh, cq, user="ops")
    assert result.undone is False and result.removed == [] and result.waiting_for == []
    return result.message


def test_major_then_undo_reads_the_pre_compaction_files_and_later_writes_stay(uwh):
    wh, ms = uwh, uwh.metastore
    info = new_table(wh)
    history(wh)
    before_dirs = acid_dirs(info.location)
    model = rows(wh)
    cq = _compact(wh, "major")
    c = ms.compactions.get(cq).txn_id
    assert _output(info.location, c) and rows(wh) == model
    with wh.transaction() as t:  # writes after the compaction: an insert, and a delete of a compacted row
        t.insert("db.t", [{"id": 500, "name": "later"}])
    with wh.transaction() as t:
        t.delete("db.t", where=pc.field("id") == 20)
    model = sorted([r for r in model if r[0] != 20] + [(500, "later")])
    assert rows(wh) == model

    result = undo_compaction(wh, cq, user="ops")
    assert result.undone is True and result.waiting_for == [], result.message
    assert [os.path.basename(p) for p in result.removed] == [f"base_0000005_v{c:07d}"]
    assert _output(info.location, c) == [] and set(before_dirs) <= set(acid_dirs(info.location))
    assert rows(wh) == model  # the old deltas are current again, the later writes are still there
    with wh.read_snapshot(info) as snap:
        state = get_acid_state(storage_for(info.location).list_files(), snap.write_ids, snap.txns)
        assert state.base is None and len(state.deltas) == len(acid_dirs(info.location))
    done = ms.compactions.get(cq)
    assert done.state is CompactionState.ABORTED and done.error_message.startswith("Undone by ops")
    assert ms.txns.txn_state(c) is TxnState.ABORTED
    assert ms.undo.pending() == []  # output gone: C's component row went with it
    assert ms.db.run(lambda conn: conn.execute(sa.select(sa.func.count()).select_from(TXN_COMPONENTS).where(
        TXN_COMPONENTS.c.TC_TXNID == c)).scalar_one()) == 0
    report = Cleaner(ms).run_cycle()  # nothing of the old files is obsolete any more
    assert report.entries == [] and report.undone == [] and rows(wh) == model
    assert "already undone" in _refused(wh, cq)
    # the table compacts again normally afterwards
    again = _compact(wh, "major")
    assert rows(wh) == model and ms.compactions.get(again).state is CompactionState.READY_FOR_CLEANING


def test_a_reader_open_across_the_undo_keeps_the_output_until_it_ends(uwh):
    wh, ms = uwh, uwh.metastore
    info = new_table(wh)
    history(wh)
    model = rows(wh)
    cq = _compact(wh, "minor")
    c = ms.compactions.get(cq).txn_id
    output = _output(info.location, c)
    assert output
    with wh.read_snapshot(info) as reader:  # selected the compaction's output before the undo
        result = undo_compaction(wh, cq, user="ops")
        assert result.undone is True and result.waiting_for == [reader.txn_id] and result.removed == []
        assert f"transaction(s) {reader.txn_id}" in result.message
        assert _output(info.location, c) == output
        read_again = wh.io.read_partition(reader.info, reader.targets[0], reader.write_ids, reader.txns)
        assert sorted(tuple(r.values()) for r in read_again.to_pylist()) == model
        assert rows(wh) == model  # a new reader selects the old deltas
        report = Cleaner(ms).run_cycle()
        assert [(u.compaction_id, u.status) for u in report.undone] == [(cq, RemovalStatus.WAITING)]
        assert _output(info.location, c) == output
    report = Cleaner(ms).run_cycle()
    assert [(u.compaction_id, u.status) for u in report.undone] == [(cq, RemovalStatus.REMOVED)]
    assert _output(info.location, c) == [] and rows(wh) == model and ms.undo.pending() == []


def test_the_cleaner_deletes_after_the_window_and_not_before(uwh):
    wh, ms = uwh, uwh.metastore
    info = new_table(wh)
    history(wh)
    inputs = acid_dirs(info.location)
    cq = _compact(wh, "major")
    cleaner = Cleaner(ms)
    report = cleaner.run_cycle()
    assert report.entries == [] and [w.compaction_id for w in report.waiting] == [cq]
    assert "hive.compactor.cleaner.retention.time.seconds=3600 s" in report.waiting[0].message
    assert set(inputs) < set(acid_dirs(info.location))
    _age(wh, cq, HOUR_MS - 60_000)  # a minute left
    assert Cleaner(ms).run_cycle().entries == [] and set(inputs) < set(acid_dirs(info.location))
    _age(wh, cq, 120_000)  # a minute past
    report = Cleaner(ms).run_cycle()
    assert [(e.compaction_id, e.status) for e in report.entries] == [(cq, CleanerStatus.CLEANED)]
    assert set(inputs).isdisjoint(acid_dirs(info.location))
    assert "already cleaned" in _refused(wh, cq)


def test_undo_is_refused_when_it_would_lose_data_or_is_too_late(uwh):
    wh, ms = uwh, uwh.metastore
    new_table(wh)
    history(wh)
    # the window passed (the Cleaner has not got to it yet)
    first = _compact(wh, "major")
    _age(wh, first, HOUR_MS + 1000)
    assert "undo window (3600 s after its commit) ended" in _refused(wh, first)
    assert ms.compactions.get(first).state is CompactionState.READY_FOR_CLEANING
    Cleaner(ms).run_cycle()
    # a later compaction built on it
    with wh.transaction() as t:
        t.insert("db.t", [{"id": 600, "name": "x"}])
    major = _compact(wh, "major")
    for i in (601, 602):
        with wh.transaction() as t:
            t.insert("db.t", [{"id": i, "name": "y"}])
    minor = _compact(wh, "minor")
    assert f"the later MINOR compaction {minor} of db.t (ready for cleaning) is built on its output" in \
        _refused(wh, major)
    # the Cleaner started on it
    ms.cleaning.mark_cleaner_start(minor)
    assert "the Cleaner has already started" in _refused(wh, minor)
    # not 'ready for cleaning'
    with wh.transaction() as t:
        t.insert("db.t", [{"id": 603, "name": "q"}])
    queued = enqueue(wh, "major")
    assert "is 'initiated'" in _refused(wh, queued)
    with pytest.raises(UndoRefusedError, match="initiated"):
        ms.undo.undo(queued, user="ops")
    # delayed cleanup off: no window at all
    off = ms.with_conf(CONF)
    with pytest.raises(UndoRefusedError, match="no undo window, delayed cleanup is off"):
        off.undo.undo(major, user="ops")


def test_rebalance_undo_is_refused_once_a_later_write_deletes(uwh):
    wh = uwh
    new_table(wh)
    history(wh)
    model = rows(wh)
    inserts_only = _compact(wh, "rebalance")
    with wh.transaction() as t:  # inserts alone name no ROW__ID of the rebalanced base
        t.insert("db.t", [{"id": 700, "name": "z"}])
    result = undo_compaction(wh, inserts_only, user="ops")
    assert result.undone is True, result.message
    assert rows(wh) == sorted(model + [(700, "z")])

    rebalanced = _compact(wh, "rebalance")
    with wh.transaction() as t:
        t.delete("db.t", where=pc.field("id") == 700)
    message = _refused(wh, rebalanced)
    assert "REBALANCE that gave every row a new ROW__ID" in message and "committed updates or deletes" in message
    assert rows(wh) == model

    with wh.transaction() as t:
        t.insert("db.t", [{"id": 701, "name": "w"}])
    again = _compact(wh, "rebalance")
    writer = wh.transaction()  # opened after the rebalance: it may yet update/delete by the new ROW__IDs
    try:
        writer.insert("db.t", [{"id": 702, "name": "v"}])
        assert f"the transaction {writer.txn_id}, opened after it and still open" in _refused(wh, again)
    finally:
        writer.abort()
    reader = wh.read_snapshot(wh.table("db.t")).__enter__()  # readers do not stand in the way
    try:
        assert undo_compaction(wh, again, user="ops").undone is True
    finally:
        reader.__exit__(None, None, None)
    assert rows(wh) == sorted(model + [(701, "w")])


def test_cleaning_an_earlier_compaction_leaves_undone_output_that_a_reader_still_reads(uwh):
    """The earlier compaction's cleaning snapshot sees C aborted, so its ``_vC`` output looks like aborted output to
    delete; while a reader that selected it is open the Cleaner leaves it alone."""
    wh, ms = uwh, uwh.metastore
    info = new_table(wh)
    history(wh)
    earlier = _compact(wh, "minor")
    for i in (800, 801):
        with wh.transaction() as t:
            t.insert("db.t", [{"id": i, "name": "late"}])
    model = rows(wh)
    undone = _compact(wh, "major")
    c = ms.compactions.get(undone).txn_id
    output = _output(info.location, c)
    with wh.read_snapshot(info) as reader:
        assert undo_compaction(wh, undone, user="ops").waiting_for == [reader.txn_id]
        _age(wh, earlier, HOUR_MS + 1000)
        report = Cleaner(ms).run_cycle()
        assert [e.compaction_id for e in report.entries] == [earlier]
        assert not any(d.path in output for e in report.entries for d in e.deletions)
        assert _output(info.location, c) == output
        read_again = wh.io.read_partition(reader.info, reader.targets[0], reader.write_ids, reader.txns)
        assert sorted(tuple(r.values()) for r in read_again.to_pylist()) == model
        assert rows(wh) == model
    report = Cleaner(ms).run_cycle()
    assert [(u.compaction_id, u.status) for u in report.undone] == [(undone, RemovalStatus.REMOVED)]
    assert _output(info.location, c) == [] and rows(wh) == model
