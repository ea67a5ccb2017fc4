"""Helpers of the shadow and takeover tests: Hive-shaped queue/history rows planted as Hive's compactor writes them,
and row checksums of every table of a metastore database."""

from __future__ import annotations

import hashlib

import sqlalchemy as sa

DECISION_TABLES = frozenset({"ACID_INITIATOR_DECISIONS", "ACID_INITIATOR_DECISION_LOG"})
"""airflow-acid's own tables a shadow cycle writes (the latest decisions and the per-cycle log)."""
HIVE_INITIATOR = "hms1.example-42"
"""An initiator id as Hive's Initiator writes it (<host>-<thread id>)."""


def plant_hive_row(engine: sa.Engine, *, queue: bool, cid: int, table: str, state: str, type_code: str = "a",
                   enqueued_ms: int, partition: str | None = None, db: str = "default", message: str | None = None,
                   initiator_id: str = HIVE_INITIATOR) -> None:
    """One COMPACTION_QUEUE (``queue``) or COMPLETED_COMPACTIONS row as Hive 4's compactor leaves it."""
    p = "CQ" if queue else "CC"
    name = "COMPACTION_QUEUE" if queue else "COMPLETED_COMPACTIONS"
    values = {f"{p}_ID": cid, f"{p}_DATABASE": db, f"{p}_TABLE": table, f"{p}_PARTITION": partition,
              f"{p}_STATE": state, f"{p}_TYPE": type_code, f"{p}_ENQUEUE_TIME": enqueued_ms,
              f"{p}_INITIATOR_ID": initiator_id, f"{p}_INITIATOR_VERSION": "4.2.0", f"{p}_ERROR_MESSAGE": message,
              f"{p}_RUN_AS": "hive"}
    if not queue:
        values["CC_END"] = enqueued_ms + 1000
    with engine.begin() as conn:
        conn.execute(sa.table(name, *[sa.column(k) for k in values]).insert().values(values))


def row_checksums(engine: sa.Engine, exclude: set[str] = frozenset()) -> dict[str, str]:
    """A checksum of the rows of every table (order-independent), by table name (upper case)."""
    meta = sa.MetaData()
    meta.reflect(engine)
    out = {}
    with engine.connect() as conn:
        for name, table in meta.tables.items():
            if name.upper() in exclude:
                continue
            rows = sorted(repr(tuple(r)) for r in conn.execute(sa.select(table)))
            out[name.upper()] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return out
