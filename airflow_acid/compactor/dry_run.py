"""Dry run: what the next Initiator cycle and the Worker would do — the rows the Initiator would queue (with its
reasons), and for each of those and each row already waiting, the Worker's plan (inputs, outputs) with its
estimated cost and benefit — without writing anything.

The Initiator's own read-only evaluation (:meth:`~airflow_acid.compactor.initiator.Initiator.preview`: the same
candidates, checks and decisions as a cycle, no lease, nothing recorded or queued) gives the first half; the
planner's :func:`~airflow_acid.compactor.planner.preview_compaction` the second (each directory listed once and
composed with the same pure planner; no transaction is opened, so output names carry the next transaction id as an
estimate). :func:`next_run_schedule` adds the order the next compaction run would take within its budgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import fsspec

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.initiator import CandidateResult, Initiator, InitiatorReport
from airflow_acid.compactor.planner import CompactionPreview, preview_compaction, preview_queue
from airflow_acid.compactor.scheduling import RunSchedule, schedule
from airflow_acid.config.budgets import Budgets
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.initiator_store import Outcome
from airflow_acid.metastore.store import Metastore


@dataclass
class DryRunReport:
    """What the next Initiator cycle would decide and what the Worker would then run."""

    initiator: InitiatorReport
    previews: list[CompactionPreview]

    @property
    def would_queue(self) -> list[CandidateResult]:
        return [r for r in self.initiator.results if r.outcome is Outcome.WOULD_QUEUE]

    def as_dict(self) -> dict[str, Any]:
        def item(r: CandidateResult) -> dict[str, Any]:
            return {"table": f"{r.database}.{r.table}", "partition": r.partition, "outcome": r.outcome.display,
                    "type": r.type.display if r.type else None, "reason": r.reason}
        return {"candidates": self.initiator.candidates, "would_queue": [item(r) for r in self.would_queue],
                "declined": [item(r) for r in self.initiator.results if r.outcome is not Outcome.WOULD_QUEUE],
                "plans": [p.as_dict() for p in self.previews]}


def dry_run(metastore: Metastore, conf: MetastoreConf | None = None, *,
            filesystem: fsspec.AbstractFileSystem | None = None, pool: str | None = None) -> DryRunReport:
    """The next Initiator cycle and the Worker's plans for every row waiting after it (already 'initiated', then
    the ones the cycle would queue), writing nothing."""
    ms = metastore.with_conf(conf)
    report = Initiator(ms, conf).preview()
    rate = ms.runs.throughput()
    waiting = sorted(ms.compactions.find(state=CompactionState.INITIATED, pool=pool), key=lambda i: i.id)
    previews = preview_queue(ms, waiting, filesystem=filesystem, bytes_per_core_second=rate)
    for r in report.results:
        if r.outcome is Outcome.WOULD_QUEUE and r.type is not None:
            p = preview_compaction(ms, r.database, r.table, r.partition, r.type, filesystem=filesystem,
                                   bytes_per_core_second=rate)
            p.reason = r.reason
            previews.append(p)
    return DryRunReport(report, previews)


def next_run_schedule(metastore: Metastore, budgets: Budgets, conf: MetastoreConf | None = None, *,
                      filesystem: fsspec.AbstractFileSystem | None = None) -> tuple[DryRunReport, RunSchedule]:
    """The dry run and the order the next compaction run would take: rows already waiting and those the next
    Initiator cycle would queue, estimated, scored and admitted within ``budgets`` (writes nothing)."""
    report = dry_run(metastore, conf, filesystem=filesystem)
    return report, schedule(report.previews, budgets, metastore.initiator.now_ms())


__all__ = ["DryRunReport", "dry_run", "next_run_schedule"]
