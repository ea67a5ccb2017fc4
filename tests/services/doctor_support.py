"""Planting the stuck states the doctor looks for, as Hive's services leave them: raw rows in COMPACTION_QUEUE,
COMPLETED_COMPACTIONS, TXNS, MIN_HISTORY_LEVEL, TXN_TO_WRITE_ID and AUX_TABLE (the column names Hive 4 and
airflow-acid's schema share), plus row checksums of every table to prove what a run or a fix changed."""

from __future__ import annotations

import datetime
import hashlib
import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine


def _t(name: str, *columns: str) -> sa.TableClause:
    return sa.table(name, *[sa.column(c) for c in columns])


CQ = _t("COMPACTION_QUEUE", "CQ_ID", "CQ_DATABASE", "CQ_TABLE", "CQ_PARTITION", "CQ_STATE", "CQ_TYPE",
        "CQ_ENQUEUE_TIME", "CQ_START", "CQ_WORKER_ID", "CQ_RUN_AS", "CQ_HIGHEST_WRITE_ID", "CQ_TXN_ID",
        "CQ_NEXT_TXN_ID", "CQ_COMMIT_TIME", "CQ_INITIATOR_ID", "CQ_INITIATOR_VERSION", "CQ_WORKER_VERSION")
CC = _t("COMPLETED_COMPACTIONS", "CC_ID", "CC_DATABASE", "CC_TABLE", "CC_PARTITION", "CC_STATE", "CC_TYPE",
        "CC_ENQUEUE_TIME", "CC_START", "CC_END", "CC_WORKER_ID", "CC_RUN_AS", "CC_HIGHEST_WRITE_ID", "CC_TXN_ID",
        "CC_NEXT_TXN_ID", "CC_COMMIT_TIME")
NCQ = _t("NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT")
TXNS = _t("TXNS", "TXN_ID", "TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER", "TXN_HOST",
          "TXN_AGENT_INFO", "TXN_TYPE")
MHL = _t("MIN_HISTORY_LEVEL", "MHL_TXNID", "MHL_MIN_OPEN_TXNID")
T2W = _t("TXN_TO_WRITE_ID", "T2W_TXNID", "T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID")
CTC = _t("COMPLETED_TXN_COMPONENTS", "CTC_TXNID", "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION", "CTC_TIMESTAMP",
         "CTC_WRITEID", "CTC_UPDATE_DELETE")
AUX = _t("AUX_TABLE", "MT_KEY1", "MT_KEY2", "MT_COMMENT")
HOUR_MS = 3600 * 1000


def now_ms() -> int:
    return int(time.time() * 1000)


class Planter:
    """Writes Hive-shaped rows and remembers them, so :meth:`remove` leaves the database as it found it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.cq_ids: list[int] = []
        self.txn_ids: list[int] = []
        self.t2w: list[tuple[str, str]] = []
        self.aux: list[str] = []
        self.writes: list[tuple[str, str]] = []

    def next_cq_id(self, conn: sa.Connection) -> int:
        cq_id = int(conn.execute(sa.select(NCQ.c.NCQ_NEXT)).scalar_one())
        conn.execute(sa.update(NCQ).values(NCQ_NEXT=cq_id + 1))
        self.cq_ids.append(cq_id)
        return cq_id

    def queue(self, db: str, table: str, state: str, *, partition: str | None = None, **values) -> int:
        """A COMPACTION_QUEUE row as Hive's Initiator/Worker leave it (state, times in epoch ms)."""
        with self.engine.begin() as conn:
            cq_id = self.next_cq_id(conn)
            conn.execute(sa.insert(CQ).values(
                CQ_ID=cq_id, CQ_DATABASE=db, CQ_TABLE=table, CQ_PARTITION=partition, CQ_STATE=state, CQ_TYPE="a",
                CQ_ENQUEUE_TIME=now_ms(), CQ_RUN_AS="hive", CQ_INITIATOR_ID="hms1-Initiator",
                CQ_INITIATOR_VERSION="4.2.0", **values))
            return cq_id

    def history(self, db: str, table: str, state: str, **values) -> int:
        """A COMPLETED_COMPACTIONS row (a finished compaction)."""
        with self.engine.begin() as conn:
            cq_id = self.next_cq_id(conn)
            conn.execute(sa.insert(CC).values(CC_ID=cq_id, CC_DATABASE=db, CC_TABLE=table, CC_STATE=state,
                                              CC_TYPE="a", CC_RUN_AS="hive", CC_END=now_ms(), **values))
            return cq_id

    def txn(self, state: str = "o", *, heartbeat_ago_ms: int = 0, history_level: bool = True) -> int:
        """A TXNS row as HiveServer2 opens it (and its MIN_HISTORY_LEVEL row while open)."""
        now = now_ms()
        values = dict(TXN_STATE=state, TXN_STARTED=now - heartbeat_ago_ms, TXN_LAST_HEARTBEAT=now - heartbeat_ago_ms,
                      TXN_USER="hive", TXN_HOST="hs2.example", TXN_AGENT_INFO="hive_query_1", TXN_TYPE=0)
        with self.engine.begin() as conn:
            if self.engine.dialect.name == "postgresql":
                txn_id = int(conn.execute(sa.insert(TXNS).values(values).returning(TXNS.c.TXN_ID)).scalar_one())
            else:
                txn_id = int(conn.execute(sa.insert(TXNS).values(values)).lastrowid)
            if state == "o" and history_level:
                conn.execute(sa.insert(MHL).values(MHL_TXNID=txn_id, MHL_MIN_OPEN_TXNID=txn_id))
        self.txn_ids.append(txn_id)
        return txn_id

    def write_ids(self, db: str, table: str, count: int) -> None:
        """``count`` TXN_TO_WRITE_ID rows of long-committed transactions."""
        with self.engine.begin() as conn:
            conn.execute(sa.insert(T2W), [{"T2W_TXNID": 900_000 + i, "T2W_DATABASE": db, "T2W_TABLE": table,
                                           "T2W_WRITEID": i + 1} for i in range(count)])
        self.t2w.append((db, table))

    def old_writes(self, db: str, table: str, count: int, age_ms: int, *, hive: bool) -> None:
        """``count`` commits to ``db.table`` ``age_ms`` ago that no compaction absorbed (COMPLETED_TXN_COMPONENTS:
        Hive's CTC_TIMESTAMP is a timestamp, airflow-acid's epoch ms)."""
        stamp_ms = now_ms() - age_ms
        stamp = datetime.datetime.fromtimestamp(stamp_ms / 1000) if hive else stamp_ms
        with self.engine.begin() as conn:
            conn.execute(sa.insert(CTC), [{"CTC_TXNID": 800_000 + i, "CTC_DATABASE": db, "CTC_TABLE": table,
                                           "CTC_PARTITION": None, "CTC_TIMESTAMP": stamp, "CTC_WRITEID": 800_000 + i,
                                           "CTC_UPDATE_DELETE": "N"} for i in range(count)])
        self.writes.append((db, table))

    def mutex(self, key: str, last_run_ms: int) -> None:
        """Hive's service mutex row with its last run time in MT_KEY2."""
        with self.engine.begin() as conn:
            conn.execute(sa.delete(AUX).where(AUX.c.MT_KEY1 == key))
            conn.execute(sa.insert(AUX).values(MT_KEY1=key, MT_KEY2=last_run_ms))
        self.aux.append(key)

    def remove(self) -> None:
        """Delete every planted row (and the history rows fixes made of planted queue rows)."""
        with self.engine.begin() as conn:
            if self.cq_ids:
                conn.execute(sa.delete(CQ).where(CQ.c.CQ_ID.in_(self.cq_ids)))
                conn.execute(sa.delete(CC).where(CC.c.CC_ID.in_(self.cq_ids)))
            if self.txn_ids:
                conn.execute(sa.delete(MHL).where(MHL.c.MHL_TXNID.in_(self.txn_ids)))
                conn.execute(sa.delete(TXNS).where(TXNS.c.TXN_ID.in_(self.txn_ids)))
            for db, table in self.t2w:
                conn.execute(sa.delete(T2W).where(T2W.c.T2W_DATABASE == db, T2W.c.T2W_TABLE == table))
            for db, table in self.writes:
                conn.execute(sa.delete(CTC).where(CTC.c.CTC_DATABASE == db, CTC.c.CTC_TABLE == table,
                                                  CTC.c.CTC_TXNID >= 800_000))
                conn.execute(sa.delete(CQ).where(CQ.c.CQ_DATABASE == db, CQ.c.CQ_TABLE == table))
            if self.aux:
                conn.execute(sa.delete(AUX).where(AUX.c.MT_KEY1.in_(self.aux)))


def checksums(engine: Engine) -> dict[str, str]:
    """A digest of every row of every table, per table."""
    meta = sa.MetaData()
    meta.reflect(engine)
    out = {}
    with engine.connect() as conn:
        for name, table in meta.tables.items():
            rows = sorted(repr(tuple(r)) for r in conn.execute(sa.select(table)))
            out[name] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    """The tables whose rows differ."""
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
