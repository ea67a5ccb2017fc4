"""Transactional records of dropped tables and partitions (Hive's TxnHandler.cleanupRecords).

Dropping a table or partition removes its rows from the transaction and compaction tables (and the Initiator's
last decisions and shadow decision log, which the shadow report would otherwise compare with no Hive rows), so a
new table with the same name starts from write id 1 and the Initiator never sees writes of the old one.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.metastore.schema import (
    ACID_INITIATOR_DECISION_LOG,
    ACID_INITIATOR_DECISIONS,
    COMPACTION_QUEUE,
    COMPLETED_COMPACTIONS,
    COMPLETED_TXN_COMPONENTS,
    NEXT_WRITE_ID,
    TXN_COMPONENTS,
    TXN_TO_WRITE_ID,
    WRITE_SET,
)

# (table, database column, table column, partition column or None)
_ENTITY_TABLES = (
    (TXN_COMPONENTS, "TC_DATABASE", "TC_TABLE", "TC_PARTITION"),
    (COMPLETED_TXN_COMPONENTS, "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION"),
    (COMPACTION_QUEUE, "CQ_DATABASE", "CQ_TABLE", "CQ_PARTITION"),
    (COMPLETED_COMPACTIONS, "CC_DATABASE", "CC_TABLE", "CC_PARTITION"),
    (WRITE_SET, "WS_DATABASE", "WS_TABLE", "WS_PARTITION"),
    (ACID_INITIATOR_DECISIONS, "AID_DATABASE", "AID_TABLE", "AID_PARTITION"),
    (ACID_INITIATOR_DECISION_LOG, "ADL_DATABASE", "ADL_TABLE", "ADL_PARTITION"),
    (TXN_TO_WRITE_ID, "T2W_DATABASE", "T2W_TABLE", None),
    (NEXT_WRITE_ID, "NWI_DATABASE", "NWI_TABLE", None),
)


def delete_txn_records(conn: Connection, database: str, table: str | None = None,
                       partition: str | None = None) -> None:
    """Delete every transactional record of a database, a table, or one partition of a table."""
    for tbl, db_col, table_col, part_col in _ENTITY_TABLES:
        if partition is not None and part_col is None:
            continue  # write ids belong to the table, not to a partition
        cond = tbl.c[db_col] == database
        if table is not None:
            cond = sa.and_(cond, tbl.c[table_col] == table)
        if partition is not None and part_col is not None:
            cond = sa.and_(cond, tbl.c[part_col] == partition)
        conn.execute(sa.delete(tbl).where(cond))
