"""Aborted transactions grouped by the table/partition they wrote: the one "too many / too old aborts" query that
the Initiator (docs/hive-acid.md#initiator-cycle step 4) and the Cleaner's aborted-write cleanup
(docs/hive-acid.md#aborted-write-cleanup) share, so they never disagree."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import TxnState
from airflow_acid.metastore.db import now_ms
from airflow_acid.metastore.schema import TXN_COMPONENTS, TXNS


@dataclass(frozen=True)
class AbortGroup:
    """Aborted txns that wrote one table/partition: count and oldest TXN_STARTED (docs/hive-acid.md#initiator-cycle step
    4)."""

    database: str
    table: str | None
    partition: str | None
    count: int
    """TXN_COMPONENTS rows of aborted txns (Hive's COUNT(*)): a txn with several rows for the entity counts each."""
    oldest_started_ms: int

    @property
    def entity(self) -> tuple[str, str | None, str | None]:
        return self.database, self.table, self.partition


def abort_groups(conn: Connection, count_threshold: int, time_threshold_ms: int) -> list[AbortGroup]:
    """Aborted txns per table/partition (TXNS ⋈ TXN_COMPONENTS, TXN_STATE 'a') with more than ``count_threshold``
    rows, or (when ``time_threshold_ms`` ≥ 0) with the oldest TXN_STARTED older than it; ordered by entity."""
    tc = TXN_COMPONENTS
    count = sa.func.count().label("n")
    oldest = sa.func.min(TXNS.c.TXN_STARTED).label("oldest")
    having = count > count_threshold
    if time_threshold_ms >= 0:
        having = sa.or_(having, oldest < now_ms(conn) - time_threshold_ms)
    rows = conn.execute(
        sa.select(tc.c.TC_DATABASE, tc.c.TC_TABLE, tc.c.TC_PARTITION, count, oldest)
        .join_from(TXNS, tc, TXNS.c.TXN_ID == tc.c.TC_TXNID)
        .where(TXNS.c.TXN_STATE == TxnState.ABORTED.value)
        .group_by(tc.c.TC_DATABASE, tc.c.TC_TABLE, tc.c.TC_PARTITION).having(having)
        .order_by(tc.c.TC_DATABASE, tc.c.TC_TABLE, tc.c.TC_PARTITION)).all()
    return [AbortGroup(r[0], r[1], r[2], int(r[3]), int(r[4])) for r in rows]
