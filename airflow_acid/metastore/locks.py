"""Hive 4's lock manager on HIVE_LOCKS: FIFO lock requests with the shared-read / shared-write / excl-write /
exclusive compatibility matrix (docs/hive-acid.md#locks, Hive's EnqueueLockFunction and CheckLockFunction).

A request (one lock id from NEXT_LOCK_ID, one row per component) is granted only when no lock with a smaller
id on an overlapping resource conflicts with any of its components; otherwise its rows stay waiting with the
blocking lock recorded. Locks of a transaction are released by its commit or abort; locks outside a
transaction by :meth:`LockManager.unlock` or the housekeeper's timeout.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from typing_extensions import Unpack

from airflow_acid.acid.codes import DataOperation, LockState, LockType, OperationType, TxnState
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, clock_column, now_ms
from airflow_acid.metastore.errors import (
    InvalidInputError,
    LockNotAcquiredError,
    NoSuchLockError,
    NoSuchTxnError,
    TxnAbortedError,
    TxnOpenError,
    TxnStateError,
)
from airflow_acid.metastore.flavour import insert_into, profile_of
from airflow_acid.metastore.partitions import normalize_partition_name
from airflow_acid.metastore.schema import HIVE_LOCKS, NEXT_LOCK_ID, TXNS
from airflow_acid.metastore.txns import record_component

log = logging.getLogger(__name__)

INITIAL_BACKOFF_S = 0.1
_WRITE_OPS = (OperationType.INSERT, OperationType.UPDATE, OperationType.DELETE)


@dataclass(frozen=True)
class LockComponent:
    """One resource of a lock request: a database, a table, or a partition (by Hive partition name)."""

    db: str
    table: str | None = None
    partition: str | None = None
    lock_type: LockType = LockType.SHARED_READ
    operation: OperationType = OperationType.SELECT
    is_transactional: bool = True
    is_dynamic_partition_write: bool = False

    def __post_init__(self) -> None:
        if not self.db:
            raise InvalidInputError("a lock component needs a database name")
        if self.partition is not None and self.table is None:
            raise InvalidInputError(f"lock component on partition {self.partition!r} of database {self.db} "
                                    "needs a table name")
        object.__setattr__(self, "db", self.db.lower())
        object.__setattr__(self, "table", self.table.lower() if self.table else None)
        object.__setattr__(self, "partition", normalize_partition_name(self.partition))
        object.__setattr__(self, "lock_type", LockType(self.lock_type))
        object.__setattr__(self, "operation", OperationType(self.operation))

    @property
    def resource(self) -> str:
        """``db``, ``db.table`` or ``db.table/partition`` for messages."""
        return _resource(self.db, self.table, self.partition)


@dataclass(frozen=True)
class BlockingLock:
    """The lock that keeps a request waiting."""

    lock_id: int
    internal_id: int
    txn_id: int
    lock_type: LockType
    state: LockState
    resource: str
    user: str
    host: str

    def describe(self) -> str:
        owner = f"transaction {self.txn_id}" if self.txn_id else "no transaction"
        return (f"lock {self.lock_id}.{self.internal_id} ({self.lock_type.name} {self.state.display.lower()} on "
                f"{self.resource}, {owner}, {self.user}@{self.host})")


@dataclass(frozen=True)
class LockResponse:
    """The outcome of a lock request or check."""

    lock_id: int
    state: LockState
    blocked_by: BlockingLock | None = None
    error_message: str | None = None


@dataclass(frozen=True)
class ShowLocksRow:
    """One row of SHOW LOCKS (Hive's DbTxnManager columns, plus typed ids)."""

    lockid: str
    database: str
    table: str | None
    partition: str | None
    lock_state: str
    blocked_by: str | None
    lock_type: str
    transaction_id: int | None
    last_heartbeat: int
    acquired_at: int | None
    user: str
    hostname: str
    agent_info: str | None
    ext_id: int
    int_id: int
    heartbeat_count: int | None = None
    blocked_by_txn_id: int | None = None

    COLUMNS = ("lockid", "database", "table", "partition", "lock_state", "blocked_by", "lock_type", "transaction_id",
               "last_heartbeat", "acquired_at", "user", "hostname", "agent_info")

    def as_strings(self) -> list[str]:
        """The row as SHOW LOCKS prints it (NULL for missing values)."""
        return ["NULL" if getattr(self, c) is None else str(getattr(self, c)) for c in self.COLUMNS]


def lock_type_for(operation: DataOperation, *, xlock_write: bool = False, xlock_iow: bool = True) -> LockType:
    """The lock a statement takes on its target (AcidUtils.makeLockComponents, hive.txn.xlock.write/iow)."""
    operation = DataOperation(operation)
    if operation in (DataOperation.SELECT, DataOperation.COMPACT):
        return LockType.SHARED_READ
    if operation is DataOperation.INSERT:
        return LockType.SHARED_READ if xlock_write else LockType.SHARED_WRITE
    if operation in (DataOperation.UPDATE, DataOperation.DELETE):
        return LockType.EXCL_WRITE if xlock_write else LockType.SHARED_WRITE
    if operation is DataOperation.INSERT_OVERWRITE:
        return LockType.EXCLUSIVE if (xlock_write and xlock_iow) else LockType.EXCL_WRITE
    if operation is DataOperation.REBALANCE:
        return LockType.EXCL_WRITE
    raise InvalidInputError(f"no lock type for operation {operation}")  # pragma: no cover - enum is closed


def operation_type_for(operation: DataOperation) -> OperationType:
    """The TXN_COMPONENTS operation recorded for a statement (INSERT OVERWRITE counts as an update in Hive)."""
    return {
        DataOperation.SELECT: OperationType.SELECT,
        DataOperation.COMPACT: OperationType.SELECT,
        DataOperation.INSERT: OperationType.INSERT,
        DataOperation.UPDATE: OperationType.UPDATE,
        DataOperation.DELETE: OperationType.DELETE,
        DataOperation.INSERT_OVERWRITE: OperationType.UPDATE,
        DataOperation.REBALANCE: OperationType.SELECT,  # the compactor's output is recorded by its 'c' component
    }[DataOperation(operation)]


def lock_component_for(operation: DataOperation, db: str, table: str | None = None, partition: str | None = None, *,
                       conf: MetastoreConf | None = None, is_transactional: bool = True,
                       is_dynamic_partition_write: bool = False) -> LockComponent:
    """A LockComponent for a statement under the configured hive.txn.xlock.* settings."""
    conf = conf or MetastoreConf()
    return LockComponent(db=db, table=table, partition=partition,
                         lock_type=lock_type_for(operation, xlock_write=conf.txn_xlock_write,
                                                 xlock_iow=conf.txn_xlock_iow),
                         operation=operation_type_for(operation), is_transactional=is_transactional,
                         is_dynamic_partition_write=is_dynamic_partition_write)


def zero_wait_reads_default(conf: MetastoreConf) -> bool:
    """Hive turns zero-wait reads on unless both hive.txn.xlock.iow and hive.txn.xlock.write are true."""
    return not (conf.txn_xlock_iow and conf.txn_xlock_write)


def _resource(db: str, table: str | None, partition: str | None) -> str:
    text = db if table is None else f"{db}.{table}"
    return text if partition is None else f"{text}/{partition}"


def _conflict_condition(req: sa.FromClause, ex: sa.FromClause) -> sa.ColumnElement[bool]:
    """Whether existing lock ``ex`` blocks requested component ``req`` (the docs/hive-acid.md#locks matrix,
    CheckLockFunction)."""
    r, w, x, e = (t.value for t in (LockType.SHARED_READ, LockType.SHARED_WRITE, LockType.EXCL_WRITE,
                                    LockType.EXCLUSIVE))
    req_type, ex_type = req.c.HL_LOCK_TYPE, ex.c.HL_LOCK_TYPE
    return sa.or_(
        # a shared read waits only for an exclusive lock, except a DB-level read vs a table-level exclusive
        sa.and_(req_type == r, ex_type == e, sa.not_(sa.and_(ex.c.HL_TABLE.is_not(None), req.c.HL_TABLE.is_(None)))),
        # an exclusive waits for everything, except a DB-level read when it locks a table
        sa.and_(req_type == e, sa.not_(sa.and_(ex.c.HL_TABLE.is_(None), ex_type == r, req.c.HL_TABLE.is_not(None)))),
        sa.and_(req_type == w, sa.or_(ex_type == x, ex_type == e)),  # no IN list: re-rendered at every lock
        sa.and_(req_type == x, ex_type != r),
    )


def _overlap_condition(req: sa.FromClause, ex: sa.FromClause) -> sa.ColumnElement[bool]:
    """Same database and (either side a whole database, or same table and (either side a whole table or same
    partition))."""
    return sa.and_(
        ex.c.HL_DB == req.c.HL_DB,
        sa.or_(
            ex.c.HL_TABLE.is_(None), req.c.HL_TABLE.is_(None),
            sa.and_(ex.c.HL_TABLE == req.c.HL_TABLE,
                    sa.or_(ex.c.HL_PARTITION.is_(None), req.c.HL_PARTITION.is_(None),
                           ex.c.HL_PARTITION == req.c.HL_PARTITION)),
        ),
    )


def find_blocker(conn: Connection, lock_id: int) -> sa.Row[Unpack[tuple[Any, ...]]] | None:
    """The earliest lock (smaller id, acquired or waiting) that conflicts with a component of ``lock_id``.

    Returns a row with the blocking lock's columns plus REQ_INT_ID / REQ_TYPE of the blocked component, or None.
    """
    return conn.execute(_blocker_query(), {"lock_id": lock_id}).first()


_NEXT_LOCK_ID_RETURNING = (sa.update(NEXT_LOCK_ID).values(NL_NEXT=NEXT_LOCK_ID.c.NL_NEXT + 1)
                           .returning(NEXT_LOCK_ID.c.NL_NEXT))
_NEXT_LOCK_ID_LOCKED = sa.select(NEXT_LOCK_ID.c.NL_NEXT).with_for_update()
_NEXT_LOCK_ID_SET = sa.update(NEXT_LOCK_ID).values(NL_NEXT=sa.bindparam("next", type_=sa.BigInteger))
_GRANT = (sa.update(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == sa.bindparam("lock_id", type_=sa.BigInteger))
          .values(HL_LOCK_STATE=LockState.ACQUIRED.value, HL_ACQUIRED_AT=sa.bindparam("now", type_=sa.BigInteger),
                  HL_LAST_HEARTBEAT=sa.bindparam("heartbeat", type_=sa.BigInteger), HL_BLOCKEDBY_EXT_ID=None,
                  HL_BLOCKEDBY_INT_ID=None))
"""A request granted: every row acquired at ``now`` (``heartbeat`` 0 inside a txn, whose heartbeat covers it)."""


@functools.cache
def _open_txn_row(dialect: str) -> sa.Select[Any]:
    """The state of TXNS row ``txn_id``, locked, and the database clock."""
    return (sa.select(TXNS.c.TXN_STATE, clock_column(dialect).label("now"))
            .where(TXNS.c.TXN_ID == sa.bindparam("txn_id", type_=sa.BigInteger)).with_for_update())


@functools.cache
def _blocker_query() -> sa.Select[Any]:
    """find_blocker's statement, built once (building it took longer than running it): ``lock_id`` is bound."""
    req = HIVE_LOCKS.alias("REQ")
    ex = HIVE_LOCKS.alias("EX")
    lock_id = sa.bindparam("lock_id", type_=sa.BigInteger)
    return (
        sa.select(ex.c.HL_LOCK_EXT_ID, ex.c.HL_LOCK_INT_ID, ex.c.HL_TXNID, ex.c.HL_DB, ex.c.HL_TABLE,
                  ex.c.HL_PARTITION, ex.c.HL_LOCK_STATE, ex.c.HL_LOCK_TYPE, ex.c.HL_USER, ex.c.HL_HOST,
                  req.c.HL_LOCK_INT_ID.label("REQ_INT_ID"), req.c.HL_LOCK_TYPE.label("REQ_TYPE"))
        .select_from(req.join(ex, _overlap_condition(req, ex)))
        .where(req.c.HL_LOCK_EXT_ID == lock_id, ex.c.HL_LOCK_EXT_ID < lock_id,
               sa.or_(req.c.HL_TXNID == 0, ex.c.HL_TXNID != req.c.HL_TXNID),
               _conflict_condition(req, ex))
        .order_by(ex.c.HL_LOCK_EXT_ID, ex.c.HL_LOCK_INT_ID, req.c.HL_LOCK_INT_ID)
        .limit(1)
    )


@functools.cache
def _grant_unless_blocked() -> sa.Update:
    """:data:`_GRANT` when :func:`find_blocker` finds nothing, in one statement (the common, uncontended case needs
    no separate check). The blocker query is a derived table: MySQL refuses a subquery on the table it updates
    unless the subquery is materialized, which its LIMIT ensures."""
    blocked = sa.select(sa.literal(1)).select_from(_blocker_query().subquery("BLOCKER")).exists()
    return _GRANT.where(~blocked)


class LockManager:
    """Lock requests, checks, unlocks and SHOW LOCKS on one metastore database."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    # requesting ----------------------------------------------------------------------------------------

    def lock(self, components: Sequence[LockComponent], *, txn_id: int = 0, user: str, host: str,
             agent_info: str | None = None, wait: bool = True, zero_wait_read: bool | None = None) -> LockResponse:
        """Request locks on all ``components`` at once (granted together or not at all).

        With ``wait`` the call polls until granted, backing off from 100 ms doubling up to
        hive.lock.sleep.between.retries for hive.lock.numretries tries, then withdraws the request and raises
        LockNotAcquiredError naming the resource and the blocking lock. ``zero_wait_read`` (default per
        hive.txn.xlock.*): a blocked SHARED_READ inside a transaction is withdrawn at once and NOT_ACQUIRED
        returned.
        """
        components = list(components)
        if not components:
            raise InvalidInputError("a lock request needs at least one component")
        if not user or not host:
            raise InvalidInputError("a lock request needs a user and a host name")
        zero_wait = zero_wait_reads_default(self.conf) if zero_wait_read is None else zero_wait_read
        txn_id = int(txn_id)

        def work(conn: Connection) -> LockResponse:
            lock_id, now = self._enqueue(conn, components, txn_id, user, host, agent_info)
            # just enqueued in this transaction: every row waits, the txn is open and locked, the clock is read
            return self._check(conn, lock_id, zero_wait, enqueued=(txn_id, now))

        response = self.db.run(work, what="lock")
        if response.state is LockState.WAITING and wait:
            response = self._wait(response, zero_wait)
        return response

    def _enqueue(self, conn: Connection, components: list[LockComponent], txn_id: int, user: str, host: str,
                 agent_info: str | None) -> tuple[int, int]:
        """Insert the request's rows (waiting); returns its lock id and the database clock."""
        if txn_id:
            now = self._require_open_txn(conn, txn_id)
            self._record_write_components(conn, components, txn_id)
        else:
            now = now_ms(conn)
        # NEXT_LOCK_ID stays locked until this transaction commits, so lock ids are handed out in the order the
        # requests become visible: a request never misses an earlier one (FIFO fairness).
        if conn.dialect.update_returning:  # one statement: the UPDATE takes the row lock and returns the new value
            lock_id = int(conn.execute(_NEXT_LOCK_ID_RETURNING).scalar_one()) - 1
        else:
            lock_id = int(conn.execute(_NEXT_LOCK_ID_LOCKED).scalar_one())
            conn.execute(_NEXT_LOCK_ID_SET, {"next": lock_id + 1})
        profile = profile_of(conn)  # Hive 4.3+ adds HL_CATALOG (NOT NULL): filled with the default catalog
        conn.execute(insert_into(profile, HIVE_LOCKS), profile.with_extras(HIVE_LOCKS, [
            {"HL_LOCK_EXT_ID": lock_id, "HL_LOCK_INT_ID": i, "HL_TXNID": txn_id, "HL_DB": c.db,
             "HL_TABLE": c.table, "HL_PARTITION": c.partition, "HL_LOCK_STATE": LockState.WAITING.value,
             "HL_LOCK_TYPE": c.lock_type.value, "HL_LAST_HEARTBEAT": 0 if txn_id else now,
             "HL_USER": user[:128], "HL_HOST": host[:128], "HL_AGENT_INFO": agent_info[:128] if agent_info else None,
             "HL_HEARTBEAT_COUNT": 0}
            for i, c in enumerate(components, start=1)]))
        return lock_id, now

    @staticmethod
    def _require_open_txn(conn: Connection, txn_id: int) -> int:
        """Lock the TXNS row of ``txn_id``, refuse a txn that is not open; returns the database clock."""
        row = conn.execute(_open_txn_row(conn.dialect.name), {"txn_id": txn_id}).first()
        if row is None:
            raise NoSuchTxnError(f"cannot lock for transaction {txn_id}: no such transaction; open one first")
        if row.TXN_STATE == TxnState.ABORTED.value:
            raise TxnAbortedError(f"cannot lock for transaction {txn_id}: it was aborted; open a new transaction")
        if row.TXN_STATE != TxnState.OPEN.value:
            raise TxnStateError(f"cannot lock for transaction {txn_id}: it is already committed")
        return int(row.now)

    @staticmethod
    def _record_write_components(conn: Connection, components: list[LockComponent], txn_id: int) -> None:
        """EnqueueLock's TXN_COMPONENTS rows: one per written partition/table; a dynamic-partition write is one
        table-level row ('u' if any DP component of the table updates or deletes, else 'i')."""
        dp_update_tables = {(c.db, c.table) for c in components if c.is_dynamic_partition_write
                            and c.operation in (OperationType.UPDATE, OperationType.DELETE)}
        done_dp_tables: set[tuple[str, str | None]] = set()
        for c in components:
            if not c.is_transactional or c.operation not in _WRITE_OPS:
                continue
            key = (c.db, c.table)
            partition, op = c.partition, c.operation
            if c.is_dynamic_partition_write:
                if key in done_dp_tables:
                    continue
                done_dp_tables.add(key)
                partition = None
                op = OperationType.UPDATE if key in dp_update_tables else OperationType.INSERT
            record_component(conn, txn_id, c.db, c.table, partition, op)

    # checking ------------------------------------------------------------------------------------------

    def check_lock(self, lock_id: int, *, zero_wait_read: bool | None = None) -> LockResponse:
        """Re-check a waiting request: grant it if nothing earlier conflicts any more (one DB transaction)."""
        zero_wait = zero_wait_reads_default(self.conf) if zero_wait_read is None else zero_wait_read
        return self.db.run(lambda conn: self._check(conn, int(lock_id), zero_wait), what=f"check lock {lock_id}")

    def _check(self, conn: Connection, lock_id: int, zero_wait: bool,
               enqueued: tuple[int, int] | None = None) -> LockResponse:
        """Grant ``lock_id`` if nothing earlier conflicts. ``enqueued`` = (txn id, clock) when this transaction has
        just enqueued the request (its rows are all waiting and the txn was checked)."""
        if enqueued is not None:
            txn_id, now = enqueued
        else:
            rows = conn.execute(sa.select(HIVE_LOCKS.c.HL_LOCK_STATE, HIVE_LOCKS.c.HL_TXNID)
                                .where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id)).all()
            if not rows:
                raise NoSuchLockError(f"lock {lock_id} does not exist: it was released, withdrawn or timed out; "
                                      "request the lock again")
            txn_id = int(rows[0].HL_TXNID)
            now = self._require_open_txn(conn, txn_id) if txn_id else now_ms(conn)
            if all(r.HL_LOCK_STATE == LockState.ACQUIRED.value for r in rows):
                return LockResponse(lock_id, LockState.ACQUIRED)
        if not txn_id and enqueued is None:  # checking counts as a heartbeat for a lock outside a transaction
            conn.execute(sa.update(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id)
                         .values(HL_LAST_HEARTBEAT=now))
        grant = {"lock_id": lock_id, "now": now, "heartbeat": 0 if txn_id else now}
        if conn.execute(_grant_unless_blocked(), grant).rowcount:
            return LockResponse(lock_id, LockState.ACQUIRED)
        blocker = find_blocker(conn, lock_id)
        if blocker is None:  # the blocker went away between the two statements (READ COMMITTED)
            conn.execute(_GRANT, grant)
            return LockResponse(lock_id, LockState.ACQUIRED)
        blocking = BlockingLock(
            lock_id=int(blocker.HL_LOCK_EXT_ID), internal_id=int(blocker.HL_LOCK_INT_ID), txn_id=int(blocker.HL_TXNID),
            lock_type=LockType(blocker.HL_LOCK_TYPE), state=LockState(blocker.HL_LOCK_STATE),
            resource=_resource(blocker.HL_DB, blocker.HL_TABLE, blocker.HL_PARTITION), user=blocker.HL_USER,
            host=blocker.HL_HOST)
        if zero_wait and txn_id and blocker.REQ_TYPE == LockType.SHARED_READ.value:
            conn.execute(sa.delete(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id))
            return LockResponse(lock_id, LockState.NOT_ACQUIRED, blocking,
                                f"Unable to acquire read lock due to an existing exclusive lock {{{blocking.describe()}}}")
        conn.execute(sa.update(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id,
                                                 HIVE_LOCKS.c.HL_LOCK_INT_ID == blocker.REQ_INT_ID)
                     .values(HL_BLOCKEDBY_EXT_ID=blocking.lock_id, HL_BLOCKEDBY_INT_ID=blocking.internal_id))
        return LockResponse(lock_id, LockState.WAITING, blocking)

    def _wait(self, response: LockResponse, zero_wait: bool) -> LockResponse:
        """Poll a waiting request with exponential backoff; withdraw it and raise when the tries run out."""
        started = time.monotonic()
        sleep = INITIAL_BACKOFF_S
        tries = 0
        while response.state is LockState.WAITING and tries < self.conf.lock_numretries:
            time.sleep(min(sleep, self.conf.lock_sleep_between_retries_s))
            sleep = min(sleep * 2, self.conf.lock_sleep_between_retries_s)
            tries += 1
            response = self.check_lock(response.lock_id, zero_wait_read=zero_wait)
        if response.state is not LockState.WAITING:
            return response
        resource = self._withdraw(response.lock_id)
        blocker = response.blocked_by
        raise LockNotAcquiredError(
            f"could not lock {resource} (lock {response.lock_id}) after {tries} tries in "
            f"{time.monotonic() - started:.1f} s: blocked by {blocker.describe() if blocker else 'an earlier lock'}. "
            "The request was withdrawn; retry later, or find the blocker with SHOW LOCKS and end its transaction "
            "(hive.lock.numretries / hive.lock.sleep.between.retries control the wait)")

    def _withdraw(self, lock_id: int) -> str:
        """Delete a request that is still waiting (also allowed inside a txn); return its resources for messages."""

        def work(conn: Connection) -> str:
            rows = conn.execute(sa.select(HIVE_LOCKS.c.HL_DB, HIVE_LOCKS.c.HL_TABLE, HIVE_LOCKS.c.HL_PARTITION,
                                          HIVE_LOCKS.c.HL_LOCK_TYPE)
                                .where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id)
                                .order_by(HIVE_LOCKS.c.HL_LOCK_INT_ID)).all()
            conn.execute(sa.delete(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id,
                                                     HIVE_LOCKS.c.HL_LOCK_STATE == LockState.WAITING.value))
            return ", ".join(f"{_resource(r.HL_DB, r.HL_TABLE, r.HL_PARTITION)} ({LockType(r.HL_LOCK_TYPE).name})"
                             for r in rows) or f"lock {lock_id}"

        return self.db.run(work, what=f"withdraw lock {lock_id}")

    # releasing -----------------------------------------------------------------------------------------

    def unlock(self, lock_id: int) -> None:
        """Release a lock taken outside a transaction (or withdraw a waiting request of a transaction).

        A transaction's acquired locks go with its commit or abort: unlocking them raises TxnOpenError.
        """
        lock_id = int(lock_id)

        def work(conn: Connection) -> None:
            deleted = conn.execute(sa.delete(HIVE_LOCKS).where(
                HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id,
                sa.or_(HIVE_LOCKS.c.HL_TXNID == 0, HIVE_LOCKS.c.HL_LOCK_STATE == LockState.WAITING.value))).rowcount
            if deleted:
                return
            owner = conn.execute(sa.select(HIVE_LOCKS.c.HL_TXNID).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id)
                                 .limit(1)).scalar()
            if owner is None:
                raise NoSuchLockError(f"lock {lock_id} does not exist: it was already released or timed out")
            raise TxnOpenError(f"lock {lock_id} belongs to transaction {owner}; it is released when that "
                               "transaction commits or aborts, not by unlock")

        self.db.run(work, what=f"unlock {lock_id}")

    # listing -------------------------------------------------------------------------------------------

    def show_locks(self, db: str | None = None, table: str | None = None, partition: str | None = None, *,
                   extended: bool = False) -> list[ShowLocksRow]:
        """SHOW LOCKS [EXTENDED] [db | table [PARTITION]]: current locks ordered by lock id.

        ``extended`` also fills heartbeat_count and the blocking lock's transaction id.
        """
        if partition is not None and table is None:
            raise InvalidInputError("SHOW LOCKS with a partition needs the table too")

        def work(conn: Connection) -> list[ShowLocksRow]:
            hl = HIVE_LOCKS
            blocker = HIVE_LOCKS.alias("BLOCKER")
            query = (sa.select(hl, blocker.c.HL_TXNID.label("BLOCKER_TXNID"))
                     .select_from(hl.outerjoin(blocker, sa.and_(
                         blocker.c.HL_LOCK_EXT_ID == hl.c.HL_BLOCKEDBY_EXT_ID,
                         blocker.c.HL_LOCK_INT_ID == hl.c.HL_BLOCKEDBY_INT_ID)))
                     .order_by(hl.c.HL_LOCK_EXT_ID, hl.c.HL_LOCK_INT_ID))
            if db is not None:
                query = query.where(hl.c.HL_DB == db.lower())
            if table is not None:
                query = query.where(hl.c.HL_TABLE == table.lower())
            if partition is not None:
                query = query.where(hl.c.HL_PARTITION == normalize_partition_name(partition))
            return [self._show_row(r, extended) for r in conn.execute(query)]

        return self.db.run(work, what="show locks")

    @staticmethod
    def _show_row(r: sa.Row[Unpack[tuple[Any, ...]]], extended: bool) -> ShowLocksRow:
        blocked = (f"{r.HL_BLOCKEDBY_EXT_ID}.{r.HL_BLOCKEDBY_INT_ID}"
                   if r.HL_BLOCKEDBY_EXT_ID is not None else None)
        return ShowLocksRow(
            lockid=f"{r.HL_LOCK_EXT_ID}.{r.HL_LOCK_INT_ID}", database=r.HL_DB, table=r.HL_TABLE,
            partition=r.HL_PARTITION, lock_state=LockState(r.HL_LOCK_STATE).display, blocked_by=blocked,
            lock_type=LockType(r.HL_LOCK_TYPE).name, transaction_id=int(r.HL_TXNID) or None,
            last_heartbeat=int(r.HL_LAST_HEARTBEAT), acquired_at=r.HL_ACQUIRED_AT, user=r.HL_USER,
            hostname=r.HL_HOST, agent_info=r.HL_AGENT_INFO, ext_id=int(r.HL_LOCK_EXT_ID), int_id=int(r.HL_LOCK_INT_ID),
            heartbeat_count=r.HL_HEARTBEAT_COUNT if extended else None,
            blocked_by_txn_id=(int(r.BLOCKER_TXNID) or None) if extended and r.BLOCKER_TXNID is not None else None)
