"""The Cleaner's metastore queries: who holds the history level below a watermark, and which aborted-write
components a cleaning made unnecessary (HIVE_ACID_SPEC.md §6.1, §6.5)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import OperationType
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database
from airflow_acid.metastore.schema import MIN_HISTORY_LEVEL, TXN_COMPONENTS

_CHUNK = 500
"""Transaction ids per IN (…) list: well below every backend's bound-parameter limit."""


class CleaningStore:
    """Reads and deletes the Cleaner needs beyond the compaction queue (which has its own store)."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def min_history_holders(self, limit: int) -> list[int]:
        """Transactions whose MIN_HISTORY_LEVEL row pins a minimum open txn below ``limit`` (they may still read
        files a compaction committed before ``limit`` made obsolete)."""
        mhl = MIN_HISTORY_LEVEL

        def work(conn: Connection) -> list[int]:
            return [int(t) for t in conn.execute(
                sa.select(mhl.c.MHL_TXNID).where(mhl.c.MHL_MIN_OPEN_TXNID < limit).order_by(mhl.c.MHL_TXNID)
            ).scalars()]

        return self.db.run(work, what="min history level holders")

    def remove_aborted_components(self, db: str, table: str, partition: str | None, aborted: Sequence[int], *,
                                  max_write_id: int, exact_write_ids: Sequence[int] | None,
                                  compactor_txns: Sequence[int]) -> int:
        """Delete the TXN_COMPONENTS rows of the ``aborted`` txns for this entity that a cleaning made
        unnecessary: write rows with write id ≤ ``max_write_id`` (or exactly ``exact_write_ids``), and the 'c'
        rows of the aborted compactions in ``compactor_txns`` whose output is gone. Returns the rows deleted."""
        if not aborted:
            return 0
        tc = TXN_COMPONENTS
        entity = [tc.c.TC_DATABASE == db, tc.c.TC_TABLE == table,
                  tc.c.TC_PARTITION.is_(None) if partition is None else tc.c.TC_PARTITION == partition]
        writes = (tc.c.TC_WRITEID.in_(list(exact_write_ids)) if exact_write_ids is not None
                  else tc.c.TC_WRITEID <= max_write_id)
        compactions = set(compactor_txns)

        def work(conn: Connection) -> int:
            removed = 0
            for start in range(0, len(aborted), _CHUNK):
                chunk = list(aborted[start:start + _CHUNK])
                removed += conn.execute(sa.delete(tc).where(
                    *entity, tc.c.TC_TXNID.in_(chunk), tc.c.TC_OPERATION_TYPE != OperationType.COMPACT.value,
                    writes)).rowcount
                gone = [t for t in chunk if t in compactions]
                if gone:
                    removed += conn.execute(sa.delete(tc).where(
                        *entity, tc.c.TC_TXNID.in_(gone),
                        tc.c.TC_OPERATION_TYPE == OperationType.COMPACT.value)).rowcount
            return removed

        return self.db.run(work, what=f"remove aborted components of {db}.{table}")
