"""The Cleaner's metastore queries beyond the compaction queue: who holds the history level below a watermark
(HIVE_ACID_SPEC.md §6.1). Aborted-write cleanup rows live with the queue (``CompactionQueue.ready_to_clean_aborts``,
``abort_cleanup_failed``, ``mark_aborts_cleaned``)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database
from airflow_acid.metastore.schema import MIN_HISTORY_LEVEL


class CleaningStore:
    """Reads the Cleaner needs beyond the compaction queue (which has its own store)."""

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
