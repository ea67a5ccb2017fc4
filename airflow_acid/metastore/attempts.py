"""The running attempt of a 'working' compaction, read from Hive's own columns, and taking it over.

A queue row in 'working' names its worker (CQ_WORKER_ID), its compactor transaction C (CQ_TXN_ID) and its job
(CQ_HADOOP_JOB_ID: the Spark application id once the application started). C's TXN_LAST_HEARTBEAT is the attempt's
heartbeat: the worker heartbeats C for the whole run. A worker that died leaves the row 'working' with a heartbeat
that stops; a retried compaction task uses :meth:`CompactionAttempts.running` to see that, and
:meth:`CompactionAttempts.adopt` to take the row over (one guarded statement: only from the worker and C it saw)
instead of starting a second job on the same row.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.schema import COMPACTION_QUEUE, TXNS

CQ = COMPACTION_QUEUE


@dataclass(frozen=True)
class RunningAttempt:
    """A 'working' row as the metastore sees it now."""

    cq_id: int
    worker_id: str | None
    txn_id: int | None
    """C, or None while the worker had not recorded it yet (no job can have started)."""
    job_id: str | None
    """CQ_HADOOP_JOB_ID: the Spark application id once it started (the job name before)."""
    txn_state: TxnState | None
    """C's state in TXNS (None without C, or when its row is gone)."""
    idle_ms: int
    """Milliseconds since C's last heartbeat — or, without C, since the row was claimed (CQ_START)."""


class CompactionAttempts:
    """Reads and takes over the running attempt of 'working' queue rows."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def running(self, cq_id: int) -> RunningAttempt | None:
        """The attempt of row ``cq_id`` while it is 'working'; None once it left that state (or the queue)."""

        def work(conn: Connection) -> RunningAttempt | None:
            row = conn.execute(
                sa.select(CQ.c.CQ_WORKER_ID, CQ.c.CQ_TXN_ID, CQ.c.CQ_HADOOP_JOB_ID, CQ.c.CQ_START,
                          TXNS.c.TXN_STATE, TXNS.c.TXN_LAST_HEARTBEAT)
                .select_from(CQ.outerjoin(TXNS, TXNS.c.TXN_ID == CQ.c.CQ_TXN_ID))
                .where(CQ.c.CQ_ID == cq_id, CQ.c.CQ_STATE == CompactionState.WORKING.value)).first()
            if row is None:
                return None
            now = now_ms(conn)
            since = row.TXN_LAST_HEARTBEAT if row.CQ_TXN_ID is not None else row.CQ_START
            return RunningAttempt(
                cq_id=cq_id, worker_id=row.CQ_WORKER_ID,
                txn_id=None if row.CQ_TXN_ID is None else int(row.CQ_TXN_ID), job_id=row.CQ_HADOOP_JOB_ID,
                txn_state=None if row.TXN_STATE is None else TxnState(row.TXN_STATE),
                idle_ms=max(0, now - int(since)) if since is not None else now)

        return self.db.run(work, what=f"read the running attempt of compaction {cq_id}")

    def adopt(self, attempt: RunningAttempt, worker_id: str) -> bool:
        """Make ``worker_id`` the worker of ``attempt``'s row if it is still that attempt (same state, worker and
        C); False when it changed meanwhile (finished, revoked, or taken over by someone else)."""

        def work(conn: Connection) -> bool:
            txn = CQ.c.CQ_TXN_ID.is_(None) if attempt.txn_id is None else CQ.c.CQ_TXN_ID == attempt.txn_id
            owner = (CQ.c.CQ_WORKER_ID.is_(None) if attempt.worker_id is None
                     else CQ.c.CQ_WORKER_ID == attempt.worker_id)
            return conn.execute(
                sa.update(CQ).where(CQ.c.CQ_ID == attempt.cq_id, CQ.c.CQ_STATE == CompactionState.WORKING.value,
                                    txn, owner)
                .values(CQ_WORKER_ID=worker_id[:128])).rowcount == 1

        def recover(conn: Connection, since_ms: int) -> bool | None:  # a lost reply of an applied update
            owner = conn.execute(sa.select(CQ.c.CQ_WORKER_ID).where(
                CQ.c.CQ_ID == attempt.cq_id, CQ.c.CQ_STATE == CompactionState.WORKING.value)).scalar()
            return True if owner == worker_id[:128] else None

        return self.db.run(work, what=f"take over compaction {attempt.cq_id}", recover=recover,
                           recover_needs_clock=False)

    def working_rows_of(self, worker_ids: list[str]) -> list[int]:
        """Ids of the 'working' rows claimed by any of ``worker_ids`` (a task's earlier tries)."""
        if not worker_ids:
            return []

        def work(conn: Connection) -> list[int]:
            return [int(i) for i in conn.execute(
                sa.select(CQ.c.CQ_ID).where(CQ.c.CQ_STATE == CompactionState.WORKING.value,
                                            CQ.c.CQ_WORKER_ID.in_([w[:128] for w in worker_ids]))
                .order_by(CQ.c.CQ_ID)).scalars()]

        return self.db.run(work, what="find the working compactions of earlier tries")


__all__ = ["CompactionAttempts", "RunningAttempt"]
