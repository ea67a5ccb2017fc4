"""Helpers the compaction queue's tests share (queue, Cleaner's side, Initiator's lookups): rows edited by hand,
the history and queue read back, and a row driven to 'ready for cleaning'."""

from __future__ import annotations

import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionType, TxnType
from airflow_acid.metastore.compactions import CompactionQueue
from airflow_acid.metastore.db import Database
from airflow_acid.metastore.schema import COMPACTION_QUEUE, COMPLETED_COMPACTIONS
from airflow_acid.metastore.txns import TxnStore

WHO = {"user": "etl", "host": "node1"}


def update_queue_row(db: Database, cq_id: int, **values) -> None:
    db.run(lambda c: c.execute(sa.update(COMPACTION_QUEUE).where(COMPACTION_QUEUE.c.CQ_ID == cq_id).values(**values)))


def history_rows(db: Database) -> list:
    return db.run(lambda c: c.execute(sa.select(COMPLETED_COMPACTIONS).order_by(COMPLETED_COMPACTIONS.c.CC_ID)).all())


def queue_ids(db: Database) -> list[int]:
    return db.run(lambda c: list(c.execute(sa.select(COMPACTION_QUEUE.c.CQ_ID).order_by(COMPACTION_QUEUE.c.CQ_ID))
                                 .scalars()))


def compact_through(queue: CompactionQueue, txns: TxnStore, db: str, table: str, partition: str | None, hwm: int,
                    *, commit: bool = True) -> int:
    """Enqueue, claim, run under a compaction txn and mark compacted; returns the queue id."""
    result = queue.enqueue(db, table, partition, CompactionType.MAJOR, highest_write_id_now=-1)
    assert result.accepted, result.message
    claimed = queue.claim_next("node1-1")
    assert claimed.id == result.id
    txn = txns.open_txn(**WHO, txn_type=TxnType.COMPACTION)
    queue.set_running(result.id, txn, hwm)
    assert queue.mark_compacted(result.id, txn_id=txn)
    if commit:
        txns.commit(txn)
    return result.id
