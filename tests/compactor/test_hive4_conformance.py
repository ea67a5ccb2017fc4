"""Hive 4 compactor scenarios (issue 14 item 5) on SQLite, PostgreSQL and MariaDB: a partition written under a
differently cased key name, insert-only compaction switched off in the Worker, the Cleaner's view capped at the
row's highest write id (HIVE-27526), and the ABORT_TXN_CLEANUP retry row of a failed aborted-write cleanup
(HIVE-27020)."""

from __future__ import annotations

import dataclasses
import time

import pyarrow as pa
import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionState, CompactionType, LockType, OperationType, TxnState
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.metastore.schema import COMPACTION_QUEUE, COMPLETED_TXN_COMPONENTS, TXN_COMPONENTS
from airflow_acid.services.explain import explain
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import (
    CONF,
    acid_dirs,
    enqueue,
    hidden_dirs,
    leave_aborted_insert,
    new_table,
    rows,
)


def _count(ms, table, *where) -> int:
    return ms.db.run(lambda conn: conn.execute(sa.select(sa.func.count()).select_from(table).where(*where))
                     .scalar_one())


def _insert(wh, table: str, ids, partition: dict | None = None) -> None:
    with wh.transaction() as t:
        t.insert(table, [{"id": i, "name": f"n{i}"} for i in ids], partition)


# --- partition names as Hive records them ----------------------------------------------------------------


def _hive_client_insert(wh, table: str, partition_name: str, location: str, ids) -> int:
    """A write as a Hive client sends it: open txn, write id, a SHARED_WRITE lock naming the partition with the
    key spelled as the user typed it (``dS=ToDay``), the delta files, commit. Returns the write id."""
    ms = wh.metastore
    info = wh.table(table)
    txn = ms.txns.open_txn(user="hive", host="hs2")
    write_id = ms.txns.allocate_write_ids(txn, info.database, info.name)
    ms.locks.lock([LockComponent(info.database, info.name, partition_name, LockType.SHARED_WRITE,
                                 OperationType.INSERT)], txn_id=txn, user="hive", host="hs2")
    data = pa.Table.from_pylist([{"id": i, "name": f"n{i}"} for i in ids], schema=wh.io.data_schema(info))
    write_statement(location, write_id, 0, wh.io.data_schema(info), inserts=data)
    ms.txns.commit(txn)
    return write_id


def test_partition_written_with_a_differently_cased_key_is_compacted_and_cleaned(wh):
    ms = wh.metastore
    wh.create_table("db.p", [("id", "int"), ("name", "string")], partition_by=[("ds", "string")])
    _insert(wh, "db.p", [0], {"ds": "ToDay"})  # creates partition ds=ToDay
    location = ms.catalog.get_partition("db", "p", "ds=ToDay").location
    for i in range(1, 4):
        _hive_client_insert(wh, "db.p", "dS=ToDay", location, [i])
    before = rows(wh, "db.p")
    assert [r[0] for r in before] == [0, 1, 2, 3]
    assert _count(ms, COMPLETED_TXN_COMPONENTS, COMPLETED_TXN_COMPONENTS.c.CTC_PARTITION != "ds=ToDay") == 0

    report = Initiator(ms, dataclasses.replace(CONF, delta_num_threshold=2), host="inithost").run_cycle()
    assert [(r.partition, r.outcome.display) for r in report.results] == [("ds=ToDay", "queued")], report.to_dict()
    why = explain(wh, "db.p", "dS=ToDay")
    assert why.decision["outcome"] == "queued" and not any("dropped" in s for s in why.summary)

    outcome = Worker(ms, runner=LocalRunner()).run_next()
    assert outcome.status == WorkerStatus.COMPACTED, outcome.message
    cleaned = Cleaner(ms).run_cycle()
    assert [(e.compaction_id, e.status) for e in cleaned.entries] == [(outcome.compaction_id, CleanerStatus.CLEANED)]
    assert len(acid_dirs(location)) == 1 and acid_dirs(location)[0].endswith(f"_v{outcome.txn_id:07d}")
    assert ms.compactions.get(outcome.compaction_id).state is CompactionState.SUCCEEDED
    assert _count(ms, COMPLETED_TXN_COMPONENTS) == 0
    assert rows(wh, "db.p") == before


# --- hive.compactor.compact.insert.only in the Worker ------------------------------------------------------


def test_worker_fails_insert_only_compaction_when_insert_only_compaction_is_off(wh):
    ms = wh.metastore
    info = wh.create_table("db.mm", [("id", "int"), ("name", "string")], transactional_properties="insert_only")
    for i in range(3):
        _insert(wh, "db.mm", [i])
    dirs, before = acid_dirs(info.location), rows(wh, "db.mm")
    cq = enqueue(wh, "major", "db.mm")  # a manual request: the Initiator's own check does not apply
    off = dataclasses.replace(CONF, compact_insert_only=False)
    outcome = Worker(ms, off, runner=LocalRunner()).run_next()
    assert outcome.status == WorkerStatus.FAILED
    assert "hive.compactor.compact.insert.only=false" in outcome.message and "db.mm" in outcome.message
    row = ms.compactions.get(cq)
    assert row.state is CompactionState.FAILED and "hive.compactor.compact.insert.only=false" in row.error_message
    assert ms.txns.txn_state(outcome.txn_id) is TxnState.ABORTED
    assert acid_dirs(info.location) == dirs and hidden_dirs(info.location) == []
    assert rows(wh, "db.mm") == before
    # switched back on, the same request compacts
    enqueue(wh, "major", "db.mm")
    assert Worker(ms, CONF, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    assert rows(wh, "db.mm") == before


# --- the Cleaner's view is capped at the row's highest write id (HIVE-27526) ----------------------------------


def test_a_later_compaction_does_not_keep_an_earlier_row_ready_for_cleaning(wh):
    """Minor A (write ids 1-3) is cleanable; minor B (1-5, over A's output) is not, because a reader opened
    between them. Cleaning A must delete exactly A's inputs and finish, although B's delta (visible to a view that
    ignores the compaction txn gate) covers A's output."""
    ms = wh.metastore
    info = new_table(wh)
    for i in range(3):
        _insert(wh, "db.t", [i])
    cq_a = enqueue(wh, "minor")
    a = Worker(ms, runner=LocalRunner()).run_next()
    assert a.status == WorkerStatus.COMPACTED
    reader = wh.read_snapshot(info).__enter__()
    try:
        seen = sorted(tuple(r.values()) for r in wh.io.read_partition(
            reader.info, reader.targets[0], reader.write_ids, reader.txns).to_pylist())
        for i in range(3, 5):
            _insert(wh, "db.t", [i])
        cq_b = enqueue(wh, "minor")
        b = Worker(ms, runner=LocalRunner()).run_next()
        assert b.status == WorkerStatus.COMPACTED and b.outputs == (f"delta_0000001_0000005_v{b.txn_id:07d}",)

        report = Cleaner(ms).run_cycle()
        assert [(e.compaction_id, e.status) for e in report.entries] == [(cq_a, CleanerStatus.CLEANED)], \
            [e.message for e in report.entries]
        assert sorted(d.path for d in report.entries[0].deletions) == [
            "delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000003_0000003_0000"]
        assert ms.compactions.get(cq_a).state is CompactionState.SUCCEEDED
        assert [w.compaction_id for w in report.waiting] == [cq_b]
        assert reader.txn_id in [blocker.txn_id for blocker in report.waiting[0].blockers]
        assert acid_dirs(info.location) == [f"delta_0000001_0000003_v{a.txn_id:07d}", "delta_0000001_0000005_v"
                                            f"{b.txn_id:07d}", "delta_0000004_0000004_0000",
                                            "delta_0000005_0000005_0000"]
        again = sorted(tuple(r.values()) for r in wh.io.read_partition(
            reader.info, reader.targets[0], reader.write_ids, reader.txns).to_pylist())
        assert again == seen
    finally:
        reader.__exit__(None, None, None)
    report = Cleaner(ms).run_cycle()
    assert [(e.compaction_id, e.status) for e in report.entries] == [(cq_b, CleanerStatus.CLEANED)]
    assert acid_dirs(info.location) == [f"delta_0000001_0000005_v{b.txn_id:07d}"]
    assert [r[0] for r in rows(wh)] == [0, 1, 2, 3, 4]


# --- ABORT_TXN_CLEANUP retry rows (HIVE-27020) ---------------------------------------------------------------


def _abort_rows(ms):
    return ms.compactions.find(type=CompactionType.ABORT_TXN_CLEANUP)


def test_failed_aborted_write_cleanup_leaves_a_retry_row_that_backs_off_and_goes_on_success(wh, monkeypatch):
    ms = wh.metastore
    info = new_table(wh)
    _insert(wh, "db.t", [1])
    aborted = [leave_aborted_insert(wh, ids=(900 + i,)) for i in range(3)]
    conf = dataclasses.replace(CONF, abortedtxn_threshold=2, cleaner_retry_retention_s=1.0)
    cleaner = Cleaner(ms, conf)
    dirs = acid_dirs(info.location)

    def broken(*args, **kwargs):
        raise PermissionError("[Errno 13] Permission denied: 'delta_0000002_0000002_0000'")

    monkeypatch.setattr("airflow_acid.compactor.cleaner._delete", broken)
    [first] = cleaner.clean_aborted()
    assert first.status == CleanerStatus.RETRY and "Permission denied" in first.message
    [row] = _abort_rows(ms)
    assert first.retry_id == row.id and f"row {row.id}" in first.message
    assert (row.state, row.type, row.retry_retention) == (CompactionState.READY_FOR_CLEANING,
                                                          CompactionType.ABORT_TXN_CLEANUP, 1000)
    assert "Permission denied" in row.error_message and row.commit_time is not None
    [shown] = ms.compactions.show_compactions(type="ABORT_TXN_CLEANUP")
    assert (shown.compactionid, shown.type, shown.state) == (row.id, "ABORT_TXN_CLEANUP", "ready for cleaning")
    assert "Permission denied" in shown.errormessage
    # inside the retry delay the entity is not attempted; the compaction cleaner ignores the row
    report = cleaner.run_cycle()
    assert report.abort_cleanups == [] and report.entries == [] and report.waiting == []
    assert "retried" in cleaner.clean(row.id, dry_run=True).message

    def wait_and_clean():
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            entries = cleaner.clean_aborted()
            if entries:
                return entries
            time.sleep(0.05)
        raise AssertionError("the retry delay never passed")

    [second] = wait_and_clean()
    assert second.status == CleanerStatus.RETRY and second.retry_id == row.id
    [row2] = _abort_rows(ms)
    assert (row2.id, row2.retry_retention, row2.commit_time) == (row.id, 2000, row.commit_time)
    assert acid_dirs(info.location) == dirs

    monkeypatch.undo()
    [third] = wait_and_clean()
    assert third.status == CleanerStatus.CLEANED, third.message
    assert sorted(d.path for d in third.deletions) == ["delta_0000002_0000002_0000", "delta_0000003_0000003_0000",
                                                       "delta_0000004_0000004_0000"]
    assert _abort_rows(ms) == [] and _count(ms, COMPACTION_QUEUE) == 0
    assert _count(ms, TXN_COMPONENTS, TXN_COMPONENTS.c.TC_TXNID.in_(aborted)) == 0
    assert [r[0] for r in rows(wh)] == [1]


def test_a_cleaned_compaction_removes_the_retry_row_of_its_entity(sqlite_wh, monkeypatch):
    wh = sqlite_wh
    ms = wh.metastore
    new_table(wh)
    _insert(wh, "db.t", [1])
    _insert(wh, "db.t", [2])
    for i in range(3):
        leave_aborted_insert(wh, ids=(900 + i,))
    cleaner = Cleaner(ms, dataclasses.replace(CONF, abortedtxn_threshold=2, cleaner_retry_retention_s=3600))
    def broken(*args, **kwargs):
        raise OSError("disk went away")

    monkeypatch.setattr("airflow_acid.compactor.cleaner._delete", broken)
    assert [e.status for e in cleaner.clean_aborted()] == [CleanerStatus.RETRY]
    assert len(_abort_rows(ms)) == 1
    monkeypatch.undo()
    cq = enqueue(wh, "major")
    assert Worker(ms, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    report = cleaner.run_cycle()
    assert [(e.compaction_id, e.status) for e in report.entries] == [(cq, CleanerStatus.CLEANED)]
    assert _abort_rows(ms) == [] and report.abort_cleanups == []
    assert [r[0] for r in rows(wh)] == [1, 2]
