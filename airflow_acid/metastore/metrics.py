"""Metastore figures behind Hive's ACID metrics (AcidMetricService, ``metastore.acidmetrics.*``): compaction queue
counts and ages per state, the latest compaction state per table/partition, open and aborted transactions with the
oldest of each, locks, and the sizes of the bookkeeping tables. One read-only transaction, a handful of aggregates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import CompactionState, TxnState, TxnType
from airflow_acid.metastore.compactions import _split_id as split_worker_id
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.schema import (
    COMPACTION_QUEUE,
    COMPLETED_COMPACTIONS,
    COMPLETED_TXN_COMPONENTS,
    HIVE_LOCKS,
    TXN_COMPONENTS,
    TXN_TO_WRITE_ID,
    TXNS,
)

CQ, CC = COMPACTION_QUEUE, COMPLETED_COMPACTIONS


@dataclass(frozen=True)
class OldestRow:
    """The oldest row of a kind: its id and its age in seconds on the database clock."""

    id: int
    age_s: float


@dataclass(frozen=True)
class AcidMetricsData:
    """What one metrics pass read from the metastore (ages in seconds, on the database clock)."""

    now_ms: int
    queue_counts: dict[CompactionState, int]
    """Rows in COMPACTION_QUEUE per state ('initiated', 'working', 'ready for cleaning')."""
    latest_state_counts: dict[CompactionState, int]
    """Tables/partitions whose most recent compaction (queue or history) is in each state (Hive's
    ``compaction_num_<state>``)."""
    oldest_initiated: OldestRow | None
    """By CQ_ENQUEUE_TIME."""
    oldest_working: OldestRow | None
    """By CQ_START (when the worker claimed it)."""
    oldest_ready_for_cleaning: OldestRow | None
    """By CQ_COMMIT_TIME (when the compaction committed; Hive's ``oldest_ready_for_cleaning_age_in_sec``)."""
    oldest_cleaning: OldestRow | None
    """By CQ_CLEANER_START: a 'ready for cleaning' row a Cleaner is working on."""
    pool_counts: dict[tuple[str, CompactionState], int]
    """Initiated/working rows per compaction pool (rows without a pool count under 'default')."""
    open_txns: int
    """Open transactions other than replication ones."""
    open_repl_txns: int
    oldest_open_txn: OldestRow | None
    aborted_txns: int
    oldest_aborted_txn: OldestRow | None
    tables_with_aborted_txns: dict[tuple[str, str], int] = field(default_factory=dict)
    """Tables with more aborted transactions than metastore.acidmetrics.table.aborted.txns.threshold."""
    locks: int = 0
    oldest_lock: OldestRow | None = None
    txn_to_write_id_rows: int = 0
    completed_txn_components_rows: int = 0
    initiators: int = 0
    """Distinct initiator hosts seen in the queue and history within the last 24 h."""
    workers: int = 0
    """Distinct worker hosts seen in the queue and history within the last 24 h."""


def _oldest(conn: Connection, id_col: sa.ColumnElement[Any], time_col: sa.ColumnElement[Any], now: int,
            *where: sa.ColumnElement[bool]) -> OldestRow | None:
    row = conn.execute(sa.select(id_col, time_col).where(time_col.is_not(None), *where)
                       .order_by(time_col, id_col).limit(1)).first()
    if row is None:
        return None
    return OldestRow(int(row[0]), max(0.0, (now - int(row[1])) / 1000))


def _count(conn: Connection, table: sa.Table, *where: sa.ColumnElement[bool]) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar() or 0)


class MetricsStore:
    """Read-only aggregates for the ACID metrics; each method is one transaction."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def read(self) -> AcidMetricsData:
        """Every figure of :class:`AcidMetricsData` in one transaction."""
        return self.db.run(self._read, what="read ACID metrics")

    def _read(self, conn: Connection) -> AcidMetricsData:
        now = now_ms(conn)
        queue_counts = {CompactionState(s): int(n) for s, n in conn.execute(
            sa.select(CQ.c.CQ_STATE, sa.func.count()).group_by(CQ.c.CQ_STATE))}
        pool_counts: dict[tuple[str, CompactionState], int] = {}
        for pool, state, n in conn.execute(sa.select(CQ.c.CQ_POOL_NAME, CQ.c.CQ_STATE, sa.func.count())
                                           .where(CQ.c.CQ_STATE.in_(["i", "w"]))
                                           .group_by(CQ.c.CQ_POOL_NAME, CQ.c.CQ_STATE)):
            key = (pool or "default", CompactionState(state))
            pool_counts[key] = pool_counts.get(key, 0) + int(n)
        state_of = CompactionState
        latest_state_counts = self._latest_states(conn)
        not_repl = sa.or_(TXNS.c.TXN_TYPE.is_(None), TXNS.c.TXN_TYPE != TxnType.REPL_CREATED.value)
        is_open = TXNS.c.TXN_STATE == TxnState.OPEN.value
        is_aborted = TXNS.c.TXN_STATE == TxnState.ABORTED.value
        threshold = self.conf.acidmetrics_table_aborted_txns_threshold
        tables_with_aborts = {(str(d), str(t)): int(n) for d, t, n in conn.execute(
            sa.select(TXN_COMPONENTS.c.TC_DATABASE, TXN_COMPONENTS.c.TC_TABLE,
                      sa.func.count(sa.distinct(TXN_COMPONENTS.c.TC_TXNID)))
            .join(TXNS, TXNS.c.TXN_ID == TXN_COMPONENTS.c.TC_TXNID)
            .where(is_aborted, TXN_COMPONENTS.c.TC_TABLE.is_not(None))
            .group_by(TXN_COMPONENTS.c.TC_DATABASE, TXN_COMPONENTS.c.TC_TABLE)
            .having(sa.func.count(sa.distinct(TXN_COMPONENTS.c.TC_TXNID)) > threshold))}
        since = now - 86_400_000
        initiators: set[str] = set()
        workers: set[str] = set()
        for prefix, table, end in (("CQ", CQ, CQ.c.CQ_ENQUEUE_TIME), ("CC", CC, CC.c.CC_END)):
            for initiator, worker in conn.execute(
                    sa.select(table.c[f"{prefix}_INITIATOR_ID"], table.c[f"{prefix}_WORKER_ID"]).distinct()
                    .where(sa.or_(end.is_(None), end >= since))):
                if (host := split_worker_id(initiator)[0]) is not None:
                    initiators.add(host)
                if (host := split_worker_id(worker)[0]) is not None:
                    workers.add(host)
        return AcidMetricsData(
            now_ms=now, queue_counts=queue_counts, latest_state_counts=latest_state_counts,
            oldest_initiated=_oldest(conn, CQ.c.CQ_ID, CQ.c.CQ_ENQUEUE_TIME, now,
                                     CQ.c.CQ_STATE == state_of.INITIATED.value),
            oldest_working=_oldest(conn, CQ.c.CQ_ID, CQ.c.CQ_START, now, CQ.c.CQ_STATE == state_of.WORKING.value),
            oldest_ready_for_cleaning=_oldest(conn, CQ.c.CQ_ID, CQ.c.CQ_COMMIT_TIME, now,
                                              CQ.c.CQ_STATE == state_of.READY_FOR_CLEANING.value),
            oldest_cleaning=_oldest(conn, CQ.c.CQ_ID, CQ.c.CQ_CLEANER_START, now,
                                    CQ.c.CQ_STATE == state_of.READY_FOR_CLEANING.value, CQ.c.CQ_CLEANER_START > 0),
            pool_counts=pool_counts,
            open_txns=_count(conn, TXNS, is_open, not_repl),
            open_repl_txns=_count(conn, TXNS, is_open, TXNS.c.TXN_TYPE == TxnType.REPL_CREATED.value),
            oldest_open_txn=_oldest(conn, TXNS.c.TXN_ID, TXNS.c.TXN_STARTED, now, is_open, not_repl),
            aborted_txns=_count(conn, TXNS, is_aborted),
            oldest_aborted_txn=_oldest(conn, TXNS.c.TXN_ID, TXNS.c.TXN_STARTED, now, is_aborted),
            tables_with_aborted_txns=tables_with_aborts,
            locks=int(conn.execute(sa.select(sa.func.count(sa.distinct(HIVE_LOCKS.c.HL_LOCK_EXT_ID)))).scalar() or 0),
            oldest_lock=_oldest(conn, HIVE_LOCKS.c.HL_LOCK_EXT_ID, HIVE_LOCKS.c.HL_ACQUIRED_AT, now,
                                HIVE_LOCKS.c.HL_ACQUIRED_AT > 0),
            txn_to_write_id_rows=_count(conn, TXN_TO_WRITE_ID),
            completed_txn_components_rows=_count(conn, COMPLETED_TXN_COMPONENTS),
            initiators=len(initiators), workers=len(workers))

    @staticmethod
    def _latest_states(conn: Connection) -> dict[CompactionState, int]:
        """Per table/partition, the state of its newest compaction id across queue and history; counted."""
        union = sa.union_all(
            sa.select(CQ.c.CQ_ID.label("id"), CQ.c.CQ_DATABASE.label("db"), CQ.c.CQ_TABLE.label("tbl"),
                      CQ.c.CQ_PARTITION.label("part"), CQ.c.CQ_STATE.label("state")),
            sa.select(CC.c.CC_ID, CC.c.CC_DATABASE, CC.c.CC_TABLE, CC.c.CC_PARTITION, CC.c.CC_STATE),
        ).subquery()
        newest = (sa.select(union.c.db, union.c.tbl, union.c.part, sa.func.max(union.c.id).label("id"))
                  .group_by(union.c.db, union.c.tbl, union.c.part).subquery())
        rows = conn.execute(sa.select(union.c.state, sa.func.count())
                            .join(newest, union.c.id == newest.c.id).group_by(union.c.state))
        return {CompactionState(s): int(n) for s, n in rows}


__all__ = ["AcidMetricsData", "MetricsStore", "OldestRow"]
