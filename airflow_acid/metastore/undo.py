"""Undoing a compaction inside its delayed-cleanup window (docs/operations.md#undoing-a-compaction): the metastore side.

An undo is one database transaction: the 'ready for cleaning' row is checked against the refusal rules, moved to
COMPLETED_COMPACTIONS as 'aborted' ('x', the state Hive's ABORT COMPACTIONS writes, which every Hive tool reads)
with an ``Undone …`` message, and its compactor transaction C is turned into an aborted one (TXNS 'a' plus C's
TXN_COMPONENTS row with operation 'c', exactly what a compactor that aborted leaves). From that commit on every new
snapshot treats the ``_vC`` output as aborted and selects the older files again — they are still there, as no
Cleaner cleaned the row — while snapshots taken before keep reading the output. The history row's CC_NEXT_TXN_ID
holds the txn id after the undo: once no transaction between C and it is open, nobody can select the output any
more and it is deleted (:meth:`UndoStore.pending` / :meth:`UndoStore.output_removed`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import CompactionState, CompactionType, OperationType, TxnState, TxnType, UpdateDelete
from airflow_acid.metastore.compactions import (
    CC,
    CQ,
    SCHEDULER_MUTEX,
    CompactionInfo,
    compaction_info,
    copy_to_history,
    partition_filter,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, acquire_mutex, now_ms
from airflow_acid.metastore.errors import NoSuchObjectError, UndoRefusedError
from airflow_acid.metastore.flavour import profile_of
from airflow_acid.metastore.schema import COMPLETED_TXN_COMPONENTS, TXN_COMPONENTS, TXNS
from airflow_acid.metastore.txns import insert_txn_components

log = logging.getLogger(__name__)

UNDONE_PREFIX = "Undone"
"""CC_ERROR_MESSAGE of an undone compaction starts with this (its CC_STATE is 'aborted')."""


@dataclass(frozen=True)
class UndoneCompaction:
    """An undone compaction whose ``_vC`` output may still be on disk."""

    id: int
    database: str
    table: str
    partition: str | None
    txn_id: int
    """C: the output directories carry ``_v<C>``."""
    gate: int
    """The txn id after the undo (CC_NEXT_TXN_ID): the output goes once no txn in (C, gate) is open."""


class UndoStore:
    """Undo a 'ready for cleaning' compaction, and track the removal of its output."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def undo(self, cq_id: int, *, user: str) -> UndoneCompaction:
        """Undo compaction ``cq_id`` (one transaction, see the module docstring); UndoRefusedError with the reason when
        it is not 'ready for cleaning', the Cleaner started on it, the window passed, a later compaction of the
        table/partition built on it, or it is a REBALANCE whose new ROW__IDs later deletes/updates may name."""
        retention_ms = self.conf.cleaner_retention_ms

        def work(conn: Connection) -> UndoneCompaction:
            acquire_mutex(conn, SCHEDULER_MUTEX)
            info = _queued(conn, cq_id)
            now = now_ms(conn)
            if info.cleaner_start is not None and info.cleaner_start != 0:
                raise UndoRefusedError(f"compaction {cq_id}: the Cleaner has already started deleting the files it made "
                                  "obsolete")
            if retention_ms <= 0:
                raise UndoRefusedError(f"compaction {cq_id}: there is no undo window, delayed cleanup is off (set [acid] "
                                  "cleaner_retention, or hive.compactor.delayed.cleanup.enabled=true)")
            committed = info.commit_time or 0
            if now >= committed + retention_ms:
                raise UndoRefusedError(f"compaction {cq_id}: the undo window ({retention_ms / 1000:g} s after its commit) "
                                  f"ended {(now - committed - retention_ms) / 1000:.0f} s ago")
            if info.txn_id is None:
                raise UndoRefusedError(f"compaction {cq_id} records no compactor transaction")
            later = _later_compaction(conn, info)
            if later:
                raise UndoRefusedError(f"compaction {cq_id}: {later}")
            if info.type is CompactionType.REBALANCE:
                reason = _rebalance_referenced(conn, info)
                if reason:
                    raise UndoRefusedError(f"compaction {cq_id} is a REBALANCE that gave every row a new ROW__ID and "
                                      f"{reason}; undoing it would resurrect the rows they delete")
            gate = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(TXNS.c.TXN_ID), 0))).scalar_one()) + 1
            message = (f"{UNDONE_PREFIX} by {user or 'unknown'}: the output of compactor transaction {info.txn_id} "
                       f"(committed with CQ_NEXT_TXN_ID {info.next_txn_id}) is aborted; the files it replaced are "
                       "current again")[:4000]
            conn.execute(sa.update(CQ).where(CQ.c.CQ_ID == cq_id).values(CQ_NEXT_TXN_ID=gate))
            copy_to_history(conn, cq_id, CompactionState.ABORTED, now, error_message=message)
            conn.execute(sa.delete(CQ).where(CQ.c.CQ_ID == cq_id))
            _abort_compactor_txn(conn, info, now)
            return UndoneCompaction(cq_id, info.database, info.table, info.partition, int(info.txn_id), gate)

        return self.db.run(work, what=f"undo compaction {cq_id}")

    def pending(self) -> list[UndoneCompaction]:
        """Undone compactions whose output may still be on disk: 'aborted' history rows with the undo message
        whose compactor txn is still aborted with its TXN_COMPONENTS row."""
        tc = TXN_COMPONENTS

        def work(conn: Connection) -> list[UndoneCompaction]:
            rows = conn.execute(
                sa.select(CC.c.CC_ID, CC.c.CC_DATABASE, CC.c.CC_TABLE, CC.c.CC_PARTITION, CC.c.CC_TXN_ID,
                          CC.c.CC_NEXT_TXN_ID)
                .join(TXNS, TXNS.c.TXN_ID == CC.c.CC_TXN_ID)
                .where(CC.c.CC_STATE == CompactionState.ABORTED.value, TXNS.c.TXN_STATE == TxnState.ABORTED.value,
                       CC.c.CC_ERROR_MESSAGE.like(f"{UNDONE_PREFIX} by %"),
                       sa.exists(sa.select(tc.c.TC_TXNID).where(
                           tc.c.TC_TXNID == CC.c.CC_TXN_ID,
                           tc.c.TC_OPERATION_TYPE == OperationType.COMPACT.value)))
                .order_by(CC.c.CC_ID)).all()
            return [UndoneCompaction(int(r.CC_ID), r.CC_DATABASE, r.CC_TABLE, r.CC_PARTITION, int(r.CC_TXN_ID),
                                     int(r.CC_NEXT_TXN_ID or 0)) for r in rows]

        return self.db.run(work, what="undone compactions")

    def readers_of(self, undone: UndoneCompaction) -> list[int]:
        """Open transactions that may have selected the undone output: opened after C and before the undo (a
        snapshot of a transaction never sees a later one; one taken after the undo sees C aborted)."""
        def work(conn: Connection) -> list[int]:
            return [int(t) for t in conn.execute(
                sa.select(TXNS.c.TXN_ID).where(TXNS.c.TXN_STATE == TxnState.OPEN.value,
                                               TXNS.c.TXN_ID > undone.txn_id, TXNS.c.TXN_ID < undone.gate)
                .order_by(TXNS.c.TXN_ID)).scalars()]

        return self.db.run(work, what=f"readers of undone compaction {undone.id}")

    def output_removed(self, undone: UndoneCompaction) -> None:
        """The ``_vC`` directories are gone: drop C's TXN_COMPONENTS row (the empty-txn cleaner then removes C)."""
        tc = TXN_COMPONENTS
        self.db.run(lambda conn: conn.execute(sa.delete(tc).where(
            tc.c.TC_TXNID == undone.txn_id, tc.c.TC_OPERATION_TYPE == OperationType.COMPACT.value)),
                    what=f"finish undo of compaction {undone.id}")


def _queued(conn: Connection, cq_id: int) -> CompactionInfo:
    row = conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id).with_for_update()).first()
    if row is None:
        done = conn.execute(sa.select(CC.c.CC_STATE, CC.c.CC_ERROR_MESSAGE).where(CC.c.CC_ID == cq_id)).first()
        if done is None:
            raise NoSuchObjectError(f"compaction {cq_id} does not exist (or its history was purged)")
        state = CompactionState(done.CC_STATE)
        if state is CompactionState.ABORTED and (done.CC_ERROR_MESSAGE or "").startswith(UNDONE_PREFIX):
            raise UndoRefusedError(f"compaction {cq_id} is already undone")
        if state is CompactionState.SUCCEEDED:
            raise UndoRefusedError(f"compaction {cq_id} is already cleaned: the files it replaced are gone")
        raise UndoRefusedError(f"compaction {cq_id} is '{state.display}': only a 'ready for cleaning' compaction can be "
                          "undone")
    info = compaction_info(row, "CQ")
    if info.state is not CompactionState.READY_FOR_CLEANING or info.type is CompactionType.ABORT_TXN_CLEANUP:
        raise UndoRefusedError(f"compaction {cq_id} is '{info.state.display}': only a 'ready for cleaning' compaction can "
                          "be undone")
    return info


def _later_compaction(conn: Connection, info: CompactionInfo) -> str | None:
    """Why a later compaction of the same table/partition rules the undo out (it works on, or was built on, this
    one's output), or None."""
    mine = info.txn_id or 0
    for table, p in ((CQ, "CQ"), (CC, "CC")):
        c = table.c
        states = [CompactionState.WORKING.value, CompactionState.READY_FOR_CLEANING.value] if p == "CQ" \
            else [CompactionState.SUCCEEDED.value]
        row = conn.execute(
            sa.select(c[f"{p}_ID"], c[f"{p}_STATE"], c[f"{p}_TYPE"]).where(
                c[f"{p}_DATABASE"] == info.database, c[f"{p}_TABLE"] == info.table,
                partition_filter(c[f"{p}_PARTITION"], info.partition), c[f"{p}_ID"] != info.id,
                c[f"{p}_STATE"].in_(states),
                sa.or_(c[f"{p}_TXN_ID"] > mine, c[f"{p}_STATE"] == CompactionState.WORKING.value))
            .order_by(c[f"{p}_ID"]).limit(1)).first()
        if row is not None:
            state, kind = CompactionState(row[1]), CompactionType(row[2])
            return (f"the later {kind.display} compaction {row[0]} of {info.full_partition_name} "
                    f"({state.display}) is built on its output")
    return None


def _rebalance_referenced(conn: Connection, info: CompactionInfo) -> str | None:
    """Whether a write after the REBALANCE may name its new ROW__IDs: committed update/delete components above its
    high watermark, update/delete components of uncommitted txns, or a writer opened after it that is still open."""
    hwm = info.highest_write_id or 0
    ctc, tc = COMPLETED_TXN_COMPONENTS, TXN_COMPONENTS
    committed = conn.execute(sa.select(ctc.c.CTC_TXNID).where(
        ctc.c.CTC_DATABASE == info.database, ctc.c.CTC_TABLE == info.table,
        sa.true() if info.partition is None else ctc.c.CTC_PARTITION == info.partition,
        ctc.c.CTC_WRITEID > hwm, ctc.c.CTC_UPDATE_DELETE == UpdateDelete.YES.value).limit(1)).scalar()
    if committed is not None:
        return f"transaction {committed} has since committed updates or deletes"
    running = conn.execute(sa.select(tc.c.TC_TXNID).join(TXNS, TXNS.c.TXN_ID == tc.c.TC_TXNID).where(
        TXNS.c.TXN_STATE == TxnState.OPEN.value, tc.c.TC_DATABASE == info.database, tc.c.TC_TABLE == info.table,
        sa.true() if info.partition is None else sa.or_(tc.c.TC_PARTITION == info.partition,
                                                        tc.c.TC_PARTITION.is_(None)),
        tc.c.TC_OPERATION_TYPE.in_((OperationType.UPDATE.value, OperationType.DELETE.value))).limit(1)).scalar()
    if running is not None:
        return f"the open transaction {running} is updating or deleting"
    writer = conn.execute(sa.select(TXNS.c.TXN_ID).where(
        TXNS.c.TXN_STATE == TxnState.OPEN.value, TXNS.c.TXN_ID > (info.txn_id or 0),
        sa.or_(TXNS.c.TXN_TYPE.is_(None), TXNS.c.TXN_TYPE == TxnType.DEFAULT.value)).order_by(TXNS.c.TXN_ID)
        .limit(1)).scalar()
    if writer is not None:
        return f"the transaction {writer}, opened after it and still open, may yet update or delete"
    return None


def _abort_compactor_txn(conn: Connection, info: CompactionInfo, now: int) -> None:
    """C becomes an aborted compactor txn: TXNS 'a' (the row is written again when the empty-txn cleaner removed
    it) and its TXN_COMPONENTS row with operation 'c', which keeps that TXNS row until the output is gone."""
    txn_id = int(info.txn_id or 0)
    state = conn.execute(sa.select(TXNS.c.TXN_STATE).where(TXNS.c.TXN_ID == txn_id).with_for_update()).scalar()
    if state is None:
        profile = profile_of(conn)
        conn.execute(sa.insert(profile.writable(TXNS)).values(profile.with_extras(TXNS, dict(
            TXN_ID=txn_id, TXN_STATE=TxnState.ABORTED.value, TXN_STARTED=info.start or now, TXN_LAST_HEARTBEAT=now,
            TXN_USER=(info.run_as or "compactor")[:128], TXN_HOST=(info.worker_id or "undo")[:128],
            TXN_TYPE=(TxnType.REBALANCE_COMPACTION if info.type is CompactionType.REBALANCE
                      else TxnType.COMPACTION).value))))
    elif state != TxnState.ABORTED.value:
        conn.execute(sa.update(TXNS).where(TXNS.c.TXN_ID == txn_id).values(TXN_STATE=TxnState.ABORTED.value))
    insert_txn_components(conn, txn_id, info.database, info.table, [info.partition] if info.partition else None,
                          OperationType.COMPACT, info.highest_write_id)
    log.info("compaction %s of %s undone: compactor transaction %s is now aborted", info.id,
             info.full_partition_name, txn_id)


__all__ = ["UNDONE_PREFIX", "UndoStore", "UndoneCompaction"]
