"""Plan dry run: what the next Initiator cycle and the Worker would do — the rows the Initiator would queue (with
its reasons), and for each of those and each row already waiting, the Worker's plan (inputs, outputs) with its
estimated cost and benefit — without writing anything.

The Initiator's cycle runs unchanged against read-only stand-ins of its two write-capable services: reads go to
the metastore, writes (decisions, last-checked time, enqueue, 'did not initiate', revocations) become no-ops, and
a service method the stand-ins do not know fails loudly instead of writing. No lease is taken (a dry run may
look while a real cycle runs). The Worker's side lists each directory once and plans it with the same pure
planner; no transaction is opened, so output names carry the next transaction id as an estimate.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.compactor.cost import CompactionEstimate, estimate
from airflow_acid.compactor.initiator import CandidateResult, Initiator, InitiatorReport
from airflow_acid.compactor.listing import directory_state
from airflow_acid.compactor.planning import NothingToCompact, plan_compaction
from airflow_acid.compactor.worker import max_num_delta_for, row_schema_of
from airflow_acid.job.plan import EXECUTABLE_TYPES
from airflow_acid.metastore.compactions import CompactionInfo, CompactionQueue, EnqueueRequest, EnqueueResult
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.initiator_store import INITIATOR_MUTEX, InitiatorStore, Outcome
from airflow_acid.metastore.partitions import entity_name, normalize_partition_name
from airflow_acid.metastore.store import Metastore

log = logging.getLogger(__name__)


class DryRunWriteError(RuntimeError):
    """A dry run reached a metastore method that is not known to be read-only (a bug to fix here, never a write)."""


class _ReadOnly:
    """Forwards the listed read methods to ``target``; the write methods are the class's own no-ops."""

    READS: frozenset[str] = frozenset()

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        if name in self.READS:
            return getattr(self._target, name)
        raise DryRunWriteError(f"the plan dry run does not know whether {type(self._target).__name__}.{name} "
                               "writes; refusing to call it")


class _ReadOnlyInitiatorStore(_ReadOnly):
    READS = frozenset({"now_ms", "write_candidates", "retry_candidates", "abort_groups",
                       "busy_or_failed_entities", "partition_locations", "latest_decision", "decisions", "db",
                       "conf", "current_compaction", "failing_since"})

    def last_checked(self, name: str = INITIATOR_MUTEX) -> int:
        value: int = self._target.peek_last_checked(name)
        return value

    def record_decisions(self, records: Any) -> None:
        return None

    def store_last_checked(self, value: Any) -> None:
        return None

    def initiator_skip_reason(self, *args: Any, **kwargs: Any) -> str | None:
        kwargs["record"] = False
        result: str | None = self._target.initiator_skip_reason(*args, **kwargs)
        return result

    def revoke_timed_out_workers(self, *args: Any, **kwargs: Any) -> list[int]:
        return []

    def record_did_not_initiate(self, *args: Any, **kwargs: Any) -> int:
        return 0


class _ReadOnlyQueue(_ReadOnly):
    READS = frozenset({"find", "get", "show_compactions", "db", "conf"})

    def enqueue(self, db: str, table: str, partition: str | None = None,
                type: CompactionType = CompactionType.MAJOR, *, highest_write_id_now: int | None = None,
                **kwargs: Any) -> EnqueueResult:
        """§4.3's refusal rule, read only: a row of the entity 'initiated'/'working', or 'ready for cleaning' at the
        same high watermark, refuses; otherwise "accepted" with id 0 (nothing stored)."""
        for row in self._target.find(db=db, table=table):
            if partition is not None and row.partition != partition:
                continue
            busy = row.state in (CompactionState.INITIATED, CompactionState.WORKING)
            same = (row.state is CompactionState.READY_FOR_CLEANING and highest_write_id_now is not None
                    and row.highest_write_id == highest_write_id_now)
            if busy or same:
                return EnqueueResult(-1, CompactionState.REFUSED, f"Compaction is already scheduled with "
                                     f"state='{row.state.display}' and id={row.id}")
        return EnqueueResult(0, CompactionState.INITIATED)


    def enqueue_many(self, requests: Sequence[EnqueueRequest], **kwargs: Any) -> list[EnqueueResult]:
        """:meth:`enqueue` read only, for the cycle's batch: a request is refused when the rows or an earlier
        request of the same batch would refuse it (as ``CompactionQueue.enqueue_many`` does)."""
        answers: list[EnqueueResult] = []
        taken: set[tuple[str, str, str | None]] = set()
        for r in requests:
            key = (r.db.lower(), r.table.lower(), normalize_partition_name(r.partition))
            if key in taken:
                answers.append(EnqueueResult(-1, CompactionState.REFUSED,
                                             "Compaction is already scheduled earlier in this cycle"))
                continue
            answer = self.enqueue(r.db, r.table, r.partition, r.type, highest_write_id_now=r.highest_write_id_now)
            if answer.accepted:
                taken.add(key)
            answers.append(answer)
        return answers


class DryRunInitiator(Initiator):
    """The Initiator with read-only services: :meth:`preview` is one cycle that stores nothing."""

    def __init__(self, metastore: Metastore, conf: MetastoreConf | None = None, **kwargs: Any) -> None:
        super().__init__(metastore, conf, **kwargs)
        self.store: InitiatorStore = _ReadOnlyInitiatorStore(self.store)  # type: ignore[assignment]
        self.queue: CompactionQueue = _ReadOnlyQueue(self.queue)  # type: ignore[assignment]

    def run_cycle(self) -> InitiatorReport:
        return self.preview()

    def preview(self) -> InitiatorReport:
        """One cycle without a lease and without writes; "queued" results become "would queue"."""
        report = self._cycle()
        for r in report.results:
            if r.outcome is Outcome.QUEUED:
                r.outcome, r.compaction_id = Outcome.WOULD_QUEUE, None
        return report


@dataclass
class PlannedCompaction:
    """The Worker's plan for one compaction (a queued row, or one the Initiator would queue) and its estimate."""

    database: str
    table: str
    partition: str | None
    type: CompactionType
    compaction_id: int | None = None
    """The queue row; None for a compaction the next Initiator cycle would queue."""
    reason: str | None = None
    pool: str | None = None
    enqueue_time: int | None = None
    location: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    """Per step: type, inputs (base/original files/deltas), outputs."""
    estimate: CompactionEstimate | None = None
    nothing_to_do: str | None = None
    """The Worker would find nothing to compact (and why)."""
    error: str | None = None

    @property
    def name(self) -> str:
        return entity_name(self.database, self.table, self.partition)

    def as_dict(self) -> dict[str, Any]:
        return {"compaction_id": self.compaction_id, "table": f"{self.database}.{self.table}",
                "partition": self.partition, "type": self.type.display, "reason": self.reason, "pool": self.pool,
                "location": self.location, "steps": self.steps,
                "estimate": self.estimate.as_dict() if self.estimate else None,
                "nothing_to_do": self.nothing_to_do, "error": self.error}


@dataclass
class DryRunReport:
    """What the next Initiator cycle would decide and what the Worker would then run."""

    initiator: InitiatorReport
    plans: list[PlannedCompaction]

    @property
    def would_queue(self) -> list[CandidateResult]:
        return [r for r in self.initiator.results if r.outcome is Outcome.WOULD_QUEUE]

    def as_dict(self) -> dict[str, Any]:
        def item(r: CandidateResult) -> dict[str, Any]:
            return {"table": f"{r.database}.{r.table}", "partition": r.partition, "outcome": r.outcome.display,
                    "type": r.type.display if r.type else None, "reason": r.reason}
        return {"candidates": self.initiator.candidates, "would_queue": [item(r) for r in self.would_queue],
                "declined": [item(r) for r in self.initiator.results if r.outcome is not Outcome.WOULD_QUEUE],
                "plans": [p.as_dict() for p in self.plans]}


def plan_preview(metastore: Metastore, database: str, table: str, partition: str | None, ctype: CompactionType, *,
                 properties: Mapping[str, str] | None = None, compaction_id: int | None = None,
                 filesystem: fsspec.AbstractFileSystem | None = None,
                 bytes_per_core_second: float | None = None) -> PlannedCompaction:
    """List the directory once and plan it as the Worker would (nothing opened, locked or written)."""
    planned = PlannedCompaction(database, table, partition, ctype, compaction_id)
    try:
        if ctype not in EXECUTABLE_TYPES:
            planned.nothing_to_do = f"{ctype.display} compactions are not run by the Spark compactor"
            return planned
        info = metastore.catalog.get_table(database, table)
        planned.location = (metastore.catalog.get_partition(database, table, partition).location
                            if partition is not None else info.location)
        txns = metastore.snapshots.valid_txn_list()
        write_ids = metastore.snapshots.compactor_write_ids(info.full_name, txns)
        state = directory_state(planned.location, write_ids, txns, filesystem=filesystem, ignore_empty_files=True,
                                missing_ok=True)
        request = dict(properties or {})
        plan = plan_compaction(state, write_ids, txns.high_watermark + 1, ctype, location=planned.location,
                               compaction_id=str(compaction_id or 0), row_schema=row_schema_of(info),
                               table_properties=info.properties, request_properties=request,
                               max_num_delta=max_num_delta_for(info.properties, request, metastore.conf),
                               insert_only=info.is_insert_only)
        if isinstance(plan, NothingToCompact):
            planned.nothing_to_do = plan.reason + ("; only the Cleaner has work" if plan.cleaner_has_work else "")
            return planned
        planned.steps = [{"type": s.type.display, "inputs": [*([s.base] if s.base else []), *s.original_files,
                                                              *s.deltas], "outputs": list(s.outputs)}
                         for s in plan.steps]
        planned.estimate = estimate(state, ctype, bytes_per_core_second=bytes_per_core_second)
    except Exception as exc:  # noqa: BLE001 - a dry run reports what it could not plan
        planned.error = f"{type(exc).__name__}: {exc}"
    return planned


def queued_plans(metastore: Metastore, rows: list[CompactionInfo], *,
                 filesystem: fsspec.AbstractFileSystem | None = None,
                 bytes_per_core_second: float | None = None) -> list[PlannedCompaction]:
    """:func:`plan_preview` of queue rows (their requested type and properties)."""
    plans = []
    for row in rows:
        p = plan_preview(metastore, row.database, row.table, row.partition, row.type, properties=row.properties,
                         compaction_id=row.id, filesystem=filesystem, bytes_per_core_second=bytes_per_core_second)
        p.pool, p.enqueue_time = row.pool_name, row.enqueue_time
        plans.append(p)
    return plans


def dry_run(metastore: Metastore, conf: MetastoreConf | None = None, *,
            filesystem: fsspec.AbstractFileSystem | None = None, pool: str | None = None) -> DryRunReport:
    """The next Initiator cycle and the Worker's plans for every row waiting after it (already 'initiated', then
    the ones the cycle would queue), writing nothing."""
    ms = metastore.with_conf(conf)
    report = DryRunInitiator(ms, conf).preview()
    rate = ms.runs.throughput()
    waiting = sorted(ms.compactions.find(state=CompactionState.INITIATED, pool=pool), key=lambda i: i.id)
    plans = queued_plans(ms, waiting, filesystem=filesystem, bytes_per_core_second=rate)
    for r in report.results:
        if r.outcome is Outcome.WOULD_QUEUE and r.type is not None:
            p = plan_preview(ms, r.database, r.table, r.partition, r.type, filesystem=filesystem,
                             bytes_per_core_second=rate)
            p.reason = r.reason
            plans.append(p)
    return DryRunReport(report, plans)
