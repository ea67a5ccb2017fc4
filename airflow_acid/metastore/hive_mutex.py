"""Hive's own AUX_TABLE mutexes, held for a whole cycle on a Hive metastore, so that airflow-acid's Initiator,
Cleaner and HouseKeeper and Hive's services of the same name never run at the same time.

Hive 4's MutexAPI takes ``SELECT MT_COMMENT, MT_KEY2 FROM AUX_TABLE WHERE MT_KEY1 = <key> FOR UPDATE`` on a
connection of its own and keeps that transaction open until the service's cycle ends (MT_KEY2 is the service's last
run time, written back on release). Here the same row lock is taken with NOWAIT: when Hive holds it, the cycle is
skipped with a message instead of waiting. Keys are Hive's ``TxnStore.MUTEX_KEY`` names.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError

from airflow_acid.metastore.db import Database
from airflow_acid.metastore.db_errors import sqlstate
from airflow_acid.metastore.schema import AUX_TABLE

log = logging.getLogger(__name__)

INITIATOR = "Initiator"
CLEANER = "Cleaner"
HOUSEKEEPER = "HouseKeeper"
TXN_CLEANER = "TxnCleaner"
COMPACTION_SCHEDULER = "CompactionScheduler"
HIVE_MUTEX_KEYS = (INITIATOR, CLEANER, HOUSEKEEPER, TXN_CLEANER, COMPACTION_SCHEDULER, "MaterializationRebuild")
"""Hive 4's TxnStore.MUTEX_KEY."""

_PG_LOCK_NOT_AVAILABLE = "55P03"
_MYSQL_LOCK_BUSY = (1205, 3572)  # lock wait timeout (MariaDB NOWAIT), ER_LOCK_NOWAIT (MySQL 8)


@dataclass
class HeldMutex:
    """A Hive mutex row locked by an open transaction on a connection of its own."""

    key: str
    last_update_ms: int
    """MT_KEY2 when it was taken: the previous holder's recorded run time (Hive's getLastUpdateTime)."""
    _conn: Connection

    def release(self, last_update_ms: int | None = None) -> None:
        """End the holding transaction; with ``last_update_ms`` store it in MT_KEY2 first (Hive's
        releaseLocks(timestamp))."""
        try:
            if last_update_ms is not None:
                self._conn.execute(sa.update(AUX_TABLE).where(AUX_TABLE.c.MT_KEY1 == self.key)
                                   .values(MT_KEY2=int(last_update_ms)))
                self._conn.commit()
            else:
                self._conn.rollback()
        finally:
            self._conn.close()


def try_acquire(db: Database, key: str) -> HeldMutex | None:
    """Lock Hive's mutex row ``key`` without waiting; None when another holder (Hive, or another airflow-acid
    process) has it. The row is created first as Hive creates it (MT_KEY2 = 0) when missing."""
    _ensure_row(db, key)
    conn = db.engine.connect()
    try:
        value = conn.execute(sa.select(AUX_TABLE.c.MT_KEY2).where(AUX_TABLE.c.MT_KEY1 == key)
                             .with_for_update(nowait=True)).scalar()
    except DBAPIError as exc:
        conn.rollback()
        conn.close()
        if _busy(exc):
            return None
        raise
    except BaseException:
        conn.close()
        raise
    return HeldMutex(key, int(value or 0), conn)


def _ensure_row(db: Database, key: str) -> None:
    def work(conn: Connection) -> None:
        if conn.execute(sa.select(AUX_TABLE.c.MT_KEY1).where(AUX_TABLE.c.MT_KEY1 == key)).first() is None:
            try:
                with conn.begin_nested():
                    conn.execute(sa.insert(AUX_TABLE).values(MT_KEY1=key, MT_KEY2=0))
            except IntegrityError:
                pass  # created concurrently (by Hive or another process)

    db.run(work, what=f"create the {key} mutex row")


def _busy(exc: DBAPIError) -> bool:
    orig = exc.orig
    if sqlstate(orig) == _PG_LOCK_NOT_AVAILABLE:
        return True
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    return bool(args) and isinstance(args[0], int) and args[0] in _MYSQL_LOCK_BUSY
