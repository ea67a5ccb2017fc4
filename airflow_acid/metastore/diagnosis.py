"""Read-only queries behind ``airflow-acid doctor`` (docs/operations.md#the-doctor): the stuck states Hive 4
operators meet, found in the transactional tables of a Hive metastore or of airflow-acid's own schema. Every query
here only reads; the one write (:meth:`Diagnosis.delete_orphan_queue_row`) is a fix an operator confirmed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import CompactionState, CompactionType, TxnState
from airflow_acid.metastore.compactions import CC, CQ
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.errors import ActionRefusedError
from airflow_acid.metastore.flavour import profile_of
from airflow_acid.metastore.hive_mutex import CLEANER, INITIATOR
from airflow_acid.metastore.schema import (
    AUX_TABLE,
    COMPLETED_TXN_COMPONENTS,
    DBS,
    MIN_HISTORY_LEVEL,
    PARTITIONS,
    TABLE_PARAMS,
    TBLS,
    TXN_TO_WRITE_ID,
    TXNS,
)

LEADER_KEYS = (INITIATOR, CLEANER)
"""Hive's mutexes whose MT_KEY2 records the last cycle of the service that holds the leadership."""


@dataclass(frozen=True)
class QueueRow:
    """A COMPACTION_QUEUE (or COMPLETED_COMPACTIONS) row as the doctor shows it."""

    id: int
    database: str
    table: str
    partition: str | None
    state: CompactionState
    type: CompactionType
    txn_id: int | None
    worker_id: str | None
    start: int | None
    """CQ_START, epoch ms (when the worker claimed it)."""
    commit_time: int | None
    enqueue_time: int | None
    highest_write_id: int | None

    @property
    def entity(self) -> str:
        return f"{self.database}.{self.table}" + (f"/{self.partition}" if self.partition else "")


@dataclass(frozen=True)
class StaleTxn:
    """An open transaction whose client stopped heartbeating."""

    txn_id: int
    user: str
    host: str
    last_heartbeat: int
    """Epoch ms."""


@dataclass(frozen=True)
class LeaderRun:
    """A Hive service mutex and its recorded last run (MT_KEY2, epoch ms)."""

    key: str
    last_run: int


@dataclass(frozen=True)
class Backlog:
    """Rows of a bookkeeping table below the low watermark: what housekeeping would remove."""

    table: str
    removable: int
    watermark: int | None


_COLUMNS = ("ID", "DATABASE", "TABLE", "PARTITION", "STATE", "TYPE", "TXN_ID", "WORKER_ID", "START", "COMMIT_TIME",
            "ENQUEUE_TIME", "HIGHEST_WRITE_ID")


@dataclass(frozen=True)
class Unpicked:
    """A table/partition with committed writes no compaction has absorbed (COMPLETED_TXN_COMPONENTS rows, which
    the Cleaner removes once a compaction covers them): what Hive's Initiator looks at for candidates."""

    database: str
    table: str
    partition: str | None
    writes: int
    oldest_ms: int
    """The oldest of those commits, epoch ms."""

    @property
    def entity(self) -> str:
        return f"{self.database}.{self.table}" + (f"/{self.partition}" if self.partition else "")


def _queue_row(row: sa.Row[Any], p: str) -> QueueRow:
    m = row._mapping
    return QueueRow(int(m[f"{p}_ID"]), m[f"{p}_DATABASE"], m[f"{p}_TABLE"], m[f"{p}_PARTITION"],
                    CompactionState(m[f"{p}_STATE"]), CompactionType(m[f"{p}_TYPE"]), m[f"{p}_TXN_ID"],
                    m[f"{p}_WORKER_ID"], m[f"{p}_START"], m[f"{p}_COMMIT_TIME"], m[f"{p}_ENQUEUE_TIME"],
                    m[f"{p}_HIGHEST_WRITE_ID"])


def _cq_columns() -> list[sa.Column[Any]]:
    return [CQ.c[f"CQ_{c}"] for c in _COLUMNS]


class Diagnosis:
    """The doctor's queries over one metastore database."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def now(self) -> int:
        """The database clock, epoch ms (Hive's timeouts run on it)."""
        return self.db.run(now_ms, what="read the database clock")

    def queue(self, *states: CompactionState) -> list[QueueRow]:
        """Queue rows in ``states`` (all when none), in id order."""
        query = sa.select(*_cq_columns()).order_by(CQ.c.CQ_ID)
        if states:
            query = query.where(CQ.c.CQ_STATE.in_([s.value for s in states]))
        return self.db.run(lambda conn: [_queue_row(r, "CQ") for r in conn.execute(query)], what="read the queue")

    def with_aborted_compactor_txn(self) -> list[QueueRow]:
        """'working' / 'ready for cleaning' rows whose compactor transaction CQ_TXN_ID is aborted (HIVE-29572)."""
        query = (sa.select(*_cq_columns()).join(TXNS, TXNS.c.TXN_ID == CQ.c.CQ_TXN_ID)
                 .where(CQ.c.CQ_STATE.in_([CompactionState.WORKING.value, CompactionState.READY_FOR_CLEANING.value]),
                        TXNS.c.TXN_STATE == TxnState.ABORTED.value).order_by(CQ.c.CQ_ID))
        return self.db.run(lambda conn: [_queue_row(r, "CQ") for r in conn.execute(query)],
                           what="find compactions with an aborted compactor transaction")

    def succeeded_history(self) -> list[QueueRow]:
        """'succeeded' history rows that carry a highest write id (duplicates point at a re-run compaction)."""
        columns = [CC.c[f"CC_{c}"] for c in _COLUMNS]
        query = (sa.select(*columns).where(CC.c.CC_STATE == CompactionState.SUCCEEDED.value,
                                           CC.c.CC_HIGHEST_WRITE_ID.is_not(None)).order_by(CC.c.CC_ID))
        return self.db.run(lambda conn: [_queue_row(r, "CC") for r in conn.execute(query)],
                           what="read succeeded compactions")

    def stale_open_txns(self, older_than_ms: int) -> list[StaleTxn]:
        """Open transactions whose last heartbeat is older than ``older_than_ms`` (database clock)."""

        def work(conn: Connection) -> list[StaleTxn]:
            cutoff = now_ms(conn) - older_than_ms
            rows = conn.execute(sa.select(TXNS.c.TXN_ID, TXNS.c.TXN_USER, TXNS.c.TXN_HOST, TXNS.c.TXN_LAST_HEARTBEAT)
                                .where(TXNS.c.TXN_STATE == TxnState.OPEN.value,
                                       TXNS.c.TXN_LAST_HEARTBEAT < cutoff).order_by(TXNS.c.TXN_ID))
            return [StaleTxn(int(r[0]), r[1], r[2], int(r[3])) for r in rows]

        return self.db.run(work, what="find open transactions without heartbeat")

    def orphan_queue_rows(self) -> list[QueueRow]:
        """Queue rows whose table, or partition, no longer exists in the catalog."""
        return self.db.run(self._orphans_in, what="find queue rows of dropped tables")

    def leader_runs(self) -> list[LeaderRun]:
        """Hive's Initiator/Cleaner mutex rows that recorded a run (MT_KEY2 > 0): absent on a metastore whose
        Hive services never ran."""
        query = (sa.select(AUX_TABLE.c.MT_KEY1, sa.func.max(AUX_TABLE.c.MT_KEY2))
                 .where(AUX_TABLE.c.MT_KEY1.in_(LEADER_KEYS), AUX_TABLE.c.MT_KEY2 > 0).group_by(AUX_TABLE.c.MT_KEY1))
        return self.db.run(lambda conn: [LeaderRun(r[0], int(r[1])) for r in conn.execute(query)],
                           what="read Hive's service mutexes")

    def writes_since(self, since_ms: int) -> int:
        """Commits recorded in COMPLETED_TXN_COMPONENTS since ``since_ms``: what an Initiator running since then
        would have looked at."""
        ctc = COMPLETED_TXN_COMPONENTS

        def work(conn: Connection) -> int:
            since = profile_of(conn).commit_time_since(ctc.c.CTC_TIMESTAMP, since_ms)
            return int(conn.execute(sa.select(sa.func.count()).select_from(ctc).where(since)).scalar_one())

        return self.db.run(work, what="count recent commits")

    def backlogs(self) -> list[Backlog]:
        """TXN_TO_WRITE_ID and COMPLETED_TXN_COMPONENTS rows below the low watermark (the lowest open transaction
        and MIN_HISTORY_LEVEL entry): no reader needs them any more, housekeeping removes them."""

        def work(conn: Connection) -> list[Backlog]:
            lows = [conn.execute(sa.select(sa.func.min(TXNS.c.TXN_ID))
                                 .where(TXNS.c.TXN_STATE == TxnState.OPEN.value)).scalar(),
                    conn.execute(sa.select(sa.func.min(MIN_HISTORY_LEVEL.c.MHL_MIN_OPEN_TXNID))).scalar()]
            present = [int(v) for v in lows if v is not None]
            watermark = min(present) if present else None

            def below(column: sa.Column[Any]) -> int:
                query = sa.select(sa.func.count()).select_from(column.table)
                if watermark is not None:
                    query = query.where(column < watermark)
                return int(conn.execute(query).scalar_one())

            return [Backlog(TXN_TO_WRITE_ID.name, below(TXN_TO_WRITE_ID.c.T2W_TXNID), watermark),
                    Backlog(COMPLETED_TXN_COMPONENTS.name, below(COMPLETED_TXN_COMPONENTS.c.CTC_TXNID), watermark)]

        return self.db.run(work, what="count transaction bookkeeping rows")

    def unpicked(self, min_writes: int, older_than_ms: int) -> list[Unpicked]:
        """Existing tables/partitions with at least ``min_writes`` committed writes not yet compacted, the oldest
        older than ``older_than_ms``, no queue row, and not marked ``no_auto_compaction``."""
        ctc = COMPLETED_TXN_COMPONENTS

        def work(conn: Connection) -> list[Unpicked]:
            profile = profile_of(conn)
            cutoff = now_ms(conn) - older_than_ms
            oldest = profile.commit_time_ms(sa.func.min(ctc.c.CTC_TIMESTAMP))
            exists = (sa.select(TBLS.c.TBL_ID).join(DBS, DBS.c.DB_ID == TBLS.c.DB_ID)
                      .where(DBS.c.NAME == ctc.c.CTC_DATABASE, TBLS.c.TBL_NAME == ctc.c.CTC_TABLE).exists())
            rows = conn.execute(
                sa.select(ctc.c.CTC_DATABASE, ctc.c.CTC_TABLE, ctc.c.CTC_PARTITION, sa.func.count(), oldest)
                .where(ctc.c.CTC_TABLE.is_not(None), exists)
                .group_by(ctc.c.CTC_DATABASE, ctc.c.CTC_TABLE, ctc.c.CTC_PARTITION)
                .having(sa.func.count() >= min_writes)).all()
            queued = {(r[0], r[1], r[2]) for r in conn.execute(
                sa.select(CQ.c.CQ_DATABASE, CQ.c.CQ_TABLE, CQ.c.CQ_PARTITION))}
            skipped = {(r[0], r[1]) for r in conn.execute(
                sa.select(DBS.c.NAME, TBLS.c.TBL_NAME).join(TBLS, TBLS.c.DB_ID == DBS.c.DB_ID)
                .join(TABLE_PARAMS, TABLE_PARAMS.c.TBL_ID == TBLS.c.TBL_ID)
                .where(sa.func.lower(TABLE_PARAMS.c.PARAM_KEY) == "no_auto_compaction",
                       sa.func.lower(TABLE_PARAMS.c.PARAM_VALUE) == "true"))}
            return [Unpicked(r[0], r[1], r[2], int(r[3]), int(r[4])) for r in rows
                    if r[4] is not None and int(r[4]) < cutoff and (r[0], r[1], r[2]) not in queued
                    and (r[0], r[1]) not in skipped]

        return self.db.run(work, what="find tables with uncompacted writes")

    def delete_orphan_queue_row(self, cq_id: int) -> QueueRow:
        """Delete queue row ``cq_id`` of a dropped table/partition, as Hive's DROP TABLE would have (checked again
        in the same database transaction). ActionRefusedError when it is not (or no longer) an orphan."""

        def work(conn: Connection) -> QueueRow:
            orphan = next((r for r in self._orphans_in(conn) if r.id == int(cq_id)), None)
            if orphan is None:
                raise ActionRefusedError(f"compaction {cq_id} is not a queue row of a dropped table or partition")
            conn.execute(sa.delete(CQ).where(CQ.c.CQ_ID == orphan.id))
            return orphan

        return self.db.run(work, what=f"delete orphan queue row {cq_id}")

    def _orphans_in(self, conn: Connection) -> list[QueueRow]:
        table = (sa.select(TBLS.c.TBL_ID).join(DBS, DBS.c.DB_ID == TBLS.c.DB_ID)
                 .where(DBS.c.NAME == CQ.c.CQ_DATABASE, TBLS.c.TBL_NAME == CQ.c.CQ_TABLE))
        partition = (sa.select(PARTITIONS.c.PART_ID).join(TBLS, TBLS.c.TBL_ID == PARTITIONS.c.TBL_ID)
                     .join(DBS, DBS.c.DB_ID == TBLS.c.DB_ID)
                     .where(DBS.c.NAME == CQ.c.CQ_DATABASE, TBLS.c.TBL_NAME == CQ.c.CQ_TABLE,
                            PARTITIONS.c.PART_NAME == CQ.c.CQ_PARTITION))
        query = (sa.select(*_cq_columns())
                 .where(sa.or_(~table.exists(), sa.and_(CQ.c.CQ_PARTITION.is_not(None), ~partition.exists())))
                 .order_by(CQ.c.CQ_ID))
        return [_queue_row(r, "CQ") for r in conn.execute(query)]


__all__ = ["Backlog", "Diagnosis", "LeaderRun", "QueueRow", "StaleTxn", "Unpicked"]
