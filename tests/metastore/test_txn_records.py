"""Dropping a table/partition/database removes its transactional records (Hive's cleanupRecords)."""

from __future__ import annotations

import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionType, OperationType
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.schema import (
    ACID_INITIATOR_DECISION_LOG,
    ACID_INITIATOR_DECISIONS,
    COMPACTION_QUEUE,
    COMPLETED_TXN_COMPONENTS,
    NEXT_WRITE_ID,
    TXN_TO_WRITE_ID,
)


def _count(ms, table, **where):
    cond = [table.c[k] == v for k, v in where.items()]
    return ms.db.run(lambda c: c.execute(sa.select(sa.func.count()).select_from(table).where(*cond)).scalar_one())


def _write(ms, table, partition=None):
    txn = ms.txns.open_txn(user="u", host="h")
    ms.txns.add_write_components(txn, "d", table, [partition], OperationType.INSERT)
    ms.txns.commit(txn)


def test_drop_table_forgets_write_ids_and_compactions(db, tmp_path):
    ms = Metastore(db)
    ms.catalog.create_database("d", str(tmp_path / "d.db"))
    for name in ("t", "keep"):
        ms.catalog.create_table("d", name, [("a", "int")])
    for _ in range(3):
        _write(ms, "t")
    _write(ms, "keep")
    assert ms.compactions.enqueue("d", "t", None, CompactionType.MAJOR).accepted

    ms.db.run(lambda c: c.execute(sa.insert(ACID_INITIATOR_DECISIONS).values(
        AID_DATABASE="d", AID_TABLE="t", AID_DECIDED_AT=1, AID_OUTCOME="n", AID_REASON="below thresholds")))
    ms.db.run(lambda c: c.execute(sa.insert(ACID_INITIATOR_DECISION_LOG).values(
        ADL_DATABASE="d", ADL_TABLE="t", ADL_DECIDED_AT=1, ADL_OUTCOME="w", ADL_REASON="11 deltas")))
    ms.catalog.drop_table("d", "t")
    for table, db_col, tbl_col in ((COMPLETED_TXN_COMPONENTS, "CTC_DATABASE", "CTC_TABLE"),
                                   (COMPACTION_QUEUE, "CQ_DATABASE", "CQ_TABLE"),
                                   (TXN_TO_WRITE_ID, "T2W_DATABASE", "T2W_TABLE"),
                                   (NEXT_WRITE_ID, "NWI_DATABASE", "NWI_TABLE"),
                                   (ACID_INITIATOR_DECISIONS, "AID_DATABASE", "AID_TABLE"),
                                   (ACID_INITIATOR_DECISION_LOG, "ADL_DATABASE", "ADL_TABLE")):
        assert _count(ms, table, **{db_col: "d", tbl_col: "t"}) == 0, table.name
    assert _count(ms, COMPLETED_TXN_COMPONENTS, CTC_DATABASE="d", CTC_TABLE="keep") == 1

    ms.catalog.create_table("d", "t", [("a", "int")])
    txn = ms.txns.open_txn(user="u", host="h")
    assert ms.txns.allocate_write_id(txn, "d", "t") == 1


def test_drop_partition_and_database(db, tmp_path):
    ms = Metastore(db)
    ms.catalog.create_database("d", str(tmp_path / "d.db"))
    ms.catalog.create_table("d", "p", [("a", "int")], partition_keys=[("ds", "string")])
    for ds in ("1", "2"):
        ms.catalog.add_partition("d", "p", {"ds": ds})
        _write(ms, "p", f"ds={ds}")
    ms.catalog.drop_partition("d", "p", {"ds": "1"})
    assert _count(ms, COMPLETED_TXN_COMPONENTS, CTC_PARTITION="ds=1") == 0
    assert _count(ms, COMPLETED_TXN_COMPONENTS, CTC_PARTITION="ds=2") == 1
    assert _count(ms, NEXT_WRITE_ID, NWI_TABLE="p") == 1  # write ids belong to the table
    ms.catalog.drop_database("d", cascade=True)
    assert _count(ms, COMPLETED_TXN_COMPONENTS, CTC_DATABASE="d") == 0
    assert _count(ms, NEXT_WRITE_ID, NWI_DATABASE="d") == 0
