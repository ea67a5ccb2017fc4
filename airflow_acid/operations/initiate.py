"""One Initiator cycle as the Airflow sensor and its deferrable trigger run it (no Airflow imports): the cycle, the
rows waiting in the queue afterwards as JSON-friendly items for dynamic task mapping, and the cycle's metrics."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.initiator import Initiator, InitiatorReport
from airflow_acid.compactor.scheduling import Budgets, schedule_queue
from airflow_acid.metastore.store import Metastore
from airflow_acid.operations.compact import compaction_payload
from airflow_acid.operations.metrics import MetricsReport, initiator_cycle_metrics


@dataclass
class InitiatorPoke:
    """What one cycle did and what waits: ``waiting`` holds :func:`compaction_payload` items, oldest first."""

    report: InitiatorReport
    waiting: list[dict[str, Any]]
    metrics: MetricsReport
    held: list[str] = field(default_factory=list)

    def log_lines(self) -> list[str]:
        """The cycle in plain sentences (the sensor's and the trigger's log)."""
        lines = [] if self.report.ran else [f"Initiator cycle skipped: {self.report.message}"]
        lines += [f"not queued: {d.name} — {d.reason}" for d in self.report.declined]
        if not self.waiting:
            lines.append(f"nothing to compact ({self.report.candidates} candidate(s) looked at)")
        lines += [f"to compact: #{i['compaction_id']} {i['label']}" + (f" — {i['reason']}" if i["reason"] else "")
                  for i in self.waiting]
        lines += [f"held for a later run: {h}" for h in self.held]
        return lines


def initiator_poke(metastore: Metastore, pool_name: str | None = None,
                   budgets: Budgets | None = None) -> InitiatorPoke:
    """Run one Initiator cycle, then list the 'initiated' rows (of ``pool_name`` when given): oldest first, or —
    with ``budgets`` — highest benefit per cost first and only those the budgets admit this run
    (:mod:`airflow_acid.compactor.scheduling`; held rows wait). A failing cycle raises;
    :func:`initiator_failure_metrics` gives the figures to send then."""
    started = time.monotonic()
    report = Initiator(metastore).run_cycle()
    metrics = initiator_cycle_metrics(report.seconds or time.monotonic() - started, metastore.conf, ran=report.ran)
    reasons = {r.compaction_id: r.reason for r in report.queued}
    waiting = sorted(metastore.compactions.find(state=CompactionState.INITIATED, pool=pool_name), key=lambda i: i.id)
    held: list[str] = []
    if budgets is not None and waiting:
        order = schedule_queue(metastore, budgets, rows=waiting)
        held = [f"#{item.preview.compaction_id} {item.preview.name} — {item.held}" for item in order.held]
        by_id = {info.id: info for info in waiting}
        waiting = [by_id[cq_id] for item in order.admitted if (cq_id := item.preview.compaction_id) is not None]
    return InitiatorPoke(report, [compaction_payload(info, reasons.get(info.id)) for info in waiting], metrics, held)


def initiator_failure_metrics(metastore: Metastore, seconds: float) -> MetricsReport:
    """The figures of a cycle that raised after ``seconds``."""
    return initiator_cycle_metrics(seconds, metastore.conf, failed=True)


__all__ = ["InitiatorPoke", "initiator_failure_metrics", "initiator_poke"]
