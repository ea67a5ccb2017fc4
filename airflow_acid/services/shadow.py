"""The shadow report: per table/partition over a time range, airflow-acid's recorded decisions beside what Hive's
compactor did (queue and history rows, refusals, 'did not initiate', failures, aborted-txn cleanups), put in one
:class:`ShadowCategory` each, with the directory figures and Hive's rows behind it. No Airflow here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from airflow_acid.acid.codes import CompactionState
from airflow_acid.metastore.initiator_store import InitiatorDecisionRecord, Outcome
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.metastore.shadow import HiveCompaction
from airflow_acid.metastore.store import Metastore

Entity = tuple[str, str, str | None]
_WANTS = (Outcome.QUEUED, Outcome.WOULD_QUEUE)
_HIVE_ACTED = (CompactionState.INITIATED, CompactionState.WORKING, CompactionState.READY_FOR_CLEANING,
               CompactionState.SUCCEEDED)
_HIVE_REFUSED = (CompactionState.REFUSED, CompactionState.DID_NOT_INITIATE)
_HIVE_FAILED = (CompactionState.FAILED, CompactionState.ABORTED)


class ShadowCategory(str, enum.Enum):
    """How airflow-acid's decision for a table/partition compares with what Hive did."""

    AGREED = "agreed"                      # both compacted, or neither
    EARLIER = "would compact earlier"      # airflow-acid decided to compact before Hive queued it
    LATER = "would compact later"          # Hive compacted; airflow-acid found it below its thresholds
    STARVED = "hive never compacted"       # airflow-acid would compact; Hive has no row for it at all
    HIVE_REFUSED = "hive refused"          # Hive only refused it or did not initiate it
    HIVE_FAILED = "hive failed"            # Hive's attempts failed
    NOT_EVALUATED = "not evaluated"        # Hive acted; airflow-acid recorded no decision in the range


@dataclass
class ShadowRow:
    """One table/partition: its category, airflow-acid's decision and Hive's rows behind it."""

    database: str
    table: str
    partition: str | None
    category: ShadowCategory
    decision: InitiatorDecisionRecord | None
    hive: list[HiveCompaction] = field(default_factory=list)

    @property
    def name(self) -> str:
        return entity_name(self.database, self.table, self.partition)

    @property
    def hive_summary(self) -> str:
        """Hive's rows in a few words: ``#12 major succeeded; #13 minor refused``."""
        return "; ".join(f"#{h.id} {h.type.display} {h.state.display}" for h in self.hive) or "nothing"

    def to_dict(self) -> dict[str, Any]:
        d = self.decision
        return {"table": f"{self.database}.{self.table}", "partition": self.partition,
                "category": self.category.value,
                "acid": None if d is None else {
                    "outcome": d.outcome.display, "type": d.type.display if d.type else None, "reason": d.reason,
                    "decided_at": d.decided_at, "delta_count": d.delta_count, "delta_size": d.delta_size,
                    "base_size": d.base_size},
                "hive": [{"id": h.id, "state": h.state.display, "type": h.type.display, "enqueued_at": h.enqueued_ms,
                          "ended_at": h.ended_ms, "initiator_id": h.initiator_id,
                          "highest_write_id": h.highest_write_id, "message": h.message} for h in self.hive]}


@dataclass
class ShadowReport:
    """Every compared table/partition of [since, until] (epoch ms) and the count per category."""

    since_ms: int
    until_ms: int
    rows: list[ShadowRow]

    @property
    def counts(self) -> dict[ShadowCategory, int]:
        counts = dict.fromkeys(ShadowCategory, 0)
        for row in self.rows:
            counts[row.category] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {"since": self.since_ms, "until": self.until_ms,
                "counts": {c.value: n for c, n in self.counts.items()}, "rows": [r.to_dict() for r in self.rows]}


def categorize(decision: InitiatorDecisionRecord | None, hive: list[HiveCompaction]) -> ShadowCategory:
    """The category of one table/partition (see :class:`ShadowCategory`)."""
    acted = [h for h in hive if h.state in _HIVE_ACTED]
    wants = decision is not None and decision.outcome in _WANTS
    if decision is None:
        if acted:
            return ShadowCategory.NOT_EVALUATED
    elif acted:
        if not wants:
            return ShadowCategory.LATER
        first = min((h.enqueued_ms for h in acted if h.enqueued_ms is not None), default=None)
        if first is not None and decision.decided_at is not None and decision.decided_at < first:
            return ShadowCategory.EARLIER
        return ShadowCategory.AGREED
    if any(h.state in _HIVE_FAILED for h in hive):
        return ShadowCategory.HIVE_FAILED
    if any(h.state in _HIVE_REFUSED for h in hive):
        return ShadowCategory.HIVE_REFUSED
    return ShadowCategory.STARVED if wants else ShadowCategory.AGREED


def compare(decisions: Iterable[InitiatorDecisionRecord], hive: Iterable[HiveCompaction], since_ms: int,
            until_ms: int) -> ShadowReport:
    """Pair decisions and Hive's rows by table/partition and categorize each pair."""
    by_decision: dict[Entity, InitiatorDecisionRecord] = {d.entity: d for d in decisions}
    by_hive: dict[Entity, list[HiveCompaction]] = {}
    for h in hive:
        by_hive.setdefault((h.database, h.table, h.partition), []).append(h)
    entities = sorted(set(by_decision) | set(by_hive), key=lambda e: (e[0], e[1], e[2] or ""))
    rows = [ShadowRow(db, table, part, categorize(by_decision.get((db, table, part)), by_hive.get((db, table, part), [])),
                      by_decision.get((db, table, part)), by_hive.get((db, table, part), []))
            for db, table, part in entities]
    return ShadowReport(since_ms, until_ms, rows)


def shadow_report(metastore: Metastore, since_ms: int | None = None, until_ms: int | None = None) -> ShadowReport:
    """The report of [since, until] (default: the last 7 days up to the database clock)."""
    until = until_ms if until_ms is not None else metastore.initiator.now_ms()
    since = since_ms if since_ms is not None else until - 7 * 24 * 3600 * 1000
    return compare(metastore.shadow.decisions_between(since, until), metastore.shadow.hive_compactions(since, until),
                   since, until)
