"""The shadow report: per table/partition over a time range, airflow-acid's decisions beside what Hive's compactor did
(queue and history rows, refusals, 'did not initiate', failures, aborted-txn cleanups), put in one
:class:`ShadowCategory` each, with the directory figures and Hive's rows behind it. No Airflow here.

airflow-acid's side is the history of its shadow cycles in the range (ACID_INITIATOR_DECISION_LOG): "earlier" and
"later" are judged from the decision it had at its last look before Hive first acted, so a decision that flipped
afterwards — typically to "not needed" once Hive's compaction removed the deltas — still counts as what it was then.
A table/partition without logged cycles in the range falls back to its latest decision (ACID_INITIATOR_DECISIONS).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from airflow_acid.acid.codes import CompactionState
from airflow_acid.metastore.initiator_store import Entity, InitiatorDecisionRecord
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.metastore.shadow import WANTS_COMPACTION, DecisionHistory, HiveCompaction
from airflow_acid.metastore.store import Metastore

_HIVE_ACTED = (CompactionState.INITIATED, CompactionState.WORKING, CompactionState.READY_FOR_CLEANING,
               CompactionState.SUCCEEDED)
_HIVE_REFUSED = (CompactionState.REFUSED, CompactionState.DID_NOT_INITIATE)
_HIVE_FAILED = (CompactionState.FAILED, CompactionState.ABORTED)


class ShadowCategory(str, enum.Enum):
    """How airflow-acid's decision for a table/partition compares with what Hive did."""

    AGREED = "agreed"                      # both compacted, or neither
    EARLIER = "would compact earlier"      # airflow-acid wanted to compact at its last look before Hive queued it
    LATER = "would compact later"          # Hive compacted; airflow-acid found it below its thresholds then
    STARVED = "hive never compacted"       # airflow-acid (still) would compact; Hive has no row for it at all
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
    """airflow-acid's latest decision in the range."""
    hive: list[HiveCompaction] = field(default_factory=list)
    history: DecisionHistory | None = None
    """Every decision in the range, as runs of one outcome."""
    compact_at: int | None = None
    """When airflow-acid decided to compact: the start of its "compact" run at its last look before Hive first acted,
    else its first "compact" decision in the range (None: never)."""

    @property
    def hive_first_at(self) -> int | None:
        """When Hive first queued a compaction (or cleanup) of it in the range (None: it did not)."""
        return _first_acted(self.hive)

    @property
    def basis(self) -> InitiatorDecisionRecord | None:
        """The decision the category rests on: airflow-acid's last look before Hive first acted when there was one
        (its run of one outcome's last decision, or the run's first when the run went on after Hive acted), else its
        latest decision in the range (the deltas and sizes the report shows)."""
        first = self.hive_first_at
        before = self.history.last_before(first) if self.history is not None and first is not None else None
        if before is None:
            return self.decision
        span = before[1]
        return span.last if first is not None and span.last_ms < first else span.first

    @property
    def lead_ms(self) -> int | None:
        """How long before Hive airflow-acid decided to compact (negative: after; None: one of them did not)."""
        first = self.hive_first_at
        return None if first is None or self.compact_at is None else first - self.compact_at

    @property
    def name(self) -> str:
        return entity_name(self.database, self.table, self.partition)

    @property
    def timeline_text(self) -> str:
        """airflow-acid's decisions over the range in a few words: ``not needed ×3 → would queue ×2``."""
        if self.history is None:
            return "—"
        return " → ".join(f"{s.outcome.display} ×{s.cycles}" if s.cycles > 1 else s.outcome.display
                          for s in self.history.spans)

    @property
    def hive_summary(self) -> str:
        """Hive's rows in a few words: ``#12 major succeeded; #13 minor refused``."""
        return "; ".join(f"#{h.id} {h.type.display} {h.state.display}" for h in self.hive) or "nothing"

    def to_dict(self) -> dict[str, Any]:
        return {"table": f"{self.database}.{self.table}", "partition": self.partition,
                "category": self.category.value, "acid": _decision_dict(self.decision),
                "basis": _decision_dict(self.basis),
                "hive": [{"id": h.id, "state": h.state.display, "type": h.type.display, "enqueued_at": h.enqueued_ms,
                          "ended_at": h.ended_ms, "initiator_id": h.initiator_id,
                          "highest_write_id": h.highest_write_id, "message": h.message} for h in self.hive],
                "compact_at": self.compact_at, "hive_first_at": self.hive_first_at, "lead_ms": self.lead_ms,
                "decisions": self.history.decisions if self.history else 0,
                "flips": self.history.flips if self.history else 0,
                "timeline": [] if self.history is None else [
                    {"outcome": s.outcome.display, "from": s.first_ms, "to": s.last_ms, "cycles": s.cycles,
                     "type": s.last.type.display if s.last.type else None,
                     "delta_count": [s.first.delta_count, s.last.delta_count],
                     "delta_size": [s.first.delta_size, s.last.delta_size],
                     "base_size": [s.first.base_size, s.last.base_size]} for s in self.history.spans]}


def _decision_dict(d: InitiatorDecisionRecord | None) -> dict[str, Any] | None:
    return None if d is None else {
        "outcome": d.outcome.display, "type": d.type.display if d.type else None, "reason": d.reason,
        "decided_at": d.decided_at, "delta_count": d.delta_count, "delta_size": d.delta_size, "base_size": d.base_size}


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


def _first_acted(hive: list[HiveCompaction]) -> int | None:
    return min((h.enqueued_ms for h in hive if h.state in _HIVE_ACTED and h.enqueued_ms is not None), default=None)


def categorize(history: DecisionHistory | None, hive: list[HiveCompaction]) -> tuple[ShadowCategory, int | None]:
    """The category of one table/partition (see :class:`ShadowCategory`) and when airflow-acid decided to compact.

    When Hive acted, airflow-acid's decision at its last look before Hive first queued it decides: "compact" is
    earlier, anything else later. Without a look before, it agreed if it wanted to compact at some point in the
    range, else it would have compacted later. When Hive did not act, its failures and refusals come first; else
    the latest decision tells starved ("compact") from agreed."""
    acted = [h for h in hive if h.state in _HIVE_ACTED]
    first_compact = history.first_compact_ms if history is not None else None
    if history is None:
        if acted:
            return ShadowCategory.NOT_EVALUATED, None
    elif acted:
        first_hive = _first_acted(hive)
        before = history.last_before(first_hive) if first_hive is not None else None
        if before is not None:
            index, span = before
            if span.wants:
                return ShadowCategory.EARLIER, history.wanting_since(index)
            return ShadowCategory.LATER, first_compact
        return (ShadowCategory.AGREED if first_compact is not None else ShadowCategory.LATER), first_compact
    if any(h.state in _HIVE_FAILED for h in hive):
        return ShadowCategory.HIVE_FAILED, first_compact
    if any(h.state in _HIVE_REFUSED for h in hive):
        return ShadowCategory.HIVE_REFUSED, first_compact
    wants = history is not None and history.latest.outcome in WANTS_COMPACTION
    return (ShadowCategory.STARVED if wants else ShadowCategory.AGREED), first_compact


def compare(decisions: Iterable[InitiatorDecisionRecord], hive: Iterable[HiveCompaction], since_ms: int,
            until_ms: int, histories: dict[Entity, DecisionHistory] | None = None) -> ShadowReport:
    """Pair airflow-acid's decisions and Hive's rows by table/partition and categorize each pair: ``histories``
    (the decision log of the range) where an entity has one, else its latest decision in ``decisions``."""
    by_history: dict[Entity, DecisionHistory] = dict(histories or {})
    for d in decisions:
        by_history.setdefault(d.entity, DecisionHistory.of([d]))
    by_hive: dict[Entity, list[HiveCompaction]] = {}
    for h in hive:
        by_hive.setdefault((h.database, h.table, h.partition), []).append(h)
    rows = []
    for entity in sorted(set(by_history) | set(by_hive), key=lambda e: (e[0], e[1], e[2] or "")):
        history, rows_of_hive = by_history.get(entity), by_hive.get(entity, [])
        category, compact_at = categorize(history, rows_of_hive)
        rows.append(ShadowRow(*entity, category, history.latest if history else None, rows_of_hive, history,
                              compact_at))
    return ShadowReport(since_ms, until_ms, rows)


def shadow_report(metastore: Metastore, since_ms: int | None = None, until_ms: int | None = None) -> ShadowReport:
    """The report of [since, until] (default: the last 7 days up to the database clock)."""
    until = until_ms if until_ms is not None else metastore.initiator.now_ms()
    since = since_ms if since_ms is not None else until - 7 * 24 * 3600 * 1000
    return compare(metastore.shadow.decisions_between(since, until), metastore.shadow.hive_compactions(since, until),
                   since, until, metastore.shadow.decision_histories(since, until))
