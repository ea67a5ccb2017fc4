"""The lock manager: Hive 4's compatibility matrix, FIFO order, same-txn locks, waiting, SHOW LOCKS, unlock."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import DataOperation, LockState, LockType, OperationType, TxnType
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import LockNotAcquiredError, NoSuchLockError, TxnOpenError
from airflow_acid.metastore.locks import (
    LockComponent,
    LockManager,
    lock_component_for,
    lock_type_for,
    operation_type_for,
    zero_wait_reads_default,
)
from airflow_acid.metastore.schema import HIVE_LOCKS, TXN_COMPONENTS
from airflow_acid.metastore.txns import TxnStore

R, W, X, E = LockType.SHARED_READ, LockType.SHARED_WRITE, LockType.EXCL_WRITE, LockType.EXCLUSIVE
WHO = {"user": "alice", "host": "node1"}


def comp(level: str, lock_type: LockType, *, table: str = "t", partition: str = "ds=1", db: str = "d") -> LockComponent:
    if level == "db":
        return LockComponent(db=db, lock_type=lock_type)
    if level == "table":
        return LockComponent(db=db, table=table, lock_type=lock_type)
    return LockComponent(db=db, table=table, partition=partition, lock_type=lock_type)


@pytest.fixture
def locks(db) -> LockManager:
    return LockManager(db, MetastoreConf(lock_numretries=2, lock_sleep_between_retries_s=0.2))


# requested type, existing type -> blocked, both on the same table (docs/hive-acid.md#locks).
SAME_LEVEL_MATRIX = [
    (R, R, False), (R, W, False), (R, X, False), (R, E, True),
    (W, R, False), (W, W, False), (W, X, True), (W, E, True),
    (X, R, False), (X, W, True), (X, X, True), (X, E, True),
    (E, R, True), (E, W, True), (E, X, True), (E, E, True),
]

# (requested level, type), (existing level, type) -> blocked: the DB-level read exceptions and overlap rules.
LEVEL_CASES = [
    (("db", R), ("table", E), False),       # a DB-level read is not blocked by a table-level exclusive
    (("db", R), ("partition", E), False),
    (("table", R), ("db", E), True),        # a table read under a DB exclusive is blocked
    (("partition", R), ("table", E), True),  # partition read under a table exclusive
    (("table", R), ("partition", E), True),  # table read over a partition exclusive
    (("table", E), ("db", R), False),       # a table-level exclusive ignores DB-level reads
    (("partition", E), ("db", R), False),
    (("db", E), ("table", R), True),        # but a DB-level exclusive waits for table reads
    (("db", E), ("db", R), True),
    (("table", X), ("db", R), False),
    (("table", X), ("db", W), True),
    (("partition", W), ("table", X), True),
    (("table", W), ("partition", X), True),
    (("db", W), ("partition", X), True),
]


DISJOINT_CASES = [
    (("partition", E), ("partition", E, {"table": "other"}), False),
    (("partition", E), ("partition", E, {"partition": "ds=2"}), False),
    (("partition", E), ("partition", E, {"db": "other_db"}), False),
]


def _case_ids(case) -> str:
    (req, existing, _) = case
    return f"{req[0]}-{req[1].name} vs {existing[0]}-{existing[1].name}{existing[2] if len(existing) > 2 else ''}"


def test_compatibility_matrix(locks):
    """Every (requested, existing) pair of the matrix, at the same and at different levels (one DB per backend:
    each case starts from an empty HIVE_LOCKS)."""
    cases = ([(("table", req), ("table", ex), blocked) for req, ex, blocked in SAME_LEVEL_MATRIX]
             + LEVEL_CASES + DISJOINT_CASES)
    wrong = []
    for case in cases:
        (req_level, req_type), existing, blocked = case
        first = locks.lock([comp(existing[0], existing[1], **(existing[2] if len(existing) > 2 else {}))], **WHO)
        assert first.state is LockState.ACQUIRED
        second = locks.lock([comp(req_level, req_type)], wait=False, **WHO)
        expected = LockState.WAITING if blocked else LockState.ACQUIRED
        if second.state is not expected or (blocked and second.blocked_by.lock_id != first.lock_id):
            wrong.append(f"{_case_ids(case)}: got {second.state.name}, expected {expected.name}")
        for lock_id in (second.lock_id, first.lock_id):
            locks.unlock(lock_id)
    assert not wrong, "\n".join(wrong)
    assert len(cases) == 16 + len(LEVEL_CASES) + len(DISJOINT_CASES)


def test_fifo_a_waiting_request_blocks_later_compatible_ones(locks):
    reader = locks.lock([comp("table", R)], **WHO)
    exclusive = locks.lock([comp("table", E)], wait=False, **WHO)
    assert exclusive.state is LockState.WAITING
    # A second reader is compatible with the first but must queue behind the waiting exclusive.
    late_reader = locks.lock([comp("table", R)], wait=False, **WHO)
    assert late_reader.state is LockState.WAITING
    assert late_reader.blocked_by.lock_id == exclusive.lock_id
    locks.unlock(reader.lock_id)
    assert locks.check_lock(late_reader.lock_id).state is LockState.WAITING  # still behind the exclusive
    assert locks.check_lock(exclusive.lock_id).state is LockState.ACQUIRED
    locks.unlock(exclusive.lock_id)
    assert locks.check_lock(late_reader.lock_id).state is LockState.ACQUIRED


def test_a_later_lock_never_blocks_an_earlier_one(locks):
    first = locks.lock([comp("table", W)], **WHO)
    locks.lock([comp("table", E)], wait=False, **WHO)  # waits for the first
    assert locks.check_lock(first.lock_id).state is LockState.ACQUIRED


def test_all_components_granted_together_or_not_at_all(locks):
    locks.lock([comp("table", E, table="t2")], **WHO)
    response = locks.lock([comp("table", W, table="t1"), comp("table", W, table="t2")], wait=False, **WHO)
    assert response.state is LockState.WAITING
    rows = locks.show_locks()
    mine = [r for r in rows if r.ext_id == response.lock_id]
    assert [r.lock_state for r in mine] == ["WAITING", "WAITING"]
    assert [r.blocked_by is not None for r in mine] == [False, True]


@pytest.fixture
def txns(db) -> TxnStore:
    return TxnStore(db, MetastoreConf())


def test_locks_of_the_same_txn_never_conflict(locks, txns):
    txn = txns.open_txn(**WHO)
    assert locks.lock([comp("table", E)], txn_id=txn, **WHO).state is LockState.ACQUIRED
    assert locks.lock([comp("table", X)], txn_id=txn, wait=False, **WHO).state is LockState.ACQUIRED
    other = txns.open_txn(**WHO)
    assert locks.lock([comp("table", W)], txn_id=other, wait=False, **WHO).state is LockState.WAITING


def test_txn_locks_are_released_by_commit_not_unlock(locks, txns):
    txn = txns.open_txn(**WHO)
    held = locks.lock([comp("table", X)], txn_id=txn, **WHO)
    with pytest.raises(TxnOpenError, match=f"lock {held.lock_id} belongs to transaction {txn}"):
        locks.unlock(held.lock_id)
    waiting = locks.lock([comp("table", X)], wait=False, **WHO)
    assert waiting.state is LockState.WAITING
    txns.commit(txn)
    assert locks.check_lock(waiting.lock_id).state is LockState.ACQUIRED


def test_write_lock_in_txn_records_txn_components(db, locks, txns):
    txn = txns.open_txn(**WHO)
    write_id = txns.allocate_write_id(txn, "d", "t")
    locks.lock([
        lock_component_for(DataOperation.UPDATE, "d", "t", "ds=1"),
        lock_component_for(DataOperation.INSERT, "d", "t", "ds=2"),
        lock_component_for(DataOperation.SELECT, "d", "s"),
        LockComponent(db="d", table="nt", lock_type=W, operation=OperationType.INSERT, is_transactional=False),
        LockComponent(db="d", table="dp", lock_type=W, operation=OperationType.INSERT, is_dynamic_partition_write=True,
                      partition="x=1"),
        LockComponent(db="d", table="dp", lock_type=W, operation=OperationType.DELETE, is_dynamic_partition_write=True,
                      partition="x=2"),
    ], txn_id=txn, **WHO)
    rows = db.run(lambda c: c.execute(sa.select(TXN_COMPONENTS).order_by(TXN_COMPONENTS.c.TC_TABLE,
                                                                        TXN_COMPONENTS.c.TC_PARTITION)).all())
    got = sorted((r.TC_TABLE, r.TC_PARTITION, r.TC_OPERATION_TYPE, r.TC_WRITEID) for r in rows)
    assert got == sorted([("t", "ds=1", "u", write_id), ("t", "ds=2", "i", write_id), ("dp", None, "u", None)])


def test_a_second_lock_of_the_txn_adds_only_new_components(db, locks, txns):
    """Each lock request records its write components with one INSERT … SELECT that skips rows already there and
    looks up the write id (none for a table without one, or a whole database)."""
    txn = txns.open_txn(**WHO)
    write_id = txns.allocate_write_id(txn, "d", "t")
    first = [lock_component_for(DataOperation.INSERT, "d", "t", "ds=1"), lock_component_for(DataOperation.INSERT, "d", "u")]
    locks.lock(first, txn_id=txn, **WHO)
    locks.lock([*first, lock_component_for(DataOperation.INSERT, "d", "t", "ds=2"),
                LockComponent(db="d", table=None, lock_type=W, operation=OperationType.INSERT)], txn_id=txn, **WHO)
    rows = db.run(lambda c: c.execute(sa.select(TXN_COMPONENTS)).all())
    got = sorted(((r.TC_TABLE or ""), r.TC_PARTITION or "", r.TC_OPERATION_TYPE, r.TC_WRITEID) for r in rows)
    assert got == [("", "", "i", None), ("t", "ds=1", "i", write_id), ("t", "ds=2", "i", write_id),
                   ("u", "", "i", None)]


def test_zero_wait_read_in_txn_is_withdrawn_at_once(db, txns):
    """Zero-wait reads are on unless hive.txn.xlock.iow and hive.txn.xlock.write are both true (Hive 4's defaults,
    under which a blocked read waits like any request)."""
    assert not zero_wait_reads_default(MetastoreConf())
    conf = MetastoreConf(lock_numretries=2, lock_sleep_between_retries_s=0.2, txn_xlock_write=False)
    assert zero_wait_reads_default(conf)
    locks = LockManager(db, conf)
    exclusive = locks.lock([comp("table", E)], **WHO)
    txn = txns.open_txn(**WHO, txn_type=TxnType.COMPACTION)
    started = time.monotonic()
    response = locks.lock([lock_component_for(DataOperation.COMPACT, "d", "t")], txn_id=txn, **WHO)
    assert time.monotonic() - started < 1.0
    assert response.state is LockState.NOT_ACQUIRED
    assert response.blocked_by.lock_id == exclusive.lock_id
    assert "Unable to acquire read lock due to an existing exclusive lock" in response.error_message
    assert [r.ext_id for r in locks.show_locks()] == [exclusive.lock_id]


def test_waiting_backs_off_then_withdraws_and_names_the_blocker(db):
    conf = MetastoreConf(lock_numretries=3, lock_sleep_between_retries_s=0.15)
    locks = LockManager(db, conf)
    blocker = locks.lock([comp("partition", X)], user="bob", host="etl7")
    started = time.monotonic()
    with pytest.raises(LockNotAcquiredError) as info:
        locks.lock([comp("partition", W)], **WHO)
    elapsed = time.monotonic() - started
    # sleeps 0.10 + 0.15 + 0.15 (doubling, capped at the configured maximum)
    assert 0.38 <= elapsed < 2.0
    message = str(info.value)
    assert "d.t/ds=1" in message and f"lock {blocker.lock_id}.1" in message and "bob@etl7" in message
    assert "after 3 tries" in message
    assert [r.ext_id for r in locks.show_locks()] == [blocker.lock_id]  # request withdrawn


def test_waiting_succeeds_when_the_blocker_goes_away(db):
    locks = LockManager(db, MetastoreConf(lock_numretries=20, lock_sleep_between_retries_s=0.1))
    blocker = locks.lock([comp("table", E)], **WHO)
    import threading

    threading.Timer(0.25, lambda: locks.unlock(blocker.lock_id)).start()
    assert locks.lock([comp("table", R)], **WHO).state is LockState.ACQUIRED


def test_show_locks_columns_filters_and_blocked_by(locks, txns):
    txn = txns.open_txn(**WHO)
    held = locks.lock([comp("partition", X)], txn_id=txn, agent_info="job-1", **WHO)
    other = locks.lock([comp("table", R, table="u")], user="bob", host="h2")
    waiting = locks.lock([comp("table", W)], wait=False, user="carol", host="h3")
    rows = locks.show_locks(extended=True)
    assert [r.lockid for r in rows] == [f"{held.lock_id}.1", f"{other.lock_id}.1", f"{waiting.lock_id}.1"]
    first, second, third = rows
    assert (first.database, first.table, first.partition, first.lock_state, first.lock_type, first.transaction_id,
            first.user, first.hostname, first.agent_info) == ("d", "t", "ds=1", "ACQUIRED", "EXCL_WRITE", txn,
                                                               "alice", "node1", "job-1")
    assert first.last_heartbeat == 0 and first.acquired_at > 0  # txn locks heartbeat through TXNS
    assert second.transaction_id is None and second.last_heartbeat > 0
    assert third.lock_state == "WAITING" and third.blocked_by == f"{held.lock_id}.1"
    assert third.blocked_by_txn_id == txn and third.acquired_at is None
    assert len(third.as_strings()) == 13 and third.as_strings()[9] == "NULL"
    assert [r.ext_id for r in locks.show_locks(db="d", table="u")] == [other.lock_id]
    assert [r.ext_id for r in locks.show_locks(db="d", table="t", partition="ds=1")] == [held.lock_id]
    assert locks.show_locks(db="nothing") == []


def test_unlock_releases_and_unknown_lock_is_a_clear_error(locks):
    held = locks.lock([comp("db", E)], **WHO)
    locks.unlock(held.lock_id)
    assert locks.show_locks() == []
    with pytest.raises(NoSuchLockError, match=f"lock {held.lock_id} does not exist"):
        locks.unlock(held.lock_id)
    with pytest.raises(NoSuchLockError):
        locks.check_lock(held.lock_id)


def test_lock_ids_come_from_next_lock_id_and_are_never_reused(db, locks):
    ids = [locks.lock([comp("table", R)], **WHO).lock_id for _ in range(3)]
    for lock_id in ids:
        locks.unlock(lock_id)
    again = locks.lock([comp("table", R)], **WHO).lock_id
    assert ids == sorted(ids) and len(set(ids)) == 3 and again > max(ids)
    assert db.run(lambda c: c.execute(sa.select(sa.func.count()).select_from(HIVE_LOCKS)).scalar_one()) == 1


@pytest.mark.parametrize("operation,xlock_write,expected_type,expected_op", [
    (DataOperation.SELECT, False, R, OperationType.SELECT),
    (DataOperation.INSERT, False, W, OperationType.INSERT),
    (DataOperation.UPDATE, False, W, OperationType.UPDATE),
    (DataOperation.DELETE, False, W, OperationType.DELETE),
    (DataOperation.INSERT_OVERWRITE, False, X, OperationType.UPDATE),
    (DataOperation.COMPACT, False, R, OperationType.SELECT),
    (DataOperation.INSERT, True, R, OperationType.INSERT),
    (DataOperation.UPDATE, True, X, OperationType.UPDATE),
    (DataOperation.INSERT_OVERWRITE, True, E, OperationType.UPDATE),
])
def test_lock_types_for_operations(operation, xlock_write, expected_type, expected_op):
    assert lock_type_for(operation, xlock_write=xlock_write) is expected_type
    assert operation_type_for(operation) is expected_op
