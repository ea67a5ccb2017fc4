"""Operator actions (issue 31 item 3) on SQLite, PostgreSQL and MariaDB: abort an 'initiated' or a 'working'
compaction (the running job never commits), the refusals with their reasons, requeue a failed or refused one under
Hive's duplicate rule, and what a transaction blocks before it is aborted."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from airflow_acid.acid.codes import CompactionState, CompactionType, LockState, LockType, OperationType, TxnState
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.compaction_actions import abort_message
from airflow_acid.metastore.errors import InvalidInputError, NoSuchObjectError, NoSuchTxnError
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.services import (
    abort_compaction,
    abort_transaction,
    requeue_compaction,
    transaction_blocking,
)
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import acid_dirs, enqueue, history, make_warehouse, new_table, rows


@pytest.fixture
def wh(empty_db_url, tmp_path):
    w = make_warehouse(empty_db_url, tmp_path / "wh")
    yield w
    w.metastore.close()


@dataclasses.dataclass
class AbortingRunner(LocalRunner):
    """Runs the job, then (while the Worker still holds the row 'working') lets an operator act, as if the abort
    came while Spark was running."""

    meanwhile: Callable[[], Any] | None = None

    def run(self, plan, *, job_name, spark_conf):
        result = super().run(plan, job_name=job_name, spark_conf=spark_conf)
        assert self.meanwhile is not None
        self.meanwhile()
        return result


def test_abort_an_initiated_compaction_no_worker_runs_it(wh):
    ms = wh.metastore
    new_table(wh)
    history(wh)
    cq = enqueue(wh, "major")
    done = abort_compaction(ms, cq, user="ops")
    assert (done.aborted, done.was, done.txn_id) == (True, "initiated", None)
    assert done.message == f"MAJOR compaction {cq} of db.t is aborted (it was 'initiated'); no worker will run it"
    info = ms.compactions.get(cq)
    assert info.state is CompactionState.ABORTED and info.error_message == abort_message(
        "ops", CompactionState.INITIATED)
    assert info.error_message.startswith("Compaction aborted by ABORT COMPACTIONS request. By ops")
    outcomes, not_claimed = Worker(ms, runner=LocalRunner()).claim_and_compact([cq])
    assert (outcomes, not_claimed) == ([], {cq: "'aborted'"})

    again = abort_compaction(ms, cq, user="ops")
    assert (again.aborted, again.message) == (False, f"compaction {cq} has finished as 'aborted'; only 'initiated' "
                                                     "or 'working' compactions can be aborted")
    with pytest.raises(NoSuchObjectError, match="compaction 9999 does not exist"):
        abort_compaction(ms, 9999, user="ops")


def test_abort_a_working_compaction_its_job_never_commits(wh):
    ms = wh.metastore
    info = new_table(wh)
    history(wh)
    before, model = acid_dirs(info.location), rows(wh)
    cq = enqueue(wh, "major")
    answers = []
    runner = AbortingRunner(meanwhile=lambda: answers.append(abort_compaction(ms, cq, user="ops")))
    outcome = Worker(ms, runner=runner).run_next()

    (answer,) = answers
    txn = answer.txn_id
    assert (answer.aborted, answer.was) == (True, "working") and txn is not None
    assert f"its compactor transaction {txn} is aborted, so its Spark job can never commit" in answer.message
    assert outcome.status is WorkerStatus.ABORTED, outcome.message
    assert f"compaction {cq} of db.t was aborted while this worker ran" in outcome.message
    assert ms.compactions.get(cq).state is CompactionState.ABORTED
    assert ms.txns.txn_state(txn) is TxnState.ABORTED
    assert acid_dirs(info.location) == before  # the job's output is gone, nothing was committed
    assert rows(wh) == model
    assert ms.locks.show_locks() == []  # C's lock went with it


def test_abort_a_claimed_compaction_before_its_transaction_opens(wh):
    ms = wh.metastore
    new_table(wh)
    history(wh)
    cq = enqueue(wh, "minor")
    assert ms.compactions.claim(cq, "otherhost-3") is not None
    done = abort_compaction(ms, cq, user="ops")
    assert (done.aborted, done.was, done.txn_id) == (True, "working", None)
    assert done.message.endswith("the Worker had not opened its compactor transaction yet and stops before running "
                                 "the job")
    with pytest.raises(InvalidInputError, match=f"compaction {cq} of db.t is 'aborted', not 'working'"):
        Worker(ms, runner=LocalRunner()).compact(cq)


def test_abort_is_refused_for_a_compaction_ready_for_cleaning(wh):
    ms = wh.metastore
    new_table(wh)
    history(wh)
    cq = enqueue(wh, "major")
    assert Worker(ms, runner=LocalRunner()).run_next().status is WorkerStatus.COMPACTED
    refused = abort_compaction(ms, cq, user="ops")
    assert refused.aborted is False and refused.message == (
        f"compaction {cq} of db.t is 'ready for cleaning': its output is committed, so it cannot be aborted; undo it "
        f"instead while it is inside its undo window (airflow-acid compaction undo {cq}, or Undo in the console)")
    assert ms.compactions.get(cq).state is CompactionState.READY_FOR_CLEANING


def test_requeue_a_failed_or_refused_compaction(wh):
    ms = wh.metastore
    new_table(wh, partition_by=[("ds", "string")])
    history(wh, partition={"ds": "a"})
    history(wh, partition={"ds": "b"}, batches=1)
    failed = enqueue(wh, "major", partition="ds=a", pool="big", properties={"compactor.mapreduce.map.memory": "2048"})
    ms.compactions.claim(failed, "w-1")
    ms.compactions.mark_failed(failed, "boom")
    refused = enqueue(wh, "minor", partition="ds=b")
    ms.compactions.mark_refused(refused, "nothing to do")

    done = requeue_compaction(ms, failed, initiator_id="host-ui:admin")
    assert done.requeued is True and done.new_compaction_id is not None
    assert done.message == (f"MAJOR compaction {failed} of db.t/ds=a ('failed') is requeued as compaction "
                            f"{done.new_compaction_id} ('initiated')")
    new = ms.compactions.get(done.new_compaction_id)
    assert (new.state, new.type, new.partition, new.pool_name, new.properties, new.initiator_id) == (
        CompactionState.INITIATED, CompactionType.MAJOR, "ds=a", "big", {"compactor.mapreduce.map.memory": "2048"},
        "host-ui:admin")
    assert ms.compactions.get(failed).state is CompactionState.FAILED  # the history keeps the failure

    twice = requeue_compaction(ms, failed, initiator_id="host-ui:admin")  # Hive: one scheduled compaction at a time
    assert (twice.requeued, twice.new_compaction_id) == (False, None)
    assert twice.message == (f"compaction {failed} of db.t/ds=a is not requeued: Compaction is already scheduled "
                             f"with state='initiated' and id={done.new_compaction_id}")
    still_queued = requeue_compaction(ms, done.new_compaction_id, initiator_id="x")
    assert (still_queued.requeued, still_queued.message) == (False, (
        f"compaction {done.new_compaction_id} of db.t/ds=a is still in the queue as 'initiated': only a 'failed' "
        "or 'refused' compaction can be requeued"))
    assert abort_compaction(ms, done.new_compaction_id, user="ops").aborted
    aborted = requeue_compaction(ms, done.new_compaction_id, initiator_id="x")
    assert aborted.message == (f"compaction {done.new_compaction_id} of db.t/ds=a is 'aborted': only a 'failed' or "
                               "'refused' compaction can be requeued")

    again = requeue_compaction(ms, refused, initiator_id="host-cli:ops")
    assert again.requeued and ms.compactions.get(again.new_compaction_id).type is CompactionType.MINOR

    with pytest.raises(NoSuchObjectError):
        requeue_compaction(ms, 9999, initiator_id="x")


def test_requeue_is_refused_when_the_partition_is_gone(wh, monkeypatch):
    """On a Hive metastore the partition can go (HMS DDL) while the history keeps the failed row."""
    ms = wh.metastore
    new_table(wh, partition_by=[("ds", "string")])
    history(wh, partition={"ds": "a"})
    failed = enqueue(wh, "major", partition="ds=a")
    ms.compactions.mark_failed(failed, "boom")

    def gone(database, table, spec):
        raise NoSuchObjectError(f"partition {spec} of {database}.{table} does not exist")

    monkeypatch.setattr(ms.catalog, "get_partition", gone)
    refused = requeue_compaction(ms, failed, initiator_id="x")
    assert (refused.requeued, refused.message) == (False, "partition ds=a of db.t does not exist; there is nothing "
                                                          "to requeue")
    assert [c.id for c in ms.compactions.find(state=CompactionState.INITIATED)] == []


def test_what_a_transaction_blocks_and_aborting_it(wh):
    ms = wh.metastore
    new_table(wh)
    history(wh)
    reader = ms.txns.open_txn(user="analyst", host="bi-host")
    ms.locks.lock([LockComponent("db", "t", lock_type=LockType.SHARED_READ, operation=OperationType.SELECT)],
                  txn_id=reader, user="analyst", host="bi-host")
    cq = enqueue(wh, "major")
    assert Worker(ms, runner=LocalRunner()).run_next().status is WorkerStatus.COMPACTED
    other = ms.txns.open_txn(user="other", host="h2")  # opened after the compaction committed: blocks nothing
    writer = wh.transaction()
    writer.insert("db.t", [{"id": 7000, "name": "pending"}])
    waiting = ms.locks.lock([LockComponent("db", "t", lock_type=LockType.EXCLUSIVE, operation=OperationType.INSERT)],
                            user="dba", host="h3", wait=False)  # waits behind the reader's lock (the first one)
    assert waiting.state is LockState.WAITING

    impact = transaction_blocking(ms, reader)
    assert (impact.state, impact.user, impact.host, impact.txn_type) == ("OPEN", "analyst", "bi-host", "DEFAULT")
    (cleaning,) = impact.cleanings
    assert (cleaning.compaction_id, cleaning.entity) == (cq, "db.t")
    assert "opened before compaction" in cleaning.why
    # the later ones began while the reader was open: their snapshots treat it as open, so they hold the cleanup too
    assert cleaning.other_blockers == sorted([other, writer.txn_id])
    assert [(lk["resource"], lk["lock_type"], lk["lock_state"]) for lk in impact.locks] == [
        ("db.t", "SHARED_READ", "ACQUIRED")]
    assert [(lk["resource"], lk["lock_type"], lk["user"]) for lk in impact.waiting_locks] == [
        ("db.t", "EXCLUSIVE", "dba")]
    assert impact.writes == [] and impact.compactions == []
    lines = impact.consequences
    assert (f"the cleanup of compaction {cq} of db.t no longer waits for it (it still waits for transaction(s) "
            f"{min(other, writer.txn_id)}, {max(other, writer.txn_id)})") in lines
    assert "it releases 1 lock(s): SHARED_READ on db.t" in lines
    assert any(line.startswith("it wrote nothing") for line in lines)

    written = transaction_blocking(ms, writer.txn_id)
    (w,) = written.writes
    assert (w["table"], w["operations"], w["write_id"]) == ("db.t", ["i"], ms.txns.write_id_of(writer.txn_id, "db", "t"))
    assert any(line.startswith("its writes to db.t are discarded") for line in written.consequences)

    done = abort_transaction(ms, reader, user="cli:ops")
    assert done.aborted is True and done.message == (
        f"transaction {reader} (analyst@bi-host) is aborted by cli:ops; released 1 lock(s), 1 waiting lock(s); "
        "1 cleanup(s) still wait for other transactions")
    assert done.released["cleanings"][0]["compaction_id"] == cq
    assert ms.txns.txn_state(reader) is TxnState.ABORTED
    assert all(lk.transaction_id != reader for lk in ms.locks.show_locks())

    writer.abort()
    last = abort_transaction(ms, other, user="cli:ops")
    assert last.message == f"transaction {other} (other@h2) is aborted by cli:ops; released 1 cleanup(s)"
    ms.locks.unlock(waiting.lock_id)
    assert [e.status for e in Cleaner(ms).run_cycle().entries] == [CleanerStatus.CLEANED]

    again = abort_transaction(ms, reader, user="cli:ops")
    assert (again.aborted, again.message) == (False, f"transaction {reader} is aborted: there is nothing to abort")
    with pytest.raises(NoSuchTxnError, match="transaction 99999 does not exist"):
        transaction_blocking(ms, 99999)


def test_a_compactor_transaction_names_its_compaction(wh):
    ms = wh.metastore
    new_table(wh)
    history(wh)
    cq = enqueue(wh, "major")
    ms.compactions.claim(cq, "w-1")
    c = ms.txns.open_txn(user="compactor", host="w")
    ms.compactions.set_running(cq, c, 3)
    impact = transaction_blocking(ms, c)
    assert impact.compactions == [{"compaction_id": cq, "entity": "db.t", "state": "working"}]
    assert impact.consequences[0].startswith(f"it is the compactor transaction of compaction {cq} of db.t (working)")
    assert not any(line.startswith("its writes") for line in impact.consequences)
