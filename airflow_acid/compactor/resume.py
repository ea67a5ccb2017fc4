"""Taking over compactions whose worker died mid-run, without ever starting a second job on the same row.

A worker that dies (its process killed, its host lost) leaves its rows 'working': CQ_WORKER_ID names it, CQ_TXN_ID
its compactor transaction C, CQ_HADOOP_JOB_ID the Spark application it started, and C's heartbeat stops. The
application itself may run on (spark-submit runs in its own session; a cluster keeps a driver). A retried
compaction task given such a row:

1. waits while the attempt is alive — C heartbeated within :func:`stale_after_s` (the worker heartbeats C every
   half ``hive.txn.timeout``) — and leaves the row alone if it stays alive or finishes meanwhile;
2. takes the row over (CQ_WORKER_ID, guarded by the worker and C it saw), heartbeats C;
3. without C (the worker died before recording it, so no job started) runs the row itself;
4. with C open: finds the attempt's job through the runner (:class:`~airflow_acid.job.runner.ResumableRunner`),
   waits while its application runs, and finishes the row with that job's result exactly as the dead worker
   would have (verify, 'ready for cleaning', commit C);
5. when the job cannot be found or ended without a result, or C was aborted meanwhile (``hive.txn.timeout``),
   fails the row the usual way (C aborted, its output removed) — the Initiator queues the entity again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from airflow_acid.acid.codes import TxnState
from airflow_acid.compactor.errors import CompactionAttemptError, describe_error
from airflow_acid.compactor.messages import WorkerOutcome
from airflow_acid.job.result import PlanResult
from airflow_acid.job.runner import ResumableRunner, attempt_key, job_key
from airflow_acid.metastore.attempts import CompactionAttempts, RunningAttempt
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.heartbeat import Heartbeater

if TYPE_CHECKING:
    from airflow_acid.compactor.worker import Worker, _Job

log = logging.getLogger(__name__)

POLL_S = 2.0


def stale_after_s(conf: MetastoreConf) -> float:
    """Seconds without a heartbeat of C after which its worker counts as dead: the worker beats every half
    ``hive.txn.timeout``, so one and a half intervals without a beat."""
    return 0.75 * conf.txn_timeout_s


def resume_rows(worker: Worker, cq_ids: Sequence[int], *, wait_s: float | None = None
                ) -> tuple[list[WorkerOutcome], dict[int, str]]:
    """Take over the 'working' rows ``cq_ids`` whose worker died (module docstring). Returns the outcomes of the
    rows taken over and, for the others, why not (still run by a live worker, or no longer 'working')."""
    attempts = CompactionAttempts(worker.metastore.db, worker.conf)
    stale_s = stale_after_s(worker.conf)
    wait_s = stale_s + 2 * POLL_S if wait_s is None else wait_s
    outcomes: list[WorkerOutcome] = []
    why: dict[int, str] = {}
    for cq_id in cq_ids:
        found = _orphaned(worker, attempts, cq_id, stale_s, wait_s)
        if isinstance(found, str):
            why[cq_id] = found
            log.info("compaction %s not taken over: %s", cq_id, found)
            continue
        if found.worker_id != worker.worker_id and not attempts.adopt(found, worker.worker_id):
            why[cq_id] = worker._state_of(cq_id) + " (changed while being taken over)"
            continue
        log.warning("compaction %s: worker %s stopped heartbeating its compactor transaction %s %.0f s ago; taking "
                    "the row over (Spark application %s)", cq_id, found.worker_id, found.txn_id,
                    found.idle_ms / 1000, found.job_id)
        if found.txn_id is None:  # the worker died before it opened C for the row: no job was started
            outcomes.append(worker.compact(cq_id))
            continue
        worker.record_task(cq_id)
        outcomes.append(_finish_adopted(worker, found))
    return outcomes, why


def _orphaned(worker: Worker, attempts: CompactionAttempts, cq_id: int, stale_s: float,
              wait_s: float) -> RunningAttempt | str:
    """The attempt of row ``cq_id`` once its worker is dead, or why it is not taken over."""
    deadline = time.monotonic() + wait_s
    while True:
        attempt = attempts.running(cq_id)
        if attempt is None:
            return worker._state_of(cq_id)
        dead = (attempt.worker_id == worker.worker_id or attempt.idle_ms >= stale_s * 1000
                or (attempt.txn_id is not None and attempt.txn_state is not TxnState.OPEN))
        if dead:
            return attempt
        left = deadline - time.monotonic()
        if left <= 0:
            if attempt.txn_id is None:
                return (f"'working' on worker {attempt.worker_id}, which claimed it {attempt.idle_ms / 1000:.0f} s "
                        "ago and is opening its compactor transaction (alive)")
            return (f"'working' on worker {attempt.worker_id}, which heartbeated its compactor transaction "
                    f"{attempt.txn_id} {attempt.idle_ms / 1000:.0f} s ago (alive)")
        log.info("compaction %s runs on worker %s (last heartbeat %.0f s ago): waiting until it finishes or stops "
                 "heartbeating", cq_id, attempt.worker_id, attempt.idle_ms / 1000)
        time.sleep(min(POLL_S, left))


def _finish_adopted(worker: Worker, attempt: RunningAttempt) -> WorkerOutcome:
    """Finish the adopted attempt from its job's result, or fail the row (module docstring, steps 4 and 5)."""
    from airflow_acid.compactor.worker import _Job

    ms = worker.metastore
    txn_id = attempt.txn_id
    assert txn_id is not None, "checked by resume_rows"
    job = _Job(ms.compactions.get(attempt.cq_id))
    job.txn_id, job.job_name = txn_id, attempt.job_id
    heartbeater = Heartbeater(ms.txns.heartbeat, worker._live_txns, worker.conf.txn_timeout_s / 2,
                              name=f"compactor-heartbeat-{worker.worker_id}")
    worker._heartbeater = heartbeater
    try:
        if attempt.txn_state is TxnState.OPEN:
            with worker._live_lock:
                worker._live.add(txn_id)
            heartbeater.start()
        worker._resolve(job)  # table and location as the catalog says now
        result = _reattach(worker, job, attempt)  # waits while the application runs, also when C is lost
        if attempt.txn_state is not TxnState.OPEN:
            raise CompactionAttemptError(
                f"the compactor transaction {txn_id} is {_state(attempt.txn_state)} (its worker stopped "
                f"heartbeating it for longer than hive.txn.timeout); the output of Spark application "
                f"{attempt.job_id} is discarded")
        worker._finish(job, result.by_id().get(str(attempt.cq_id)))
    except Exception as exc:  # noqa: BLE001 - every failure of the attempt is recorded on the row
        worker._fail(job, f"taking over compaction {attempt.cq_id} from worker {attempt.worker_id}: "
                          f"{describe_error(exc)}")
    finally:
        heartbeater.stop()
        with worker._live_lock:
            worker._live.discard(txn_id)
        worker._heartbeater = None
    assert job.outcome is not None, "set by _finish or _fail"
    return job.outcome


def _reattach(worker: Worker, job: _Job, attempt: RunningAttempt) -> PlanResult:
    """Wait for the attempt's job and return its result; its plan becomes the job's (for verification)."""
    runner = worker.runner
    if not isinstance(runner, ResumableRunner):
        raise CompactionAttemptError(f"the runner {type(runner).__name__} cannot find the job of an earlier attempt; "
                                     f"Spark application {attempt.job_id} may still be running")
    txn_id = attempt.txn_id
    assert txn_id is not None
    key = attempt_key(attempt.cq_id, txn_id, job.location or "")
    plan, result = runner.reattach(key, _application_id(attempt.job_id))
    compaction = next((c for c in plan.compactions if job_key(c) == key), None)
    if compaction is None or compaction.location.rstrip("/") != (job.location or "").rstrip("/"):
        raise CompactionAttemptError(f"the job found for compaction attempt {key} does not run it (plan of "
                                     f"{[job_key(c) for c in plan.compactions]})")
    job.compaction = compaction
    job.txns = worker.metastore.snapshots.valid_txn_list(txn_id)
    return result


def _application_id(job_id: str | None) -> str | None:
    """CQ_HADOOP_JOB_ID holds the job name until the application started, its id after."""
    if job_id and job_id.startswith(("app-", "local-", "application_", "driver-", "spark-")):
        return job_id
    return None


def _state(state: TxnState | None) -> str:
    return state.display if state is not None else "gone"


__all__ = ["resume_rows", "stale_after_s"]
