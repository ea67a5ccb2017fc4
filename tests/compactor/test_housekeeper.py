"""The HouseKeeper on SQLite, PostgreSQL and MariaDB: timeouts, locks, history retention, TXN_TO_WRITE_ID and empty
TXNS cleaning in one pass, and one pass at a time."""

from __future__ import annotations

import time

import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionState, CompactionType, OperationType, TxnState
from airflow_acid.compactor.housekeeper import HOUSEKEEPER_MUTEX, HouseKeeper
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.initiator_store import InitiatorStore
from airflow_acid.metastore.schema import COMPLETED_COMPACTIONS, HIVE_LOCKS, TXN_TO_WRITE_ID, TXNS
from airflow_acid.metastore.store import Metastore

CONF = MetastoreConf(txn_timeout_s=60, opentxn_timeout_ms=0)


def _metastore(url: str) -> Metastore:
    return Metastore(url, CONF).init()


def _rows(ms: Metastore, query):
    with ms.db.begin() as conn:
        return conn.execute(query).all()


def test_one_pass_does_every_job(empty_db_url):
    with _metastore(empty_db_url) as ms:
        committed = []
        for _ in range(3):
            txn = ms.txns.open_txn(user="u", host="h")
            ms.txns.add_write_components(txn, "db", "t", None, OperationType.INSERT)
            ms.txns.commit(txn)
            committed.append(txn)
        # A txn counts as settled once it started strictly before the clock (milliseconds): without this pause the
        # next opens can share the commits' millisecond and keep the low-water mark below them.
        time.sleep(0.002)
        stale = ms.txns.open_txn(user="u", host="h")
        alive = ms.txns.open_txn(user="u", host="h")
        now = InitiatorStore(ms.db).now_ms()
        with ms.db.begin() as conn:
            conn.execute(sa.update(TXNS).where(TXNS.c.TXN_ID == stale)
                         .values(TXN_LAST_HEARTBEAT=TXNS.c.TXN_LAST_HEARTBEAT - 120_000))
            for ext_id, heartbeat_age in ((1, 120_000), (2, 0)):
                conn.execute(sa.insert(HIVE_LOCKS).values(
                    HL_LOCK_EXT_ID=ext_id, HL_LOCK_INT_ID=1, HL_TXNID=0, HL_DB="db", HL_TABLE="t",
                    HL_LOCK_STATE="a", HL_LOCK_TYPE="r", HL_USER="u", HL_HOST="h",
                    HL_LAST_HEARTBEAT=now - heartbeat_age))
        for n in range(4):
            ms.initiator.record_did_not_initiate("db", "t", None, CompactionType.MAJOR, f"skip {n}")
        for n in range(5):
            queued = ms.compactions.enqueue("db", "t", None, CompactionType.MINOR)
            ms.compactions.mark_failed(queued.id, f"failure {n}")

        report = HouseKeeper(ms, host="hk").run_once()

        assert report.ran and report.aborted_txns == [stale] and report.deleted_locks == 1
        assert [r[0] for r in _rows(ms, sa.select(HIVE_LOCKS.c.HL_LOCK_EXT_ID))] == [2]
        states = dict(_rows(ms, sa.select(TXNS.c.TXN_ID, TXNS.c.TXN_STATE).where(TXNS.c.TXN_ID.in_([stale, alive]))))
        assert states == {alive: TxnState.OPEN.value}  # the stale txn was aborted, then removed as an empty abort
        # Retention: did-not-initiate 2, failed 3 (never below failed.compacts.threshold); newest kept.
        history = _rows(ms, sa.select(COMPLETED_COMPACTIONS.c.CC_STATE, COMPLETED_COMPACTIONS.c.CC_ERROR_MESSAGE)
                        .order_by(COMPLETED_COMPACTIONS.c.CC_ID))
        assert report.history_rows_purged == 4
        assert [m for s, m in history if s == CompactionState.DID_NOT_INITIATE.value] == ["skip 2", "skip 3"]
        assert [m for s, m in history if s == CompactionState.FAILED.value] == [f"failure {n}" for n in (2, 3, 4)]
        # Every committed writer is below the low-water mark (the stale txn is now aborted, the oldest open
        # one is newer): their write-id mappings go, and their TXNS rows are empty and go too.
        assert report.txn_to_write_id_rows_deleted == 3
        assert _rows(ms, sa.select(TXN_TO_WRITE_ID.c.T2W_TXNID)) == []
        assert report.txns_deleted >= 3
        assert _rows(ms, sa.select(TXNS.c.TXN_ID).where(TXNS.c.TXN_ID.in_(committed))) == []


def test_only_one_housekeeper_runs_at_a_time(empty_db_url):
    with _metastore(empty_db_url) as ms:
        store = InitiatorStore(ms.db)
        assert store.acquire_lease(HOUSEKEEPER_MUTEX, "elsewhere", 60_000).acquired
        busy = HouseKeeper(ms).run_once()
        assert not busy.ran and "another HouseKeeper (elsewhere) is running" in busy.message
        store.release_lease(HOUSEKEEPER_MUTEX, "elsewhere")
        assert HouseKeeper(ms).run_once().ran
        # A lease whose holder died (expired) does not block.
        assert store.acquire_lease(HOUSEKEEPER_MUTEX, "crashed", -1).acquired
        assert HouseKeeper(ms).run_once().ran
