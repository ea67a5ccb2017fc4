"""Create (or upgrade) the metastore schema on a database and seed Hive's single-row id tables."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.metastore.db import Database
from airflow_acid.metastore.schema import (
    NEXT_COMPACTION_QUEUE_ID,
    NEXT_LOCK_ID,
    TXN_LOCK_TBL,
    metadata,
)


def seed(conn: Connection) -> None:
    """Insert the single-row tables Hive creates at install time, if missing (idempotent)."""
    for table, column in ((NEXT_LOCK_ID, "NL_NEXT"), (NEXT_COMPACTION_QUEUE_ID, "NCQ_NEXT"), (TXN_LOCK_TBL, "TXN_LOCK")):
        if conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 0:
            conn.execute(sa.insert(table).values({column: 1}))


def init_schema(db: Database) -> None:
    """Bring an empty or older database to the current schema. Safe to call repeatedly."""
    metadata.create_all(db.engine)
    db.run(seed, what="seed metastore")
