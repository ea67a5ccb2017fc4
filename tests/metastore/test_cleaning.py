"""The Cleaner's metastore queries and the abort groups the Initiator and the Cleaner share."""

from __future__ import annotations

import sqlalchemy as sa

from airflow_acid.acid.codes import OperationType
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.schema import MIN_HISTORY_LEVEL, TXN_COMPONENTS

WHO = {"user": "etl", "host": "node1"}


def _component(ms: Metastore, txn: int, partition: str | None, write_id: int | None,
               op: OperationType = OperationType.INSERT) -> None:
    ms.db.run(lambda c: c.execute(sa.insert(TXN_COMPONENTS).values(
        TC_TXNID=txn, TC_DATABASE="db", TC_TABLE="t", TC_PARTITION=partition, TC_OPERATION_TYPE=op.value,
        TC_WRITEID=write_id)))


def _components(ms: Metastore) -> list[tuple]:
    tc = TXN_COMPONENTS
    return ms.db.run(lambda c: [tuple(r) for r in c.execute(
        sa.select(tc.c.TC_TXNID, tc.c.TC_PARTITION, tc.c.TC_WRITEID, tc.c.TC_OPERATION_TYPE)
        .order_by(tc.c.TC_TXNID, tc.c.TC_WRITEID))])


def test_abort_groups_count_component_rows_as_hive_does(db):
    """Hive's COUNT(*) over TXNS ⋈ TXN_COMPONENTS: one aborted txn with two rows for a partition counts twice."""
    ms = Metastore(db)
    first, second = ms.txns.open_txn(**WHO), ms.txns.open_txn(**WHO)
    _component(ms, first, "p=1", 1)
    _component(ms, first, "p=1", 2)
    _component(ms, second, "p=2", 3)
    ms.txns.abort(first)
    ms.txns.abort(second)

    groups = {g.partition: g.count for g in ms.initiator.abort_groups(1, -1)}
    assert groups == {"p=1": 2}
    assert [(c.partition, c.aborted_txns) for c in ms.compactions.ready_to_clean_aborts(1, -1)] == [("p=1", 2)]
    assert {g.partition: g.count for g in ms.initiator.abort_groups(-1, -1)} == {"p=1": 2, "p=2": 1}


def test_min_history_holders_below_a_limit(db):
    ms = Metastore(db)
    ms.db.run(lambda c: c.execute(sa.insert(MIN_HISTORY_LEVEL), [
        {"MHL_TXNID": 7, "MHL_MIN_OPEN_TXNID": 3}, {"MHL_TXNID": 5, "MHL_MIN_OPEN_TXNID": 4},
        {"MHL_TXNID": 9, "MHL_MIN_OPEN_TXNID": 8}]))
    assert ms.cleaning.min_history_holders(8) == [5, 7]
    assert ms.cleaning.min_history_holders(3) == []


def test_mark_aborts_cleaned_keeps_rows_above_the_cleaned_range(db):
    ms = Metastore(db)
    txns = [ms.txns.open_txn(**WHO) for _ in range(3)]
    _component(ms, txns[0], "p=1", 1)
    _component(ms, txns[1], "p=1", 4)                         # above max_write_id: its directory may remain
    _component(ms, txns[2], "p=1", None, OperationType.COMPACT)  # an aborted compaction whose output is gone
    _component(ms, txns[0], "p=2", 1)                         # another partition
    for t in txns:
        ms.txns.abort(t)

    removed = ms.compactions.mark_aborts_cleaned("db", "t", "p=1", aborted_txns=txns, max_write_id=3,
                                                 exact_write_ids=None, compactor_txns=[txns[2]])
    assert removed == 2
    assert _components(ms) == [(txns[0], "p=2", 1, "i"), (txns[1], "p=1", 4, "i")]
    assert ms.compactions.mark_aborts_cleaned("db", "t", "p=1", aborted_txns=[txns[1]], max_write_id=9,
                                              exact_write_ids=[5], compactor_txns=[]) == 0
