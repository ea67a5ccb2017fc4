"""Backlog alerts, Airflow-free: is the compaction backlog, or the oldest 'ready for cleaning' row, past a limit?
Each alert is one plain message; for rows waiting to be cleaned it names the open transaction that blocks them (the
Cleaner's own dry run decides, as ``airflow-acid why`` does), so whoever is paged knows what to abort or chase."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.config.alert_limits import BacklogLimits
from airflow_acid.metastore.metrics import MetricsStore
from airflow_acid.metastore.store import Metastore


@dataclass(frozen=True)
class BacklogAlert:
    """One limit passed: what, by how much, and the transactions blocking cleanup (txn_id, user, host, age_s)."""

    kind: str
    """'backlog', 'ready_for_cleaning_age' or 'initiated_age'."""
    value: float
    limit: float
    message: str
    compaction_id: int | None = None
    blockers: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _blocked_by(metastore: Metastore, cq_id: int, filesystem: Any = None) -> tuple[str, list[dict[str, Any]]]:
    """Why ``cq_id`` is not cleaned yet, in words, and its blockers (the Cleaner's dry run of that row)."""
    entry = Cleaner(metastore, filesystem=filesystem).clean(cq_id, dry_run=True)
    blockers = [{"txn_id": b.txn_id, "user": b.user, "host": b.host, "age_s": round(b.age_s, 3), "why": b.why}
                for b in entry.blockers]
    if entry.blockers:
        return "blocked by " + "; ".join(b.describe() for b in entry.blockers), blockers
    if entry.status is CleanerStatus.WOULD_CLEAN:
        return "nothing blocks it: is the acid_cleanup DAG running?", blockers
    return entry.message or f"Cleaner status {entry.status}", blockers


def check_backlog(metastore: Metastore, limits: BacklogLimits, *, filesystem: Any = None) -> list[BacklogAlert]:
    """Every limit passed now (empty: all is well). One metastore read, plus one Cleaner dry run of the oldest
    'ready for cleaning' row when a cleaning limit is passed (``filesystem``: the warehouse's, for object stores)."""
    data = MetricsStore(metastore.db, metastore.conf).read()
    alerts: list[BacklogAlert] = []
    ready = data.oldest_ready_for_cleaning
    queued = {s: data.queue_counts.get(s, 0) for s in
              (CompactionState.INITIATED, CompactionState.WORKING, CompactionState.READY_FOR_CLEANING)}
    backlog = sum(queued.values())
    if limits.max_backlog is not None and backlog > limits.max_backlog:
        detail = ", ".join(f"{n} {s.display}" for s, n in queued.items())
        message = f"compaction backlog {backlog} > limit {limits.max_backlog} ({detail})"
        blockers: list[dict[str, Any]] = []
        if queued[CompactionState.READY_FOR_CLEANING] and ready is not None:
            why, blockers = _blocked_by(metastore, ready.id, filesystem)
            message += f"; the oldest 'ready for cleaning' row, compaction {ready.id}, is {why}"
        alerts.append(BacklogAlert("backlog", backlog, limits.max_backlog, message,
                                   ready.id if blockers and ready else None, blockers))
    if limits.max_ready_for_cleaning_age_s is not None and ready is not None \
            and ready.age_s > limits.max_ready_for_cleaning_age_s:
        why, blockers = _blocked_by(metastore, ready.id, filesystem)
        info = metastore.compactions.get(ready.id)
        alerts.append(BacklogAlert(
            "ready_for_cleaning_age", round(ready.age_s, 3), limits.max_ready_for_cleaning_age_s,
            f"compaction {ready.id} of {info.full_partition_name} has been 'ready for cleaning' for "
            f"{ready.age_s:.0f} s > limit {limits.max_ready_for_cleaning_age_s:g} s; {why}", ready.id, blockers))
    initiated = data.oldest_initiated
    if limits.max_initiated_age_s is not None and initiated is not None \
            and initiated.age_s > limits.max_initiated_age_s:
        info = metastore.compactions.get(initiated.id)
        alerts.append(BacklogAlert(
            "initiated_age", round(initiated.age_s, 3), limits.max_initiated_age_s,
            f"compaction {initiated.id} of {info.full_partition_name} has waited 'initiated' for "
            f"{initiated.age_s:.0f} s > limit {limits.max_initiated_age_s:g} s; is the acid_compaction DAG "
            f"running, with free slots in its pool{f' ({info.pool_name})' if info.pool_name else ''}?",
            initiated.id))
    return alerts


__all__ = ["BacklogAlert", "check_backlog"]
