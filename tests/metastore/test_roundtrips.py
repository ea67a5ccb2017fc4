"""Statements per hot-path metastore call (open, allocate write id, lock, commit, abort) stay at their cut counts.

Counts, not timings: each call's statements are counted with a SQLAlchemy event listener on its second use. The
ceilings are what issue 17 cut them to (before: open 7, allocate 5, lock 13, commit 9, abort 8 statements);
backends without UPDATE … RETURNING (MariaDB) need one statement more for allocate and lock; PostgreSQL runs an
open's inserts and a commit's or an abort's writes as one statement each (data-modifying CTEs); an uncontended lock
is granted by the statement that checks it, and a lock's TXN_COMPONENTS row is one INSERT … SELECT that looks up the
write id and skips a row already there.
"""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import LockType, OperationType, TxnState
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database
from airflow_acid.metastore.locks import LockComponent, LockManager
from airflow_acid.metastore.roundtrips import count_round_trips
from airflow_acid.metastore.txns import TxnStore


def test_hot_path_statement_counts(db: Database) -> None:
    txns, locks = TxnStore(db), LockManager(db)
    extra = 0 if db.engine.dialect.update_returning else 1
    comp = LockComponent("db", "t", "p=1", LockType.SHARED_WRITE, OperationType.INSERT)
    seen: dict[str, int] = {}
    for _ in range(2):
        with count_round_trips(db.engine) as c:
            txn = txns.open_txn(user="u", host="h")
        seen["open"] = c.statements
        with count_round_trips(db.engine) as c:
            txns.allocate_write_id(txn, "db", "t")
        seen["allocate"] = c.statements
        with count_round_trips(db.engine) as c:
            locks.lock([comp], txn_id=txn, user="u", host="h")
        seen["lock"] = c.statements
        with count_round_trips(db.engine) as c:
            txns.commit(txn)
        seen["commit"] = c.statements
        empty = txns.open_txn(user="u", host="h")
        with count_round_trips(db.engine) as c:
            txns.commit(empty)
        seen["commit_empty"] = c.statements
        doomed = txns.open_txn(user="u", host="h")
        txns.allocate_write_id(doomed, "db", "t")
        with count_round_trips(db.engine) as c:
            txns.abort(doomed)
        seen["abort"] = c.statements
    begin = 1 if db.dialect == "sqlite" else 0  # SQLite's BEGIN IMMEDIATE is sent as a statement
    if db.dialect == "postgresql":
        # open = LOCK + one statement; a commit's or an abort's writes are one statement (data-modifying CTEs)
        expected = {"open": 2, "allocate": 4, "lock": 5, "commit": 3, "commit_empty": 3, "abort": 4}
    else:
        # open: SQLite needs no TXN_LOCK_TBL statement (BEGIN IMMEDIATE serializes writers)
        # a commit on SQLite reads the txn's row and what it holds in one statement (its transactions run alone)
        alone = 1 if db.dialect == "sqlite" else 0
        expected = {"open": 4, "allocate": 4 + extra + begin, "lock": 5 + extra + begin,
                    "commit": 7 + begin - alone, "commit_empty": 4 + begin - alone, "abort": 6 + begin}
    assert seen == expected
    assert txns.txn_state(txn) is TxnState.COMMITTED and txns.txn_state(doomed) is TxnState.ABORTED


def test_open_count_limit_and_watermark_still_hold(db: Database) -> None:
    """The merged open statement still refuses beyond hive.max.open.txns and records the watermark."""
    from airflow_acid.metastore.errors import TooManyOpenTxnsError
    from airflow_acid.metastore.schema import MIN_HISTORY_LEVEL

    txns = TxnStore(db, MetastoreConf(max_open_txns=2, opentxn_timeout_ms=0))
    first = txns.open_txn(user="u", host="h")
    time.sleep(0.01)
    second = txns.open_txn(user="u", host="h")
    with pytest.raises(TooManyOpenTxnsError):
        txns.open_txn(user="u", host="h")
    with db.begin() as conn:
        mhl = dict(conn.execute(MIN_HISTORY_LEVEL.select().with_only_columns(
            MIN_HISTORY_LEVEL.c.MHL_TXNID, MIN_HISTORY_LEVEL.c.MHL_MIN_OPEN_TXNID)).all())
    assert mhl == {first: first, second: first}


def test_batch_open_beyond_the_limit_opens_none_of_the_batch(db: Database) -> None:
    """A batch that would pass hive.max.open.txns opens nothing (no TXNS or MIN_HISTORY_LEVEL row of it is left); a
    batch within it records every txn with the watermark of the txns open before it."""
    from airflow_acid.metastore.errors import TooManyOpenTxnsError
    from airflow_acid.metastore.schema import MIN_HISTORY_LEVEL, TXNS

    txns = TxnStore(db, MetastoreConf(max_open_txns=3, opentxn_timeout_ms=0))
    first = txns.open_txn(user="u", host="h")

    def rows() -> tuple[int, int]:
        with db.begin() as conn:
            return (conn.execute(TXNS.select().with_only_columns(TXNS.c.TXN_ID)
                                 .where(TXNS.c.TXN_STATE == TxnState.OPEN.value)).all().__len__(),
                    conn.execute(MIN_HISTORY_LEVEL.select()).all().__len__())

    with pytest.raises(TooManyOpenTxnsError, match="1 are already open"):
        txns.open_txns(3, user="u", host="h")
    assert rows() == (1, 1)
    batch = txns.open_txns(2, user="u", host="h")
    assert len(batch) == 2 and batch == sorted(batch) and batch[0] > first
    with db.begin() as conn:
        mhl = dict(conn.execute(MIN_HISTORY_LEVEL.select().with_only_columns(
            MIN_HISTORY_LEVEL.c.MHL_TXNID, MIN_HISTORY_LEVEL.c.MHL_MIN_OPEN_TXNID)).all())
    assert mhl == {first: first, batch[0]: first, batch[1]: first}


def test_batch_open_costs_what_one_open_costs(db: Database) -> None:
    """A Hive Streaming batch (100 txns) is opened with as many statements as one txn: its TXNS rows go in one
    statement (a multi-row INSERT … RETURNING; PostgreSQL: the open's one CTE statement), its MIN_HISTORY_LEVEL rows
    in one executemany; every id comes back, consecutive (one statement under the open's lock), each with its row."""
    from airflow_acid.metastore.schema import MIN_HISTORY_LEVEL, TXNS

    txns = TxnStore(db)
    txns.open_txn(user="u", host="h")  # first use: nothing left to set up
    with count_round_trips(db.engine) as one:
        single = txns.open_txn(user="u", host="h")
    with count_round_trips(db.engine) as many:
        batch = txns.open_txns(100, user="u", host="h", agent_info="stream")
    assert many.statements == one.statements
    assert batch == list(range(batch[0], batch[0] + 100)) and batch[0] > single
    with db.begin() as conn:
        opened = conn.execute(sa.select(TXNS.c.TXN_ID, TXNS.c.TXN_STATE, TXNS.c.TXN_AGENT_INFO)
                              .where(TXNS.c.TXN_ID.in_(batch))).all()
        history = conn.execute(sa.select(MIN_HISTORY_LEVEL.c.MHL_TXNID).where(MIN_HISTORY_LEVEL.c.MHL_TXNID.in_(batch))
                               ).scalars().all()
    assert sorted(opened) == [(t, TxnState.OPEN.value, "stream") for t in batch]
    assert sorted(history) == batch
