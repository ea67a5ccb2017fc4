"""The doctor (docs/operations.md#the-doctor): finds the states Hive 4 metastores get stuck in — a compaction whose
compactor transaction was aborted, 'working' rows of timed-out workers, duplicate compactions, a metastore without a
leader, unbounded bookkeeping tables, dead open transactions, cleanups blocked for long, compactions waiting on a
paused DAG, queue rows of dropped tables — each with its evidence, what it blocks and its fix. Finding never changes
anything; :func:`apply_fix` applies one fix an operator confirmed, through the existing actions. No Airflow imports:
the console passes the paused DAGs in."""

from __future__ import annotations

import enum
import logging
from collections import defaultdict
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.metastore.diagnosis import QueueRow, Unpicked
from airflow_acid.metastore.errors import ActionRefusedError, NoSuchObjectError
from airflow_acid.metastore.hive_mutex import CLEANER
from airflow_acid.metastore.store import Metastore
from airflow_acid.services.actions import EXAMINED_CLEANINGS, abort_compaction, abort_transaction

log = logging.getLogger(__name__)

COMPACTION_DAG_ID = "acid_compaction"


class Severity(str, enum.Enum):
    """How urgent a finding is."""

    CRITICAL = "critical"
    """Compaction or cleaning of a table is stopped until someone acts."""
    WARNING = "warning"
    """Something degrades (space, query speed) or will stop work if left."""


class FindingKind(str, enum.Enum):
    """What the doctor looks for (the prefix of a finding's id)."""

    ABORTED_COMPACTOR_TXN = "aborted-compactor-txn"
    STUCK_WORKING = "stuck-working"
    DUPLICATE_QUEUE = "duplicate-queue"
    DUPLICATE_COMPACTION = "duplicate-compaction"
    NO_LEADER = "no-leader"
    BOOKKEEPING_BACKLOG = "bookkeeping-backlog"
    STALE_TXN = "stale-txn"
    CLEANING_BLOCKED = "cleaning-blocked"
    PAUSED_DAG = "paused-dag"
    ORPHAN_QUEUE_ROW = "orphan-queue-row"
    STARVED = "starved"


class FixAction(str, enum.Enum):
    """The existing action a fix runs."""

    ABORT_TRANSACTION = "abort_transaction"
    ABORT_COMPACTION = "abort_compaction"
    FAIL_COMPACTION = "fail_compaction"
    DELETE_QUEUE_ROW = "delete_queue_row"
    REQUEST_COMPACTION = "request_compaction"


@dataclass(frozen=True)
class DoctorLimits:
    """Ages and counts past which a state is a finding; the timeouts come from the metastore's settings."""

    cleaning_age_s: float = 24 * 3600.0
    """'ready for cleaning' older than this is reported with what blocks it."""
    leader_age_s: float = 3600.0
    """Hive's Initiator/Cleaner last run older than this while work is queued: no leader."""
    backlog_rows: int = 1_000_000
    """TXN_TO_WRITE_ID / COMPLETED_TXN_COMPONENTS rows no reader needs any more, past which they are reported."""
    starved_age_s: float = 24 * 3600.0
    """A table/partition with hive.compactor.delta.num.threshold uncompacted writes, the oldest older than this and
    nothing queued: never picked."""


@dataclass(frozen=True)
class Fix:
    """What fixing a finding does: the action, its target, the statement it amounts to, and what changes."""

    action: FixAction
    target: int | None
    """The compaction or transaction id the action takes (None: the finding's table/partition)."""
    statement: str
    changes: str


@dataclass(frozen=True)
class Finding:
    """One stuck state: a stable id (``<kind>:<key>``), its rows as evidence, what it blocks and its fix (None:
    ``advice`` says what to do by hand)."""

    id: str
    kind: FindingKind
    severity: Severity
    summary: str
    blocks: str
    compaction_ids: list[int] = field(default_factory=list)
    txn_ids: list[int] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    fix: Fix | None = None
    advice: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["kind"], out["severity"] = self.kind.value, self.severity.value
        if self.fix is not None:
            out["fix"]["action"] = self.fix.action.value
        return out


@dataclass(frozen=True)
class FixResult:
    """What applying a fix did."""

    finding_id: str
    applied: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(r: QueueRow) -> dict[str, Any]:
    return {"compaction_id": r.id, "entity": r.entity, "state": r.state.display, "type": r.type.display,
            "txn_id": r.txn_id, "worker_id": r.worker_id, "start": r.start, "commit_time": r.commit_time,
            "highest_write_id": r.highest_write_id}


def _cq_key(kind: FindingKind, *ids: int) -> str:
    return f"{kind.value}:cq={','.join(map(str, ids))}"


def diagnose(metastore: Metastore, *, limits: DoctorLimits | None = None,
             paused_dags: Collection[str] | None = None) -> list[Finding]:
    """Every finding on the metastore, most severe first. Only reads. ``paused_dags``: the paused DAG ids when the
    caller can see Airflow's database (the console); None leaves the paused-DAG check out."""
    limits = limits or DoctorLimits()
    d = metastore.diagnosis
    now = d.now()
    findings: list[Finding] = []
    aborted = d.with_aborted_compactor_txn()
    findings += [_aborted_compactor(r) for r in aborted]
    seen = {r.id for r in aborted}
    queue = d.queue()
    findings += _stuck_working(queue, seen, now, metastore.conf.worker_timeout_s)
    findings += _duplicate_queue(queue)
    findings += _duplicate_compactions(queue, d.succeeded_history())
    compactor_txns = {t for f in findings for t in f.txn_ids}
    findings += [f for f in _stale_txns(metastore, int(metastore.conf.txn_timeout_s * 1000))
                 if f.txn_ids[0] not in compactor_txns]  # aborting the compaction aborts its transaction too
    findings += _blocked_cleanings(metastore, queue, seen, now, limits.cleaning_age_s)
    findings += _no_leader(metastore, queue, now, limits.leader_age_s)
    findings += _backlogs(metastore, limits.backlog_rows)
    if paused_dags is not None and COMPACTION_DAG_ID in paused_dags:
        findings += _paused(queue)
    findings += [_orphan(r) for r in d.orphan_queue_rows()]
    findings += [_starved(u, now) for u in d.unpicked(metastore.conf.delta_num_threshold,
                                                        int(limits.starved_age_s * 1000))]
    order = list(Severity)
    return sorted(findings, key=lambda f: (order.index(f.severity), f.id))


def _aborted_compactor(r: QueueRow) -> Finding:
    working = r.state is CompactionState.WORKING
    fix = (Fix(FixAction.ABORT_COMPACTION, r.id, f"ABORT COMPACTIONS {r.id}",
               f"compaction {r.id} moves to the history as 'aborted'; its output is discarded")
           if working else
           Fix(FixAction.FAIL_COMPACTION, r.id,
               f"INSERT INTO COMPLETED_COMPACTIONS … (state 'f') FROM COMPACTION_QUEUE WHERE CQ_ID = {r.id}; "
               f"DELETE FROM COMPACTION_QUEUE WHERE CQ_ID = {r.id}",
               f"compaction {r.id} moves to the history as 'failed'; its output (written by aborted transaction "
               f"{r.txn_id}) is removed by the aborted-write cleanup; later cleanings of {r.entity} proceed"))
    return Finding(
        _cq_key(FindingKind.ABORTED_COMPACTOR_TXN, r.id), FindingKind.ABORTED_COMPACTOR_TXN, Severity.CRITICAL,
        f"compaction {r.id} of {r.entity} is '{r.state.display}' but its compactor transaction {r.txn_id} is aborted "
        "(HIVE-29572)",
        f"every later cleaning of {r.entity}: the Cleaner never gets past this row", [r.id],
        [int(r.txn_id)] if r.txn_id is not None else [], [_row(r)], fix)


def _stuck_working(queue: list[QueueRow], seen: set[int], now: int, timeout_s: float) -> list[Finding]:
    out = []
    for r in queue:
        since = r.start if r.start is not None else r.enqueue_time
        if r.state is not CompactionState.WORKING or r.id in seen or since is None:
            continue
        if now - since <= timeout_s * 1000:
            continue
        out.append(Finding(
            _cq_key(FindingKind.STUCK_WORKING, r.id), FindingKind.STUCK_WORKING, Severity.CRITICAL,
            f"compaction {r.id} of {r.entity} is 'working' (worker {r.worker_id or '—'}) for "
            f"{(now - since) / 3600000:.1f} h, past hive.compactor.worker.timeout ({timeout_s:.0f} s) (HIVE-28240)",
            f"every other compaction of {r.entity}: a new one is refused while this one is scheduled", [r.id],
            [int(r.txn_id)] if r.txn_id else [], [_row(r)],
            Fix(FixAction.ABORT_COMPACTION, r.id, f"ABORT COMPACTIONS {r.id}",
                f"compaction {r.id} moves to the history as 'aborted'"
                + (f" and its compactor transaction {r.txn_id} is aborted" if r.txn_id else "")
                + f"; the Initiator can queue {r.entity} again")))
    return out


def _duplicate_queue(queue: list[QueueRow]) -> list[Finding]:
    groups: dict[tuple[str, str, str | None], list[QueueRow]] = defaultdict(list)
    for r in queue:
        if r.state in (CompactionState.INITIATED, CompactionState.WORKING):
            groups[(r.database, r.table, r.partition)].append(r)
    out = []
    for rows in groups.values():
        first, *later = sorted(rows, key=lambda r: r.id)
        for r in later:
            out.append(Finding(
                _cq_key(FindingKind.DUPLICATE_QUEUE, r.id), FindingKind.DUPLICATE_QUEUE, Severity.WARNING,
                f"compaction {r.id} of {r.entity} ('{r.state.display}') duplicates compaction {first.id} "
                f"('{first.state.display}') (HIVE-29186)",
                "nothing yet; both would rewrite the same deltas and leave duplicate directories",
                [first.id, r.id], [], [_row(first), _row(r)],
                Fix(FixAction.ABORT_COMPACTION, r.id, f"ABORT COMPACTIONS {r.id}",
                    f"the later duplicate, compaction {r.id}, moves to the history as 'aborted'; "
                    f"compaction {first.id} stays")))
    return out


def _duplicate_compactions(queue: list[QueueRow], history: list[QueueRow]) -> list[Finding]:
    groups: dict[tuple[str, str, str | None, int], list[QueueRow]] = defaultdict(list)
    for r in [*history, *(q for q in queue if q.state is CompactionState.READY_FOR_CLEANING)]:
        if r.highest_write_id is not None and r.type is not CompactionType.ABORT_TXN_CLEANUP:
            groups[(r.database, r.table, r.partition, int(r.highest_write_id))].append(r)
    out = []
    for (_db, _t, _p, hwid), rows in groups.items():
        if len(rows) < 2:
            continue
        rows = sorted(rows, key=lambda r: r.id)
        ids = [r.id for r in rows]
        out.append(Finding(
            _cq_key(FindingKind.DUPLICATE_COMPACTION, *ids), FindingKind.DUPLICATE_COMPACTION, Severity.WARNING,
            f"{len(rows)} compactions of {rows[0].entity} up to write id {hwid} all committed: "
            f"{', '.join(map(str, ids))} (a revoked compaction run again, HIVE-29186)",
            "storage: two directories hold the same data until the older is cleaned", ids,
            [int(r.txn_id) for r in rows if r.txn_id], [_row(r) for r in rows],
            advice="readers use the directory of the latest; check the table's listing (airflow-acid explain) and "
                   "let the Cleaner remove the older directory, or remove it by hand once no reader uses it"))
    return out


def _stale_txns(metastore: Metastore, timeout_ms: int) -> list[Finding]:
    out = []
    for t in metastore.diagnosis.stale_open_txns(timeout_ms):
        out.append(Finding(
            f"{FindingKind.STALE_TXN.value}:txn={t.txn_id}", FindingKind.STALE_TXN, Severity.WARNING,
            f"transaction {t.txn_id} of {t.user}@{t.host} is open without a heartbeat past hive.txn.timeout "
            f"({timeout_ms // 1000} s): the housekeeper should have aborted it",
            "cleanings of the tables it may read, and compactions above its write ids", [], [t.txn_id],
            [{"txn_id": t.txn_id, "user": t.user, "host": t.host, "last_heartbeat": t.last_heartbeat}],
            Fix(FixAction.ABORT_TRANSACTION, t.txn_id, f"ABORT TRANSACTIONS {t.txn_id}",
                f"transaction {t.txn_id} is aborted, its locks released, its writes discarded")))
    return out


def _blocked_cleanings(metastore: Metastore, queue: list[QueueRow], seen: set[int], now: int,
                       age_s: float) -> list[Finding]:
    cleaner = Cleaner(metastore)
    out = []
    old = [r for r in queue if r.state is CompactionState.READY_FOR_CLEANING and r.id not in seen
           and r.type is not CompactionType.ABORT_TXN_CLEANUP and _since(r) is not None
           and now - int(_since(r) or 0) > age_s * 1000]
    for r in old[:EXAMINED_CLEANINGS]:  # the oldest first (queue order); each asks the Cleaner's blocker rules
        since = int(_since(r) or 0)
        blockers = cleaner.blockers(r.id)
        if not blockers:
            continue  # nothing holds it: a Cleaner that does not run is the no-leader finding
        names = "; ".join(b.describe() for b in blockers)
        fix = None
        if len(blockers) == 1:
            b = blockers[0]
            fix = Fix(FixAction.ABORT_TRANSACTION, b.txn_id, f"ABORT TRANSACTIONS {b.txn_id}",
                      f"transaction {b.txn_id} is aborted (its client gets an error); the cleanup of compaction "
                      f"{r.id} no longer waits for it")
        out.append(Finding(
            _cq_key(FindingKind.CLEANING_BLOCKED, r.id), FindingKind.CLEANING_BLOCKED, Severity.WARNING,
            f"compaction {r.id} of {r.entity} is 'ready for cleaning' for {(now - since) / 3600000:.1f} h, "
            f"blocked by {names}",
            f"the files compaction {r.id} replaced stay on storage, and the next cleanings of {r.entity}", [r.id],
            [b.txn_id for b in blockers], [_row(r)], fix,
            None if fix else "abort the blocking transactions one by one (airflow-acid transaction abort ID)"))
    return out


def _since(r: QueueRow) -> int | None:
    """When a 'ready for cleaning' row became ready: its commit time, else when it was queued."""
    return r.commit_time if r.commit_time is not None else r.enqueue_time


def _no_leader(metastore: Metastore, queue: list[QueueRow], now: int, age_s: float) -> list[Finding]:
    out = []
    for run in metastore.diagnosis.leader_runs():
        if now - run.last_run <= age_s * 1000:
            continue
        if run.key == CLEANER:
            ids = [r.id for r in queue if r.state is CompactionState.READY_FOR_CLEANING]
            waiting = f"{len(ids)} compaction(s) wait for cleaning"
        else:
            ids, writes = [], metastore.diagnosis.writes_since(run.last_run)
            waiting = f"{writes} commit(s) since then were never looked at"
            if not writes:
                continue
        if run.key == CLEANER and not ids:
            continue
        out.append(Finding(
            f"{FindingKind.NO_LEADER.value}:{run.key}", FindingKind.NO_LEADER, Severity.CRITICAL,
            f"Hive's {run.key} last ran {(now - run.last_run) / 3600000:.1f} h ago while {waiting}: the metastore "
            "has no leader running it (HIVE-29720)",
            "every compaction Hive would queue" if run.key != CLEANER else "every cleanup of compacted files",
            ids, [], [{"mutex": run.key, "last_run": run.last_run}],
            advice="check metastore.housekeeping.leader.hostname / leader election on the metastores, or let "
                   "airflow-acid's DAGs take the work over"))
    return out


def _backlogs(metastore: Metastore, limit: int) -> list[Finding]:
    out = []
    for b in metastore.diagnosis.backlogs():
        if b.removable <= limit:
            continue
        out.append(Finding(
            f"{FindingKind.BOOKKEEPING_BACKLOG.value}:{b.table}", FindingKind.BOOKKEEPING_BACKLOG, Severity.WARNING,
            f"{b.table} holds {b.removable} rows below the low watermark "
            f"({b.watermark if b.watermark is not None else 'no open transaction'}), more than {limit}",
            "every snapshot and write id allocation gets slower as the table grows", [], [],
            [{"table": b.table, "removable_rows": b.removable, "watermark": b.watermark}],
            advice="run the housekeeping (the acid_housekeeping DAG, or Hive's AcidHouseKeeperService) and check "
                   "that no transaction stays open for days"))
    return out


def _paused(queue: list[QueueRow]) -> list[Finding]:
    initiated = [r for r in queue if r.state is CompactionState.INITIATED]
    if not initiated:
        return []
    return [Finding(
        f"{FindingKind.PAUSED_DAG.value}:{COMPACTION_DAG_ID}", FindingKind.PAUSED_DAG, Severity.WARNING,
        f"{len(initiated)} compaction(s) are 'initiated' while the {COMPACTION_DAG_ID} DAG is paused",
        "these compactions: no worker runs them", [r.id for r in initiated], [], [_row(r) for r in initiated],
        advice=f"unpause the {COMPACTION_DAG_ID} DAG in Airflow")]


def _orphan(r: QueueRow) -> Finding:
    return Finding(
        _cq_key(FindingKind.ORPHAN_QUEUE_ROW, r.id), FindingKind.ORPHAN_QUEUE_ROW, Severity.WARNING,
        f"compaction {r.id} ('{r.state.display}') is queued for {r.entity}, which no longer exists",
        "a worker slot or the Cleaner, each time it picks the row and fails", [r.id],
        [int(r.txn_id)] if r.txn_id else [], [_row(r)],
        Fix(FixAction.DELETE_QUEUE_ROW, r.id, f"DELETE FROM COMPACTION_QUEUE WHERE CQ_ID = {r.id}",
            f"queue row {r.id} is deleted, as dropping {r.entity} would have done"))


def _starved(u: Unpicked, now: int) -> Finding:
    partition = f" PARTITION ({u.partition})" if u.partition else ""
    return Finding(
        f"{FindingKind.STARVED.value}:{u.entity}", FindingKind.STARVED, Severity.WARNING,
        f"{u.entity} has {u.writes} uncompacted writes, the oldest {(now - u.oldest_ms) / 3600000:.1f} h old, and "
        "no compaction queued: the Initiator never picks it (HIVE-30026, its fetch limit)",
        f"reads of {u.entity} slow down with every delta", [], [],
        [{"database": u.database, "table": u.table, "partition": u.partition, "writes": u.writes,
          "oldest": u.oldest_ms}],
        Fix(FixAction.REQUEST_COMPACTION, None, f"ALTER TABLE {u.database}.{u.table}{partition} COMPACT 'major'",
            f"a MAJOR compaction of {u.entity} is queued ('initiated'); check the Initiator's fetch limit "
            "(metastore.compactor.fetch.size) so that it reaches such tables on its own"))


def apply_fix(metastore: Metastore, finding_id: str, *, user: str, limits: DoctorLimits | None = None,
              paused_dags: Collection[str] | None = None) -> FixResult:
    """Apply the fix of finding ``finding_id`` as found now. NoSuchObjectError when there is no such finding (fixed
    meanwhile, or a wrong id); a finding without an automatic fix, or a refused action, is an answer with its
    reason."""
    finding = next((f for f in diagnose(metastore, limits=limits, paused_dags=paused_dags) if f.id == finding_id),
                   None)
    if finding is None:
        raise NoSuchObjectError(f"the doctor finds no '{finding_id}' now (fixed meanwhile, or a wrong id); run "
                                "'airflow-acid doctor' for the current findings")
    if finding.fix is None:
        return FixResult(finding.id, False, f"{finding.id} has no automatic fix: {finding.advice}")
    fix = finding.fix
    log.info("doctor fix of %s by %s: %s", finding.id, user, fix.statement)
    if fix.target is None:  # REQUEST_COMPACTION: the finding's table/partition
        where = finding.evidence[0]
        answer = metastore.compactions.enqueue(where["database"], where["table"], where["partition"],
                                               CompactionType.MAJOR, initiator_id=f"doctor-{user}"[:128])
        return FixResult(finding.id, answer.accepted, f"compaction {answer.id} is queued" if answer.accepted
                         else str(answer.message))
    if fix.action is FixAction.ABORT_TRANSACTION:
        txn = abort_transaction(metastore, fix.target, user=user)
        return FixResult(finding.id, txn.aborted, txn.message)
    if fix.action is FixAction.ABORT_COMPACTION:
        cq = abort_compaction(metastore, fix.target, user=user)
        return FixResult(finding.id, cq.aborted, cq.message)
    try:
        if fix.action is FixAction.FAIL_COMPACTION:
            metastore.compactions.mark_failed(fix.target, f"Marked failed by {user} (airflow-acid doctor): its "
                                                          "compactor transaction was aborted.")
            return FixResult(finding.id, True, f"compaction {fix.target} is marked 'failed': {fix.changes}")
        metastore.diagnosis.delete_orphan_queue_row(fix.target)
    except ActionRefusedError as exc:
        return FixResult(finding.id, False, str(exc))
    return FixResult(finding.id, True, f"queue row {fix.target} is deleted")


__all__ = ["DoctorLimits", "Finding", "FindingKind", "Fix", "FixAction", "FixResult", "Severity", "apply_fix",
           "diagnose"]
