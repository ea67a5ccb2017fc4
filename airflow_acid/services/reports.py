"""One report function per compactor cycle, shared by the Airflow sensors, triggers and operators, the CLI and the
console (no Airflow imports): each runs (or previews) the cycle and returns what it did as a typed message, the
cycle's log lines and its metrics, so the surfaces only render them.

- :func:`initiator_cycle`: one Initiator cycle and the compactions waiting afterwards;
- :func:`worker_batch`: the Worker claiming and compacting given rows (or the next one) in one batch;
- :func:`cleaner_cycle`: one Cleaner cycle;
- :func:`housekeeping_pass`: one HouseKeeper pass;
- :func:`next_run`: the dry run of the next Initiator cycle and compaction run, in running order (writes nothing).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.cleaner import Cleaner, CleanerReport
from airflow_acid.compactor.dry_run import DryRunReport, next_run_schedule
from airflow_acid.compactor.housekeeper import HouseKeeper
from airflow_acid.compactor.initiator import DEFAULT_HIVE_ACTIVE_WINDOW_S, Initiator, InitiatorReport
from airflow_acid.compactor.messages import (
    CleanerSummary,
    HouseKeeperReport,
    QueuedCompaction,
    WorkerOutcome,
    WorkerStatus,
)
from airflow_acid.compactor.scheduling import RunSchedule, schedule_queue
from airflow_acid.compactor.worker import Worker
from airflow_acid.config import Budgets
from airflow_acid.config.scope import CompactionScope
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.initiator_store import Outcome
from airflow_acid.metastore.store import Metastore
from airflow_acid.services.metrics import (
    MetricsReport,
    cleaner_cycle_metrics,
    initiator_cycle_metrics,
    worker_metrics,
)
from airflow_acid.units import iec_size

# --- Initiator -------------------------------------------------------------------------------------------------


@dataclass
class InitiatorCycle:
    """What one Initiator cycle did and what waits: ``waiting`` in running order (oldest first without budgets)."""

    report: InitiatorReport
    waiting: list[QueuedCompaction]
    metrics: MetricsReport
    held: list[str] = field(default_factory=list)
    shadow: bool = False
    """A shadow cycle ([acid] mode = shadow): decisions recorded, nothing queued."""

    @property
    def lines(self) -> list[str]:
        """The cycle in plain sentences (the sensor's and the trigger's log)."""
        lines = [] if self.report.ran else [f"Initiator cycle skipped: {self.report.message}"]
        if self.shadow:
            would = [r for r in self.report.results if r.outcome is Outcome.WOULD_QUEUE]
            return [self.report.message] + [f"would compact: {r.name} ({r.type.display if r.type else ''}) — "
                                            f"{r.reason}" for r in would] + [
                f"nothing to compact in shadow mode ({self.report.candidates} candidate(s) looked at)"]
        lines += [f"not queued: {d.name} — {d.reason}" for d in self.report.declined]
        if not self.waiting:
            lines.append(f"nothing to compact ({self.report.candidates} candidate(s) looked at)")
        lines += [f"to compact: #{q.compaction_id} {q.label}" + (f" — {q.reason}" if q.reason else "")
                  for q in self.waiting]
        lines += [f"held for a later run: {h}" for h in self.held]
        return lines

    def to_xcom(self) -> list[dict[str, Any]]:
        """The waiting compactions as :class:`QueuedCompaction` items (dynamic task mapping)."""
        return [q.to_xcom() for q in self.waiting]


def shadow_cycle(metastore: Metastore) -> InitiatorCycle:
    """[acid] mode = shadow: evaluate and record only (Initiator.run_shadow); nothing waits to be compacted."""
    started = time.monotonic()
    report = Initiator(metastore).run_shadow()
    report.message = ("shadow mode ([acid] mode = shadow): decisions recorded in ACID_INITIATOR_DECISIONS, nothing "
                      "queued; compare with Hive's compactor with airflow-acid shadow report")
    metrics = initiator_cycle_metrics(report.seconds or time.monotonic() - started, metastore.conf, ran=True)
    return InitiatorCycle(report, [], metrics, shadow=True)


def initiator_cycle(metastore: Metastore, pool_name: str | None = None,
                    budgets: Budgets | None = None, *, shadow: bool = False, scope: CompactionScope | None = None,
                    hive_active_window_s: float = DEFAULT_HIVE_ACTIVE_WINDOW_S) -> InitiatorCycle:
    """Run one Initiator cycle, then list the 'initiated' rows (of ``pool_name`` when given): oldest first, or —
    with ``budgets`` — highest benefit per cost first and only those the budgets admit this run
    (:mod:`airflow_acid.compactor.scheduling`; held rows wait). A failing cycle raises;
    :func:`initiator_failure_metrics` gives the figures to send then."""
    started = time.monotonic()
    if shadow:
        return shadow_cycle(metastore)
    report = Initiator(metastore, scope=scope, hive_active_window_s=hive_active_window_s).run_cycle()
    metrics = initiator_cycle_metrics(report.seconds or time.monotonic() - started, metastore.conf, ran=report.ran)
    reasons = {r.compaction_id: r.reason for r in report.queued}
    waiting = sorted(metastore.compactions.find(state=CompactionState.INITIATED, pool=pool_name), key=lambda i: i.id)
    if scope is not None and scope.explicit:  # rows Hive queued for tables outside the scope are Hive's to run
        waiting = [i for i in waiting if scope.covers(i.database, i.table, i.pool_name)]
    held: list[str] = []
    if budgets is not None and waiting:
        order = schedule_queue(metastore, budgets, rows=waiting)
        held = [f"#{item.preview.compaction_id} {item.preview.name} — {item.held}" for item in order.held]
        by_id = {info.id: info for info in waiting}
        waiting = [by_id[cq_id] for item in order.admitted if (cq_id := item.preview.compaction_id) is not None]
    return InitiatorCycle(report, [QueuedCompaction.of(info, reasons.get(info.id)) for info in waiting], metrics,
                          held)


def initiator_failure_metrics(metastore: Metastore, seconds: float) -> MetricsReport:
    """The figures of a cycle that raised after ``seconds``."""
    return initiator_cycle_metrics(seconds, metastore.conf, failed=True)


# --- Worker ----------------------------------------------------------------------------------------------------


@dataclass
class WorkerBatch:
    """What the Worker did with one batch: an outcome per compacted row, and the rows it could not claim."""

    outcomes: list[WorkerOutcome]
    metrics: MetricsReport
    not_claimed: dict[int, str] = field(default_factory=dict)
    """Requested id -> its state when it could not be claimed (run by another worker, aborted or done)."""
    nothing_waiting: str | None = None
    """Why there was nothing to run (no outcome at all): the sentence a skipped task shows."""

    @property
    def failed(self) -> list[WorkerOutcome]:
        """Outcomes the row went to 'failed' with, or that another worker took over."""
        return [o for o in self.outcomes if o.status in (WorkerStatus.FAILED, WorkerStatus.REVOKED)]

    @property
    def refused(self) -> list[WorkerOutcome]:
        """Outcomes the Worker refused (nothing to compact, table or partition gone): no compaction happened."""
        return [o for o in self.outcomes if o.status is WorkerStatus.REFUSED]

    @property
    def outcome_lines(self) -> list[str]:
        """One sentence per compaction, for the DAG run's note: ``compaction 12 of db.t/ds=1: refused — …``."""
        return [f"compaction {o.compaction_id} of {o.entity}: {o.status}" + (f" — {o.message}" if o.message else "")
                for o in self.outcomes]

    @property
    def lines(self) -> list[str]:
        lines = [f"compaction {cq_id} is {state}: not claimed by this task" for cq_id, state in self.not_claimed.items()]
        lines += [f"compaction {o.compaction_id} of {o.entity}: {o.status}{f' — {o.message}' if o.message else ''} "
                  f"({o.rows_in} row(s) in, {o.rows_out} out, {o.files} file(s), {o.seconds:.1f} s)"
                  for o in self.outcomes]
        return lines

    def to_xcom(self) -> list[dict[str, Any]]:
        return [o.to_xcom() for o in self.outcomes]


def worker_batch(worker: Worker, ids: Sequence[int] = (), pool_name: str | None = None) -> WorkerBatch:
    """Claim ``ids`` and compact them in one batch (:meth:`Worker.claim_and_compact`) — or, with no ids, the next
    queued row (of ``pool_name``)."""
    if not ids:
        outcome = worker.run_next(pool_name)
        if outcome is None:
            where = f" in pool {pool_name}" if pool_name else ""
            return WorkerBatch([], MetricsReport(), nothing_waiting=f"no compaction is waiting{where}")
        return WorkerBatch([outcome], worker_metrics([outcome]))
    outcomes, not_claimed = worker.claim_and_compact(ids)
    nothing = None if outcomes else (f"compaction(s) {list(ids)} no longer waiting (run by another worker, aborted "
                                     "or done)")
    return WorkerBatch(outcomes, worker_metrics(outcomes), not_claimed, nothing)


# --- Cleaner ---------------------------------------------------------------------------------------------------


@dataclass
class CleanerCycle:
    """One Cleaner cycle: the Cleaner's report, its summary as passed on, and its metrics (none for a dry run or a
    skipped cycle)."""

    report: CleanerReport
    metrics: MetricsReport

    @property
    def summary(self) -> CleanerSummary:
        return CleanerSummary.of(self.report)

    @property
    def lines(self) -> list[str]:
        dry_run = self.report.dry_run
        lines = []
        for e in self.report.entries + self.report.abort_cleanups:
            lines.append(f"{'would clean' if dry_run else 'cleaned'} {e.entity}: {e.status}"
                         + (f" ({len(e.deletions)} deletion(s))" if e.deletions else ""))
            lines += [f"  {'would delete' if dry_run else 'deleted'} {d.url} — {d.reason}" for d in e.deletions]
        lines += [f"undone compaction {u.compaction_id} of {u.entity}: {u.status} — {u.message}"
                  for u in self.report.undone]
        for e in self.report.waiting:
            lines.append(f"waiting: {e.entity}" + ("; blocked by " + ", ".join(b.describe() for b in e.blockers)
                                                     if e.blockers else f" ({e.message})" if e.message else ""))
        return lines

    def to_xcom(self) -> dict[str, Any]:
        return self.summary.to_xcom()


def cleaner_cycle(metastore: Metastore, *, dry_run: bool = False, conf: MetastoreConf | None = None,
                  filesystem: fsspec.AbstractFileSystem | None = None,
                  scope: CompactionScope | None = None) -> CleanerCycle:
    """One Cleaner cycle (``dry_run``: only what would go). A failing cycle raises; :func:`cleaner_failure_metrics`
    gives the figures to send then."""
    started = time.monotonic()
    report = Cleaner(metastore, conf, filesystem=filesystem, scope=scope).run_cycle(dry_run=dry_run)
    metrics = MetricsReport()
    if not dry_run and report.skipped is None:
        metrics = cleaner_cycle_metrics(time.monotonic() - started, deletions=len(report.deletions))
    return CleanerCycle(report, metrics)


def cleaner_failure_metrics(seconds: float) -> MetricsReport:
    """The figures of a Cleaner cycle that raised after ``seconds``."""
    return cleaner_cycle_metrics(seconds, failed=True)


# --- HouseKeeper -----------------------------------------------------------------------------------------------


@dataclass
class HouseKeepingPass:
    """One HouseKeeper pass (no metrics of its own)."""

    report: HouseKeeperReport
    metrics: MetricsReport = field(default_factory=MetricsReport)

    @property
    def lines(self) -> list[str]:
        return [f"housekeeping: {self.report.to_dict()}"]

    def to_xcom(self) -> dict[str, Any]:
        return self.report.to_xcom()


def housekeeping_pass(metastore: Metastore) -> HouseKeepingPass:
    """One HouseKeeper pass: timed-out transactions aborted, locks retired, compaction history purged."""
    return HouseKeepingPass(HouseKeeper(metastore).run_once())


# --- the next run ----------------------------------------------------------------------------------------------


@dataclass
class NextRun:
    """What the next Initiator cycle would queue and what the Worker would run, in the order of the next
    compaction run within the budgets (a dry run: nothing was written)."""

    report: DryRunReport
    order: RunSchedule
    metrics: MetricsReport = field(default_factory=MetricsReport)

    @property
    def lines(self) -> list[str]:
        lines = [f"would queue: {r.name} {r.type.display if r.type else ''} — {r.reason}"
                 for r in self.report.would_queue]
        for rank, item in enumerate(self.order.items, 1):
            p, e = item.preview, item.preview.estimate
            figures = f"{iec_size(e.bytes_in)} in {e.files_in} files, ~{e.core_seconds:.1f} core-s, benefit {e.benefit:g}" \
                if e else (p.nothing_to_do or p.error or "")
            lines.append(f"{rank if item.admitted else 'held'}: #{p.compaction_id or 'new'} {p.name} "
                         f"{p.type.display}: {figures}{' — ' + item.held if item.held else ''}")
        return lines

    def to_xcom(self) -> dict[str, Any]:
        """would_queue, declined, candidates and plans (the Worker's plans in running order)."""
        return {**self.report.as_dict(), "plans": [i.as_dict() for i in self.order.items]}


def next_run(metastore: Metastore, budgets: Budgets, *,
             filesystem: fsspec.AbstractFileSystem | None = None) -> NextRun:
    """The dry run of the next Initiator cycle and compaction run (:func:`next_run_schedule`); writes nothing."""
    report, order = next_run_schedule(metastore, budgets, filesystem=filesystem)
    return NextRun(report, order)


__all__ = ["CleanerCycle", "HouseKeepingPass", "InitiatorCycle", "NextRun", "WorkerBatch", "cleaner_cycle",
           "cleaner_failure_metrics", "housekeeping_pass", "initiator_cycle", "initiator_failure_metrics",
           "next_run", "worker_batch"]
