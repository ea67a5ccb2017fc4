"""Operator actions shared by the CLI and the console (docs/operations.md#acting-on-compactions-and-transactions):
abort a compaction, requeue a failed or refused one, and abort a transaction after seeing what it blocks. One function
per action; a refusal is an answer with its reason (``aborted``/``requeued`` false), an unknown id raises
:class:`~airflow_acid.metastore.errors.NoSuchObjectError`. No Airflow imports: the surfaces add who may act and the
audit log."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_acid.acid.codes import CompactionState, CompactionType, LockState, OperationType, TxnState, TxnType
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.metastore.compaction_actions import AbortedCompaction
from airflow_acid.metastore.errors import ActionRefusedError, NoSuchObjectError, NoSuchTxnError
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.metastore.store import Metastore
from airflow_acid.metastore.txns import AbortReason, TxnInfo, TxnWrite
from airflow_acid.version import __version__

log = logging.getLogger(__name__)

EXAMINED_CLEANINGS = 200
"""'ready for cleaning' rows examined for what a transaction blocks (each is a few metastore queries)."""


# --- compactions --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompactionAbortResult:
    """What an abort request did."""

    compaction_id: int
    aborted: bool
    message: str
    """What happened, or why it was refused."""
    was: str | None = None
    """The state it was aborted from ('initiated' or 'working')."""
    txn_id: int | None = None
    """The compactor transaction aborted with a 'working' compaction."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def abort_compaction(metastore: Metastore, compaction_id: int, *, user: str) -> CompactionAbortResult:
    """Abort an 'initiated' or 'working' compaction for ``user`` (Hive's ABORT COMPACTIONS, extended to 'working'
    rows, whose compactor transaction is aborted so the Worker's job can never commit). Refused, with the reason,
    for a 'ready for cleaning' compaction (undo it instead) or a finished one."""
    try:
        done = metastore.actions.abort(int(compaction_id), user=user)
    except ActionRefusedError as exc:
        return CompactionAbortResult(int(compaction_id), False, str(exc))
    return CompactionAbortResult(done.id, True, _aborted_message(done), done.was.display, done.txn_id)


def _aborted_message(done: AbortedCompaction) -> str:
    entity = entity_name(done.database, done.table, done.partition)
    head = f"{done.type.display} compaction {done.id} of {entity} is aborted (it was '{done.was.display}')"
    if done.was is CompactionState.INITIATED:
        return f"{head}; no worker will run it"
    if done.txn_aborted:
        return (f"{head}; its compactor transaction {done.txn_id} is aborted, so its Spark job can never commit: the "
                "Worker discards the output when the job ends, and the Cleaner removes anything left")
    return f"{head}; the Worker had not opened its compactor transaction yet and stops before running the job"


@dataclass(frozen=True)
class RequeueResult:
    """What a requeue request did."""

    compaction_id: int
    requeued: bool
    message: str
    new_compaction_id: int | None = None
    """The new 'initiated' compaction."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def requeue_compaction(metastore: Metastore, compaction_id: int, *, initiator_id: str) -> RequeueResult:
    """Queue 'failed' or 'refused' compaction ``compaction_id`` again as a new 'initiated' compaction of the same
    table/partition, type, pool and properties; ``initiator_id`` names who asked (SHOW COMPACTIONS' initiator).
    Refused, with the reason, for another state, when the table or partition is gone, or under Hive's duplicate
    rules (a compaction of it is already scheduled)."""
    cq_id = int(compaction_id)
    try:
        old = metastore.compactions.get(cq_id)
        _still_there(metastore, old.database, old.table, old.partition)
        old, answer = metastore.actions.requeue(cq_id, initiator_id=initiator_id, initiator_version=__version__)
    except ActionRefusedError as exc:
        return RequeueResult(cq_id, False, str(exc))
    entity = entity_name(old.database, old.table, old.partition)
    if not answer.accepted:
        return RequeueResult(cq_id, False, f"compaction {cq_id} of {entity} is not requeued: {answer.message}")
    return RequeueResult(cq_id, True, f"{old.type.display} compaction {cq_id} of {entity} ('{old.state.display}') "
                                      f"is requeued as compaction {answer.id} ('initiated')", answer.id)


def _still_there(metastore: Metastore, database: str, table: str, partition: str | None) -> None:
    try:
        metastore.catalog.get_table(database, table)
        if partition is not None:
            metastore.catalog.get_partition(database, table, partition)
    except NoSuchObjectError as exc:
        raise ActionRefusedError(f"{exc}; there is nothing to requeue") from None


# --- transactions -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockedCleaning:
    """A 'ready for cleaning' compaction whose cleanup waits for the transaction."""

    compaction_id: int
    entity: str
    why: str
    other_blockers: list[int] = field(default_factory=list)
    """Other open transactions it also waits for (aborting this one alone does not release it then)."""


@dataclass(frozen=True)
class TxnImpact:
    """What an open transaction blocks, i.e. what aborting it releases, and what else aborting it does."""

    txn_id: int
    state: str
    """'OPEN', 'ABORTED' or 'COMMITTED'."""
    user: str | None = None
    host: str | None = None
    txn_type: str | None = None
    started: int | None = None
    """Epoch milliseconds."""
    agent_info: str | None = None
    cleanings: list[BlockedCleaning] = field(default_factory=list)
    locks: list[dict[str, Any]] = field(default_factory=list)
    """Locks it holds or waits for (lockid, resource, lock_type, lock_state)."""
    waiting_locks: list[dict[str, Any]] = field(default_factory=list)
    """Other transactions' locks waiting behind its locks (lockid, resource, lock_type, txn_id, user)."""
    compactions: list[dict[str, Any]] = field(default_factory=list)
    """Compactions whose compactor transaction it is (compaction_id, entity, state)."""
    writes: list[dict[str, Any]] = field(default_factory=list)
    """Tables it writes (table, partitions, operations, write_id)."""
    notes: list[str] = field(default_factory=list)

    @property
    def is_open(self) -> bool:
        return self.state == TxnState.OPEN.display

    @property
    def consequences(self) -> list[str]:
        """What aborting it does, one sentence each (the confirmation dialog, the CLI)."""
        if not self.is_open:
            return [f"transaction {self.txn_id} is {self.state.lower()}: there is nothing to abort"]
        out = []
        for c in self.compactions:
            out.append(f"it is the compactor transaction of compaction {c['compaction_id']} of {c['entity']} "
                       f"({c['state']}): that compaction fails and its output is discarded (aborting the compaction "
                       "says so more plainly)")
        for w in self.writes:
            if OperationType.COMPACT.value in w["operations"]:
                continue
            where = f"{w['table']}" + (f" ({', '.join(w['partitions'])})" if w["partitions"] else "")
            out.append(f"its writes to {where} are discarded: readers never see them and the Cleaner deletes their "
                       "files")
            if w["write_id"] is not None:
                out.append(f"compactions of {w['table']} no longer stop below its write id {w['write_id']}")
        for b in self.cleanings:
            also = (f" (it still waits for transaction(s) {', '.join(map(str, b.other_blockers))})"
                    if b.other_blockers else "")
            out.append(f"the cleanup of compaction {b.compaction_id} of {b.entity} no longer waits for it{also}")
        if self.locks:
            out.append(f"it releases {len(self.locks)} lock(s): "
                       + "; ".join(f"{lk['lock_type']} on {lk['resource']}" for lk in self.locks))
        for lk in self.waiting_locks:
            out.append(f"lock {lk['lockid']} of transaction {lk['txn_id'] or '—'} ({lk['user']}) waiting for "
                       f"{lk['lock_type']} on {lk['resource']} is no longer blocked by it")
        if not self.writes and not self.compactions:
            out.append("it wrote nothing (a reader, or a writer that has not written yet): only its client notices")
        out.append(f"its client ({self.user}@{self.host}) gets 'transaction aborted' on its next heartbeat, lock or "
                   "commit")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "consequences": self.consequences}


def transaction_blocking(metastore: Metastore, txn_id: int) -> TxnImpact:
    """What open transaction ``txn_id`` blocks — the cleanups waiting for it (the Cleaner's own blocker rules), the
    locks it holds and the locks waiting behind them, the compaction it is the compactor transaction of — and what
    it writes. NoSuchTxnError when there is no such transaction."""
    txn_id = int(txn_id)
    info = next((t for t in metastore.txns.show_transactions() if t.txnid == txn_id), None)
    if info is None:
        state = metastore.txns.txn_state(txn_id)
        if state is None:
            raise NoSuchTxnError(f"transaction {txn_id} does not exist (never opened, or ended and cleaned up)")
        return TxnImpact(txn_id, state.display)
    impact = _header(info)
    if info.state is not TxnState.OPEN:
        return impact
    _add_locks(metastore, impact)
    _add_compactions(metastore, impact)
    _add_cleanings(metastore, impact)
    impact.writes.extend(_write_dict(w) for w in metastore.txns.writes_of(txn_id))
    return impact


def _header(info: TxnInfo) -> TxnImpact:
    return TxnImpact(info.txnid, info.state.display, info.user, info.host, TxnType(info.txn_type).name,
                     info.startedtime, info.agent_info)


def _resource(database: str, table: str | None, partition: str | None) -> str:
    return database + (f".{table}" if table else "") + (f"/{partition}" if partition else "")


def _add_locks(metastore: Metastore, impact: TxnImpact) -> None:
    locks = metastore.locks.show_locks(extended=True)
    mine = [lk for lk in locks if lk.transaction_id == impact.txn_id]
    mine_ids = {lk.lockid for lk in mine}
    impact.locks.extend({"lockid": lk.lockid, "resource": _resource(lk.database, lk.table, lk.partition),
                         "lock_type": lk.lock_type, "lock_state": lk.lock_state} for lk in mine)
    impact.waiting_locks.extend(
        {"lockid": lk.lockid, "resource": _resource(lk.database, lk.table, lk.partition), "lock_type": lk.lock_type,
         "txn_id": lk.transaction_id, "user": lk.user}
        for lk in locks if lk.lock_state == LockState.WAITING.display and lk.transaction_id != impact.txn_id
        and (lk.blocked_by in mine_ids or lk.blocked_by_txn_id == impact.txn_id))


def _add_compactions(metastore: Metastore, impact: TxnImpact) -> None:
    for state in (CompactionState.WORKING, CompactionState.READY_FOR_CLEANING):
        for c in metastore.compactions.find(state=state):
            if c.txn_id == impact.txn_id:
                impact.compactions.append({"compaction_id": c.id, "entity": c.full_partition_name,
                                           "state": c.state.display})


def _add_cleanings(metastore: Metastore, impact: TxnImpact) -> None:
    ready = sorted((c for c in metastore.compactions.find(state=CompactionState.READY_FOR_CLEANING)
                    if c.type is not CompactionType.ABORT_TXN_CLEANUP), key=lambda c: c.id)
    if len(ready) > EXAMINED_CLEANINGS:
        impact.notes.append(f"{len(ready) - EXAMINED_CLEANINGS} more compaction(s) ready for cleaning not examined")
    cleaner = Cleaner(metastore)
    for c in ready[:EXAMINED_CLEANINGS]:
        blockers = cleaner.blockers(c.id)
        mine = next((b for b in blockers if b.txn_id == impact.txn_id), None)
        if mine is not None:
            impact.cleanings.append(BlockedCleaning(c.id, c.full_partition_name, mine.why,
                                                    [b.txn_id for b in blockers if b.txn_id != impact.txn_id]))


def _write_dict(w: TxnWrite) -> dict[str, Any]:
    return {"table": f"{w.database}.{w.table}" if w.table else w.database, "partitions": list(w.partitions),
            "operations": [op.value for op in w.operations], "write_id": w.write_id}


@dataclass(frozen=True)
class TxnAbortResult:
    """What an abort request did, with what the transaction blocked until then."""

    txn_id: int
    aborted: bool
    message: str
    released: dict[str, Any] = field(default_factory=dict)
    """:meth:`TxnImpact.to_dict` as seen just before the abort."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def abort_transaction(metastore: Metastore, txn_id: int, *, user: str) -> TxnAbortResult:
    """Abort open transaction ``txn_id`` for ``user`` (ABORT TRANSACTIONS: TXNS 'a' with reason ABORT_USER, its locks
    released, its writes kept as the record of data to clean). Refused, with the reason, when it is not open."""
    impact = transaction_blocking(metastore, txn_id)
    if not impact.is_open:
        return TxnAbortResult(impact.txn_id, False, impact.consequences[0], impact.to_dict())
    if not metastore.txns.abort_txns([impact.txn_id], AbortReason.USER):
        state = metastore.txns.txn_state(impact.txn_id)
        now = state.display.lower() if state else "gone"
        return TxnAbortResult(impact.txn_id, False, f"transaction {impact.txn_id} ended meanwhile ({now}): there is "
                                                    "nothing to abort", impact.to_dict())
    log.info("transaction %s (%s@%s) aborted by %s", impact.txn_id, impact.user, impact.host, user)
    free = [c for c in impact.cleanings if not c.other_blockers]
    released = [f"{len(free)} cleanup(s)"] if free else []
    released += [f"{len(impact.locks)} lock(s)"] if impact.locks else []
    released += [f"{len(impact.waiting_locks)} waiting lock(s)"] if impact.waiting_locks else []
    tail = f"; released {', '.join(released)}" if released else ""
    if len(free) < len(impact.cleanings):
        tail += f"; {len(impact.cleanings) - len(free)} cleanup(s) still wait for other transactions"
    return TxnAbortResult(impact.txn_id, True, f"transaction {impact.txn_id} ({impact.user}@{impact.host}) is "
                                               f"aborted by {user}{tail}", impact.to_dict())


__all__ = ["BlockedCleaning", "CompactionAbortResult", "RequeueResult", "TxnAbortResult", "TxnImpact",
           "abort_compaction", "abort_transaction", "requeue_compaction", "transaction_blocking"]
