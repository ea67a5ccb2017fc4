"""The compaction Worker: one queue row from 'working' to 'ready for cleaning' (docs/hive-acid.md#worker, Hive 4).

For each claimed row: resolve the table/partition (missing ⇒ refused), open the compactor transaction C
(TxnType.COMPACTION; REBALANCE_COMPACTION for a rebalance) and a SHARED_READ lock in it (EXCL_WRITE for a
rebalance, which rewrites every ROW__ID; not granted at once ⇒ failed attempt), heartbeat C for the
whole run, take C's snapshot (TL) and the table's compactor write-id list (WIL), record C and the compacted high
watermark on the row, apply the "nothing to do" rule, build the plan, run it through a :class:`Runner`, verify
the output, then mark the row compacted and commit C (the commit records CQ_NEXT_TXN_ID / CQ_COMMIT_TIME).

Any failure aborts C, removes C's output directories (they carry ``_vC`` of a transaction that never committed,
so no snapshot could have read them) and moves the row to 'failed' with the error. A row revoked while this
worker ran (worker timeout) and claimed again by another worker is left to that worker: this worker's output is
discarded and C aborted, so two outputs for one range can never both become visible (docs/hive-acid.md#pitfalls item 7).
"""

from __future__ import annotations

import dataclasses
import getpass
import logging
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import fsspec

from airflow_acid.acid.codes import CompactionState, CompactionType, DataOperation, LockState, TxnState, TxnType
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidTxnList
from airflow_acid.compactor.committer import Committer, RowOwner, remove_outputs, verify_output
from airflow_acid.compactor.errors import CompactionAttemptError, describe_error
from airflow_acid.compactor.messages import WorkerOutcome, WorkerStatus
from airflow_acid.compactor.planner import NothingToCompact, compose_for_directory, max_num_delta_for, row_schema_of
from airflow_acid.compactor.proof import verify_proof
from airflow_acid.job.plan import EXECUTABLE_TYPES, Compaction, CompactionPlan, parse_order_by
from airflow_acid.job.result import CompactionResult, JobStatus
from airflow_acid.job.runner import ResumableRunner, Runner, bind_filesystem, spark_conf_of
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.compactions import NOTHING_TO_COMPACT, CompactionInfo
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import InvalidInputError, MetastoreError, NoSuchObjectError
from airflow_acid.metastore.heartbeat import Heartbeater
from airflow_acid.metastore.locks import lock_component_for
from airflow_acid.metastore.runs import TaskIdentity
from airflow_acid.metastore.txns import AbortReason
from airflow_acid.version import __version__

log = logging.getLogger(__name__)

JOB_NAME_INFIX = "-compactor-"


class _Refused(Exception):
    """The row cannot be compacted at all (table/partition gone, unsupported); goes to history as 'refused'."""


def job_name_for(host: str, db: str, table: str, partition: str | None = None) -> str:
    """Hive's job name: ``<host>-compactor-<db>.<table>[.<partition>]``."""
    name = f"{host}{JOB_NAME_INFIX}{db}.{table}"
    return f"{name}.{partition}" if partition else name


@dataclass
class _Job:
    """One claimed row while the Worker runs it."""

    info: CompactionInfo
    started: float = field(default_factory=time.monotonic)
    table: TableInfo | None = None
    location: str | None = None
    txn_id: int | None = None
    txns: ValidTxnList | None = None
    write_ids: ValidCompactorWriteIdList | None = None
    compaction: Compaction | None = None
    job_name: str | None = None
    commit_attempted: bool = False
    outcome: WorkerOutcome | None = None

    @property
    def entity(self) -> str:
        return self.info.full_partition_name

    @property
    def planned(self) -> Compaction:
        """The plan of a job that reached execution (``Worker._plan`` set it; the others have an outcome)."""
        assert self.compaction is not None, f"compaction {self.info.id} was not planned"
        return self.compaction

    @property
    def open_txn_id(self) -> int:
        """The compactor txn C of a job past ``Worker._prepare``'s open_txn."""
        assert self.txn_id is not None, f"compaction {self.info.id} has no compactor transaction"
        return self.txn_id


class Worker:
    """Hive's compaction Worker over one metastore; ``runner`` executes its plans (``airflow_acid.spark.runners``
    or the Airflow operator's SparkSubmitHook runner) — the Worker plans, verifies and commits, never executes.

    ``host`` names the job (``<host>-compactor-…``) and the transactions; ``worker_id`` (``<host>-<thread>``)
    is written to CQ_WORKER_ID when this worker claims rows; ``filesystem`` is an fsspec filesystem for table
    locations that are plain paths on a non-local filesystem (the runner gets it too, or refuses it: see
    :func:`~airflow_acid.job.runner.bind_filesystem`). ``verify`` is ``[acid] compaction_verify`` (``digest``,
    ``count``, ``off``: how each unit's output is proven before C commits, see ``compactor/proof.py``). ``task`` is
    the Airflow task instance this worker runs in (the operator's), recorded with each row it runs so the console
    links a compaction to its task log.
    """

    def __init__(self, metastore: Metastore, conf: MetastoreConf | None = None, *, runner: Runner,
                 host: str | None = None, worker_id: str | None = None,
                 filesystem: fsspec.AbstractFileSystem | None = None, reattach: bool = False,
                 verify: str = "digest", task: TaskIdentity | None = None) -> None:
        self.metastore = metastore
        self.verify = verify
        """``[acid] compaction_verify``: how the job proves each unit's output before C commits (compactor/proof.py)."""
        self.conf = conf or metastore.conf
        self.runner = bind_filesystem(runner, filesystem)
        self.host = host or socket.gethostname()
        self.worker_id = worker_id or f"{self.host}-{threading.get_native_id()}"
        self.filesystem = filesystem
        self.committer = Committer(metastore)
        self._live: set[int] = set()
        self._live_lock = threading.Lock()
        self._heartbeater: Heartbeater | None = None
        self.reattach = reattach
        """claim_and_compact takes over rows left 'working' by a worker that died (compactor.resume)."""
        self.task = task

    # --- entry points ------------------------------------------------------------------------------------

    def claim(self, pool: str | None = None) -> CompactionInfo | None:
        """Revoke rows stuck in 'working' past hive.compactor.worker.timeout, then claim the oldest 'initiated' row
        this worker may run (pooled: rows of ``pool`` only). Returns the claimed row or None."""
        self.metastore.initiator.revoke_timed_out_workers(self.conf.worker_timeout_s)
        return self.metastore.compactions.claim_next(self.worker_id, worker_version=__version__, pool=pool)

    def run_next(self, pool: str | None = None) -> WorkerOutcome | None:
        """Claim the next queued compaction and run it; None when the queue holds nothing for this worker."""
        info = self.claim(pool)
        if info is None:
            return None
        return self._run([info])[0]

    def claim_and_compact(self, cq_ids: Sequence[int]) -> tuple[list[WorkerOutcome], dict[int, str]]:
        """Claim the given 'initiated' rows for this worker and compact the claimed ones in ONE batch
        (:meth:`compact_batch`). Returns their outcomes and, for each id not claimed, why (its current state:
        run by another worker, aborted or done)."""
        claimed: list[int] = []
        not_claimed: dict[int, str] = {}
        orphans: list[int] = []
        for cq_id in dict.fromkeys(int(i) for i in cq_ids):
            info = self.metastore.compactions.claim(cq_id, self.worker_id, worker_version=__version__)
            if info is None:
                not_claimed[cq_id] = self._state_of(cq_id)
                if self.reattach and not_claimed[cq_id] == f"'{CompactionState.WORKING.display}'":
                    orphans.append(cq_id)
                log.info("compaction %s is %s: not claimed by this worker", cq_id, not_claimed[cq_id])
                continue
            log.info("claimed compaction %s: %s %s", cq_id, info.type.display, info.full_partition_name)
            claimed.append(cq_id)
        outcomes = self.compact_batch(claimed) if claimed else []
        if orphans:
            from airflow_acid.compactor.resume import resume_rows

            resumed, why = resume_rows(self, orphans)
            outcomes += resumed
            for o in resumed:
                not_claimed.pop(o.compaction_id, None)
            not_claimed.update(why)
        return outcomes, not_claimed

    def _state_of(self, cq_id: int) -> str:
        try:
            return f"'{self.metastore.compactions.get(cq_id).state.display}'"
        except NoSuchObjectError:
            return "unknown"

    def compact(self, cq_id: int) -> WorkerOutcome:
        """Run one already-claimed ('working') compaction."""
        return self.compact_batch([cq_id])[0]

    def compact_batch(self, cq_ids: Sequence[int]) -> list[WorkerOutcome]:
        """Run already-claimed compactions in ONE job (one Spark application per distinct ``compactor.spark.*``
        conf); one outcome per id, in order."""
        ids = list(dict.fromkeys(int(i) for i in cq_ids))
        if not ids:
            raise InvalidInputError("compact_batch needs at least one compaction id")
        infos = []
        for cq_id in ids:
            info = self.metastore.compactions.get(cq_id)
            if info.state is not CompactionState.WORKING:
                raise InvalidInputError(f"compaction {cq_id} of {info.full_partition_name} is "
                                        f"'{info.state.display}', not 'working': claim it first (Worker.claim)")
            infos.append(info)
        return self._run(infos)

    # --- the run -----------------------------------------------------------------------------------------

    def record_task(self, cq_id: int) -> None:
        """Record :attr:`task` with the row's run figures (best effort: a link for people, never a reason to fail)."""
        if self.task is None:
            return
        try:
            self.metastore.runs.record_task(cq_id, self.task)
        except Exception as exc:  # noqa: BLE001 - reporting only
            log.warning("compaction %s: recording its Airflow task failed: %s", cq_id, describe_error(exc))

    def _run(self, infos: Sequence[CompactionInfo]) -> list[WorkerOutcome]:
        jobs = [_Job(info) for info in infos]
        for info in infos:
            self.record_task(info.id)
        self._heartbeater = Heartbeater(self.metastore.txns.heartbeat, self._live_txns,
                                        self.conf.txn_timeout_s / 2, name=f"compactor-heartbeat-{self.worker_id}")
        self._heartbeater.start()
        try:
            for job in jobs:
                self._prepare(job)
            ready = [j for j in jobs if j.outcome is None]
            for group in _groups_by_spark_conf(ready):
                self._execute(group)
        finally:
            self._heartbeater.stop()
            with self._live_lock:
                self._live.clear()
        return [j.outcome for j in jobs]  # type: ignore[misc]

    def _live_txns(self) -> list[int]:
        with self._live_lock:
            return sorted(self._live)

    def _prepare(self, job: _Job) -> None:
        """Everything up to the plan: table, compactor txn, lock, snapshot, set_running, "nothing to do"."""
        info, ms = job.info, self.metastore
        try:
            table = self._resolve(job)
            run_as = info.run_as or table.owner or getpass.getuser()
            job.job_name = job_name_for(self.host, info.database, info.table, info.partition)
            rebalance = info.type is CompactionType.REBALANCE
            job.txn_id = ms.txns.open_txn(user=run_as, host=self.host,
                                          txn_type=TxnType.REBALANCE_COMPACTION if rebalance else TxnType.COMPACTION,
                                          agent_info=f"compactor {self.worker_id} compaction {info.id}")
            with self._live_lock:
                self._live.add(job.txn_id)
            lock = lock_component_for(DataOperation.REBALANCE if rebalance else DataOperation.COMPACT, info.database,
                                      info.table, info.partition, conf=self.conf)
            response = ms.locks.lock([lock], txn_id=job.txn_id, user=run_as, host=self.host, wait=False,
                                     agent_info=f"compactor {self.worker_id}")
            if response.state is not LockState.ACQUIRED:
                blocker = f" (blocked by {response.blocked_by.describe()})" if response.blocked_by else ""
                raise CompactionAttemptError(f"could not acquire the {lock.lock_type.display} lock on {job.entity} for the "
                                             f"compactor transaction {job.txn_id}{blocker}; the Initiator will "
                                             "schedule the compaction again")
            job.txns = ms.snapshots.valid_txn_list(job.txn_id)
            job.write_ids = ms.snapshots.compactor_write_ids(table.full_name, job.txns)
            ms.compactions.set_running(info.id, job.txn_id, job.write_ids.high_watermark, run_as=run_as,
                                       hadoop_job_id=job.job_name)
            self._plan(job, table)
        except _Refused as exc:
            self._refuse(job, str(exc))
        except Exception as exc:  # noqa: BLE001 - every failure of an attempt is recorded on the row
            self._fail(job, describe_error(exc))

    def _resolve(self, job: _Job) -> TableInfo:
        info, catalog = job.info, self.metastore.catalog
        try:
            table = catalog.get_table(info.database, info.table)
        except NoSuchObjectError:
            raise _Refused(f"table {info.database}.{info.table} does not exist any more") from None
        if info.type not in EXECUTABLE_TYPES:
            raise _Refused(f"{info.type.display} compaction of {job.entity} is not supported by the Spark "
                           "compactor; request MAJOR, MINOR or REBALANCE")
        if info.type is CompactionType.REBALANCE and table.num_buckets > 0 and table.bucket_cols:
            raise _Refused(f"REBALANCE compaction of {job.entity} is refused: {table.full_name} is bucketed "
                           f"(CLUSTERED BY {', '.join(table.bucket_cols)} INTO {table.num_buckets} BUCKETS) and "
                           "rebalancing would break its bucketing; request MAJOR instead")
        if info.partition is None:
            if table.is_partitioned:
                raise _Refused(f"{table.full_name} is partitioned: a compaction request must name a partition")
            job.location = table.location
        else:
            if not table.is_partitioned:
                raise _Refused(f"{table.full_name} is not partitioned but the request names partition "
                               f"{info.partition}")
            try:
                job.location = catalog.get_partition(info.database, info.table, info.partition).location
            except NoSuchObjectError:
                raise _Refused(f"partition {info.partition} of {table.full_name} does not exist any more") from None
        job.table = table
        return table

    def _plan(self, job: _Job, table: TableInfo) -> None:
        info = job.info
        request = dict(info.properties)
        assert job.location is not None and job.write_ids is not None, "set by _resolve and _prepare"
        plan = compose_for_directory(
            job.location, job.write_ids, job.open_txn_id, info.type,
            compaction_id=str(info.id), txns=job.txns, row_schema=row_schema_of(table),
            table_properties=table.properties, request_properties=request,
            max_num_delta=max_num_delta_for(table.properties, request, self.conf), filesystem=self.filesystem,
            insert_only=table.is_insert_only, number_of_buckets=info.number_of_buckets,
            order_by=parse_order_by(info.order_by), job_queue=self.conf.compactor_job_queue,
            events_mem=self.conf.transactional_events_mem)
        if isinstance(plan, NothingToCompact):
            self._nothing_to_do(job, plan)
            return
        if table.is_insert_only and not self.conf.compact_insert_only:
            # Hive's CompactorFactory: checked after the "nothing to do" rule, fails the attempt (C is aborted)
            raise CompactionAttemptError(
                f"insert-only compaction is disabled: {table.full_name} is insert-only and "
                "hive.compactor.compact.insert.only=false; set it to true to compact insert-only tables")
        job.compaction = dataclasses.replace(plan, verify=self.verify)

    def _nothing_to_do(self, job: _Job, nothing: NothingToCompact) -> None:
        """docs/hive-acid.md#compacting-one-row step 8: obsolete/aborted dirs ⇒ 'ready for cleaning' so the Cleaner runs,
        else refused; commit C."""
        ms = self.metastore
        if nothing.cleaner_has_work:
            if not self._mark_compacted_if_owner(job):
                self._lost(job)
                return
            status, message = WorkerStatus.CLEANER_ONLY, f"nothing to compact ({nothing.reason}); only the " \
                                                         "Cleaner has work"
        else:
            if self._owner(job) is not RowOwner.OURS:
                self._lost(job)
                return
            ms.compactions.mark_refused(job.info.id, f"{NOTHING_TO_COMPACT} {nothing.reason}")
            status, message = WorkerStatus.REFUSED, f"{NOTHING_TO_COMPACT} {nothing.reason}"
        job.commit_attempted = True
        ms.txns.commit(job.open_txn_id)
        self._forget(job)
        job.outcome = self._outcome(job, status, message)

    # --- running the job ---------------------------------------------------------------------------------

    def _execute(self, jobs: list[_Job]) -> None:
        plan = CompactionPlan(tuple(j.planned for j in jobs))
        first = jobs[0]
        assert first.job_name is not None, "set by _prepare"
        name = first.job_name if len(jobs) == 1 else f"{first.job_name}+{len(jobs) - 1}"
        spark_conf = spark_conf_of(first.planned)
        try:
            for j in jobs:
                j.job_name = name
                if len(jobs) > 1:
                    self.metastore.compactions.set_job_id(j.info.id, name)
            log.info("running %s (%d compaction(s))", name, len(jobs))
            if isinstance(self.runner, ResumableRunner):  # its application id goes on the rows (CQ_HADOOP_JOB_ID)
                result = self.runner.run_tracked(plan, job_name=name, spark_conf=spark_conf,
                                                 on_application=lambda app_id: self._record_application(jobs, app_id))
            else:
                result = self.runner.run(plan, job_name=name, spark_conf=spark_conf)
        except Exception as exc:  # noqa: BLE001 - the job as a whole failed
            for j in jobs:
                self._fail(j, f"compaction job {name} failed: {describe_error(exc)}")
            return
        by_id = result.by_id()
        for j in jobs:
            try:
                self._finish(j, by_id.get(str(j.info.id)))
            except Exception as exc:  # noqa: BLE001
                self._fail(j, describe_error(exc))

    def _record_application(self, jobs: list[_Job], application_id: str) -> None:
        """The job's Spark application started: its id goes on every row it runs (CQ_HADOOP_JOB_ID)."""
        log.info("Spark application %s runs compaction(s) %s", application_id, [j.info.id for j in jobs])
        for j in jobs:
            self.metastore.compactions.set_job_id(j.info.id, application_id)

    def _finish(self, job: _Job, result: CompactionResult | None) -> None:
        if result is None:
            raise CompactionAttemptError(f"the result of job {job.job_name} has no entry for compaction "
                                         f"{job.info.id}")
        if result.status != JobStatus.SUCCEEDED:
            raise CompactionAttemptError(f"compaction job {job.job_name} failed for {job.location}: "
                                         f"{result.error or result.status}")
        txn_id = job.open_txn_id
        lost = self._heartbeater.lost.get(txn_id) if self._heartbeater else None
        if lost:
            raise CompactionAttemptError(f"the compactor transaction {job.txn_id} is no longer open ({lost}); "
                                         "the output is discarded")
        assert job.txns is not None, "set by _prepare"
        verify_proof(job.planned, result)
        verify_output(job.planned, result, job.txns, filesystem=self.filesystem)
        if not self._mark_compacted_if_owner(job):
            self._lost(job)
            return
        job.commit_attempted = True
        try:
            self.metastore.txns.commit(txn_id)
        except Exception as exc:  # noqa: BLE001 - did the commit happen? ask, then undo if it did not
            if self._txn_state(txn_id) is not TxnState.COMMITTED:
                raise CompactionAttemptError(f"committing the compactor transaction {job.txn_id} failed: "
                                             f"{describe_error(exc)}") from None
        self._forget(job)
        job.outcome = self._outcome(job, WorkerStatus.COMPACTED, None, result)
        self.committer.record_figures(job.info, job.planned, result, job.outcome.seconds)
        log.info("compaction %s of %s committed in txn %s: %s", job.info.id, job.entity, job.txn_id,
                 ", ".join(result.outputs) or "no output")

    # --- bookkeeping -------------------------------------------------------------------------------------

    def _mark_compacted_if_owner(self, job: _Job) -> bool:
        return self.committer.mark_compacted_if_owner(job.info.id, job.txn_id)

    def _owner(self, job: _Job) -> RowOwner:
        return self.committer.owner(job.info, job.txn_id)

    def _txn_state(self, txn_id: int) -> TxnState | None:
        try:
            return self.metastore.txns.txn_state(txn_id)
        except Exception:  # noqa: BLE001 - unknown
            return None

    def _forget(self, job: _Job) -> None:
        with self._live_lock:
            self._live.discard(job.txn_id)

    def _outcome(self, job: _Job, status: WorkerStatus, message: str | None,
                 result: CompactionResult | None = None) -> WorkerOutcome:
        return WorkerOutcome(
            compaction_id=job.info.id, entity=job.entity, status=status, message=message, txn_id=job.txn_id,
            job_name=job.job_name, outputs=tuple(result.outputs) if result else (),
            rows_in=result.rows_in if result else 0, rows_out=result.rows_out if result else 0,
            files=result.files if result else 0, bytes=result.bytes if result else 0,
            seconds=round(time.monotonic() - job.started, 3))

    def _refuse(self, job: _Job, message: str) -> None:
        log.info("compaction %s refused: %s", job.info.id, message)
        try:
            if job.txn_id is not None:
                self._abort_and_discard(job)
            self.metastore.compactions.mark_refused(job.info.id, message)
            job.outcome = self._outcome(job, WorkerStatus.REFUSED, message)
        except Exception as exc:  # noqa: BLE001
            job.outcome = self._outcome(job, WorkerStatus.FAILED, f"{message} (and recording it failed: "
                                                                 f"{describe_error(exc)})")

    def _lost(self, job: _Job) -> None:
        if self._aborted_by_operator(job):
            return
        message = (f"compaction {job.info.id} of {job.entity} was revoked (hive.compactor.worker.timeout) and "
                   f"claimed again while this worker ran; transaction {job.txn_id} aborted and its output discarded")
        log.warning("%s", message)
        notes = self._abort_and_discard(job)
        job.outcome = self._outcome(job, WorkerStatus.REVOKED, message + notes)

    def _aborted_by_operator(self, job: _Job, notes: str | None = None) -> bool:
        """If an operator aborted the row while this worker ran (it is 'aborted' in the history): abort C, discard
        the output, and make that the outcome. The abort already aborted C when the row recorded it, which is how
        the attempt cannot commit: marking the row compacted found no 'working' row with C."""
        try:
            info = self.metastore.compactions.get(job.info.id)
        except MetastoreError:  # unknown (gone, database down): the caller reports what it knows
            return False
        if info.state is not CompactionState.ABORTED:
            return False
        message = (f"compaction {job.info.id} of {job.entity} was aborted while this worker ran "
                   f"({info.error_message or 'aborted'}); the job's output is discarded and never committed")
        log.warning("%s", message)
        if notes is None:
            notes = self._abort_and_discard(job)
        job.outcome = self._outcome(job, WorkerStatus.ABORTED, message + notes)
        return True

    def _fail(self, job: _Job, message: str) -> None:
        """Abort C, remove its output, move the row to 'failed' — each step best effort, reported in the outcome."""
        log.warning("compaction %s of %s failed: %s", job.info.id, job.entity, message)
        notes = self._abort_and_discard(job)
        try:
            owner = self._owner(job)
            if owner is RowOwner.OURS:
                self.metastore.compactions.mark_failed(job.info.id, message[:4000])
            elif owner is RowOwner.OTHER:
                notes += "; the row was revoked and claimed again, so it is left to that worker"
                job.outcome = self._outcome(job, WorkerStatus.REVOKED, message + notes)
                return
            elif self._aborted_by_operator(job, notes):
                return
            else:
                notes += "; the row had already left the queue"
        except Exception as exc:  # noqa: BLE001 - metastore down: the worker timeout revokes the row later
            notes += (f"; recording the failure failed ({describe_error(exc)}): the row stays 'working' until "
                      "hive.compactor.worker.timeout revokes it")
        job.outcome = self._outcome(job, WorkerStatus.FAILED, message + notes)

    def _abort_and_discard(self, job: _Job) -> str:
        """Abort C and delete its output directories; returns notes on what could not be done."""
        notes = ""
        if job.txn_id is None:
            return notes
        self._forget(job)
        state = self._txn_state(job.txn_id)
        if state is TxnState.OPEN:
            try:
                self.metastore.txns.abort(job.txn_id, AbortReason.COMPACTION_FAILED)
                state = TxnState.ABORTED
            except Exception as exc:  # noqa: BLE001
                state = self._txn_state(job.txn_id)
                if state is not TxnState.ABORTED:
                    notes += f"; aborting transaction {job.txn_id} failed ({describe_error(exc)})"
        committed_possible = state is TxnState.COMMITTED or (state is None and job.commit_attempted)
        if committed_possible:
            notes += (f"; transaction {job.txn_id} may have committed, so its output is kept (the Cleaner removes "
                      "it if the transaction turns out aborted)")
        elif job.compaction is not None and job.location is not None:
            try:
                remove_outputs(job.location, job.compaction.all_outputs, job.txn_id, filesystem=self.filesystem)
            except Exception as exc:  # noqa: BLE001 - invisible anyway (_v of an uncommitted txn)
                notes += (f"; removing the output failed ({describe_error(exc)}); it carries _v{job.txn_id:07d} of an "
                          "uncommitted transaction, so readers ignore it and the Cleaner removes it")
        return notes


def _groups_by_spark_conf(jobs: list[_Job]) -> list[list[_Job]]:
    """Compactions that agree on every ``spark.*`` job conf value share one application."""
    groups: dict[tuple[tuple[str, str], ...], list[_Job]] = {}
    for j in jobs:
        key = tuple(sorted(spark_conf_of(j.planned).items()))
        groups.setdefault(key, []).append(j)
    return list(groups.values())


__all__ = ["Worker", "job_name_for"]
