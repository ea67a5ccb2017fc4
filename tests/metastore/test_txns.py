"""TxnStore: open/commit/abort/heartbeat, write-set conflicts, SHOW TRANSACTIONS, write-id allocation."""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import OperationType, TxnState, TxnType
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import (
    InvalidInputError,
    NoSuchLockError,
    NoSuchTxnError,
    TooManyOpenTxnsError,
    TxnAbortedError,
    TxnStateError,
    WriteConflictError,
)
from airflow_acid.metastore.schema import (
    COMPACTION_QUEUE,
    COMPLETED_TXN_COMPONENTS,
    HIVE_LOCKS,
    MIN_HISTORY_LEVEL,
    NEXT_WRITE_ID,
    TXN_COMPONENTS,
    TXN_TO_WRITE_ID,
    TXNS,
    WRITE_SET,
)
from airflow_acid.metastore.txns import TxnStore
from tests.metastore.lost_reply import drop_the_reply_of_the_next_commit

UPDATE, DELETE, INSERT = OperationType.UPDATE, OperationType.DELETE, OperationType.INSERT


@pytest.fixture
def store(db) -> TxnStore:
    return TxnStore(db, MetastoreConf())


def _open(store: TxnStore, n: int = 1, **kw) -> list[int]:
    return store.open_txns(n, user="alice", host="node1", **kw)


def _rows(db, query):
    with db.begin() as conn:
        return conn.execute(query).all()


def _state(db, txn_id: int) -> str:
    return _rows(db, sa.select(TXNS.c.TXN_STATE).where(TXNS.c.TXN_ID == txn_id))[0][0]


def _add_lock(db, ext_id: int, txn_id: int, heartbeat: int = 0) -> None:
    with db.begin() as conn:
        conn.execute(sa.insert(HIVE_LOCKS).values(
            HL_LOCK_EXT_ID=ext_id, HL_LOCK_INT_ID=1, HL_TXNID=txn_id, HL_DB="db", HL_TABLE="t", HL_LOCK_STATE="a",
            HL_LOCK_TYPE="w", HL_LAST_HEARTBEAT=heartbeat, HL_USER="alice", HL_HOST="node1"))


# --- open -------------------------------------------------------------------------------------------------


def test_open_txns_records_rows_and_min_history(db, store):
    first = _open(store)
    batch = _open(store, 3, txn_type=TxnType.READ_ONLY, agent_info="reader")
    assert batch == sorted(batch) and len(set(batch)) == 3 and batch[0] > first[0]
    rows = {r.TXN_ID: r for r in _rows(db, sa.select(TXNS).where(TXNS.c.TXN_ID.in_(first + batch)))}
    assert {r.TXN_STATE for r in rows.values()} == {"o"}
    assert rows[batch[0]].TXN_TYPE == TxnType.READ_ONLY.value and rows[batch[0]].TXN_AGENT_INFO == "reader"
    assert rows[first[0]].TXN_USER == "alice" and rows[first[0]].TXN_HOST == "node1"
    assert rows[first[0]].TXN_STARTED == rows[first[0]].TXN_LAST_HEARTBEAT > 0
    mhl = dict(_rows(db, sa.select(MIN_HISTORY_LEVEL.c.MHL_TXNID, MIN_HISTORY_LEVEL.c.MHL_MIN_OPEN_TXNID)))
    assert set(mhl) == set(first + batch)
    # the batch was opened while `first` was open: their snapshots may still see it as open
    assert all(mhl[t] <= first[0] for t in batch)


def test_open_batch_is_capped(db):
    store = TxnStore(db, MetastoreConf(txn_max_open_batch=4))
    assert len(_open(store, 10)) == 4
    with pytest.raises(InvalidInputError, match="at least 1"):
        _open(store, 0)


def test_open_refused_above_max_open_txns(db):
    store = TxnStore(db, MetastoreConf(max_open_txns=3))
    a, b = _open(store, 2)
    with pytest.raises(TooManyOpenTxnsError, match=r"2 are already open and hive.max.open.txns is 3"):
        _open(store, 2)
    assert len(store.show_transactions()) == 2  # nothing half-opened
    store.commit(a)
    assert len(_open(store, 2)) == 2


# --- commit -----------------------------------------------------------------------------------------------


def test_commit_moves_components_and_releases_everything(db, store):
    (t,) = _open(store)
    wid = store.allocate_write_id(t, "db", "t")
    store.add_write_components(t, "db", "t", ["p=1", "p=2"], INSERT)
    _add_lock(db, 77, t)
    result = store.commit(t)
    assert result.commit_id is None  # insert-only: no commit id needed
    assert _state(db, t) == "c"
    ctc = _rows(db, sa.select(COMPLETED_TXN_COMPONENTS.c.CTC_TXNID, COMPLETED_TXN_COMPONENTS.c.CTC_DATABASE,
                              COMPLETED_TXN_COMPONENTS.c.CTC_TABLE, COMPLETED_TXN_COMPONENTS.c.CTC_PARTITION,
                              COMPLETED_TXN_COMPONENTS.c.CTC_WRITEID, COMPLETED_TXN_COMPONENTS.c.CTC_UPDATE_DELETE)
                .order_by(COMPLETED_TXN_COMPONENTS.c.CTC_PARTITION))
    assert ctc == [(t, "db", "t", "p=1", wid, "N"), (t, "db", "t", "p=2", wid, "N")]
    assert _rows(db, sa.select(TXN_COMPONENTS)) == []
    assert _rows(db, sa.select(HIVE_LOCKS)) == []
    assert _rows(db, sa.select(MIN_HISTORY_LEVEL)) == []
    assert _rows(db, sa.select(WRITE_SET)) == []


def test_commit_of_update_flags_update_delete_and_records_write_set(db, store):
    (t,) = _open(store)
    store.add_write_components(t, "db", "t", ["p=1"], UPDATE)
    result = store.commit(t)
    assert result.commit_id is not None and result.commit_id >= t
    assert _rows(db, sa.select(COMPLETED_TXN_COMPONENTS.c.CTC_UPDATE_DELETE)) == [("Y",)]
    assert _rows(db, sa.select(WRITE_SET.c.WS_TABLE, WRITE_SET.c.WS_PARTITION, WRITE_SET.c.WS_TXNID,
                               WRITE_SET.c.WS_COMMIT_ID, WRITE_SET.c.WS_OPERATION_TYPE)) == \
        [("t", "p=1", t, result.commit_id, "u")]


def test_commit_of_read_only_txn_copies_nothing(db, store):
    (t,) = _open(store, txn_type=TxnType.READ_ONLY)
    store.commit(t)
    assert _state(db, t) == "c"
    assert _rows(db, sa.select(COMPLETED_TXN_COMPONENTS)) == []


def test_commit_of_compaction_txn_sets_queue_watermark_and_copies_nothing(db, store):
    (writer,) = _open(store)
    (c,) = _open(store, txn_type=TxnType.COMPACTION)
    (later,) = _open(store)
    with db.begin() as conn:
        conn.execute(sa.insert(COMPACTION_QUEUE).values(CQ_ID=1, CQ_DATABASE="db", CQ_TABLE="t", CQ_STATE="w",
                                                        CQ_TYPE="a", CQ_TXN_ID=c))
    store.add_write_components(c, "db", "t", ["p=1"], OperationType.COMPACT)
    result = store.commit(c)
    assert result.commit_id == later  # MAX(TXN_ID) at commit
    row = _rows(db, sa.select(COMPACTION_QUEUE.c.CQ_NEXT_TXN_ID, COMPACTION_QUEUE.c.CQ_COMMIT_TIME))[0]
    assert row.CQ_NEXT_TXN_ID == later and row.CQ_COMMIT_TIME > 0
    assert _rows(db, sa.select(COMPLETED_TXN_COMPONENTS)) == []
    assert _rows(db, sa.select(TXN_COMPONENTS)) == []
    assert store.write_id_of(c, "db", "t") is None  # the compactor allocates no write id
    store.commit(writer)


def test_commit_whose_reply_was_lost_succeeds_once(db, store, monkeypatch):
    """The server applied the COMMIT but the connection dropped before the reply (found by the reliability suite
    with pg_terminate_backend): the retried unit of work must report the commit done, applied once — not raise
    "already committed", which tells the client its data was not written."""
    (t,) = _open(store)
    store.add_write_components(t, "db", "t", ["p=1"], UPDATE)
    dropped = drop_the_reply_of_the_next_commit(db, monkeypatch, marker=t)
    result = store.commit(t)
    assert dropped == [t]
    assert _state(db, t) == "c"
    assert result.commit_id is not None and result.commit_id >= t
    assert _rows(db, sa.select(COMPLETED_TXN_COMPONENTS.c.CTC_TXNID)) == [(t,)]  # applied once
    assert _rows(db, sa.select(WRITE_SET.c.WS_TXNID, WRITE_SET.c.WS_COMMIT_ID)) == [(t, result.commit_id)]
    with pytest.raises(TxnStateError, match="already committed"):  # a genuine second commit is still refused
        store.commit(t)


# --- write-set conflicts ----------------------------------------------------------------------------------


def test_concurrent_update_delete_on_same_partition_first_committer_wins(db, store):
    winners = []
    for n, (first_op, second_op) in enumerate([(UPDATE, UPDATE), (DELETE, UPDATE), (UPDATE, DELETE), (DELETE, DELETE)]):
        table = f"t{n}"
        t1, t2 = _open(store, 2)
        store.add_write_components(t1, "db", table, ["ds=2024-01-01"], first_op)
        store.add_write_components(t2, "db", table, ["ds=2024-01-01"], second_op)
        store.commit(t1)
        winners.append(t1)
        with pytest.raises(WriteConflictError) as info:
            store.commit(t2)
        message = str(info.value)
        assert f"transaction {t2} was aborted" in message
        assert f"db.{table} partition ds=2024-01-01" in message and f"transaction {t1}" in message
        assert isinstance(info.value, TxnAbortedError)
        assert _state(db, t2) == "a"
        assert _rows(db, sa.select(TXNS.c.TXN_META_INFO).where(TXNS.c.TXN_ID == t2)) == [("ABORT_WRITE_CONFLICT",)]
        # the loser's components stay as the record of data to clean
        assert _rows(db, sa.select(TXN_COMPONENTS.c.TC_TXNID).where(TXN_COMPONENTS.c.TC_TABLE == table)) == [(t2,)]
    assert sorted(r[0] for r in _rows(db, sa.select(WRITE_SET.c.WS_TXNID))) == winners


def test_conflict_on_unpartitioned_table(db, store):
    t1, t2 = _open(store, 2)
    store.add_write_components(t1, "db", "plain", None, UPDATE)
    store.add_write_components(t2, "db", "plain", None, DELETE)
    store.commit(t2)
    with pytest.raises(WriteConflictError, match=r"write conflict on db\.plain — transaction"):
        store.commit(t1)


def test_different_partitions_both_commit(db, store):
    t1, t2 = _open(store, 2)
    store.add_write_components(t1, "db", "t", ["p=1"], UPDATE)
    store.add_write_components(t2, "db", "t", ["p=2"], UPDATE)
    store.add_write_components(t2, "db", "other", ["p=1"], UPDATE)
    store.commit(t1)
    store.commit(t2)
    assert _state(db, t1) == _state(db, t2) == "c"


def test_inserts_never_conflict(db, store):
    for n, (first_op, second_op) in enumerate([(UPDATE, INSERT), (INSERT, UPDATE), (INSERT, INSERT)]):
        t1, t2 = _open(store, 2)
        store.add_write_components(t1, "db", f"t{n}", ["p=1"], first_op)
        store.add_write_components(t2, "db", f"t{n}", ["p=1"], second_op)
        store.commit(t1)
        store.commit(t2)
        assert _state(db, t2) == "c"


def test_update_after_the_other_committed_does_not_conflict(db, store):
    (t1,) = _open(store)
    store.add_write_components(t1, "db", "t", ["p=1"], UPDATE)
    store.commit(t1)
    (t2,) = _open(store)  # began after t1 committed: its snapshot includes t1's update
    store.add_write_components(t2, "db", "t", ["p=1"], UPDATE)
    store.commit(t2)
    assert _state(db, t2) == "c"


# --- abort ------------------------------------------------------------------------------------------------


def test_abort_keeps_components_and_drops_locks(db, store):
    (t,) = _open(store)
    store.add_write_components(t, "db", "t", ["p=1"], INSERT)
    _add_lock(db, 5, t)
    store.abort(t)
    assert _state(db, t) == "a"
    assert _rows(db, sa.select(TXN_COMPONENTS.c.TC_PARTITION)) == [("p=1",)]
    assert _rows(db, sa.select(HIVE_LOCKS)) == []
    assert _rows(db, sa.select(MIN_HISTORY_LEVEL)) == []
    assert _rows(db, sa.select(COMPLETED_TXN_COMPONENTS)) == []


def test_abort_records_write_ids_without_components(db, store):
    """An aborted writer that never recorded components still leaves a record of its write id, so the txn
    cleaner cannot drop it and make the write id look committed."""
    (t,) = _open(store)
    wid = store.allocate_write_id(t, "db", "t")
    store.abort(t)
    assert _rows(db, sa.select(TXN_COMPONENTS.c.TC_TABLE, TXN_COMPONENTS.c.TC_PARTITION,
                               TXN_COMPONENTS.c.TC_WRITEID)) == [("t", None, wid)]


def test_ended_txns_give_clear_errors(db, store):
    a, c = _open(store, 2)
    store.abort(a)
    store.commit(c)
    with pytest.raises(TxnAbortedError, match=f"cannot commit transaction {a}: it was already aborted"):
        store.commit(a)
    with pytest.raises(TxnAbortedError, match=f"cannot abort transaction {a}"):
        store.abort(a)
    with pytest.raises(TxnStateError, match=f"cannot commit transaction {c}: it is already committed"):
        store.commit(c)
    with pytest.raises(NoSuchTxnError, match="cannot commit transaction 424242: no such transaction"):
        store.commit(424242)
    assert store.txn_state(a) is TxnState.ABORTED and store.txn_state(424242) is None
    with pytest.raises(TxnAbortedError, match=f"cannot heartbeat transaction {a}: it was already aborted"):
        store.heartbeat(a)
    with pytest.raises(TxnStateError, match=f"transaction {c}: it is already committed"):
        store.heartbeat(c)
    with pytest.raises(NoSuchTxnError, match="transaction 31337"):
        store.heartbeat(31337)


def test_abort_txns_aborts_only_open_ones(db, store):
    a, b, c = _open(store, 3)
    store.commit(c)
    assert store.abort_txns([b, a, c, 999_999]) == [a, b]
    assert _state(db, a) == _state(db, b) == "a" and _state(db, c) == "c"
    assert store.abort_txns([a]) == []


# --- heartbeats and SHOW TRANSACTIONS ---------------------------------------------------------------------


def test_heartbeat_moves_last_heartbeat(db, store):
    (t,) = _open(store)
    with db.begin() as conn:
        conn.execute(sa.update(TXNS).where(TXNS.c.TXN_ID == t).values(TXN_LAST_HEARTBEAT=1000))
    store.heartbeat(t)
    beat = _rows(db, sa.select(TXNS.c.TXN_LAST_HEARTBEAT, TXNS.c.TXN_HEARTBEAT_COUNT).where(TXNS.c.TXN_ID == t))[0]
    assert beat[0] > 1000 and beat[1] == 1


def test_heartbeat_lock(db, store):
    _add_lock(db, 9, 0, heartbeat=1000)
    store.heartbeat_lock(9)
    assert _rows(db, sa.select(HIVE_LOCKS.c.HL_LAST_HEARTBEAT))[0][0] > 1000
    with pytest.raises(NoSuchLockError, match="lock 10 does not exist"):
        store.heartbeat_lock(10)
    # a txn's lock is kept alive by its txn: heartbeating the lock heartbeats the txn
    (t,) = _open(store)
    _add_lock(db, 11, t)
    with db.begin() as conn:
        conn.execute(sa.update(TXNS).where(TXNS.c.TXN_ID == t).values(TXN_LAST_HEARTBEAT=1000))
    store.heartbeat_lock(11)
    assert _rows(db, sa.select(TXNS.c.TXN_LAST_HEARTBEAT).where(TXNS.c.TXN_ID == t))[0][0] > 1000
    assert _rows(db, sa.select(HIVE_LOCKS.c.HL_LAST_HEARTBEAT).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == 11))[0][0] == 0


def test_show_transactions(db, store):
    a, b, c = _open(store, 3)
    store.abort(b)
    store.commit(c)
    rows = store.show_transactions()
    assert [(r.txnid, r.state) for r in rows] == [(a, TxnState.OPEN), (b, TxnState.ABORTED)]
    assert {f.name for f in dataclasses.fields(rows[0])} >= {"txnid", "state", "startedtime", "lastheartbeattime",
                                                             "user", "host"}
    assert rows[0].user == "alice" and rows[0].host == "node1" and rows[0].startedtime > 0


# --- write ids --------------------------------------------------------------------------------------------


def test_write_ids_are_dense_per_table_and_reused_within_a_txn(db, store):
    t1, t2, t3 = _open(store, 3)
    assert store.allocate_write_id(t2, "db", "t") == 1
    assert store.allocate_write_id(t2, "db", "t") == 1  # multi-statement txn reuses its id
    assert store.allocate_write_ids([t3, t1], "db", "t") == [3, 2]  # new ids follow txn order
    assert store.allocate_write_ids([t1, t2, t3], "db", "t") == [2, 1, 3]
    assert store.allocate_write_id(t3, "db", "other") == 1  # each table counts on its own
    assert _rows(db, sa.select(NEXT_WRITE_ID.c.NWI_TABLE, NEXT_WRITE_ID.c.NWI_NEXT)
                 .order_by(NEXT_WRITE_ID.c.NWI_TABLE)) == [("other", 2), ("t", 4)]


def test_write_id_names_are_lower_cased(db, store):
    (t,) = _open(store)
    assert store.allocate_write_id(t, "Sales", "Orders") == 1
    assert store.allocate_write_id(t, "sales", "orders") == 1
    assert store.write_id_of(t, "SALES", "ORDERS") == 1
    assert _rows(db, sa.select(TXN_TO_WRITE_ID.c.T2W_DATABASE, TXN_TO_WRITE_ID.c.T2W_TABLE)) == [("sales", "orders")]


def test_write_ids_refused_for_read_only_and_ended_txns(db, store):
    (ro,) = _open(store, txn_type=TxnType.READ_ONLY)
    a, c = _open(store, 2)
    store.abort(a)
    store.commit(c)
    with pytest.raises(TxnStateError, match=f"db.t for transaction {ro}: it is read-only"):
        store.allocate_write_id(ro, "db", "t")
    with pytest.raises(TxnAbortedError, match=f"allocate a write id on db.t for transaction {a}"):
        store.allocate_write_id(a, "db", "t")
    with pytest.raises(TxnStateError, match="already committed"):
        store.allocate_write_ids([c], "db", "t")
    with pytest.raises(InvalidInputError, match="table name must not be empty"):
        (t,) = _open(store)
        store.allocate_write_id(t, "db", " ")
    assert _rows(db, sa.select(TXN_TO_WRITE_ID)) == [] and _rows(db, sa.select(NEXT_WRITE_ID)) == []


def test_add_write_components_uses_the_txns_write_id(db, store):
    (t,) = _open(store)
    assert store.add_write_components(t, "DB", "T", ["p=1", "p=1", "p=2"], INSERT) == 2
    assert store.add_write_components(t, "db", "t", ["p=2"], INSERT) == 0  # already recorded
    rows = _rows(db, sa.select(TXN_COMPONENTS.c.TC_DATABASE, TXN_COMPONENTS.c.TC_TABLE, TXN_COMPONENTS.c.TC_PARTITION,
                               TXN_COMPONENTS.c.TC_OPERATION_TYPE, TXN_COMPONENTS.c.TC_WRITEID)
                 .order_by(TXN_COMPONENTS.c.TC_PARTITION))
    assert rows == [("db", "t", "p=1", "i", 1), ("db", "t", "p=2", "i", 1)]
