"""The compaction Worker: the happy path (minor and major), "nothing to do", and every failure path of the issue —
the Spark job fails, the process dies after the job but before commit, the metastore is unreachable at commit, a
revoked row re-run by a second worker — on SQLite, PostgreSQL and MariaDB. Afterwards nothing is visible that
should not be, the row ends 'failed' or is revoked and re-run, and duplicate output is never read."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import time

import pytest

from airflow_acid.acid.codes import CompactionState, LockType, TxnState
from airflow_acid.acid.names import parse_dir
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker, job_name_for
from airflow_acid.job.result import JobStatus, PlanResult
from airflow_acid.job.runner import Runner
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.compactions import NOTHING_TO_COMPACT
from airflow_acid.metastore.errors import MetastoreUnavailableError
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.spark.driver import execute_plan
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import (
    CONF,
    acid_dirs,
    enqueue,
    hidden_dirs,
    history,
    make_warehouse,
    new_table,
    rows,
)


def _outputs_of(location: str, txn_id: int) -> list[str]:
    return [d for d in acid_dirs(location) if (p := parse_dir(d)) is not None and p.visibility_txn_id == txn_id]


def _history_row(wh, cq_id: int):
    return wh.metastore.compactions.get(cq_id)


# --- happy path ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_compaction_commits_vc_output_and_reads_stay_identical(wh, kind):
    info = new_table(wh)
    history(wh)
    before = rows(wh)
    cq = enqueue(wh, kind)
    runner = LocalRunner()
    worker = Worker(wh.metastore, runner=runner, host="w1")
    outcome = worker.run_next()
    assert outcome is not None and outcome.status == WorkerStatus.COMPACTED, outcome
    c = outcome.txn_id
    expected = ([f"base_0000005_v{c:07d}"] if kind == "major"
                else [f"delete_delta_0000001_0000005_v{c:07d}", f"delta_0000001_0000005_v{c:07d}"])
    assert sorted(outcome.outputs) == expected == _outputs_of(info.location, c)
    assert hidden_dirs(info.location) == []
    row = wh.metastore.compactions.get(cq)
    assert row.state is CompactionState.READY_FOR_CLEANING and row.worker_id is None
    assert row.txn_id == c and row.highest_write_id == 5
    assert row.next_txn_id is not None and row.next_txn_id >= c and row.commit_time is not None
    assert row.hadoop_job_id == job_name_for("w1", "db", "t") == "w1-compactor-db.t" == runner.jobs[0]
    assert wh.metastore.txns.txn_state(c) is TxnState.COMMITTED
    assert rows(wh) == before
    assert worker.run_next() is None  # nothing else queued


def test_nothing_to_compact_is_refused_or_left_to_the_cleaner(wh):
    info = new_table(wh)
    with wh.transaction() as t:
        t.insert("db.t", [{"id": 1, "name": "a"}])
    cq = enqueue(wh, "major")
    outcome = Worker(wh.metastore, runner=LocalRunner()).run_next()
    assert outcome.status == WorkerStatus.REFUSED
    row = wh.metastore.compactions.get(cq)
    assert row.state is CompactionState.REFUSED and row.error_message.startswith(NOTHING_TO_COMPACT)
    assert wh.metastore.txns.txn_state(outcome.txn_id) is TxnState.COMMITTED
    # After a major compaction the old deltas are obsolete: a second major has nothing to compact, but the
    # Cleaner has work, so the row goes to 'ready for cleaning' (docs/hive-acid.md#compacting-one-row step 8).
    history(wh)
    enqueue(wh, "major")
    assert Worker(wh.metastore, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    wh.metastore.cleaning.mark_cleaned(wh.metastore.compactions.find(state="r")[0].id)  # keep files, free slot
    cq2 = enqueue(wh, "major")
    outcome = Worker(wh.metastore, runner=LocalRunner()).run_next()
    assert outcome.status == WorkerStatus.CLEANER_ONLY and outcome.succeeded
    assert wh.metastore.compactions.get(cq2).state is CompactionState.READY_FOR_CLEANING
    assert _outputs_of(info.location, outcome.txn_id) == []


def test_missing_table_or_partition_and_unsupported_requests_are_refused(sqlite_wh):
    wh = sqlite_wh
    new_table(wh)
    new_table(wh, "db.p", partition_by=[("k", "int")])
    whole = enqueue(wh, "minor", "db.p")
    gone_part = enqueue(wh, "minor", "db.p", "k=7")
    cq = enqueue(wh, "major", "db.ghost")  # dropped since it was queued
    worker = Worker(wh.metastore, runner=LocalRunner())
    outcomes = {o.compaction_id: o for o in (worker.run_next(), worker.run_next(), worker.run_next())}
    assert {o.status for o in outcomes.values()} == {WorkerStatus.REFUSED}
    assert "does not exist" in wh.metastore.compactions.get(cq).error_message
    assert "partition k=7" in wh.metastore.compactions.get(gone_part).error_message
    assert "must name a partition" in wh.metastore.compactions.get(whole).error_message
    # No transaction is left open by a refusal.
    assert [t for t in wh.metastore.txns.show_transactions() if t.state is TxnState.OPEN] == []


# --- failure paths ---------------------------------------------------------------------------------------


class _RaisingRunner:
    def run(self, plan, *, job_name, spark_conf):
        execute_plan(plan)  # the job wrote output before it died
        raise RuntimeError("executor lost: exit code 137")


class _FailedResultRunner:
    def run(self, plan, *, job_name, spark_conf):
        result = execute_plan(plan)
        for c in result.compactions:
            c.status, c.error = JobStatus.FAILED, "ORC writer: disk quota exceeded"
        return result


class _MiscountingRunner:
    def run(self, plan, *, job_name, spark_conf):
        result = execute_plan(plan)
        result.compactions[0].rows_out += 1
        return result


@pytest.mark.parametrize("runner,expect", [(_RaisingRunner(), "executor lost"),
                                           (_FailedResultRunner(), "disk quota exceeded"),
                                           (_MiscountingRunner(), "events in")])
def test_spark_job_failure_aborts_txn_removes_output_and_marks_failed(wh, runner, expect):
    info = new_table(wh)
    history(wh)
    before, dirs_before = rows(wh), acid_dirs(info.location)
    cq = enqueue(wh, "minor")
    outcome = Worker(wh.metastore, runner=runner).run_next()
    assert outcome.status == WorkerStatus.FAILED and expect in outcome.message
    assert acid_dirs(info.location) == dirs_before and hidden_dirs(info.location) == []
    assert wh.metastore.txns.txn_state(outcome.txn_id) is TxnState.ABORTED
    row = wh.metastore.compactions.get(cq)
    assert row.state is CompactionState.FAILED and expect in row.error_message
    assert rows(wh) == before


def test_lock_not_granted_is_a_failed_attempt(sqlite_wh):
    wh = sqlite_wh
    new_table(wh)
    history(wh)
    ms = wh.metastore
    held = ms.locks.lock([LockComponent("db", "t", lock_type=LockType.EXCLUSIVE)], user="dba", host="h")
    cq = enqueue(wh, "major")
    outcome = Worker(ms, runner=LocalRunner()).run_next()
    assert outcome.status == WorkerStatus.FAILED and "SHARED_READ lock" in outcome.message
    assert ms.compactions.get(cq).state is CompactionState.FAILED
    assert ms.txns.txn_state(outcome.txn_id) is TxnState.ABORTED
    ms.locks.unlock(held.lock_id)


def _die_after_job(url: str, location_root: str) -> None:
    """Child process: claim and run the compaction, then get SIGKILLed after the job, before the commit."""
    class KillAfterJob:
        def run(self, plan, *, job_name, spark_conf):
            execute_plan(plan)
            os.kill(os.getpid(), signal.SIGKILL)

    ms = Metastore(url, CONF)
    Worker(ms, runner=KillAfterJob(), host="doomed").run_next()


def test_process_killed_after_job_before_commit_then_revoked_and_rerun(wh, empty_db_url):
    info = new_table(wh)
    history(wh)
    before = rows(wh)
    cq = enqueue(wh, "minor")
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_die_after_job, args=(empty_db_url, info.location))
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    ms = wh.metastore
    row = ms.compactions.get(cq)
    dead_txn = row.txn_id
    assert row.state is CompactionState.WORKING and ms.txns.txn_state(dead_txn) is TxnState.OPEN
    leftovers = _outputs_of(info.location, dead_txn)
    assert leftovers  # the job finished, nothing committed
    assert rows(wh) == before  # invisible: _v of an open transaction
    # The housekeeper aborts the silent transaction (hive.txn.timeout); the worker timeout revokes the row.
    ms.txns.abort(dead_txn, "ABORT_TIMEOUT")
    assert Worker(ms, runner=LocalRunner()).claim() is None  # within hive.compactor.worker.timeout the row stays claimed
    time.sleep(0.01)
    fast_timeout = dataclasses.replace(CONF, worker_timeout_s=0.001)
    outcome = Worker(ms, fast_timeout, host="w2", runner=LocalRunner()).run_next()  # revokes, reruns
    assert outcome.status == WorkerStatus.COMPACTED and outcome.compaction_id == cq
    assert outcome.txn_id != dead_txn
    # Both outputs exist on disk with the same range; only the committed one is read, no duplicates.
    assert sorted(_outputs_of(info.location, dead_txn)) == sorted(leftovers)
    assert rows(wh) == before


def test_metastore_unreachable_at_commit_leaves_no_visible_change(wh, monkeypatch):
    info = new_table(wh)
    history(wh)
    before, dirs_before = rows(wh), acid_dirs(info.location)
    ms = wh.metastore
    cq = enqueue(wh, "major")
    real_commit = ms.txns.commit
    worker = Worker(ms, runner=LocalRunner())

    def commit(txn_id):
        if ms.txns.txn_state(txn_id) is TxnState.OPEN and txn_id == ms.compactions.get(cq).txn_id:
            raise MetastoreUnavailableError("cannot reach the metastore database: connection refused")
        return real_commit(txn_id)

    monkeypatch.setattr(ms.txns, "commit", commit)
    outcome = worker.run_next()
    assert outcome.status == WorkerStatus.FAILED and "connection refused" in outcome.message
    assert ms.txns.txn_state(outcome.txn_id) is TxnState.ABORTED
    assert ms.compactions.get(cq).state is CompactionState.FAILED
    assert acid_dirs(info.location) == dirs_before
    assert rows(wh) == before


def test_metastore_down_after_job_row_revoked_and_rerun(sqlite_wh, monkeypatch):
    wh = sqlite_wh
    info = new_table(wh)
    history(wh)
    before, dirs_before = rows(wh), acid_dirs(info.location)
    ms = wh.metastore
    cq = enqueue(wh, "minor")
    real_run = ms.db.run

    def down(*args, **kwargs):
        raise MetastoreUnavailableError("cannot reach the metastore database: connection refused")

    class DownAfterJob:
        def run(self, plan, *, job_name, spark_conf):
            result = execute_plan(plan)
            monkeypatch.setattr(ms.db, "run", down)
            return result

    outcome = Worker(ms, runner=DownAfterJob()).run_next()
    monkeypatch.setattr(ms.db, "run", real_run)
    assert outcome.status == WorkerStatus.FAILED and "stays 'working'" in outcome.message
    assert acid_dirs(info.location) == dirs_before  # C never committed: its output could be removed at once
    assert ms.compactions.get(cq).state is CompactionState.WORKING
    ms.txns.abort(outcome.txn_id, "ABORT_TIMEOUT")  # the housekeeper, once the metastore is back
    assert ms.initiator.revoke_timed_out_workers(timeout_s=0) == [cq]
    again = Worker(ms, runner=LocalRunner()).run_next()
    assert again.status == WorkerStatus.COMPACTED and again.compaction_id == cq
    assert rows(wh) == before


def test_revoked_row_rerun_while_first_worker_runs_never_yields_duplicates(wh):
    """docs/hive-acid.md#pitfalls item 7: the first worker's txn is still open when the row is revoked and run again.
    The second worker ignores the first one's output (invisible _v), and the first worker, finding the row taken,
    aborts its txn and discards its output instead of committing a second delta for the same range."""
    info = new_table(wh)
    history(wh)
    before = rows(wh)
    ms = wh.metastore
    cq = enqueue(wh, "minor")
    seen: dict = {}

    class SlowFirstWorker:
        def run(self, plan, *, job_name, spark_conf):
            result = execute_plan(plan)
            seen["first_outputs"] = list(result.compactions[0].outputs)
            assert ms.initiator.revoke_timed_out_workers(timeout_s=0) == [cq]
            second = Worker(ms, host="w2", runner=LocalRunner()).run_next()
            seen["second"] = second
            seen["rows_between"] = rows(wh)
            return result

    first = Worker(ms, runner=SlowFirstWorker(), host="w1").run_next()
    second = seen["second"]
    assert second.status == WorkerStatus.COMPACTED and second.compaction_id == cq
    assert seen["rows_between"] == before
    assert first.status == WorkerStatus.REVOKED
    assert ms.txns.txn_state(first.txn_id) is TxnState.ABORTED
    assert _outputs_of(info.location, first.txn_id) == []
    assert sorted(_outputs_of(info.location, second.txn_id)) == sorted(second.outputs)
    row = ms.compactions.get(cq)
    assert row.state is CompactionState.READY_FOR_CLEANING and row.txn_id == second.txn_id
    assert rows(wh) == before


# --- batches, properties, heartbeats ---------------------------------------------------------------------


class _RecordingRunner(LocalRunner):
    def __init__(self):
        super().__init__()
        self.calls: list[tuple[str, dict, int]] = []

    def run(self, plan, *, job_name, spark_conf):
        self.calls.append((job_name, dict(spark_conf), len(plan.compactions)))
        return super().run(plan, job_name=job_name, spark_conf=spark_conf)


def test_batch_runs_one_application_and_compactor_properties_become_spark_conf(sqlite_wh):
    wh = sqlite_wh
    wh.create_table("db.p", [("id", "int"), ("name", "string")], partition_by=[("k", "int")],
                    properties={"compactor.spark.executor.memory": "2g"})
    for k in (1, 2):
        history(wh, "db.p", {"k": k})
    before = rows(wh, "db.p")
    ms = wh.metastore
    ids = [enqueue(wh, "major", "db.p", f"k={k}", properties={"compactor.spark.executor.cores": "3"})
           for k in (1, 2)]
    runner = _RecordingRunner()
    worker = Worker(ms, runner=runner, host="w")
    claimed = [worker.claim().id, worker.claim().id]
    assert claimed == ids
    outcomes = worker.compact_batch(ids)
    assert [o.status for o in outcomes] == [WorkerStatus.COMPACTED] * 2
    assert runner.calls == [("w-compactor-db.p.k=1+1",
                             {"spark.executor.memory": "2g", "spark.executor.cores": "3"}, 2)]
    assert rows(wh, "db.p") == before
    assert isinstance(runner, Runner)


def test_compact_requires_a_claimed_row(sqlite_wh):
    wh = sqlite_wh
    new_table(wh)
    cq = enqueue(wh, "major")
    with pytest.raises(ValueError, match="not 'working'"):
        Worker(wh.metastore, runner=LocalRunner()).compact(cq)


def test_heartbeat_keeps_the_compactor_txn_alive_through_a_long_job(tmp_path, heartbeat_clock):
    conf = dataclasses.replace(CONF, txn_timeout_s=1.0)
    wh = make_warehouse(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "wh", conf)
    try:
        new_table(wh)
        history(wh)
        ms = wh.metastore

        class SlowJob:
            def run(self, plan, *, job_name, spark_conf):
                heartbeat_clock.elapse(ms, 1.6)
                assert ms.housekeeping.abort_timed_out_txns() == []  # heartbeats kept C alive
                return execute_plan(plan)

        enqueue(wh, "major")
        assert Worker(ms, runner=SlowJob()).run_next().status == WorkerStatus.COMPACTED
    finally:
        wh.metastore.close()


def test_runner_protocol_result_for_each_compaction(sqlite_wh):
    """A runner whose result lacks a compaction fails that compaction (never commits unverified output)."""
    wh = sqlite_wh
    info = new_table(wh)
    history(wh)
    dirs_before = acid_dirs(info.location)

    class Forgetful:
        def run(self, plan, *, job_name, spark_conf):
            execute_plan(plan)
            return PlanResult([])

    enqueue(wh, "major")
    outcome = Worker(wh.metastore, runner=Forgetful()).run_next()
    assert outcome.status == WorkerStatus.FAILED and "no entry" in outcome.message
    assert acid_dirs(info.location) == dirs_before


def test_spark_submit_and_session_runners_name_the_application(monkeypatch, tmp_path):
    from airflow_acid.job.plan import CompactionPlan
    from airflow_acid.spark import runners
    from airflow_acid.spark.submit import SparkSubmitOptions

    seen = {}

    def fake_submit(plan, workdir, options, *, timeout=None):
        seen.update(workdir=workdir, options=options, timeout=timeout)
        return PlanResult([])

    monkeypatch.setattr(runners, "run_spark_submit", fake_submit)
    runner = runners.SparkSubmitRunner(SparkSubmitOptions(conf={"spark.executor.cores": "1"}),
                                       workdir=str(tmp_path), timeout_s=60)
    assert isinstance(runner, Runner)
    runner.run(CompactionPlan(()), job_name="h-compactor-db.t.k=1",
               spark_conf={"spark.executor.cores": "4", "spark.executor.memory": "2g"})
    assert seen["options"].app_name == "h-compactor-db.t.k=1" and seen["timeout"] == 60
    assert seen["options"].conf == {"spark.executor.cores": "1", "spark.executor.memory": "2g"}  # operator wins
    assert os.path.dirname(seen["workdir"]) == str(tmp_path)

    class FakeContext:
        def __init__(self):
            self.groups = []

        def setJobGroup(self, group, description, interruptOnCancel=False):
            self.groups.append(group)

    class FakeSpark:
        sparkContext = FakeContext()

    monkeypatch.setattr(runners, "run_plan_in_session", lambda plan, spark: PlanResult([]))
    session = runners.SessionRunner(FakeSpark())
    session.run(CompactionPlan(()), job_name="h-compactor-db.t", spark_conf={})
    assert FakeSpark.sparkContext.groups == ["h-compactor-db.t", None] and session.jobs == ["h-compactor-db.t"]
