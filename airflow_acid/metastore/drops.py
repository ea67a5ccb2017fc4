"""Whether a table (or one partition) may be dropped now: Hive drops under an EXCLUSIVE lock, so a DROP waits for
(here: is refused while) an open transaction writes the table or any lock is held or wanted on it."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import TxnState
from airflow_acid.metastore.schema import HIVE_LOCKS, TXN_COMPONENTS, TXNS


def in_use(conn: Connection, database: str, table: str, partition: str | None = None, *,
           holding: int | None = None) -> str | None:
    """Why ``database.table`` (``partition``) is in use — open writers and lock holders named — or None when free.
    ``holding``: the lock the dropping statement itself holds (its EXCLUSIVE lock), not counted."""
    writers = sorted(set(conn.execute(
        sa.select(TXN_COMPONENTS.c.TC_TXNID).join(TXNS, TXNS.c.TXN_ID == TXN_COMPONENTS.c.TC_TXNID)
        .where(TXNS.c.TXN_STATE == TxnState.OPEN.value, TXN_COMPONENTS.c.TC_DATABASE == database,
               TXN_COMPONENTS.c.TC_TABLE == table,
               *([] if partition is None else [sa.or_(TXN_COMPONENTS.c.TC_PARTITION.is_(None),
                                                      TXN_COMPONENTS.c.TC_PARTITION == partition)]))).scalars()))
    locks = sorted(set(conn.execute(
        sa.select(HIVE_LOCKS.c.HL_LOCK_EXT_ID)
        .where(HIVE_LOCKS.c.HL_DB == database,
               sa.or_(HIVE_LOCKS.c.HL_TABLE.is_(None), HIVE_LOCKS.c.HL_TABLE == table),
               *([] if partition is None else [sa.or_(HIVE_LOCKS.c.HL_PARTITION.is_(None),
                                                      HIVE_LOCKS.c.HL_PARTITION == partition)]),
               *([] if holding is None else [HIVE_LOCKS.c.HL_LOCK_EXT_ID != holding]))).scalars()))
    reasons = []
    if writers:
        reasons.append(f"open transaction(s) {', '.join(map(str, writers))} write it")
    if locks:
        reasons.append(f"lock(s) {', '.join(map(str, locks))} are held or wanted on it (SHOW LOCKS)")
    return "; ".join(reasons) or None


__all__ = ["in_use"]
