"""Injected faults, each ending in a consistent state with no committed data lost (issue 9).

Every test builds a table with a known history (the ledger), injects one fault, runs the recovery an operator's
schedule would run (housekeeping past hive.txn.timeout, revoke, retry, cleaning) and checks the end state: the
table reads exactly the committed rows, no output of a failed attempt is left or visible, the queue rows end as
Hive would leave them, and nothing outside the table location changed.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.acid.errors import AcidFileError
from airflow_acid.acid.fs import Storage
from airflow_acid.client.errors import TransactionClosedError
from airflow_acid.compactor.housekeeper import HouseKeeper
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.job.layout import TMP_PREFIX
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.errors import TxnAbortedError
from airflow_acid.spark.runners import LocalRunner, SparkSubmitRunner
from airflow_acid.spark.submit import SparkSubmitOptions
from airflow_acid.spark.units import FAULT_DELAY_ENV
from tests.backends import backends
from tests.heartbeat_support import ManualClock
from tests.reliability.fault_env import (
    CONF,
    TABLE,
    Scene,
    acid_dirs,
    check,
    check_no_output_of,
    check_rows,
    clear_error,
    dirs_of_txn,
)
from tests.reliability.fault_pg import MOMENTS, BackendKiller, intercept_first_commit
from tests.reliability.fault_space import SmallSpace

REPO = Path(__file__).resolve().parents[2]


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                members.append(p)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return members


def _spark_submit_group() -> int | None:
    """The process group of the spark-submit this process started (it leads its own session)."""
    for child in psutil.Process().children():
        try:
            if os.getpgid(child.pid) == child.pid and "spark" in " ".join(child.cmdline()).lower():
                return child.pid
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return None


# --- 1. spark-submit killed mid-job --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("empty_db_url", backends("postgresql"), indirect=True)
def test_spark_submit_killed_mid_job_then_retried(empty_db_url, tmp_path, monkeypatch, reliability_summary):
    summary = reliability_summary
    scene = Scene.build(empty_db_url, tmp_path / "area", summary)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    runner = SparkSubmitRunner(SparkSubmitOptions(master="local[1]"), workdir=str(tmp_path / "jobs"), timeout_s=300)
    monkeypatch.setenv(FAULT_DELAY_ENV, "120")  # each work unit sleeps after writing its output: a kill lands mid-job
    cq = scene.enqueue("major")
    outcomes = []
    worker = threading.Thread(target=lambda: outcomes.append(scene.worker(runner).run_next()))
    worker.start()
    try:
        _wait_for(lambda: list(Path(scene.location).glob(f"{TMP_PREFIX}*/*/bucket_*")), 240,
                  "the Spark job to write its first bucket file")
        pgid = _spark_submit_group()
        assert pgid is not None, "spark-submit is not running"
        os.killpg(pgid, signal.SIGKILL)
        summary.add("faults_injected")
        worker.join(120)
    finally:
        leftover = _spark_submit_group()
        if leftover is not None:  # the test failed before its kill: do not leave a job sleeping
            os.killpg(leftover, signal.SIGKILL)
    assert not worker.is_alive(), "the worker did not notice the killed job"
    (outcome,) = outcomes
    check(summary, outcome.status == WorkerStatus.FAILED and "code -9" in (outcome.message or ""),
          f"killed job: outcome {outcome}")
    summary.error("SparkSubmitError")
    failed = outcome.txn_id
    check(summary, _wait_for(lambda: not _group_members(pgid), 20, "the killed job's processes to go") is True,
          "processes of the killed spark-submit survived")
    check(summary, scene.ms.txns.txn_state(failed) is TxnState.ABORTED, f"txn {failed} of the killed job not aborted")
    check(summary, scene.history_states([cq]) == [CompactionState.FAILED], f"row {cq} not 'failed'")
    scene.final_check([failed], "after the killed job")
    # The retry (a new request, as the Initiator or an operator would make) succeeds through spark-submit.
    monkeypatch.delenv(FAULT_DELAY_ENV)
    retry = scene.compact("major", runner)
    check(summary, scene.clean() == ["cleaned"], "the retried compaction was not cleaned")
    check(summary, scene.history_states([cq, retry.compaction_id]) == [CompactionState.FAILED,
                                                                        CompactionState.SUCCEEDED],
          "history after the retry")
    scene.final_check([failed], "after retry and cleaning", clean_dirs=list(retry.outputs))


# --- 2. worker process killed between job success and commit ------------------------------------------------


@pytest.mark.parametrize("empty_db_url", backends("sqlite", "postgresql"), indirect=True)
@pytest.mark.parametrize("point,kind", [("job_done", "major"), ("marked", "minor")])
def test_worker_killed_between_job_and_commit(empty_db_url, point, kind, tmp_path, reliability_summary):
    summary = reliability_summary
    scene = Scene.build(empty_db_url, tmp_path / "area", summary)
    ms = scene.ms
    cq = scene.enqueue(kind)
    child = subprocess.run([sys.executable, "-m", "tests.reliability.fault_worker_child", empty_db_url, point],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    summary.add("faults_injected")
    row = ms.compactions.get(cq)
    dead = row.txn_id
    expected_state = CompactionState.WORKING if point == "job_done" else CompactionState.READY_FOR_CLEANING
    check(summary, row.state is expected_state and ms.txns.txn_state(dead) is TxnState.OPEN,
          f"after the kill at {point}: row {row.state}, txn {dead} {ms.txns.txn_state(dead)}")
    check(summary, bool(dirs_of_txn(scene.location, dead)), f"the job of txn {dead} left no output")
    check_rows(summary, scene.ledger, f"with the dead worker's output in place ({point})")
    check(summary, scene.clean() == [], "the Cleaner acted on a row whose compactor txn is still open")
    check(summary, dead in scene.housekeep_dead(), f"the HouseKeeper did not abort the dead txn {dead}")
    check_rows(summary, scene.ledger, f"after the dead txn was aborted ({point})")
    if point == "job_done":
        # hive.compactor.worker.timeout revokes the row; the next worker runs the same request again.
        rerun = scene.worker(conf=dataclasses.replace(ms.conf, worker_timeout_s=0.001)).run_next()
        check(summary, rerun is not None and rerun.compaction_id == cq and rerun.status == WorkerStatus.COMPACTED,
              f"revoked row {cq} was not re-run: {rerun}")
        summary.add("compactions")
        rows = [cq]
    else:
        # The row was marked compacted but C aborted: the Cleaner fails it; a new request compacts again.
        check(summary, scene.clean() == ["failed"], "the Cleaner did not fail the row of the aborted compactor txn")
        rerun = scene.compact(kind)
        rows = [cq, rerun.compaction_id]
    check(summary, scene.clean() == ["cleaned"], "the re-run compaction was not cleaned")
    expected = [CompactionState.SUCCEEDED] if point == "job_done" else [CompactionState.FAILED,
                                                                         CompactionState.SUCCEEDED]
    check(summary, scene.history_states(rows) == expected, f"history {scene.history_states(rows)} != {expected}")
    scene.final_check([dead], f"after recovery from a kill at {point}", clean_dirs=list(rerun.outputs))


# --- 3. the metastore connection dropped during a commit ------------------------------------------------------


def _completed_components(scene: Scene, txn_id: int) -> int:
    from airflow_acid.metastore.schema import COMPLETED_TXN_COMPONENTS as CTC

    return scene.ms.db.run(lambda conn: conn.execute(
        sa.select(sa.func.count()).select_from(CTC).where(CTC.c.CTC_TXNID == txn_id)).scalar_one())


@pytest.mark.parametrize("empty_db_url", backends("postgresql"), indirect=True)
@pytest.mark.parametrize("moment", MOMENTS)
def test_backend_terminated_during_a_writers_commit(empty_db_url, moment, tmp_path, reliability_summary):
    """Before the COMMIT reached the server the retry applies it; after, the retry recognises it as applied. Either
    way the client is told "committed" and the rows are there exactly once."""
    summary = reliability_summary
    scene = Scene.build(empty_db_url, tmp_path / "area", summary, batches=1)
    killer = BackendKiller(empty_db_url)
    try:
        seen = intercept_first_commit(scene.ms, killer, moment)
        txn = scene.wh.transaction()
        txn.insert(TABLE, [{"id": 100, "name": "written during the fault"}])
        txn.commit()
        summary.add("faults_injected")
        summary.add(f"commits_recovered_{moment}_backend_terminated")
    finally:
        killer.dispose()
    check(summary, seen == [txn.txn_id] and len(killer.terminated) == 1, f"fault not injected: {seen}")
    check(summary, txn.state == "committed" and scene.ms.txns.txn_state(txn.txn_id) is TxnState.COMMITTED,
          f"client state {txn.state!r}, metastore {scene.ms.txns.txn_state(txn.txn_id)}")
    scene.ledger.rows[100] = "written during the fault"
    summary.add("transactions_committed")
    check(summary, _completed_components(scene, txn.txn_id) == 1, "the commit was not applied exactly once")
    scene.final_check([], f"after a writer's commit lost its connection ({moment})")


@pytest.mark.parametrize("empty_db_url", backends("postgresql"), indirect=True)
@pytest.mark.parametrize("moment", MOMENTS)
def test_backend_terminated_during_a_compactors_commit(empty_db_url, moment, tmp_path, reliability_summary):
    summary = reliability_summary
    scene = Scene.build(empty_db_url, tmp_path / "area", summary)
    killer = BackendKiller(empty_db_url)
    cq = scene.enqueue("major")
    try:
        seen = intercept_first_commit(scene.ms, killer, moment)
        outcome = scene.worker().run_next()
        summary.add("faults_injected")
    finally:
        killer.dispose()
    check(summary, seen == [outcome.txn_id] and len(killer.terminated) == 1, f"fault not injected: {seen}")
    check(summary, outcome.status == WorkerStatus.COMPACTED, f"compaction after the dropped commit: {outcome}")
    summary.add("compactions")
    row = scene.ms.compactions.get(cq)
    check(summary, row.state is CompactionState.READY_FOR_CLEANING and row.next_txn_id is not None
          and scene.ms.txns.txn_state(outcome.txn_id) is TxnState.COMMITTED, f"row after the commit: {row}")
    check_rows(summary, scene.ledger, f"after the compactor's commit lost its connection ({moment})")
    check(summary, scene.clean() == ["cleaned"], "the compaction was not cleaned")
    check(summary, scene.history_states([cq]) == [CompactionState.SUCCEEDED], "history")
    scene.final_check([], f"after the compactor's commit lost its connection ({moment})",
                      clean_dirs=list(outcome.outputs))


# --- 4. no space left on the output path ----------------------------------------------------------------------


@pytest.fixture(params=["tmpfs", "quota"])
def small_space(request, tmp_path):
    space = SmallSpace(request.param, tmp_path)
    yield space
    space.close()


def _no_space(exc: BaseException) -> bool:
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "No space left on device" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def test_no_space_for_a_writers_insert(small_space, tmp_path, reliability_summary):
    summary = reliability_summary
    scene = Scene.build(f"sqlite:///{tmp_path / 'metastore.db'}", small_space.area, summary, batches=1,
                        warehouse=small_space.warehouse)
    big = [{"id": 1000 + i, "name": os.urandom(1000).hex()} for i in range(600)]  # ~600 KB after compression
    dirs_before = acid_dirs(scene.location)
    small_space.exhaust(leave=64 * 1024)
    summary.add("faults_injected")
    txn = scene.wh.transaction()
    with pytest.raises(Exception) as raised:
        txn.insert(TABLE, big)
    check(summary, _no_space(raised.value), f"the failed insert does not say the disk is full: {raised.value!r}")
    clear_error(summary, raised.value, "No space left on device")
    check(summary, txn.state == "aborted" and scene.ms.txns.txn_state(txn.txn_id) is TxnState.ABORTED,
          f"writer txn {txn.txn_id} is {txn.state!r} / {scene.ms.txns.txn_state(txn.txn_id)}")
    check(summary, acid_dirs(scene.location) == dirs_before, f"the failed insert left {acid_dirs(scene.location)}")
    check_rows(summary, scene.ledger, "after the insert that ran out of space")
    small_space.release()
    scene.ledger.insert([500, 501], "after")
    scene.final_check([], "after space came back")


def test_no_space_for_a_compaction(small_space, tmp_path, reliability_summary):
    summary = reliability_summary
    scene = Scene.build(f"sqlite:///{tmp_path / 'metastore.db'}", small_space.area, summary,
                        warehouse=small_space.warehouse)
    dirs_before = acid_dirs(scene.location)
    cq = scene.enqueue("major")
    small_space.exhaust()
    summary.add("faults_injected")
    outcome = scene.worker().run_next()
    check(summary, outcome.status == WorkerStatus.FAILED and "No space left on device" in (outcome.message or ""),
          f"compaction without space: {outcome}")
    summary.error("CompactionAttemptError")
    check(summary, scene.ms.txns.txn_state(outcome.txn_id) is TxnState.ABORTED, "compactor txn not aborted")
    check(summary, scene.history_states([cq]) == [CompactionState.FAILED], "row not 'failed'")
    check(summary, acid_dirs(scene.location) == dirs_before, f"the failed compaction left {acid_dirs(scene.location)}")
    check_rows(summary, scene.ledger, "with the disk full after the failed compaction")
    small_space.release()
    retry = scene.compact("major")
    check(summary, scene.clean() == ["cleaned"], "the retried compaction was not cleaned")
    scene.final_check([outcome.txn_id], "after space came back", clean_dirs=list(retry.outputs))


# --- 5. a data file deleted behind the system's back -------------------------------------------------------


class _DeletingRunner(LocalRunner):
    """A job during which somebody deletes a data file the plan reads."""

    def __init__(self, victim: Path) -> None:
        super().__init__()
        self.victim = victim

    def run(self, plan, *, job_name, spark_conf):
        self.victim.unlink()
        return super().run(plan, job_name=job_name, spark_conf=spark_conf)


def test_data_file_deleted_behind_the_systems_back(tmp_path, monkeypatch, reliability_summary):
    """A file that vanishes after the listing is a clear error naming it — for a read and for a compaction (which
    fails and removes its output). Its rows are gone, but nothing else is: the Cleaner deletes nothing for the failed
    attempt, and a later compaction and cleaning keep every surviving row."""
    summary = reliability_summary
    scene = Scene.build(f"sqlite:///{tmp_path / 'metastore.db'}", tmp_path / "area", summary)
    location = Path(scene.location)
    read_victim = location / "delta_0000002_0000002_0000" / "bucket_00000"   # ids 10-13 (11 was updated since)
    job_victim = location / "delta_0000003_0000003_0000" / "bucket_00000"    # ids 20-23
    assert read_victim.is_file() and job_victim.is_file()
    list_files = Storage.list_files

    def listing_then_delete(storage: Storage):
        files = list_files(storage)
        if read_victim.exists():
            read_victim.unlink()
        return files

    monkeypatch.setattr(Storage, "list_files", listing_then_delete)
    with pytest.raises(AcidFileError) as raised:
        scene.wh.read(TABLE)
    monkeypatch.setattr(Storage, "list_files", list_files)
    summary.add("faults_injected")
    clear_error(summary, raised.value, str(read_victim), "gone")
    for lost in (10, 12, 13):
        scene.ledger.rows.pop(lost)
    check_rows(summary, scene.ledger, "after a data file vanished under a read (its rows are gone, no others)")

    cq = scene.enqueue("major")
    outcome = scene.worker(_DeletingRunner(job_victim)).run_next()
    summary.add("faults_injected")
    named = f"{job_victim.parent.name}/{job_victim.name}"
    check(summary, outcome.status == WorkerStatus.FAILED and named in (outcome.message or "")
          and str(location) in outcome.message, f"compaction of a directory that lost a file: {outcome}")
    summary.error("CompactionAttemptError")
    check(summary, scene.history_states([cq]) == [CompactionState.FAILED], "row not 'failed'")
    for lost in (20, 21, 22, 23):
        scene.ledger.rows.pop(lost)
    dirs_before = acid_dirs(str(location))
    check(summary, scene.clean() == [], "the Cleaner acted on the failed attempt")
    check(summary, acid_dirs(str(location)) == dirs_before, "the Cleaner deleted after the failed attempt")
    check_rows(summary, scene.ledger, "after the failed compaction and a Cleaner cycle")
    retry = scene.compact("major")
    check(summary, scene.clean() == ["cleaned"], "the later compaction was not cleaned")
    scene.final_check([outcome.txn_id], "after a later compaction and cleaning", clean_dirs=list(retry.outputs))


# --- 6. heartbeats delayed past hive.txn.timeout ------------------------------------------------------------


class PausedHeartbeats:
    """Stands in for a heartbeat call: while paused the beats never reach the metastore (a stalled client)."""

    def __init__(self, beat) -> None:
        self._beat = beat
        self.paused = threading.Event()
        self.paused.set()

    def __call__(self, txn_id: int) -> None:
        if not self.paused.is_set():
            self._beat(txn_id)

    def resume(self) -> None:
        self.paused.clear()


TIMEOUT_S = 1.0
"""hive.txn.timeout of the heartbeat tests (clients beat every TIMEOUT_S / 2)."""


def _timed_out(scene: Scene, clock: ManualClock, txn_id: int) -> None:
    clock.elapse(scene.ms, TIMEOUT_S + 0.3)
    report = HouseKeeper(scene.ms).run_once()
    check(scene.summary, txn_id in report.aborted_txns, f"txn {txn_id} without heartbeats was not aborted: {report}")
    scene.summary.add("faults_injected")


@pytest.mark.parametrize("late_beat", [True, False], ids=["late-beat-arrives", "no-beat"])
def test_writer_heartbeats_delayed_past_the_timeout(late_beat, tmp_path, reliability_summary, heartbeat_clock):
    summary = reliability_summary
    scene = Scene.build(f"sqlite:///{tmp_path / 'metastore.db'}", tmp_path / "area", summary, batches=1,
                        conf=dataclasses.replace(CONF, txn_timeout_s=TIMEOUT_S))
    dirs_before = acid_dirs(scene.location)
    txn = scene.wh.transaction()
    pause = PausedHeartbeats(txn._heartbeater._beat)
    txn._heartbeater._beat = pause
    txn.insert(TABLE, [{"id": 700, "name": "too late"}])
    _timed_out(scene, heartbeat_clock, txn.txn_id)
    if late_beat:
        pause.resume()
        heartbeat_clock.advance(txn._heartbeater.interval_s)
        assert txn.txn_id in txn._heartbeater.lost, "the late heartbeat did not find the txn aborted"
    with pytest.raises((TxnAbortedError, TransactionClosedError)) as raised:
        txn.commit()
    clear_error(summary, raised.value, str(txn.txn_id), "aborted")
    check(summary, txn.state == "aborted", f"the client still thinks txn {txn.txn_id} is {txn.state!r}")
    check(summary, acid_dirs(scene.location) == dirs_before, f"files of the timed-out writer left: "
                                                             f"{acid_dirs(scene.location)}")
    scene.final_check([], "after a writer timed out")


@pytest.mark.parametrize("late_beat", [True, False], ids=["late-beat-arrives", "no-beat"])
def test_compactor_heartbeats_delayed_past_the_timeout(late_beat, tmp_path, reliability_summary, heartbeat_clock):
    summary = reliability_summary
    conf = dataclasses.replace(CONF, txn_timeout_s=TIMEOUT_S)
    url = f"sqlite:///{tmp_path / 'metastore.db'}"
    scene = Scene.build(url, tmp_path / "area", summary, conf=conf)
    cq = scene.enqueue("major")
    started, go_on = threading.Event(), threading.Event()

    class WaitingRunner(LocalRunner):
        def run(self, plan, *, job_name, spark_conf):
            started.set()
            assert go_on.wait(30)
            return super().run(plan, job_name=job_name, spark_conf=spark_conf)

    worker_ms = Metastore(url, conf)
    pause = PausedHeartbeats(worker_ms.txns.heartbeat)
    worker_ms.txns.heartbeat = pause
    worker = Worker(worker_ms, runner=WaitingRunner(), host="stalled")
    outcomes = []
    thread = threading.Thread(target=lambda: outcomes.append(worker.run_next()))
    thread.start()
    try:
        assert started.wait(30)
        c = scene.ms.compactions.get(cq).txn_id
        _timed_out(scene, heartbeat_clock, c)
        if late_beat:
            pause.resume()
            heartbeat_clock.advance(worker._heartbeater.interval_s)
            assert c in worker._heartbeater.lost, "the late heartbeat did not find C aborted"
    finally:
        go_on.set()
        thread.join(60)
        worker_ms.close()
    (outcome,) = outcomes
    check(summary, outcome.status == WorkerStatus.FAILED and "aborted" in (outcome.message or ""),
          f"compaction whose txn timed out: {outcome}")
    summary.error("CompactionAttemptError")
    check(summary, scene.history_states([cq]) == [CompactionState.FAILED], "row not 'failed'")
    check_no_output_of(summary, scene.location, [c], "after the timed-out compaction")
    check_rows(summary, scene.ledger, "after the timed-out compaction")
    retry = scene.compact("major")
    check(summary, scene.clean() == ["cleaned"], "the retried compaction was not cleaned")
    scene.final_check([c], "after a compactor timed out and the retry", clean_dirs=list(retry.outputs))
