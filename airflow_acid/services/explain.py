""""Why": why a table/partition was or was not compacted, and what keeps its obsolete files from being cleaned —
the Initiator's recorded decision, what its thresholds say about the directory now, the queue, and the Cleaner's
view of every 'ready for cleaning' row (with the open transactions that block it), in plain sentences."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from airflow_acid.acid.codes import CompactionState
from airflow_acid.acid.errors import AcidStateError
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.cleaner import Cleaner, CleanerEntry, CleanerStatus
from airflow_acid.compactor.decision import Decision, DirectoryStats, decide_compaction
from airflow_acid.compactor.errors import CompactorSettingsError
from airflow_acid.compactor.initiator import Initiator, would_refuse
from airflow_acid.compactor.listing import directory_state
from airflow_acid.compactor.settings import (
    DELTA_NUM_KEY,
    DELTA_PCT_KEY,
    NO_AUTO_COMPACTION,
    is_true,
    table_thresholds,
)
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.compactions import CompactionInfo
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.initiator_store import InitiatorDecisionRecord, Outcome
from airflow_acid.metastore.partitions import entity_name, parse_partition_name


@dataclass
class Explanation:
    """Everything known about why one table/partition is (not) compacted and (not) cleaned."""

    database: str
    table: str
    partition: str | None
    decision: dict[str, Any] | None
    """The Initiator's last recorded decision: time (epoch ms), outcome, rule, reason, type, compaction_id, sizes."""
    current_compaction: dict[str, Any] | None
    """The 'initiated' or 'working' queue row, if any."""
    cleanup_blockers: list[dict[str, Any]]
    """Open transactions keeping a 'ready for cleaning' row from being cleaned: compaction_id, txn_id, user, host,
    started (epoch ms), age_s, why."""
    summary: list[str]
    """Plain sentences, most important first."""
    evaluation: dict[str, Any] | None = None
    """What the Initiator's thresholds say about the directory now (type, rule, reason, sizes, thresholds), and
    what would stop an automatic compaction (``blocked_by``)."""
    cleanup: list[dict[str, Any]] = field(default_factory=list)
    """The Cleaner's view of each 'ready for cleaning' row: compaction_id, status (in words: ``would clean``),
    message, deletions."""
    queue: list[dict[str, Any]] = field(default_factory=list)
    """Every queue row of the table/partition, in any queued state ('initiated', 'working', 'ready for cleaning'),
    by id."""

    @property
    def name(self) -> str:
        return entity_name(self.database, self.table, self.partition)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def explain(warehouse: AcidWarehouse, table: str, partition: Mapping[str, Any] | str | None = None) -> Explanation:
    """Explain one table (unpartitioned) or one partition (``'ds=2024-01-01'`` or ``{"ds": "2024-01-01"}``).

    NoSuchObjectError for an unknown table or partition, NotTransactionalError for a non-ACID table,
    InvalidInputError for a bad partition spec or a partitioned table without one.
    """
    ms = warehouse.metastore
    info = warehouse.transactional_table(table)
    if info.is_partitioned and partition is None:
        names = sorted(p.name for p in warehouse.list_partitions(info.full_name))
        shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "") if names else "none yet"
        raise InvalidInputError(f"table {info.full_name} is partitioned; name one partition (partitions: {shown})")
    if partition is None:
        part_name, location, part_params = None, info.location, {}
    else:
        spec = parse_partition_name(partition) if isinstance(partition, str) else dict(partition)
        part = ms.catalog.get_partition(info.database, info.name, info.partition_spec(spec))
        part_name, location, part_params = part.name, part.location, part.params
    db, name = info.database, info.name

    record = Initiator(ms).why(db, name, part_name)
    queue = ms.compactions.find(db=db, table=name, partition=part_name) if part_name is not None else \
        [c for c in ms.compactions.find(db=db, table=name) if c.partition is None]
    current = _current(queue)
    queued = sorted((c for c in queue if c.state.is_queued), key=lambda c: c.id)
    cleaner = Cleaner(ms, filesystem=warehouse.filesystem)
    cleanup = [cleaner.clean(c.id, dry_run=True) for c in queued if c.state is CompactionState.READY_FOR_CLEANING]
    evaluation = _evaluate(warehouse, info, part_name, location, part_params, queued)

    explanation = Explanation(
        database=db, table=name, partition=part_name, decision=_decision_dict(record),
        current_compaction=_compaction_dict(current) if current is not None else None,
        cleanup_blockers=[{"compaction_id": e.compaction_id, "txn_id": b.txn_id, "user": b.user, "host": b.host,
                           "started": b.started, "age_s": round(b.age_s, 3), "why": b.why}
                          for e in cleanup for b in e.blockers],
        summary=[], evaluation=evaluation, queue=[_compaction_dict(c) for c in queued],
        cleanup=[{"compaction_id": e.compaction_id, "status": e.status.display, "message": _cleanup_message(e),
                  "deletions": [{"path": d.path, "reason": d.reason} for d in e.deletions]} for e in cleanup])
    explanation.summary = _summary(explanation, record, current, cleanup, ms.conf,
                                   decisions_recorded=ms.profile.decisions_table)
    return explanation


# --- pieces ----------------------------------------------------------------------------------------------------


def _current(queue: list[CompactionInfo]) -> CompactionInfo | None:
    active = [c for c in queue if c.state in (CompactionState.INITIATED, CompactionState.WORKING)]
    return min(active, key=lambda c: c.id) if active else None


def _cleanup_message(entry: CleanerEntry) -> str:
    """What the Cleaner would do with a 'ready for cleaning' row, in words (its own message when it gives one)."""
    if entry.message:
        return entry.message
    if entry.status == CleanerStatus.WOULD_CLEAN:
        n = len(entry.deletions)
        return (f"the next Cleaner run deletes {n} obsolete or aborted director{'y' if n == 1 else 'ies'}" if n
                else "the next Cleaner run finds nothing left to delete and closes the compaction")
    return f"the Cleaner reports '{entry.status.display}'"


def _compaction_dict(info: CompactionInfo) -> dict[str, Any]:
    return {"id": info.id, "type": info.type.display, "state": info.state.display, "enqueue_time": info.enqueue_time,
            "start": info.start, "worker_id": info.worker_id, "pool": info.pool_name or "default"}


def _decision_dict(record: InitiatorDecisionRecord | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {"time": record.decided_at, "outcome": record.outcome.display, "rule": record.rule,
            "reason": record.reason, "type": record.type.display if record.type else None,
            "compaction_id": record.compaction_id, "base_size": record.base_size, "delta_size": record.delta_size,
            "delta_count": record.delta_count}


def _evaluate(warehouse: AcidWarehouse, info: TableInfo, partition: str | None, location: str,
              part_params: Mapping[str, str], queued: Sequence[CompactionInfo] = ()) -> dict[str, Any]:
    """docs/hive-acid.md#compaction-type on one listing with the compactor snapshot, plus the
    docs/hive-acid.md#initiator-cycle step 5 checks that stop automatic compaction of this table/partition (the Initiator
    only looks at partitions with new writes), and the queue's answer as the plan/dry run gives it (``verdict``: would
    compact, not needed, already queued, waiting for cleaning). The base a 'ready for cleaning' compaction replaced
    is the Cleaner's work, not a reason to compact again, so it does not count as a second base."""
    ms = warehouse.metastore
    blocked_by = None
    db_info = ms.catalog.get_database(info.database)
    if db_info.param(NO_AUTO_COMPACTION) is not None:
        if is_true(db_info.param(NO_AUTO_COMPACTION)):
            blocked_by = f"database {info.database} has {NO_AUTO_COMPACTION}=true"
    elif is_true(info.property(NO_AUTO_COMPACTION)):
        blocked_by = f"table {info.full_name} has {NO_AUTO_COMPACTION}=true"
    if blocked_by is None:
        blocked_by = ms.initiator.initiator_skip_reason(info.database, info.name, partition, record=False)
    txns = ms.snapshots.valid_txn_list()
    write_ids = ms.snapshots.compactor_write_ids(info.full_name, txns)
    try:
        thresholds = table_thresholds(ms.conf, info.properties, table=info.full_name)
        state = directory_state(location, write_ids, txns, filesystem=warehouse.filesystem, missing_ok=True)
    except CompactorSettingsError as exc:
        return {"type": None, "rule": None, "reason": str(exc), "blocked_by": blocked_by}
    except (AcidStateError, OSError) as exc:
        return {"type": None, "rule": None, "reason": f"cannot read {location}: {exc}", "blocked_by": blocked_by}
    stats = DirectoryStats.of(state)
    ready = [c for c in queued if c.state is CompactionState.READY_FOR_CLEANING]
    if ready:  # the obsolete base awaits the Cleaner (docs/hive-acid.md#compaction-type step 4 is not for it)
        stats = replace(stats, has_obsolete_base=False)
    decision: Decision = decide_compaction(
        stats, delta_num_threshold=thresholds.delta_num_threshold, delta_pct_threshold=thresholds.delta_pct_threshold,
        num_source=thresholds.sources[DELTA_NUM_KEY].split()[-1],
        pct_source=thresholds.sources[DELTA_PCT_KEY].split()[-1])
    ratio = stats.delta_size / stats.base_size if stats.base_size else None
    verdict, scheduled = _verdict(decision, queued, partition, write_ids.high_watermark)
    return {"type": decision.type.display if decision.type else None, "rule": decision.rule.value,
            "rule_text": decision.rule.display, "verdict": verdict, "scheduled": scheduled,
            "reason": decision.reason, "blocked_by": blocked_by, "base_size": stats.base_size,
            "delta_size": stats.delta_size, "delta_count": stats.delta_count,
            "delta_base_ratio": None if ratio is None or math.isnan(ratio) else ratio,
            "delta_num_threshold": thresholds.delta_num_threshold,
            "delta_pct_threshold": thresholds.delta_pct_threshold,
            "no_cleanup": is_true(info.property("no_cleanup")) or is_true(part_params.get("no_cleanup")),
            "aborted_dirs": len(state.aborted), **_aborted_txns(warehouse, info, partition)}


VERDICTS = ("would compact", "not needed", "already queued", "waiting for cleaning")
"""What the Initiator would do with the table/partition now, the dry run's way (``evaluation["verdict"]``)."""


def _verdict(decision: Decision, queued: Sequence[CompactionInfo], partition: str | None,
             high_watermark: int | None) -> tuple[str, dict[str, Any] | None]:
    """(verdict, the queue row that settles it): a row 'initiated'/'working' means already queued; a 'ready for
    cleaning' row means waiting for cleaning when the thresholds want nothing new or the queue would refuse a new
    request (same high watermark: the plan/dry run declines it as "already scheduled")."""
    active = [c for c in queued if c.state in (CompactionState.INITIATED, CompactionState.WORKING)]
    if active:
        return "already queued", _compaction_dict(active[0])
    ready = [c for c in queued if c.state is CompactionState.READY_FOR_CLEANING]
    if ready and (decision.type is None or would_refuse(list(ready), partition, high_watermark) is not None):
        return "waiting for cleaning", _compaction_dict(ready[-1])
    return ("would compact" if decision.type is not None else "not needed"), None


def _aborted_txns(warehouse: AcidWarehouse, info: TableInfo, partition: str | None) -> dict[str, Any]:
    """Aborted transactions whose write records for this table/partition are still kept: count and oldest start."""
    store = warehouse.metastore.initiator
    groups = [g for g in store.abort_groups(-1, -1) if (g.database, g.table, g.partition) ==
              (info.database, info.name, partition)]
    return {"aborted_txns": groups[0].count if groups else 0,
            "oldest_aborted_txn_started": groups[0].oldest_started_ms if groups else None}


def _when(ms_value: int | None, now_ms: int) -> str:
    """``at 2024-01-01 10:00:00 UTC (5 min ago)``."""
    if ms_value is None:
        return "at an unknown time"
    stamp = dt.datetime.fromtimestamp(ms_value / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"at {stamp} ({_ago(ms_value, now_ms)})"


def _ago(ms_value: int, now_ms: int) -> str:
    seconds = max(0, (now_ms - ms_value) // 1000)
    return (f"{seconds} s" if seconds < 120 else f"{seconds // 60} min" if seconds < 7200
            else f"{seconds // 3600} h") + " ago"


def _reason_body(reason: str) -> str:
    """A decision reason without its verdict prefix ('MAJOR: ', 'not compacted: '), which the sentence says."""
    head, sep, body = reason.partition(": ")
    return body if sep and head in ("MAJOR", "MINOR", "not compacted") else reason


def _summary(e: Explanation, record: InitiatorDecisionRecord | None, current: CompactionInfo | None,
             cleanup: list[CleanerEntry], conf: MetastoreConf, *, decisions_recorded: bool = True) -> list[str]:
    now = int(time.time() * 1000)
    out: list[str] = []
    if current is not None:
        if current.state is CompactionState.WORKING:
            out.append(f"{current.type.display} compaction {current.id} of {e.name} is running (worker "
                       f"{current.worker_id}, started {_when(current.start, now)}).")
        else:
            out.append(f"{current.type.display} compaction {current.id} of {e.name} is queued "
                       f"{_when(current.enqueue_time, now)} and waits for a worker of pool "
                       f"'{current.pool_name or 'default'}' (the acid_compaction DAG).")
    if record is None and not decisions_recorded:
        out.append("The Initiator's decisions are not recorded on this Hive metastore (no ACID_INITIATOR_DECISIONS "
                   "table; create it with: airflow-acid hive create-decisions-table).")
    elif record is None:
        out.append(f"The Initiator has not evaluated {e.name} yet: it only looks at tables and partitions with "
                   "writes committed since its previous cycle.")
    else:
        kind = record.type.display if record.type else ""
        what = {Outcome.QUEUED: f"queued {kind} compaction {record.compaction_id}",
                Outcome.NOT_NEEDED: "did not compact it", Outcome.SKIPPED: "skipped it",
                Outcome.REFUSED: "wanted to compact it but the queue refused",
                Outcome.ERROR: "could not evaluate it",
                Outcome.WOULD_QUEUE: f"would queue a {kind} compaction (shadow mode: nothing queued)",
                Outcome.DECLINED: "declined it (Hive's own compactor would compact it too)",
                }.get(record.outcome, record.outcome.display)
        out.append(f"The Initiator last looked at {e.name} {_when(record.decided_at, now)} and {what}: "
                   f"{_reason_body(record.reason)}.")
    ev = e.evaluation or {}
    waiting = [c for c in e.queue if c["state"] == CompactionState.READY_FOR_CLEANING.display]
    if current is None and waiting:
        ids = ", ".join(str(c["id"]) for c in waiting)
        out.append(f"{e.name} is waiting for cleaning: compaction{'s' if len(waiting) > 1 else ''} {ids} "
                   "committed and the Cleaner has yet to delete the directories it replaced.")
    if ev.get("verdict") == "waiting for cleaning":
        out.append(f"Looking at the directory now, the Initiator would not queue another compaction until the "
                   f"Cleaner has finished compaction {ev['scheduled']['id']} (thresholds: "
                   f"{_reason_body(ev['reason'])}).")
    elif ev.get("verdict") == "already queued":
        out.append(f"Looking at the directory now, the Initiator would not queue another compaction: compaction "
                   f"{ev['scheduled']['id']} is already '{ev['scheduled']['state']}' "
                   f"(thresholds: {_reason_body(ev['reason'])}).")
    elif ev.get("rule") is not None:
        verdict = f"would queue a {ev['type']} compaction" if ev.get("type") else "would not compact it"
        out.append(f"Looking at the directory now, the Initiator {verdict}: {_reason_body(ev['reason'])}.")
    if ev.get("blocked_by"):
        out.append(f"Automatic compaction is held back: {ev['blocked_by']}.")
    for entry in cleanup:
        if entry.status == CleanerStatus.WAITING:
            out.append(f"Cleanup is blocked: {entry.message}.")
        elif entry.status == CleanerStatus.WOULD_CLEAN:
            out.append(f"Compaction {entry.compaction_id} is ready to be cleaned: {_cleanup_message(entry)}.")
        elif entry.message:
            out.append(f"Compaction {entry.compaction_id}: {entry.message}.")
    if ev.get("aborted_txns"):
        out.append(f"{ev['aborted_txns']} aborted transaction(s) wrote to {e.name} (the oldest started "
                   f"{_ago(ev['oldest_aborted_txn_started'], now)}; {ev['aborted_dirs']} aborted director(y/ies) on "
                   f"disk, invisible to readers): they are removed once more than hive.compactor.abortedtxn."
                   f"threshold={conf.abortedtxn_threshold} accumulate or the oldest is older than hive.compactor."
                   f"aborted.txn.time.threshold={conf.aborted_txn_time_threshold_s:g} s, or when a compaction of it "
                   "is cleaned.")
    if ev.get("no_cleanup"):
        out.append("no_cleanup=true is set: the Cleaner keeps obsolete files of this table/partition.")
    return out


__all__ = ["Explanation", "explain"]
