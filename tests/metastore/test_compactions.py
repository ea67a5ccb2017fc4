"""The compaction queue: enqueue/refusal rules, the state machine from enqueue to cleaned, SHOW COMPACTIONS, ABORT
COMPACTIONS, history purge, and concurrent claims from several processes. The Cleaner's side is tested in
test_cleaning.py, the Initiator's lookups in test_initiator_store.py."""

from __future__ import annotations

import multiprocessing

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid.codes import CompactionState, CompactionType, OperationType, TxnType
from airflow_acid.metastore.compactions import (
    CompactionQueue,
    EnqueueRequest,
    ShowCompactionsRow,
    decode_properties,
    encode_properties,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database
from airflow_acid.metastore.errors import InvalidInputError, NoSuchObjectError
from airflow_acid.metastore.schema import (
    COMPACTION_QUEUE,
    COMPLETED_COMPACTIONS,
    COMPLETED_TXN_COMPONENTS,
    TXN_COMPONENTS,
)
from airflow_acid.metastore.snapshots import Snapshots
from tests.metastore.lost_reply import drop_the_reply_of_the_next_commit
from tests.metastore.queue_support import WHO, history_rows, queue_ids, update_queue_row

MAJOR, MINOR = CompactionType.MAJOR, CompactionType.MINOR


def test_mark_compacted_with_a_txn_moves_only_the_attempt_that_owns_the_row(queue, txns):
    """A worker whose row was revoked and re-claimed (another compactor txn recorded) must not mark it compacted."""
    result = queue.enqueue("db", "t", None, MAJOR, highest_write_id_now=-1)
    queue.claim_next("node1-1")
    first = txns.open_txn(**WHO, txn_type=TxnType.COMPACTION)
    queue.set_running(result.id, first, 5)
    second = txns.open_txn(**WHO, txn_type=TxnType.COMPACTION)
    update_queue_row(queue.db, result.id, CQ_TXN_ID=second)  # revoked and re-claimed by another attempt

    assert not queue.mark_compacted(result.id, txn_id=first)
    assert queue.get(result.id).state is CompactionState.WORKING
    assert queue.mark_compacted(result.id, txn_id=second)
    row = queue.get(result.id)
    assert row.state is CompactionState.READY_FOR_CLEANING and row.worker_id is None
    assert not queue.mark_compacted(result.id, txn_id=second)  # no longer 'working'


def test_enqueue_hands_out_ids_and_refuses_what_is_already_scheduled(queue):
    first = queue.enqueue("D", "T", "ds=1", MAJOR, pool="p1", properties={"compactor.x": "1"},
                          initiator_id="host-7", initiator_version="4.0", highest_write_id_now=3)
    assert first.accepted and first.id >= 1 and first.state is CompactionState.INITIATED
    again = queue.enqueue("d", "t", "ds=1", MINOR, highest_write_id_now=3)
    assert (again.id, again.state) == (-1, CompactionState.REFUSED)
    assert again.message == f"Compaction is already scheduled with state='initiated' and id={first.id}"
    other = queue.enqueue("d", "t", "ds=2", MINOR, highest_write_id_now=3)
    assert other.accepted and other.id == first.id + 1
    # a request without a partition is refused while any partition of the table is queued (docs/hive-acid.md#enqueue)
    assert not queue.enqueue("d", "t", None, MAJOR, highest_write_id_now=3).accepted
    assert queue.enqueue("d", "other", None, MAJOR, highest_write_id_now=3).accepted
    queue.claim_next("node1-1", pool="p1")
    refused = queue.enqueue("d", "t", "ds=1", MAJOR, highest_write_id_now=3)
    assert refused.message == f"Compaction is already scheduled with state='working' and id={first.id}"
    info = queue.get(first.id)
    assert (info.database, info.table, info.properties, info.pool_name, info.initiator_id) == (
        "d", "t", {"compactor.x": "1"}, "p1", "host-7")
    with pytest.raises(InvalidInputError):
        queue.enqueue("d", "t", None, CompactionType.ABORT_TXN_CLEANUP)


def test_ready_for_cleaning_row_refuses_only_when_nothing_new_was_written(db, queue, txns):
    """HIVE-26107: a row in 'ready for cleaning' blocks a new request only if the table's compactor high
    watermark has not moved since (here computed from the real write ids)."""
    def write() -> int:
        txn = txns.open_txn(**WHO)
        write_id = txns.allocate_write_id(txn, "d", "t")
        txns.commit(txn)
        return write_id

    hwm = max(write() for _ in range(3))
    first = queue.enqueue("d", "t")
    queue.claim_next("node1-1")
    compactor = txns.open_txn(**WHO, txn_type=TxnType.COMPACTION)
    queue.set_running(first.id, compactor, hwm)
    queue.mark_compacted(first.id)
    refused = queue.enqueue("d", "t")
    assert refused.message == f"Compaction is already scheduled with state='ready for cleaning' and id={first.id}"
    write()
    assert queue.enqueue("d", "t").accepted


def test_claim_set_running_commit_compacted_cleaned(db, queue, cleaning, txns, conf):
    # committed writes to two partitions; aborted writes below and above the compacted HWM
    for _ in range(3):
        t = txns.open_txn(**WHO)
        w = txns.allocate_write_id(t, "d", "t")
        txns.add_write_components(t, "d", "t", ["ds=1"], OperationType.INSERT, w)
        txns.commit(t)
    low_abort = txns.open_txn(**WHO)
    txns.add_write_components(low_abort, "d", "t", ["ds=1"], OperationType.INSERT)  # write id 4
    txns.abort(low_abort)
    enq = queue.enqueue("d", "t", "ds=1", MINOR, pool=None, highest_write_id_now=4)
    claimed = queue.claim_next("node1-42", worker_version="0.1")
    assert (claimed.id, claimed.state, claimed.worker_id, claimed.worker_version) == (
        enq.id, CompactionState.WORKING, "node1-42", "0.1")
    assert claimed.start is not None and queue.claim_next("node1-43") is None
    reader = txns.open_txn(**WHO, txn_type=TxnType.READ_ONLY)  # open while C runs: it blocks cleaning
    compactor = txns.open_txn(**WHO, txn_type=TxnType.COMPACTION)
    running = queue.set_running(enq.id, compactor, 4, run_as="hive", hadoop_job_id="app-1")
    assert (running.txn_id, running.highest_write_id, running.run_as, running.hadoop_job_id) == (
        compactor, 4, "hive", "app-1")
    comps = db.run(lambda c: c.execute(sa.select(TXN_COMPONENTS).where(TXN_COMPONENTS.c.TC_TXNID == compactor)).all())
    assert [(r.TC_DATABASE, r.TC_TABLE, r.TC_PARTITION, r.TC_OPERATION_TYPE, r.TC_WRITEID) for r in comps] == [
        ("d", "t", "ds=1", "c", 4)]
    high_abort = txns.open_txn(**WHO)
    txns.add_write_components(high_abort, "d", "t", ["ds=1"], OperationType.INSERT)  # write id 5, above the HWM
    txns.abort(high_abort)
    later = txns.open_txn(**WHO)
    txns.add_write_components(later, "d", "t", ["ds=1"], OperationType.INSERT)
    txns.commit(later)
    queue.mark_compacted(enq.id)
    txns.commit(compactor)
    row = queue.get(enq.id)
    assert row.state is CompactionState.READY_FOR_CLEANING and row.worker_id is None
    assert row.next_txn_id is not None and row.commit_time is not None
    snapshots = Snapshots(db, conf)
    assert cleaning.ready_to_clean(snapshots.min_open_txn_id()) == []
    txns.commit(reader)
    assert [i.id for i in cleaning.ready_to_clean(snapshots.min_open_txn_id())] == [enq.id]
    cleaning.mark_cleaner_start(enq.id)
    assert queue.get(enq.id).cleaner_start > 0
    cleaning.mark_cleaned(enq.id)
    assert queue_ids(db) == []
    (history,) = history_rows(db)
    assert (history.CC_ID, history.CC_STATE, history.CC_HIGHEST_WRITE_ID, history.CC_WORKER_VERSION) == (
        enq.id, "s", 4, "0.1")
    assert history.CC_END >= history.CC_START
    ctc = db.run(lambda c: c.execute(sa.select(COMPLETED_TXN_COMPONENTS.c.CTC_WRITEID)).scalars().all())
    assert sorted(ctc) == [6]  # write ids 1-3 covered by the compaction, 6 came after
    left = db.run(lambda c: c.execute(sa.select(TXN_COMPONENTS.c.TC_TXNID)).scalars().all())
    assert left == [high_abort]  # aborted write 4 cleaned, aborted write 5 above the HWM kept


def test_failed_refused_did_not_initiate_and_wrong_states(db, queue):
    a = queue.enqueue("d", "t", "ds=1", highest_write_id_now=0)
    b = queue.enqueue("d", "t", "ds=2", highest_write_id_now=0)
    with pytest.raises(InvalidInputError, match="it is 'initiated', not 'working'"):
        queue.mark_compacted(a.id)
    queue.claim_next("node1-1")
    assert queue.mark_failed(a.id, "Spark job app-7 failed: OOM") == a.id
    assert queue.mark_refused(b.id) == b.id
    dni = queue.mark_failed(0, "could not list the directory", db="d", table="t", partition="ds=3")
    assert dni > b.id
    rows = {r.CC_ID: r for r in history_rows(db)}
    assert (rows[a.id].CC_STATE, rows[a.id].CC_ERROR_MESSAGE) == ("f", "Spark job app-7 failed: OOM")
    assert rows[a.id].CC_WORKER_ID == "node1-1"
    assert (rows[b.id].CC_STATE, rows[b.id].CC_ERROR_MESSAGE) == (
        "c", "None of the compaction thresholds met, compaction request is refused!")
    assert (rows[dni].CC_STATE, rows[dni].CC_PARTITION) == ("a", "ds=3")
    assert queue_ids(db) == []
    with pytest.raises(NoSuchObjectError, match="already in the history as 'failed'"):
        queue.mark_failed(a.id, "again")
    with pytest.raises(NoSuchObjectError, match="no such compaction"):
        queue.mark_compacted(12345)
    # ids are never reused: a new request gets a fresh one
    assert queue.enqueue("d", "t", "ds=1", highest_write_id_now=0).id > dni


def test_show_compactions_columns_filters_order_and_limit(db, queue, txns):
    a = queue.enqueue("d", "t", "ds=1", MAJOR, pool="etl", initiator_id="init-host-3", highest_write_id_now=0)
    b = queue.enqueue("d", "t", "ds=2", MINOR, highest_write_id_now=0)
    c = queue.enqueue("d", "u", None, MAJOR, highest_write_id_now=0)
    queue.claim_next("wrk-host-9", pool="etl")
    queue.claim_next("wrk-host-9")
    queue.mark_failed(b.id, "boom")
    rows = queue.show_compactions()
    assert ShowCompactionsRow.hive_columns() == [
        "compactionid", "dbname", "tabname", "partname", "type", "state", "workerhost", "workerid", "enqueuetime",
        "starttime", "duration", "hadoopjobid", "errormessage", "initiatorhost", "initiatorid", "poolname", "txnid",
        "nexttxnid", "committime", "hightestwriteid"]
    assert ShowCompactionsRow.columns()[20:] == [  # airflow-acid's run figures, after Hive's columns
        "filesin", "bytesin", "rowsin", "filesout", "bytesout", "rowsout", "deltasbefore", "deltasafter", "sparkappid",
        "coreseconds", "wallseconds", "digestin", "digestout", "dagid", "runid", "taskid", "mapindex", "trynumber"]
    by_id = {r.compactionid: r for r in rows}
    assert set(by_id) == {a.id, b.id, c.id}
    ra, rb, rc = by_id[a.id], by_id[b.id], by_id[c.id]
    assert (ra.type, ra.state, ra.workerhost, ra.workerid, ra.poolname, ra.initiatorhost, ra.initiatorid) == (
        "MAJOR", "working", "wrk-host", "9", "etl", "init-host", "3")
    assert ra.duration is None and ra.starttime is not None
    assert (rb.type, rb.state, rb.errormessage, rb.poolname) == ("MINOR", "failed", "boom", "default")
    assert rb.duration is not None and rb.duration >= 0
    assert rc.state == "initiated" and rc.as_strings()[3] == "---" and len(rc.as_strings()) == 38
    assert [r.compactionid for r in queue.show_compactions(db="d", table="t")] != []
    assert {r.compactionid for r in queue.show_compactions(table="t")} == {a.id, b.id}
    assert [r.compactionid for r in queue.show_compactions(partition="ds=2")] == [b.id]
    assert [r.compactionid for r in queue.show_compactions(state="failed")] == [b.id]
    assert [r.compactionid for r in queue.show_compactions(type="minor")] == [b.id]
    assert [r.compactionid for r in queue.show_compactions(pool="etl")] == [a.id]
    assert {r.compactionid for r in queue.show_compactions(pool="default")} == {b.id, c.id}
    assert [r.compactionid for r in queue.show_compactions(id=c.id)] == [c.id]
    assert [r.compactionid for r in queue.show_compactions(order_by="compactionid desc")] == [c.id, b.id, a.id]
    assert [r.compactionid for r in queue.show_compactions(order_by="compactionid", limit=2)] == [a.id, b.id]
    # default order: most recent activity (end, start or commit time) first, rows without activity last
    update_queue_row(db, a.id, CQ_START=5)
    assert [r.compactionid for r in queue.show_compactions()] == [b.id, a.id, c.id]
    with pytest.raises(InvalidInputError, match="cannot order SHOW COMPACTIONS by 'bogus'"):
        queue.show_compactions(order_by="bogus")


def test_abort_compactions_only_aborts_initiated(db, queue):
    a = queue.enqueue("d", "t", "ds=1", highest_write_id_now=0)
    b = queue.enqueue("d", "t", "ds=2", highest_write_id_now=0)
    queue.claim_next("node1-1")  # claims a
    results = {r.id: r for r in queue.abort_compactions([a.id, b.id, 999])}
    assert results[b.id].status == "Success"
    assert results[a.id].status == "Error" and "in state-working" in results[a.id].message
    assert results[999].message == "No Such Compaction Id Available"
    assert queue.get(b.id).state is CompactionState.ABORTED
    assert queue.abort_compactions([b.id])[0].message.endswith("state-aborted; only 'initiated' compactions can "
                                                               "be aborted")


def test_claim_next_respects_pools_and_pool_timeout(db, queue, initiator):
    pooled = queue.enqueue("d", "t", "ds=1", pool="big", highest_write_id_now=0)
    plain = queue.enqueue("d", "t", "ds=2", highest_write_id_now=0)
    assert queue.claim_next("w-1", pool="small") is None
    assert queue.claim_next("w-1").id == plain.id
    assert queue.claim_next("w-2") is None  # the pooled row has not waited long enough
    update_queue_row(db, pooled.id, CQ_ENQUEUE_TIME=1)
    assert queue.claim_next("w-4").id == pooled.id  # waited longer than the pool timeout
    initiator.revoke_from_local_workers("w")
    assert queue.claim_next("w-5", pool="big").id == pooled.id


def _history_row(cc_id: int, state: str, type_: str = "a", start: int = 10 ** 13, partition: str | None = "p") -> dict:
    return {"CC_ID": cc_id, "CC_DATABASE": "d", "CC_TABLE": "t", "CC_PARTITION": partition, "CC_STATE": state,
            "CC_TYPE": type_, "CC_START": start, "CC_ENQUEUE_TIME": start, "CC_END": start}


def test_purge_history_retention_counts_and_timeout(db):
    queue = CompactionQueue(db, MetastoreConf(history_retention_succeeded=2, history_retention_failed=1,
                                              failed_compacts_threshold=2, history_retention_did_not_initiate=1,
                                              history_retention_refused=1, history_retention_timeout_s=60))
    old = 1  # far in the past
    rows = [
        # partition p, oldest first
        _history_row(1, "s"), _history_row(2, "s"), _history_row(3, "s"),          # keep newest 2 -> drop 1
        _history_row(4, "f"), _history_row(5, "f"), _history_row(6, "f"),          # keep max(1, threshold 2) -> drop 4
        _history_row(7, "a"), _history_row(8, "a"),                                # keep 1 -> drop 7
        _history_row(9, "c"), _history_row(10, "x"), _history_row(11, "x"),        # aborted rows are never purged
        # partition q: an old failure before a newer succeeded MAJOR times out; an old MINOR failure before a
        # newer succeeded MINOR times out, an old MAJOR failure does not
        _history_row(20, "f", "a", old, "q"), _history_row(21, "s", "a", partition="q"),
        _history_row(30, "f", "i", old, "r"), _history_row(31, "f", "a", old, "r"),
        _history_row(32, "s", "i", partition="r"),
    ]
    db.run(lambda c: c.execute(sa.insert(COMPLETED_COMPACTIONS), rows))
    assert queue.purge_history() == 5
    left = [r.CC_ID for r in history_rows(db)]
    assert left == [2, 3, 5, 6, 8, 9, 10, 11, 21, 31, 32]
    assert queue.purge_history() == 0


@given(st.dictionaries(st.text(min_size=0, max_size=12), st.text(max_size=20), max_size=6))
def test_stringable_map_round_trip(props):
    encoded = encode_properties(props)
    assert decode_properties(encoded) == props
    if props:
        assert encoded.startswith(f"{len(props)}:")


def test_stringable_map_matches_hive_format():
    assert encode_properties({"compactor.mapreduce.map.memory.mb": "2048"}) == \
        "1:33:compactor.mapreduce.map.memory.mb4:2048"


def _claim_all(url: str, worker: str, out) -> None:
    database = Database(url)
    queue = CompactionQueue(database, MetastoreConf())
    got = []
    while (info := queue.claim_next(worker)) is not None:
        got.append(info.id)
    database.dispose()
    out.put((worker, got))


@pytest.mark.slow
def test_two_processes_claiming_from_one_queue_never_get_the_same_row(empty_db_url, db):
    queue = CompactionQueue(db, MetastoreConf())
    ids = [queue.enqueue("d", f"t{i}", highest_write_id_now=0).id for i in range(120)]
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_claim_all, args=(empty_db_url, f"host-{n}", out)) for n in range(3)]
    for p in workers:
        p.start()
    results = dict(out.get(timeout=120) for _ in workers)
    for p in workers:
        p.join(timeout=30)
    claimed = [cq_id for got in results.values() for cq_id in got]
    assert sorted(claimed) == ids  # every row claimed exactly once
    assert len(set(claimed)) == len(claimed)
    owners = {r.compactionid: r.workerhost for r in queue.show_compactions()}
    for worker, got in results.items():
        assert all(owners[cq_id] == "host" for cq_id in got)
        assert all(queue.get(cq_id).worker_id == worker for cq_id in got)


# --- a reply lost after the server applied the change (connection dropped between COMMIT and its answer) --------


def test_enqueue_whose_reply_was_lost_queues_once_and_reports_it_queued(db, queue, monkeypatch):
    dropped = drop_the_reply_of_the_next_commit(db, monkeypatch)
    result = queue.enqueue("db", "t", "ds=1", MINOR, initiator_id="ui", highest_write_id_now=-1)
    assert dropped == [True]
    assert result.accepted and queue_ids(db) == [result.id]  # not refused as "already scheduled" by itself
    again = queue.enqueue("db", "t", "ds=1", MINOR, initiator_id="ui", highest_write_id_now=-1)
    assert not again.accepted and f"id={result.id}" in again.message  # a genuine second request still is


def test_claim_whose_reply_was_lost_returns_that_row_not_a_second_one(db, queue, monkeypatch):
    first = queue.enqueue("db", "t", None, MAJOR, highest_write_id_now=-1).id
    second = queue.enqueue("db", "u", None, MAJOR, highest_write_id_now=-1).id
    dropped = drop_the_reply_of_the_next_commit(db, monkeypatch)
    claimed = queue.claim_next("node1-7")
    assert dropped == [True]
    assert claimed.id == first
    assert queue.get(first).state is CompactionState.WORKING
    assert queue.get(second).state is CompactionState.INITIATED  # not left stuck in 'working' behind our back


def test_claim_by_id_only_while_initiated(db, queue):
    cq = queue.enqueue("db", "t", None, MAJOR, highest_write_id_now=-1).id
    with pytest.raises(InvalidInputError, match="worker id"):
        queue.claim(cq, "")
    got = queue.claim(cq, "node1-1", worker_version="9.9")
    assert (got.id, got.state, got.worker_id) == (cq, CompactionState.WORKING, "node1-1")
    assert queue.claim(cq, "node2-1") is None  # a mapped task handed the same row later
    aborted = queue.enqueue("db", "u", None, MAJOR, highest_write_id_now=-1).id
    queue.abort_compactions([aborted])
    assert queue.claim(aborted, "node1-1") is None
    assert queue.claim(10_000, "node1-1") is None


def test_claim_by_id_whose_reply_was_lost_still_claims_it(db, queue, monkeypatch):
    cq = queue.enqueue("db", "t", None, MAJOR, highest_write_id_now=-1).id
    dropped = drop_the_reply_of_the_next_commit(db, monkeypatch)
    got = queue.claim(cq, "node1-3")
    assert dropped == [True] and got is not None and got.worker_id == "node1-3"


def test_enqueue_many_refuses_as_one_by_one_enqueues_would(db, queue):
    """A batch is one transaction, and each request is refused exactly when enqueue() after the ones before would."""
    queued = queue.enqueue("db", "t", "ds=3", MINOR, highest_write_id_now=1).id
    cleaning = queue.enqueue("db", "t", "ds=4", MAJOR, highest_write_id_now=5).id
    with db.begin() as conn:
        conn.execute(sa.update(COMPACTION_QUEUE).where(COMPACTION_QUEUE.c.CQ_ID == cleaning).values(
            CQ_STATE=CompactionState.READY_FOR_CLEANING.value, CQ_HIGHEST_WRITE_ID=5))
    answers = queue.enqueue_many([
        EnqueueRequest("db", "t", "ds=1", MINOR, 7), EnqueueRequest("DB", "T", "ds=2", MAJOR, 7, pool="etl"),
        EnqueueRequest("db", "t", "ds=1", MAJOR, 7),  # queued earlier in this batch
        EnqueueRequest("db", "t", "ds=3", MAJOR, 7),  # already initiated
        EnqueueRequest("db", "t", "ds=4", MAJOR, 5),  # ready for cleaning at the same high watermark
        EnqueueRequest("db", "t", "ds=5", MAJOR, 7), EnqueueRequest("db", "u", None, MAJOR, 3),
        EnqueueRequest("db", "u", None, MINOR, 3),
    ], initiator_id="init", initiator_version="v")
    accepted = [a.accepted for a in answers]
    assert accepted == [True, True, False, False, False, True, True, False]
    assert [a.id for a in answers if a.accepted] == sorted(a.id for a in answers if a.accepted)
    assert f"id={queued}" in answers[3].message and f"id={cleaning}" in answers[4].message
    assert "in this batch" in answers[2].message
    rows = {(c.table, c.partition): c for c in queue.find(state="initiated")}
    assert rows[("t", "ds=2")].pool_name == "etl" and rows[("t", "ds=1")].type is MINOR
    assert rows[("u", None)].initiator_id == "init"
    assert queue.enqueue_many([EnqueueRequest("db", "t", "ds=4", MAJOR, 6)])[0].accepted  # newer writes since


def test_enqueue_many_whose_reply_was_lost_queues_once_and_reports_it_queued(db, queue, monkeypatch):
    queue.enqueue("db", "t", "ds=9", MINOR, highest_write_id_now=1)
    dropped = drop_the_reply_of_the_next_commit(db, monkeypatch)
    answers = queue.enqueue_many([EnqueueRequest("db", "t", "ds=1", MINOR, 2),
                                  EnqueueRequest("db", "t", "ds=9", MINOR, 2)], initiator_id="init")
    assert dropped == [True]
    assert [a.accepted for a in answers] == [True, False]
    assert len(queue_ids(db)) == 2 and answers[0].id in queue_ids(db)
