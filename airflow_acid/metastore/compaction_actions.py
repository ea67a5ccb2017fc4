"""Operator actions on one compaction (the console's buttons, ``airflow-acid compaction abort|requeue``): the
metastore side (docs/operations.md#acting-on-compactions-and-transactions).

**Abort** follows Hive 4's ABORT COMPACTIONS — the row leaves the queue for COMPLETED_COMPACTIONS as 'aborted' ('x')
with the message ``Compaction aborted by ABORT COMPACTIONS request.`` — and goes one step further: a 'working' row can
be aborted too. Its compactor transaction C (when the Worker recorded it) is aborted in the same database transaction,
so the Worker can no longer commit: marking the row compacted needs the row still 'working' with C on it
(:meth:`~airflow_acid.metastore.compactions.CompactionQueue.mark_compacted`), and C's commit needs C open. C's
TXN_COMPONENTS row (operation 'c') stays, so the aborted-write cleanup deletes whatever ``_vC`` output is left.
A 'ready for cleaning' row is committed already: that is what undo is for.

**Requeue** queues a 'failed' or 'refused' compaction again: a new 'initiated' row for the same table/partition,
type, pool, properties (and REBALANCE options), under Hive's duplicate rules (refused while one is scheduled).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.metastore.compactions import (
    ABORTED_BY_REQUEST,
    CC,
    CQ,
    CompactionInfo,
    CompactionQueue,
    EnqueueResult,
    compaction_info,
    copy_to_history,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.errors import ActionRefusedError, NoSuchObjectError
from airflow_acid.metastore.txns import AbortReason, abort_txns_in

log = logging.getLogger(__name__)

ABORTABLE = (CompactionState.INITIATED, CompactionState.WORKING)
REQUEUEABLE = (CompactionState.FAILED, CompactionState.REFUSED)


@dataclass(frozen=True)
class AbortedCompaction:
    """A compaction an operator aborted: where it was, and what became of its compactor transaction."""

    id: int
    database: str
    table: str
    partition: str | None
    type: CompactionType
    was: CompactionState
    """'initiated' or 'working'."""
    txn_id: int | None
    """The compactor transaction C of a 'working' row (None when the Worker had not recorded one yet)."""
    txn_aborted: bool
    """Whether C was open and is now aborted."""


def abort_message(user: str, was: CompactionState) -> str:
    """CC_ERROR_MESSAGE of an aborted row: Hive's sentence, then who and from which state."""
    return f"{ABORTED_BY_REQUEST} By {user or 'unknown'}, while '{was.display}'."[:4000]


class CompactionActions:
    """Abort a queued or running compaction; requeue a failed or refused one."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def abort(self, cq_id: int, *, user: str) -> AbortedCompaction:
        """Abort compaction ``cq_id`` (one database transaction, see the module docstring). NoSuchObjectError for an
        unknown id; ActionRefusedError when it is 'ready for cleaning' (undo it instead) or already finished."""
        cq_id = int(cq_id)

        def work(conn: Connection) -> AbortedCompaction:
            row = conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id).with_for_update()).first()
            if row is None:
                raise _finished(conn, cq_id, "aborted")
            info = compaction_info(row, "CQ")
            if info.type is CompactionType.ABORT_TXN_CLEANUP:
                raise ActionRefusedError(f"compaction {cq_id} is the Cleaner's retry entry for the aborted writes of "
                                         f"{info.full_partition_name}, not a compaction; it cannot be aborted")
            if info.state is CompactionState.READY_FOR_CLEANING:
                raise ActionRefusedError(
                    f"compaction {cq_id} of {info.full_partition_name} is 'ready for cleaning': its output is "
                    "committed, so it cannot be aborted; undo it instead while it is inside its undo window "
                    f"(airflow-acid compaction undo {cq_id}, or Undo in the console)")
            if info.state not in ABORTABLE:
                raise ActionRefusedError(f"compaction {cq_id} is '{info.state.display}': only 'initiated' or "
                                         "'working' compactions can be aborted")
            txn_aborted = False
            if info.state is CompactionState.WORKING and info.txn_id:
                txn_aborted = bool(abort_txns_in(conn, [int(info.txn_id)], AbortReason.COMPACTION_FAILED))
            copy_to_history(conn, cq_id, CompactionState.ABORTED, now_ms(conn),
                            error_message=abort_message(user, info.state))
            conn.execute(sa.delete(CQ).where(CQ.c.CQ_ID == cq_id))
            log.info("compaction %s of %s aborted by %s while '%s'%s", cq_id, info.full_partition_name, user,
                     info.state.display, f"; compactor transaction {info.txn_id} aborted" if txn_aborted else "")
            return AbortedCompaction(cq_id, info.database, info.table, info.partition, info.type, info.state,
                                     int(info.txn_id) if info.txn_id else None, txn_aborted)

        def recover(conn: Connection, since_ms: int) -> AbortedCompaction | None:
            row = conn.execute(sa.select(CC).where(CC.c.CC_ID == cq_id, CC.c.CC_STATE == CompactionState.ABORTED.value,
                                                   CC.c.CC_END >= since_ms)).first()
            if row is None:
                return None
            done = compaction_info(row, "CC")
            was = CompactionState.WORKING if done.worker_id or done.txn_id else CompactionState.INITIATED
            return AbortedCompaction(cq_id, done.database, done.table, done.partition, done.type, was,
                                     int(done.txn_id) if done.txn_id else None, bool(done.txn_id))

        return self.db.run(work, what=f"abort compaction {cq_id}", recover=recover)

    def requeue(self, cq_id: int, *, initiator_id: str | None = None,
                initiator_version: str | None = None) -> tuple[CompactionInfo, EnqueueResult]:
        """Queue 'failed' or 'refused' compaction ``cq_id`` again: (the old row, the enqueue answer — refused with
        Hive's message while a compaction of the same table/partition is scheduled). NoSuchObjectError for an
        unknown id; ActionRefusedError for any other state."""
        queue = CompactionQueue(self.db, self.conf)
        old = queue.get(int(cq_id))
        if old.state.is_queued:
            raise ActionRefusedError(f"compaction {cq_id} of {old.full_partition_name} is still in the queue as "
                                     f"'{old.state.display}': only a 'failed' or 'refused' compaction can be requeued")
        if old.state not in REQUEUEABLE or old.type is CompactionType.ABORT_TXN_CLEANUP:
            raise ActionRefusedError(f"compaction {cq_id} of {old.full_partition_name} is '{old.state.display}': "
                                     "only a 'failed' or 'refused' compaction can be requeued")
        answer = queue.enqueue(old.database, old.table, old.partition, old.type, pool=old.pool_name,
                               properties=old.properties, initiator_id=initiator_id,
                               initiator_version=initiator_version, run_as=old.run_as,
                               number_of_buckets=old.number_of_buckets, order_by=old.order_by)
        if answer.accepted:
            log.info("compaction %s of %s requeued as compaction %s", cq_id, old.full_partition_name, answer.id)
        return old, answer


def _finished(conn: Connection, cq_id: int, action: str) -> Exception:
    """The error for an id that is not in the queue: unknown, or finished (in the history)."""
    state = conn.execute(sa.select(CC.c.CC_STATE).where(CC.c.CC_ID == cq_id)).scalar()
    if state is None:
        return NoSuchObjectError(f"compaction {cq_id} does not exist (or its history was purged)")
    return ActionRefusedError(f"compaction {cq_id} has finished as '{CompactionState(state).display}'; only "
                              f"'initiated' or 'working' compactions can be {action}")


__all__ = ["ABORTABLE", "REQUEUEABLE", "AbortedCompaction", "CompactionActions", "abort_message"]
