"""Housekeeping primitives: timeouts, TXN_TO_WRITE_ID cleaning, empty txn removal, WRITE_SET GC."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import OperationType
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import TxnAbortedError
from airflow_acid.metastore.housekeeping import Housekeeping
from airflow_acid.metastore.schema import (
    HIVE_LOCKS,
    MIN_HISTORY_LEVEL,
    TXN_COMPONENTS,
    TXN_TO_WRITE_ID,
    TXNS,
    WRITE_SET,
)
from airflow_acid.metastore.snapshots import Snapshots
from airflow_acid.metastore.txns import TxnStore

CONF = MetastoreConf(txn_timeout_s=60, timedout_txn_abort_batch=2)


@pytest.fixture
def store(db) -> TxnStore:
    return TxnStore(db, CONF)


@pytest.fixture
def keeper(db) -> Housekeeping:
    return Housekeeping(db, CONF)


def _open(store: TxnStore, n: int = 1) -> list[int]:
    return store.open_txns(n, user="u", host="h")


def _rows(db, query):
    with db.begin() as conn:
        return conn.execute(query).all()


def _age(db, txn_ids, *, heartbeat_ms: int = 0, started_ms: int = 0) -> None:
    """Move heartbeats / start times of ``txn_ids`` into the past."""
    with db.begin() as conn:
        conn.execute(sa.update(TXNS).where(TXNS.c.TXN_ID.in_(list(txn_ids))).values(
            TXN_LAST_HEARTBEAT=TXNS.c.TXN_LAST_HEARTBEAT - heartbeat_ms, TXN_STARTED=TXNS.c.TXN_STARTED - started_ms))


def _lock(db, ext_id: int, txn_id: int, heartbeat: int) -> None:
    with db.begin() as conn:
        conn.execute(sa.insert(HIVE_LOCKS).values(
            HL_LOCK_EXT_ID=ext_id, HL_LOCK_INT_ID=1, HL_TXNID=txn_id, HL_DB="db", HL_TABLE="t", HL_LOCK_STATE="a",
            HL_LOCK_TYPE="r", HL_LAST_HEARTBEAT=heartbeat, HL_USER="u", HL_HOST="h"))


def test_txns_without_heartbeat_are_aborted_with_their_locks(db, store, keeper):
    stale = _open(store, 5)  # more than one batch of 2
    (alive,) = _open(store)
    for n, t in enumerate(stale + [alive]):
        _lock(db, 100 + n, t, 0)
    _age(db, stale, heartbeat_ms=61_000)
    _age(db, [alive], heartbeat_ms=30_000)
    assert keeper.abort_timed_out_txns() == stale
    assert {r[0]: r[1] for r in _rows(db, sa.select(TXNS.c.TXN_ID, TXNS.c.TXN_STATE).where(TXNS.c.TXN_ID > 0))} == \
        {**{t: "a" for t in stale}, alive: "o"}
    assert _rows(db, sa.select(TXNS.c.TXN_META_INFO).where(TXNS.c.TXN_ID == stale[0])) == [("ABORT_TIMEOUT",)]
    assert [r[0] for r in _rows(db, sa.select(HIVE_LOCKS.c.HL_TXNID))] == [alive]
    assert [r[0] for r in _rows(db, sa.select(MIN_HISTORY_LEVEL.c.MHL_TXNID))] == [alive]
    with pytest.raises(TxnAbortedError, match=f"transaction {stale[0]}: it was already aborted \\(ABORT_TIMEOUT\\)"):
        store.commit(stale[0])
    assert keeper.abort_timed_out_txns() == []


def test_heartbeat_saves_a_txn_from_the_timeout(db, store, keeper):
    (t,) = _open(store)
    _age(db, [t], heartbeat_ms=61_000)
    store.heartbeat(t)
    assert keeper.abort_timed_out_txns() == []


def test_timed_out_locks_outside_txns_are_deleted(db, store, keeper):
    (t,) = _open(store)
    now = _rows(db, sa.select(TXNS.c.TXN_STARTED).where(TXNS.c.TXN_ID == t))[0][0]
    _lock(db, 1, 0, now - 61_000)  # stale, no txn
    _lock(db, 2, 0, now)  # fresh, no txn
    _lock(db, 3, t, 0)  # a txn's lock: lives as long as the txn
    assert keeper.delete_timed_out_locks() == 1
    assert sorted(r[0] for r in _rows(db, sa.select(HIVE_LOCKS.c.HL_LOCK_EXT_ID))) == [2, 3]


def test_txn_to_write_id_cleaned_below_low_water_mark(db, store, keeper):
    snaps = Snapshots(db, CONF)
    t1, t2, t3 = _open(store, 3)
    for t in (t1, t2, t3):
        store.allocate_write_id(t, "db", "t")
    store.commit(t1)
    store.abort(t2)
    store.commit(t3)
    _age(db, [0, t1, t2, t3], started_ms=600_000)
    (t4,) = _open(store)  # its snapshot can only see t1..t3 as ended
    store.allocate_write_id(t4, "db", "t")
    before = str(snaps.valid_write_id_list("db.t", snaps.valid_txn_list()))
    assert before == "db.t:4:4:4:2"
    # t2 is aborted: mappings from t2 on are still needed; t1's is not
    assert keeper.clean_txn_to_write_id() == 1
    assert sorted(r[0] for r in _rows(db, sa.select(TXN_TO_WRITE_ID.c.T2W_TXNID))) == [t2, t3, t4]
    assert str(snaps.valid_write_id_list("db.t", snaps.valid_txn_list())) == before
    store.commit(t4)
    with db.begin() as conn:  # the Cleaner removes aborted t2's data and its components
        conn.execute(sa.delete(TXN_COMPONENTS).where(TXN_COMPONENTS.c.TC_TXNID == t2))
    _age(db, [0, t1, t2, t3, t4], started_ms=600_000)
    assert keeper.clean_empty_txns() >= 1  # removes empty aborted t2 (and committed ones below the newest)
    assert keeper.clean_txn_to_write_id() == 2  # low-water mark = MAX(TXN_ID) = t4 now that none is open/aborted
    assert [r[0] for r in _rows(db, sa.select(TXN_TO_WRITE_ID.c.T2W_TXNID))] == [t4]
    assert str(snaps.valid_write_id_list("db.t", snaps.valid_txn_list())) == "db.t:4:9223372036854775807::"


def test_open_txn_snapshot_protects_txn_to_write_id(db, store, keeper):
    (reader,) = _open(store)
    (writer,) = _open(store)
    store.allocate_write_id(writer, "db", "t")
    store.commit(writer)
    assert keeper.clean_txn_to_write_id() == 0  # the open reader's snapshot needs writer's mapping


def test_empty_ended_txns_removed_but_not_newest_or_young(db, store, keeper):
    a, b, c, d, e = _open(store, 5)
    store.commit(a)
    store.abort(b)
    store.add_write_components(c, "db", "t", ["p=1"], OperationType.INSERT)
    store.abort(c)  # aborted with components: data to clean, must stay
    store.commit(d)
    store.commit(e)
    assert keeper.clean_empty_txns() == 0  # all inside the open-txn window
    _age(db, [0, a, b, c, d], started_ms=600_000)
    deleted = keeper.clean_empty_txns()
    left = sorted(r[0] for r in _rows(db, sa.select(TXNS.c.TXN_ID)))
    assert left == [c, d, e] and deleted == 3  # row 0, a, b; d is the newest txn outside the window
    assert str(Snapshots(db, CONF).valid_txn_list()) == f"{e}:9223372036854775807::{c}"


def test_write_set_gc_keeps_rows_open_txns_may_conflict_with(db, store, keeper):
    (old,) = _open(store)
    store.add_write_components(old, "db", "t", ["p=1"], OperationType.UPDATE)
    store.commit(old)
    (reader,) = _open(store)
    (w,) = _open(store)
    store.add_write_components(w, "db", "t", ["p=2"], OperationType.UPDATE)
    store.commit(w)
    _age(db, [0, old, reader, w], started_ms=600_000)
    assert keeper.write_set_gc() == 1  # old's row committed before the open reader began
    assert [r[0] for r in _rows(db, sa.select(WRITE_SET.c.WS_TXNID))] == [w]
    store.commit(reader)
    assert keeper.write_set_gc() == 1


def test_run_once_reports(db, store, keeper):
    (t,) = _open(store)
    _age(db, [t], heartbeat_ms=61_000)
    with db.begin() as conn:  # a MIN_HISTORY_LEVEL row left behind by a crashed client
        conn.execute(sa.insert(MIN_HISTORY_LEVEL).values(MHL_TXNID=999_999, MHL_MIN_OPEN_TXNID=1))
    report = keeper.run_once()
    assert report.aborted_txns == [t] and report.min_history_rows_deleted == 1
