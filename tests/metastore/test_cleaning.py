"""The Cleaner's side of the metastore (compactions ready to clean, their bookkeeping and retry back-off, aborted-write
cleanup, history level holders) and the abort groups the Initiator and the Cleaner share."""

from __future__ import annotations

import time

import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionState, CompactionType, OperationType, TxnType
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.cleaning import CleaningStore
from airflow_acid.metastore.compactions import CompactionQueue
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.schema import MIN_HISTORY_LEVEL, TXN_COMPONENTS
from tests.metastore.queue_support import WHO, compact_through, update_queue_row

MAJOR = CompactionType.MAJOR


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
    assert [(c.partition, c.aborted_txns) for c in ms.cleaning.ready_to_clean_aborts(1, -1)] == [("p=1", 2)]
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

    removed = ms.cleaning.mark_aborts_cleaned("db", "t", "p=1", aborted_txns=txns, max_write_id=3,
                                                 exact_write_ids=None, compactor_txns=[txns[2]])
    assert removed == 2
    assert _components(ms) == [(txns[0], "p=2", 1, "i"), (txns[1], "p=1", 4, "i")]
    assert ms.cleaning.mark_aborts_cleaned("db", "t", "p=1", aborted_txns=[txns[1]], max_write_id=9,
                                              exact_write_ids=[5], compactor_txns=[]) == 0


def test_mark_cleaned_with_uncompacted_aborts_removes_exactly_those_write_ids(db, queue, cleaning, txns):
    aborted = []
    for _ in range(3):
        t = txns.open_txn(**WHO)
        txns.add_write_components(t, "d", "t", None, OperationType.INSERT)
        txns.abort(t)
        aborted.append(t)
    cq_id = compact_through(queue, txns, "d", "t", None, 3)
    cleaning.mark_cleaned(cq_id, aborted_write_ids=[2])
    left = db.run(lambda c: sorted(c.execute(sa.select(TXN_COMPONENTS.c.TC_WRITEID)).scalars().all()))
    assert left == [1, 3]


def test_mark_cleaned_keeps_the_record_of_a_later_aborted_compaction(db, queue, cleaning, txns):
    """An aborted compactor txn above the cleaned row's CQ_NEXT_TXN_ID keeps its 'c' component: it is the only
    record that its _vC output is aborted (its directory was not deleted by this cleaning)."""
    writer = txns.open_txn(**WHO)
    txns.add_write_components(writer, "d", "t", None, OperationType.INSERT)
    txns.abort(writer)
    cq_id = compact_through(queue, txns, "d", "t", None, 1)
    late = txns.open_txn(**WHO, txn_type=TxnType.COMPACTION)
    txns.add_write_components(late, "d", "t", None, OperationType.COMPACT, write_id=1)
    txns.abort(late)
    cleaning.mark_cleaned(cq_id)
    left = db.run(lambda c: c.execute(sa.select(TXN_COMPONENTS.c.TC_TXNID, TXN_COMPONENTS.c.TC_OPERATION_TYPE)).all())
    assert [tuple(r) for r in left] == [(late, "c")]


def test_ready_to_clean_watermark_retention_and_lowest_hwm(db, queue, cleaning, txns):
    txns.commit(txns.open_txn(**WHO))  # so compaction txn ids start above 1 (a watermark of 0 disables the check)
    first = compact_through(queue, txns, "d", "t", "ds=1", 5)
    update_queue_row(db, first, CQ_STATE="r")
    second = queue.enqueue("d", "t", "ds=1", MAJOR, highest_write_id_now=7)
    assert second.accepted
    queue.claim_next("n-1")
    queue.set_running(second.id, txns.open_txn(**WHO, txn_type=TxnType.COMPACTION), 7)
    queue.mark_compacted(second.id)
    other = compact_through(queue, txns, "d", "t", "ds=2", 3)
    next_txn = queue.get(first).next_txn_id
    update_queue_row(db, second.id, CQ_NEXT_TXN_ID=next_txn, CQ_COMMIT_TIME=1)
    time.sleep(0.002)  # a row qualifies once its commit time is strictly in the past (milliseconds)
    # only the lowest highest-write-id row per partition (HIVE-25115)
    assert [i.id for i in cleaning.ready_to_clean(10 ** 9)] == [first, other]
    # the watermark: a row whose CQ_NEXT_TXN_ID is above the min open txn waits
    assert [i.id for i in cleaning.ready_to_clean(next_txn - 1)] == []
    # retention: just-committed rows wait for the delay (the lowest HWM is taken among rows past their delay)
    assert [i.id for i in cleaning.ready_to_clean(10 ** 9, retention_ms=3_600_000)] == [second.id]
    # the cleaner retry delay adds to the retention
    update_queue_row(db, other, CQ_RETRY_RETENTION=10 ** 12)
    assert [i.id for i in cleaning.ready_to_clean(10 ** 9)] == [first]
    # abort-cleanup rows are never returned here
    update_queue_row(db, first, CQ_TYPE="c")
    assert [i.id for i in cleaning.ready_to_clean(10 ** 9)] == [second.id]


def test_cleaner_retry_backoff_then_failed(db, txns):
    conf = MetastoreConf(cleaner_retry_retention_s=1.0, cleaner_retry_max_attempts=3)
    queue, cleaning = CompactionQueue(db, conf), CleaningStore(db, conf)
    cq_id = compact_through(queue, txns, "d", "t", None, 1)
    delays = [cleaning.cleaner_attempt_failed(cq_id, f"attempt {n}").retry_retention for n in range(3)]
    assert delays == [1000, 2000, 4000]
    assert queue.get(cq_id).error_message == "attempt 2"
    assert cleaning.cleaner_attempt_failed(cq_id, "gave up") is None
    failed = queue.get(cq_id)
    assert (failed.state, failed.error_message) == (CompactionState.FAILED, "gave up")
