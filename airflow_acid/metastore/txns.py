"""Transactions and table write ids: open, commit (with first-committer-wins), abort, heartbeat, SHOW
TRANSACTIONS and write-id allocation, following Hive 4's TxnHandler functions (docs/hive-acid.md#compactor-transaction,
docs/hive-acid.md#id-allocation).

Every public method is one database transaction (``Database.run``), re-run as a whole on transient errors.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, overload

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from typing_extensions import Unpack

from airflow_acid.acid.codes import OperationType, TxnState, TxnType, UpdateDelete
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, clock_column, now_ms, runs_alone, writes_in_ctes
from airflow_acid.metastore.errors import (
    InvalidInputError,
    NoSuchLockError,
    NoSuchTxnError,
    TooManyOpenTxnsError,
    TxnAbortedError,
    TxnStateError,
    WriteConflictError,
)
from airflow_acid.metastore.flavour import insert_into, profile_of, writable_table
from airflow_acid.metastore.partitions import normalize_partition_name
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
from airflow_acid.pycompat import StrEnum

log = logging.getLogger(__name__)

FIELD_LIMIT = 128
"""Width of TXN_USER / TXN_HOST / TXN_AGENT_INFO / TXN_META_INFO."""

# Txn types whose commit neither records a write set nor checks write conflicts (CommitTxnFunction).
_WRITE_SET_SKIP_TYPES = frozenset({TxnType.READ_ONLY, TxnType.SOFT_DELETE, TxnType.COMPACTION})
_COMPACTION_TYPES = frozenset({TxnType.COMPACTION, TxnType.REBALANCE_COMPACTION})
_UPDATE_DELETE = (OperationType.UPDATE.value, OperationType.DELETE.value)


def _is_update_or_delete(column: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
    """``column IN ('u', 'd')`` as two comparisons: an IN list is an expanding parameter that SQLAlchemy re-renders
    at every execution, on the hot path of every commit."""
    return sa.or_(*(column == value for value in _UPDATE_DELETE))


class AbortReason(StrEnum):
    """Why a transaction was aborted; stored in TXNS.TXN_META_INFO (Hive's TxnErrorMsg names)."""

    USER = "ABORT_USER"
    TIMEOUT = "ABORT_TIMEOUT"
    WRITE_CONFLICT = "ABORT_WRITE_CONFLICT"
    COMPACTION_FAILED = "ABORT_COMPACTION_TXN"


@dataclass(frozen=True)
class TxnInfo:
    """One row of SHOW TRANSACTIONS (columns txnid, state, startedtime, lastheartbeattime, user, host)."""

    txnid: int
    state: TxnState
    startedtime: int
    lastheartbeattime: int
    user: str
    host: str
    txn_type: TxnType = TxnType.DEFAULT
    agent_info: str | None = None
    meta_info: str | None = None


@dataclass(frozen=True)
class TxnWrite:
    """What an open or aborted transaction writes to one table (its TXN_COMPONENTS and TXN_TO_WRITE_ID rows)."""

    database: str
    table: str | None
    partitions: tuple[str, ...]
    """Partitions named by its components (empty: the table, or none recorded yet)."""
    operations: tuple[OperationType, ...]
    write_id: int | None
    """Its write id on the table (None when it took none)."""


@dataclass(frozen=True)
class CommitResult:
    """What a commit did: the commit id (MAX(TXN_ID) under TXN_LOCK_TBL) if one was needed."""

    txn_id: int
    commit_id: int | None
    txn_type: TxnType


# --- helpers shared with the lock manager and the compaction queue --------------------------------------


def normalize_name(name: str, what: str) -> str:
    """Hive lower-cases database and table names; empty names are refused."""
    if name is None or not str(name).strip():
        raise InvalidInputError(f"{what} name must not be empty")
    return str(name).strip().lower()


def split_table_name(full_name: str) -> tuple[str, str]:
    """``"db.table"`` -> ``("db", "table")``, lower-cased."""
    db, sep, table = str(full_name).partition(".")
    if not sep or not db or not table or "." in table:
        raise InvalidInputError(f"table name {full_name!r} is not of the form 'database.table'")
    return normalize_name(db, "database"), normalize_name(table, "table")


def acquire_txn_lock(conn: Connection, *, shared: bool) -> None:
    """Take TXN_LOCK_TBL for the rest of ``conn``'s transaction: shared by openTxns, exclusive by commits that
    need a commit id, so MAX(TXN_ID) at commit covers every txn that opened before it (Hive's
    AcquireTxnLockFunction). SQLite needs nothing: BEGIN IMMEDIATE already serializes writers."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        conn.exec_driver_sql(f'LOCK TABLE "TXN_LOCK_TBL" IN {"SHARE" if shared else "EXCLUSIVE"} MODE')
    elif dialect == "mysql":
        conn.exec_driver_sql("SELECT TXN_LOCK FROM TXN_LOCK_TBL " + ("LOCK IN SHARE MODE" if shared else "FOR UPDATE"))


def high_water_mark(conn: Connection) -> int:
    """``SELECT MAX(TXN_ID) FROM TXNS`` (0 on an empty table)."""
    return int(conn.execute(_HIGH_WATER_MARK).scalar_one())


# Statements of the transaction hot path (open, commit, abort) are built once with bound parameters: building a
# Core statement costs several times more than running it (bench/bench_metastore_txns.py).
_TXN_ID = sa.bindparam("txn_id", type_=sa.BigInteger)
_TXN_IDS: sa.BindParameter[int] = sa.bindparam("txn_ids", expanding=True)
_HIGH_WATER_MARK = sa.select(sa.func.coalesce(sa.func.max(TXNS.c.TXN_ID), 0))
_TXN_ROW = sa.select(TXNS.c.TXN_STATE, TXNS.c.TXN_TYPE, TXNS.c.TXN_META_INFO).where(TXNS.c.TXN_ID == _TXN_ID)
_TXN_ROW_LOCKED = _TXN_ROW.with_for_update()
_INSERT_TXN = sa.insert(TXNS).returning(TXNS.c.TXN_ID)
_INSERT_TXNS = sa.insert(TXNS).returning(TXNS.c.TXN_ID)
"""A batch's TXNS rows: SQLAlchemy sends them as one multi-row INSERT … RETURNING ("insertmanyvalues"). The rows are
identical and the ids are sorted afterwards, so the order RETURNING gives them in does not matter; asking for
parameter order instead made SQLite insert the batch one row per statement (100 statements for a
Hive Streaming batch of 100)."""
_INSERT_MIN_HISTORY = sa.insert(MIN_HISTORY_LEVEL)
_DELETE_COMPONENTS = sa.delete(TXN_COMPONENTS).where(TXN_COMPONENTS.c.TC_TXNID == _TXN_ID)
_DELETE_TXN_LOCKS = sa.delete(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_TXNID == _TXN_ID)
_MARK_COMMITTED = sa.update(TXNS).where(TXNS.c.TXN_ID == _TXN_ID).values(TXN_STATE=TxnState.COMMITTED.value)
_DELETE_MIN_HISTORY = sa.delete(MIN_HISTORY_LEVEL).where(MIN_HISTORY_LEVEL.c.MHL_TXNID == _TXN_ID)
_MARK_ABORTED = (sa.update(TXNS).where(TXNS.c.TXN_ID.in_(_TXN_IDS), TXNS.c.TXN_STATE == TxnState.OPEN.value)
                 .values(TXN_STATE=TxnState.ABORTED.value, TXN_META_INFO=sa.bindparam("reason")))
_DELETE_LOCKS_OF = sa.delete(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_TXNID.in_(_TXN_IDS))
_DELETE_MIN_HISTORY_OF = sa.delete(MIN_HISTORY_LEVEL).where(MIN_HISTORY_LEVEL.c.MHL_TXNID.in_(_TXN_IDS))
_ABORT_STATEMENTS = (_MARK_ABORTED, _DELETE_LOCKS_OF, _DELETE_MIN_HISTORY_OF)
_ABORT_IN_ONE_STATEMENT = _MARK_ABORTED.add_cte(_DELETE_LOCKS_OF.cte("abort_locks"),
                                                _DELETE_MIN_HISTORY_OF.cte("abort_history"))
"""PostgreSQL: an abort's writes in one statement (data-modifying CTEs)."""
_DB = sa.bindparam("db", type_=sa.String)
_TABLE = sa.bindparam("table", type_=sa.String)
_COMPONENT_PARTITIONS = {
    whole_db: sa.select(TXN_COMPONENTS.c.TC_PARTITION).where(
        TXN_COMPONENTS.c.TC_TXNID == _TXN_ID, TXN_COMPONENTS.c.TC_DATABASE == _DB,
        TXN_COMPONENTS.c.TC_TABLE.is_(None) if whole_db else TXN_COMPONENTS.c.TC_TABLE == _TABLE,
        TXN_COMPONENTS.c.TC_OPERATION_TYPE == sa.bindparam("op", type_=sa.String))
    for whole_db in (False, True)}
"""Partitions already recorded for a txn, database, table (or none: True) and operation."""
_WRITE_ID_OF = sa.select(TXN_TO_WRITE_ID.c.T2W_WRITEID).where(
    TXN_TO_WRITE_ID.c.T2W_TXNID == _TXN_ID, TXN_TO_WRITE_ID.c.T2W_DATABASE == _DB, TXN_TO_WRITE_ID.c.T2W_TABLE == _TABLE)
_WRITE_IDS_OF = sa.select(TXN_TO_WRITE_ID.c.T2W_TXNID, TXN_TO_WRITE_ID.c.T2W_WRITEID).where(
    TXN_TO_WRITE_ID.c.T2W_DATABASE == _DB, TXN_TO_WRITE_ID.c.T2W_TABLE == _TABLE,
    TXN_TO_WRITE_ID.c.T2W_TXNID.in_(_TXN_IDS))
_TXN_ROWS_LOCKED = (sa.select(TXNS.c.TXN_ID, TXNS.c.TXN_STATE, TXNS.c.TXN_TYPE, TXNS.c.TXN_META_INFO)
                    .where(TXNS.c.TXN_ID.in_(_TXN_IDS)).with_for_update())
_ADVANCE_WRITE_ID = (sa.update(NEXT_WRITE_ID).where(NEXT_WRITE_ID.c.NWI_DATABASE == _DB, NEXT_WRITE_ID.c.NWI_TABLE == _TABLE)
                     .values(NWI_NEXT=NEXT_WRITE_ID.c.NWI_NEXT + sa.bindparam("count", type_=sa.BigInteger))
                     .returning(NEXT_WRITE_ID.c.NWI_NEXT))


@functools.cache
def _open_facts(dialect: str) -> sa.Select[Any]:
    """The clock, the open-txn count (hive.max.open.txns) and the MIN_HISTORY_LEVEL watermark in one statement;
    ``timeout_ms`` is hive.txn.opentxn.timeout."""
    clock = clock_column(dialect)
    is_open = TXNS.c.TXN_STATE == TxnState.OPEN.value
    return sa.select(
        clock.label("now"),
        sa.select(sa.func.count()).select_from(TXNS).where(is_open).scalar_subquery().label("open_now"),
        sa.select(sa.func.min(TXNS.c.TXN_ID)).where(is_open).scalar_subquery().label("lowest_open"),
        sa.select(sa.func.coalesce(sa.func.max(TXNS.c.TXN_ID), 0))
        .where(TXNS.c.TXN_STARTED < clock - sa.bindparam("timeout_ms", type_=sa.BigInteger))
        .scalar_subquery().label("settled"),
    )


_TXN_ROW_VALUES: dict[str, sa.ColumnElement[Any]] = {
    "TXN_STATE": sa.literal(TxnState.OPEN.value, sa.CHAR(1)),
    "TXN_USER": sa.bindparam("TXN_USER", type_=sa.String), "TXN_HOST": sa.bindparam("TXN_HOST", type_=sa.String),
    "TXN_AGENT_INFO": sa.bindparam("TXN_AGENT_INFO", type_=sa.String),
    "TXN_HEARTBEAT_COUNT": sa.literal(0, sa.Integer), "TXN_TYPE": sa.bindparam("TXN_TYPE", type_=sa.Integer),
}


@functools.cache
def _open_txns_statement(with_min_history: bool) -> sa.Select[Any]:
    """PostgreSQL: :func:`_open_facts`, the TXNS rows and their MIN_HISTORY_LEVEL rows in ONE statement
    (data-modifying CTEs), so an open is LOCK + this. Rows are inserted only while ``open_now + n`` stays within
    ``max_open`` (hive.max.open.txns); the result is one row per new txn id, or one row with a NULL id when none
    were opened, each carrying ``open_now``. The facts are read from the statement's snapshot, taken after the
    TXN_LOCK_TBL lock as before; the inserted rows are not part of it."""
    facts = _open_facts("postgresql").cte("facts")
    n = sa.bindparam("n", type_=sa.Integer)
    copies = sa.func.generate_series(1, n).table_valued("i")
    rows = (
        sa.select(*_TXN_ROW_VALUES.values(), facts.c.now, facts.c.now)
        .select_from(facts).join(copies, sa.true())
        .where(facts.c.open_now + n <= sa.bindparam("max_open", type_=sa.BigInteger))
    )
    opened = (sa.insert(TXNS).from_select([*_TXN_ROW_VALUES, "TXN_STARTED", "TXN_LAST_HEARTBEAT"], rows)
              .returning(TXNS.c.TXN_ID).cte("opened"))
    result = (sa.select(facts.c.open_now, opened.c.TXN_ID)
              .select_from(facts).outerjoin(opened, sa.true()))
    if with_min_history:
        # MHL_MIN_OPEN_TXNID = min(settled + 1, lowest open txn, the txn itself): min_open_txn_watermark's rule.
        watermark = sa.func.least(facts.c.settled + 1, sa.func.coalesce(facts.c.lowest_open, opened.c.TXN_ID),
                                  opened.c.TXN_ID)
        history = sa.insert(MIN_HISTORY_LEVEL).from_select(
            ["MHL_TXNID", "MHL_MIN_OPEN_TXNID"],
            sa.select(opened.c.TXN_ID, watermark).select_from(opened).join(facts, sa.true())).cte("history")
        result = result.add_cte(history)
    return result


@functools.cache
def _commit_facts(dialect: str) -> sa.Select[int, bool, bool, bool]:
    """The clock and what the txn holds (components, update/delete components, locks), in one statement."""
    own = TXN_COMPONENTS.c.TC_TXNID == _TXN_ID
    return sa.select(
        clock_column(dialect).label("now"),
        sa.select(TXN_COMPONENTS.c.TC_TXNID).where(own).exists().label("has_components"),
        sa.select(TXN_COMPONENTS.c.TC_TXNID).where(own, _is_update_or_delete(TXN_COMPONENTS.c.TC_OPERATION_TYPE))
        .exists().label("has_update_delete"),
        sa.select(HIVE_LOCKS.c.HL_TXNID).where(HIVE_LOCKS.c.HL_TXNID == _TXN_ID).exists().label("has_locks"),
    )


@functools.cache
def _txn_row_and_commit_facts(dialect: str) -> sa.Select[Any]:
    """:data:`_TXN_ROW` with :func:`_commit_facts` beside it, for databases where a transaction :func:`runs_alone`."""
    return _TXN_ROW.add_columns(*_commit_facts(dialect).selected_columns)


@functools.cache
def _move_components(with_stamp: bool, extras: tuple[tuple[str, str], ...]) -> sa.Insert:
    """TXN_COMPONENTS of ``txn_id`` copied into COMPLETED_TXN_COMPONENTS with the commit's ``stamp`` (unless the
    column default fills it: Hive) and update/delete ``flag``; ``extras`` = (column, value) of newer Hive schemas."""
    moved = (
        sa.select(TXN_COMPONENTS.c.TC_TXNID, TXN_COMPONENTS.c.TC_DATABASE, TXN_COMPONENTS.c.TC_TABLE,
                  TXN_COMPONENTS.c.TC_PARTITION,
                  *([sa.bindparam("stamp", type_=sa.BigInteger)] if with_stamp else []), TXN_COMPONENTS.c.TC_WRITEID,
                  sa.bindparam("flag", type_=sa.CHAR(1)), *[sa.literal(v, sa.String()) for _c, v in extras])
        .where(TXN_COMPONENTS.c.TC_TXNID == _TXN_ID,
               TXN_COMPONENTS.c.TC_OPERATION_TYPE != OperationType.COMPACT.value)
    )
    target = writable_table(COMPLETED_TXN_COMPONENTS, tuple(column for column, _v in extras))
    return sa.insert(target).from_select(
        ["CTC_TXNID", "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION", *(["CTC_TIMESTAMP"] if with_stamp else []),
         "CTC_WRITEID", "CTC_UPDATE_DELETE", *[column for column, _v in extras]], moved)


def min_open_txn_watermark(conn: Connection, opentxn_timeout_ms: int, now: int | None = None) -> int:
    """Hive's MinOpenTxnIdWaterMarkFunction: min(lowest open txn id, 1 + highest txn id that started before the
    open-txn timeout window). Every txn below it has ended and no txn below it can still appear."""
    now = now_ms(conn) if now is None else now
    lowest_open = conn.execute(
        sa.select(sa.func.min(TXNS.c.TXN_ID)).where(TXNS.c.TXN_STATE == TxnState.OPEN.value)
    ).scalar_one()
    newest_settled = conn.execute(
        sa.select(sa.func.coalesce(sa.func.max(TXNS.c.TXN_ID), 0)).where(TXNS.c.TXN_STARTED < now - opentxn_timeout_ms)
    ).scalar_one()
    candidates = [int(newest_settled) + 1]
    if lowest_open is not None:
        candidates.append(int(lowest_open))
    return min(candidates)


def _txn_row(conn: Connection, txn_id: int, *, lock: bool) -> sa.Row[Unpack[tuple[Any, ...]]] | None:
    return conn.execute(_TXN_ROW_LOCKED if lock else _TXN_ROW, {"txn_id": txn_id}).first()


def _not_open_error(txn_id: int, row: sa.Row[Unpack[tuple[Any, ...]]] | None, action: str) -> TxnStateError:
    """The error for acting on a txn that is missing, committed or aborted (Hive's raiseTxnUnexpectedState)."""
    if row is None:
        return NoSuchTxnError(
            f"cannot {action} transaction {txn_id}: no such transaction (it never existed or has ended "
            "and been cleaned up); open a new transaction"
        )
    state = TxnState(row.TXN_STATE)
    if state is TxnState.ABORTED:
        why = f" ({row.TXN_META_INFO})" if row.TXN_META_INFO else ""
        return TxnAbortedError(
            f"cannot {action} transaction {txn_id}: it was already aborted{why}; "
            "its writes are discarded, open a new transaction and retry"
        )
    return TxnStateError(f"cannot {action} transaction {txn_id}: it is already committed")


def _open_txn_type(conn: Connection, txn_id: int, action: str) -> TxnType:
    row = _txn_row(conn, txn_id, lock=True)
    if row is None or row.TXN_STATE != TxnState.OPEN.value:
        raise _not_open_error(txn_id, row, action)
    return TxnType(row.TXN_TYPE if row.TXN_TYPE is not None else 0)


def _applied_commit(conn: Connection, txn_id: int) -> CommitResult | None:
    """The result of a commit of ``txn_id`` that is already in the database (its reply was lost), else None."""
    row = _txn_row(conn, txn_id, lock=False)
    if row is None or row.TXN_STATE != TxnState.COMMITTED.value:
        return None
    commit_id = conn.execute(sa.select(sa.func.max(WRITE_SET.c.WS_COMMIT_ID)).where(WRITE_SET.c.WS_TXNID == txn_id)
                             ).scalar()
    if commit_id is None:
        commit_id = conn.execute(sa.select(sa.func.max(COMPACTION_QUEUE.c.CQ_NEXT_TXN_ID))
                                 .where(COMPACTION_QUEUE.c.CQ_TXN_ID == txn_id)).scalar()
    return CommitResult(txn_id=txn_id, commit_id=None if commit_id is None else int(commit_id),
                        txn_type=TxnType(row.TXN_TYPE if row.TXN_TYPE is not None else 0))


def _clip(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    text = str(value)
    if len(text) > FIELD_LIMIT:
        log.debug("%s %r truncated to %d characters", what, text, FIELD_LIMIT)
        text = text[:FIELD_LIMIT]
    return text


def insert_txn_components(
    conn: Connection,
    txn_id: int,
    db: str,
    table: str | None,
    partitions: Iterable[str | None] | None,
    op: OperationType,
    write_id: int | None,
) -> int:
    """Record what ``txn_id`` touches in TXN_COMPONENTS (Hive's addDynamicPartitions / EnqueueLock rows).

    ``partitions`` None or empty means the whole table (TC_PARTITION NULL). Rows already present are not
    repeated. Runs inside the caller's transaction; returns the number of rows inserted.
    """
    op = OperationType(op)
    db = normalize_name(db, "database")
    table = normalize_name(table, "table") if table is not None else None
    parts: list[str | None] = list(dict.fromkeys(map(normalize_partition_name, partitions))) if partitions else [None]
    existing = {r.TC_PARTITION for r in conn.execute(_COMPONENT_PARTITIONS[table is None],
                                                       {"txn_id": txn_id, "db": db, "table": table, "op": op.value})}
    rows = [
        {"TC_TXNID": txn_id, "TC_DATABASE": db, "TC_TABLE": table, "TC_PARTITION": p,
         "TC_OPERATION_TYPE": op.value, "TC_WRITEID": write_id}
        for p in parts
        if p not in existing
    ]
    if rows:
        profile = profile_of(conn)
        conn.execute(insert_into(profile, TXN_COMPONENTS), profile.with_extras(TXN_COMPONENTS, rows))
    return len(rows)


def record_component(conn: Connection, txn_id: int, db: str, table: str | None, partition: str | None,
                     op: OperationType) -> None:
    """:func:`insert_txn_components` of one partition (or the whole table, or database: ``table`` None) with the
    write id ``txn_id`` holds on the table, looked up by the same statement: an INSERT … SELECT that adds nothing
    when the row is there already. One statement instead of three on the lock hot path (EnqueueLock's rows)."""
    db = normalize_name(db, "database")
    table = normalize_name(table, "table") if table is not None else None
    partition = normalize_partition_name(partition) if partition is not None else None
    profile = profile_of(conn)
    extras = tuple(profile.extra_values(TXN_COMPONENTS.name).items())
    conn.execute(_record_component_statement(table is None, partition is None, extras),
                 {"txn_id": txn_id, "db": db, "table": table, "partition": partition,
                  "op": OperationType(op).value})


@functools.cache
def _record_component_statement(whole_db: bool, whole_table: bool,
                                 extras: tuple[tuple[str, str], ...]) -> sa.Insert:
    part = sa.bindparam("partition", type_=sa.String)
    op = sa.bindparam("op", type_=sa.String)
    partition = TXN_COMPONENTS.c.TC_PARTITION
    recorded = _COMPONENT_PARTITIONS[whole_db].where(partition.is_(None) if whole_table else partition == part).exists()
    write_id: sa.ColumnElement[Any] = (sa.null() if whole_db else
                                       _WRITE_ID_OF.scalar_subquery())
    row = sa.select(_TXN_ID, _DB, sa.null() if whole_db else _TABLE, sa.null() if whole_table else part, op,
                    write_id, *[sa.literal(value, sa.String()) for _name, value in extras]).where(~recorded)
    target = writable_table(TXN_COMPONENTS, tuple(name for name, _value in extras))
    return sa.insert(target).from_select(
        ["TC_TXNID", "TC_DATABASE", "TC_TABLE", "TC_PARTITION", "TC_OPERATION_TYPE", "TC_WRITEID",
         *(name for name, _value in extras)], row)


def lookup_write_id(conn: Connection, txn_id: int, db: str, table: str) -> int | None:
    """The write id ``txn_id`` holds on ``db.table``, if any (names already lower-cased)."""
    value = conn.execute(_WRITE_ID_OF, {"txn_id": txn_id, "db": db, "table": table}).scalar()
    return None if value is None else int(value)


def allocate_write_ids_in(conn: Connection, txn_ids: Sequence[int], db: str, table: str) -> dict[int, int]:
    """Hive's AllocateTableWriteIdsFunction inside ``conn``'s transaction: reuse existing mappings, otherwise hand
    out consecutive ids from NEXT_WRITE_ID (locked FOR UPDATE) to the txns in ascending order."""
    db = normalize_name(db, "database")
    table = normalize_name(table, "table")
    ids = sorted(set(int(t) for t in txn_ids))
    if not ids:
        raise InvalidInputError(f"no transaction given to allocate a write id on {db}.{table}")
    rows = {r.TXN_ID: r for r in conn.execute(_TXN_ROWS_LOCKED, {"txn_ids": ids})}
    for txn_id in ids:
        row = rows.get(txn_id)
        if row is None or row.TXN_STATE != TxnState.OPEN.value:
            raise _not_open_error(txn_id, row, f"allocate a write id on {db}.{table} for")
        if row.TXN_TYPE == TxnType.READ_ONLY.value:
            raise TxnStateError(
                f"cannot allocate a write id on {db}.{table} for transaction {txn_id}: it is read-only; "
                "open a read-write transaction to write"
            )
    existing = {int(r.T2W_TXNID): int(r.T2W_WRITEID)
                for r in conn.execute(_WRITE_IDS_OF, {"db": db, "table": table, "txn_ids": ids})}
    missing = [t for t in ids if t not in existing]
    if not missing:
        return existing
    first = _reserve_write_ids(conn, db, table, len(missing))
    new = {txn_id: first + i for i, txn_id in enumerate(missing)}
    profile = profile_of(conn)
    conn.execute(
        insert_into(profile, TXN_TO_WRITE_ID),
        profile.with_extras(TXN_TO_WRITE_ID, [{"T2W_TXNID": t, "T2W_DATABASE": db, "T2W_TABLE": table,
                                               "T2W_WRITEID": w} for t, w in new.items()]),
    )
    return {**existing, **new}


def _reserve_write_ids(conn: Connection, db: str, table: str, count: int) -> int:
    """Advance NEXT_WRITE_ID for ``db.table`` by ``count``; return the first reserved id."""
    where = (NEXT_WRITE_ID.c.NWI_DATABASE == db, NEXT_WRITE_ID.c.NWI_TABLE == table)
    if conn.dialect.update_returning:  # one statement: the UPDATE takes the row lock and returns the new value
        after = conn.execute(_ADVANCE_WRITE_ID, {"db": db, "table": table, "count": count}).scalar()
        if after is not None:
            return int(after) - count
    select_next = sa.select(NEXT_WRITE_ID.c.NWI_NEXT).where(*where).with_for_update()
    current = conn.execute(select_next).scalar()
    if current is None:
        try:
            with conn.begin_nested():
                profile = profile_of(conn)
                conn.execute(sa.insert(profile.writable(NEXT_WRITE_ID)).values(profile.with_extras(
                    NEXT_WRITE_ID, {"NWI_DATABASE": db, "NWI_TABLE": table, "NWI_NEXT": 1 + count})))
            return 1
        except sa.exc.IntegrityError:
            current = conn.execute(select_next).scalar_one()  # a concurrent first allocation won the insert
    first = int(current)
    conn.execute(sa.update(NEXT_WRITE_ID).where(*where).values(NWI_NEXT=first + count))
    return first


def abort_txns_in(conn: Connection, txn_ids: Sequence[int], reason: str, *,
                  heartbeat_before: int | None = None, locked_open: bool = False) -> list[int]:
    """Abort the still-open txns among ``txn_ids`` inside ``conn``'s transaction (Hive's AbortTxnsFunction).

    TXN_STATE becomes 'a' and TXN_META_INFO the reason; locks and MIN_HISTORY_LEVEL rows go; TXN_COMPONENTS stay
    as the record of data to clean. A write id the txn holds on a table it recorded no component for gets a
    table-level component, so the aborted txn is never mistaken for an empty one (whose TXNS row the txn
    cleaner removes, which would make its write id look committed). With ``heartbeat_before`` only txns whose
    last heartbeat is older are aborted (timeouts racing a heartbeat). ``locked_open``: the caller has already
    locked the TXNS rows of ``txn_ids`` in this transaction and seen them open. Returns the ids actually aborted.
    """
    ids = sorted(set(int(t) for t in txn_ids))
    if not ids:
        return []
    cond = [TXNS.c.TXN_ID.in_(ids), TXNS.c.TXN_STATE == TxnState.OPEN.value]
    if heartbeat_before is not None:
        cond.append(TXNS.c.TXN_LAST_HEARTBEAT < heartbeat_before)
    if locked_open and heartbeat_before is None:
        aborted = ids
    else:
        aborted = sorted(int(r[0]) for r in conn.execute(sa.select(TXNS.c.TXN_ID).where(*cond).with_for_update()))
    if not aborted:
        return []
    params = {"txn_ids": aborted, "reason": _clip(reason, "abort reason")}
    if writes_in_ctes(conn):
        conn.execute(_ABORT_IN_ONE_STATEMENT, params)
    else:
        for statement in _ABORT_STATEMENTS:
            conn.execute(statement, params)
    _record_uncovered_write_ids(conn, aborted)
    log.info("aborted transaction(s) %s (%s)", aborted, reason)
    return aborted


def _record_uncovered_write_ids(conn: Connection, txn_ids: list[int]) -> None:
    t2w, tc = TXN_TO_WRITE_ID, TXN_COMPONENTS
    covered = (sa.select(tc.c.TC_TXNID).where(tc.c.TC_TXNID == t2w.c.T2W_TXNID, tc.c.TC_DATABASE == t2w.c.T2W_DATABASE,
                                              tc.c.TC_TABLE == t2w.c.T2W_TABLE).exists())
    rows = [
        {"TC_TXNID": int(r.T2W_TXNID), "TC_DATABASE": r.T2W_DATABASE, "TC_TABLE": r.T2W_TABLE, "TC_PARTITION": None,
         "TC_OPERATION_TYPE": OperationType.INSERT.value, "TC_WRITEID": int(r.T2W_WRITEID)}
        for r in conn.execute(
            sa.select(t2w.c.T2W_TXNID, t2w.c.T2W_DATABASE, t2w.c.T2W_TABLE, t2w.c.T2W_WRITEID)
            .where(t2w.c.T2W_TXNID.in_(txn_ids), ~covered)
        )
    ]
    if rows:
        conn.execute(sa.insert(TXN_COMPONENTS), rows)


@dataclass(frozen=True)
class _Conflict:
    txn_id: int
    commit_id: int
    winner_txn: int
    winner_commit_id: int
    database: str
    table: str
    partition: str | None
    op: str
    winner_op: str

    def message(self) -> str:
        where = f"{self.database}.{self.table}" + (f" partition {self.partition}" if self.partition else "")
        return (
            f"transaction {self.txn_id} was aborted: write conflict on {where} — transaction {self.winner_txn} "
            f"committed its {OperationType(self.winner_op).name.lower()} of it first (commit id "
            f"{self.winner_commit_id}) while this transaction's {OperationType(self.op).name.lower()} was running "
            "(first committer wins). "
            "Re-run the update/delete in a new transaction."
        )


@dataclass(frozen=True)
class _CommitEnding:
    """The writes that end a commit, after its checks: move TXN_COMPONENTS into COMPLETED_TXN_COMPONENTS (``move``:
    arguments of :func:`_move_components`, None when there is nothing to move), delete them and the txn's locks,
    mark the txn committed, drop its MIN_HISTORY_LEVEL row."""

    move: tuple[bool, tuple[tuple[str, str], ...]] | None
    delete_components: bool
    delete_locks: bool
    delete_history: bool

    def side_writes(self) -> list[sa.Insert | sa.Delete]:
        """The writes besides marking the txn committed, in order."""
        out: list[sa.Insert | sa.Delete] = []
        if self.move is not None:
            out.append(_move_components(*self.move))
        if self.delete_components:
            out.append(_DELETE_COMPONENTS)
        if self.delete_locks:
            out.append(_DELETE_TXN_LOCKS)
        if self.delete_history:
            out.append(_DELETE_MIN_HISTORY)
        return out

    def statements(self) -> list[sa.Executable]:
        """One statement per write (databases without :func:`writes_in_ctes`)."""
        return [*self.side_writes(), _MARK_COMMITTED]


@functools.cache
def _commit_ending_statement(ending: _CommitEnding) -> sa.Update:
    """Every write of ``ending`` in one statement: the side writes as data-modifying CTEs of the TXNS update. The
    parts share one snapshot, so the move still copies the components the delete removes."""
    return _MARK_COMMITTED.add_cte(*(part.cte(f"ending_{i}") for i, part in enumerate(ending.side_writes())))


# --- the store -----------------------------------------------------------------------------------------


class TxnStore:
    """Transactions and write ids on one metastore database (Hive's TxnHandler, txn part)."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    # open ----------------------------------------------------------------------------------------------

    def open_txns(self, count: int = 1, *, user: str, host: str, txn_type: TxnType = TxnType.DEFAULT,
                  agent_info: str | None = None) -> list[int]:
        """Open ``count`` transactions (capped at hive.txn.max.open.batch) and return their ids, ascending."""
        if count < 1:
            raise InvalidInputError(f"number of transactions to open must be at least 1, got {count}")
        if not user or not host:
            raise InvalidInputError("opening a transaction needs a user and a host name")
        txn_type = TxnType(txn_type)
        n = min(int(count), self.conf.txn_max_open_batch)
        if n < count:
            log.warning("asked for %d transactions, opening %d (hive.txn.max.open.batch)", count, n)
        return self.db.run(lambda conn: self._open(conn, n, user, host, txn_type, agent_info), what="open_txns")

    def open_txn(self, *, user: str, host: str, txn_type: TxnType = TxnType.DEFAULT,
                 agent_info: str | None = None) -> int:
        """Open one transaction and return its id."""
        return self.open_txns(1, user=user, host=host, txn_type=txn_type, agent_info=agent_info)[0]

    def _open(self, conn: Connection, n: int, user: str, host: str, txn_type: TxnType,
              agent_info: str | None) -> list[int]:
        acquire_txn_lock(conn, shared=True)
        if writes_in_ctes(conn):
            return self._open_in_one_statement(conn, n, user, host, txn_type, agent_info)
        facts = conn.execute(_open_facts(conn.dialect.name), {"timeout_ms": self.conf.opentxn_timeout_ms}).one()
        open_now, now = int(facts.open_now), int(facts.now)
        if open_now + n > self.conf.max_open_txns:
            raise self._too_many(n, open_now)
        # = min_open_txn_watermark(conn, opentxn_timeout_ms, now)
        min_open = int(facts.settled) + 1
        if facts.lowest_open is not None:
            min_open = min(min_open, int(facts.lowest_open))
        row = {
            "TXN_STATE": TxnState.OPEN.value, "TXN_STARTED": now, "TXN_LAST_HEARTBEAT": now,
            "TXN_USER": _clip(user, "user"), "TXN_HOST": _clip(host, "host"),
            "TXN_AGENT_INFO": _clip(agent_info, "agent info"), "TXN_HEARTBEAT_COUNT": 0,
            "TXN_TYPE": txn_type.value,
        }
        if n == 1:
            ids = [int(conn.execute(_INSERT_TXN, row).scalar_one())]
        else:
            ids = [int(r[0]) for r in conn.execute(_INSERT_TXNS, [row] * n)]
        if self.conf.use_min_history_level:
            conn.execute(_INSERT_MIN_HISTORY, [{"MHL_TXNID": t, "MHL_MIN_OPEN_TXNID": min(min_open, t)} for t in ids])
        return sorted(ids)

    def _open_in_one_statement(self, conn: Connection, n: int, user: str, host: str, txn_type: TxnType,
                               agent_info: str | None) -> list[int]:
        """:meth:`_open` on PostgreSQL: the same rows from one statement (two round trips fewer per open)."""
        rows = conn.execute(_open_txns_statement(self.conf.use_min_history_level), {
            "timeout_ms": self.conf.opentxn_timeout_ms, "n": n, "max_open": self.conf.max_open_txns,
            "TXN_USER": _clip(user, "user"), "TXN_HOST": _clip(host, "host"),
            "TXN_AGENT_INFO": _clip(agent_info, "agent info"), "TXN_TYPE": txn_type.value}).all()
        ids = sorted(int(r.TXN_ID) for r in rows if r.TXN_ID is not None)
        if not ids:
            raise self._too_many(n, int(rows[0].open_now))
        return ids

    def _too_many(self, n: int, open_now: int) -> TooManyOpenTxnsError:
        return TooManyOpenTxnsError(
            f"cannot open {n} transaction(s): {open_now} are already open and hive.max.open.txns is "
            f"{self.conf.max_open_txns}. Commit or abort idle transactions (SHOW TRANSACTIONS / ABORT "
            "TRANSACTIONS) or raise the limit."
        )

    # commit --------------------------------------------------------------------------------------------

    def commit(self, txn_id: int) -> CommitResult:
        """Commit ``txn_id``: copy its components to COMPLETED_TXN_COMPONENTS, check write-write conflicts
        (first committer wins: the later committer is aborted and WriteConflictError raised), release its locks.
        When the connection drops after the server applied the commit, the retry finds it done and reports success
        instead of "already committed" (a caller told its commit failed might write the same data again).
        """
        outcome = self.db.run(lambda conn: self._commit(conn, int(txn_id)), what=f"commit txn {txn_id}",
                              recover=lambda conn, _since_ms: _applied_commit(conn, int(txn_id)),
                              recover_needs_clock=False)
        if isinstance(outcome, _Conflict):
            log.info("%s", outcome.message())
            raise WriteConflictError(outcome.message())
        return outcome

    def _commit(self, conn: Connection, txn_id: int) -> CommitResult | _Conflict:
        facts: sa.Row[Unpack[tuple[Any, ...]]]
        if runs_alone(conn):  # the txn's row and what it holds, in one statement
            row = conn.execute(_txn_row_and_commit_facts(conn.dialect.name), {"txn_id": txn_id}).first()
            if row is None or row.TXN_STATE != TxnState.OPEN.value:
                raise _not_open_error(txn_id, row, "commit")
            txn_type, facts = TxnType(row.TXN_TYPE if row.TXN_TYPE is not None else 0), row
        else:
            txn_type = _open_txn_type(conn, txn_id, "commit")
            # One statement after the row lock (so it sees everything recorded for the txn before): the clock and
            # what the txn holds. Every writer of its TXN_COMPONENTS / HIVE_LOCKS rows locks its TXNS row first.
            facts = conn.execute(_commit_facts(conn.dialect.name), {"txn_id": txn_id}).one()
        now = int(facts.now)
        commit_id: int | None = None
        has_update_delete = txn_type not in _WRITE_SET_SKIP_TYPES and bool(facts.has_update_delete)
        if has_update_delete:
            acquire_txn_lock(conn, shared=False)
            commit_id = high_water_mark(conn)
            conflict = self._find_conflict(conn, txn_id)
            if conflict is not None:
                abort_txns_in(conn, [txn_id], AbortReason.WRITE_CONFLICT)
                return _Conflict(txn_id=txn_id, commit_id=commit_id, winner_txn=int(conflict.WS_TXNID),
                                 winner_commit_id=int(conflict.WS_COMMIT_ID), database=conflict.WS_DATABASE,
                                 table=conflict.WS_TABLE, partition=conflict.WS_PARTITION,
                                 op=conflict.CUR_OP, winner_op=conflict.WS_OPERATION_TYPE)
            ws_extras = profile_of(conn).extra_values(WRITE_SET.name)
            mine = (
                sa.select(TXN_COMPONENTS.c.TC_DATABASE, TXN_COMPONENTS.c.TC_TABLE, TXN_COMPONENTS.c.TC_PARTITION,
                          TXN_COMPONENTS.c.TC_TXNID, sa.literal(commit_id, sa.BigInteger),
                          TXN_COMPONENTS.c.TC_OPERATION_TYPE, *[sa.literal(v, sa.String()) for v in ws_extras.values()])
                .where(TXN_COMPONENTS.c.TC_TXNID == txn_id, _is_update_or_delete(TXN_COMPONENTS.c.TC_OPERATION_TYPE),
                       TXN_COMPONENTS.c.TC_TABLE.is_not(None))
                .distinct()
            )
            conn.execute(sa.insert(profile_of(conn).writable(WRITE_SET)).from_select(
                ["WS_DATABASE", "WS_TABLE", "WS_PARTITION", "WS_TXNID", "WS_COMMIT_ID", "WS_OPERATION_TYPE",
                 *ws_extras], mine))

        move: tuple[bool, tuple[tuple[str, str], ...]] | None = None
        params: dict[str, Any] = {"txn_id": txn_id}
        if txn_type in _COMPACTION_TYPES or txn_type is TxnType.SOFT_DELETE:
            if commit_id is None:
                acquire_txn_lock(conn, shared=False)
                commit_id = high_water_mark(conn)
            conn.execute(sa.update(COMPACTION_QUEUE).where(COMPACTION_QUEUE.c.CQ_TXN_ID == txn_id)
                         .values(CQ_NEXT_TXN_ID=commit_id, CQ_COMMIT_TIME=now))
        elif txn_type is not TxnType.READ_ONLY and facts.has_components:
            # Hive's CTC_TIMESTAMP is a timestamp filled by its column default; airflow-acid's own is epoch ms.
            profile = profile_of(conn)
            stamp = profile.commit_time_value(now)
            move = (stamp is not None, tuple(profile.extra_values(COMPLETED_TXN_COMPONENTS.name).items()))
            params["flag"] = UpdateDelete.YES.value if has_update_delete else UpdateDelete.NO.value
            if stamp is not None:
                params["stamp"] = stamp
        ending = _CommitEnding(move=move,
                               delete_components=txn_type is not TxnType.READ_ONLY and bool(facts.has_components),
                               delete_locks=bool(facts.has_locks), delete_history=self.conf.use_min_history_level)
        if writes_in_ctes(conn):
            conn.execute(_commit_ending_statement(ending), params)
        else:
            for statement in ending.statements():
                conn.execute(statement, params)
        return CommitResult(txn_id=txn_id, commit_id=commit_id, txn_type=txn_type)

    @staticmethod
    def _find_conflict(conn: Connection, txn_id: int) -> sa.Row[Unpack[tuple[Any, ...]]] | None:
        """A committed update/delete on a partition this txn updated/deleted, committed after this txn began."""
        cur = (
            sa.select(TXN_COMPONENTS.c.TC_DATABASE, TXN_COMPONENTS.c.TC_TABLE, TXN_COMPONENTS.c.TC_PARTITION,
                      TXN_COMPONENTS.c.TC_OPERATION_TYPE)
            .where(TXN_COMPONENTS.c.TC_TXNID == txn_id, _is_update_or_delete(TXN_COMPONENTS.c.TC_OPERATION_TYPE))
            .subquery("CUR")
        )
        ws = WRITE_SET
        query = (
            sa.select(ws.c.WS_TXNID, ws.c.WS_COMMIT_ID, ws.c.WS_DATABASE, ws.c.WS_TABLE, ws.c.WS_PARTITION,
                      ws.c.WS_OPERATION_TYPE, cur.c.TC_OPERATION_TYPE.label("CUR_OP"))
            .join_from(ws, cur, sa.and_(
                ws.c.WS_DATABASE == cur.c.TC_DATABASE,
                ws.c.WS_TABLE == cur.c.TC_TABLE,
                sa.or_(ws.c.WS_PARTITION == cur.c.TC_PARTITION,
                       sa.and_(ws.c.WS_PARTITION.is_(None), cur.c.TC_PARTITION.is_(None))),
            ))
            .where(ws.c.WS_COMMIT_ID >= txn_id, ws.c.WS_TXNID != txn_id,
                   _is_update_or_delete(ws.c.WS_OPERATION_TYPE))
            .order_by(ws.c.WS_COMMIT_ID)
            .limit(1)
        )
        return conn.execute(query).first()

    # abort ---------------------------------------------------------------------------------------------

    def abort(self, txn_id: int, reason: str = AbortReason.USER) -> None:
        """Abort one open transaction; its TXN_COMPONENTS stay as the record of data to clean."""

        def work(conn: Connection) -> None:
            _open_txn_type(conn, int(txn_id), "abort")
            abort_txns_in(conn, [int(txn_id)], reason, locked_open=True)

        self.db.run(work, what=f"abort txn {txn_id}")

    def abort_txns(self, txn_ids: Iterable[int], reason: str = AbortReason.USER) -> list[int]:
        """ABORT TRANSACTIONS: abort those of ``txn_ids`` that are open; returns the ids aborted (others are
        already committed, aborted or gone, and are left alone)."""
        ids = sorted(set(int(t) for t in txn_ids))
        aborted = self.db.run(lambda conn: abort_txns_in(conn, ids, reason), what="abort txns")
        skipped = sorted(set(ids) - set(aborted))
        if skipped:
            log.info("ABORT TRANSACTIONS: %s were not open and were left alone", skipped)
        return aborted

    # heartbeats ----------------------------------------------------------------------------------------

    def heartbeat(self, txn_id: int) -> None:
        """Keep an open txn (and with it the locks it holds) from timing out."""

        def work(conn: Connection) -> None:
            now = now_ms(conn)
            updated = conn.execute(
                sa.update(TXNS).where(TXNS.c.TXN_ID == txn_id, TXNS.c.TXN_STATE == TxnState.OPEN.value)
                .values(TXN_LAST_HEARTBEAT=now,
                        TXN_HEARTBEAT_COUNT=sa.func.coalesce(TXNS.c.TXN_HEARTBEAT_COUNT, 0) + 1)
            ).rowcount
            if updated != 1:
                raise _not_open_error(int(txn_id), _txn_row(conn, int(txn_id), lock=False), "heartbeat")

        self.db.run(work, what=f"heartbeat txn {txn_id}")

    def heartbeat_lock(self, lock_ext_id: int) -> None:
        """Heartbeat a lock taken outside a transaction (a txn's locks live as long as its own heartbeat)."""

        def work(conn: Connection) -> None:
            owner = conn.execute(
                sa.select(HIVE_LOCKS.c.HL_TXNID).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_ext_id).limit(1)
            ).scalar()
            if owner is None:
                raise NoSuchLockError(
                    f"lock {lock_ext_id} does not exist: it was released or timed out after hive.txn.timeout "
                    f"({self.conf.txn_timeout_s:g} s) without a heartbeat; request the lock again"
                )
            now = now_ms(conn)
            if owner:
                updated = conn.execute(
                    sa.update(TXNS).where(TXNS.c.TXN_ID == owner, TXNS.c.TXN_STATE == TxnState.OPEN.value)
                    .values(TXN_LAST_HEARTBEAT=now)
                ).rowcount
                if updated != 1:
                    raise _not_open_error(int(owner), _txn_row(conn, int(owner), lock=False),
                                          f"heartbeat lock {lock_ext_id} of")
                return
            conn.execute(
                sa.update(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_ext_id, HIVE_LOCKS.c.HL_TXNID == 0)
                .values(HL_LAST_HEARTBEAT=now,
                        HL_HEARTBEAT_COUNT=sa.func.coalesce(HIVE_LOCKS.c.HL_HEARTBEAT_COUNT, 0) + 1)
            )

        self.db.run(work, what=f"heartbeat lock {lock_ext_id}")

    # queries -------------------------------------------------------------------------------------------

    def show_transactions(self) -> list[TxnInfo]:
        """SHOW TRANSACTIONS: open and aborted transactions, by id (committed ones are not listed, as in Hive)."""

        def work(conn: Connection) -> list[TxnInfo]:
            rows = conn.execute(
                sa.select(TXNS).where(TXNS.c.TXN_STATE != TxnState.COMMITTED.value).order_by(TXNS.c.TXN_ID)
            )
            return [
                TxnInfo(txnid=int(r.TXN_ID), state=TxnState(r.TXN_STATE), startedtime=int(r.TXN_STARTED),
                        lastheartbeattime=int(r.TXN_LAST_HEARTBEAT), user=r.TXN_USER, host=r.TXN_HOST,
                        txn_type=TxnType(r.TXN_TYPE or 0), agent_info=r.TXN_AGENT_INFO, meta_info=r.TXN_META_INFO)
                for r in rows
            ]

        return self.db.run(work, what="show transactions")

    def txn_state(self, txn_id: int) -> TxnState | None:
        """The state of ``txn_id`` in TXNS, or None when there is no such row (never opened or cleaned up)."""
        row = self.db.run(lambda conn: _txn_row(conn, int(txn_id), lock=False), what="txn state")
        return None if row is None else TxnState(row.TXN_STATE)

    def writes_of(self, txn_id: int) -> list[TxnWrite]:
        """The tables (and partitions) ``txn_id`` writes, with its write id on each: from TXN_COMPONENTS and
        TXN_TO_WRITE_ID (a write id taken before any component was recorded counts too)."""
        tc, t2w = TXN_COMPONENTS, TXN_TO_WRITE_ID

        def work(conn: Connection) -> list[TxnWrite]:
            found: dict[tuple[str, str | None], tuple[list[str], list[OperationType], int | None]] = {}
            for r in conn.execute(sa.select(tc.c.TC_DATABASE, tc.c.TC_TABLE, tc.c.TC_PARTITION,
                                            tc.c.TC_OPERATION_TYPE, tc.c.TC_WRITEID)
                                  .where(tc.c.TC_TXNID == int(txn_id))
                                  .order_by(tc.c.TC_DATABASE, tc.c.TC_TABLE, tc.c.TC_PARTITION)):
                parts, ops, write_id = found.setdefault((r.TC_DATABASE, r.TC_TABLE), ([], [], None))
                if r.TC_PARTITION and r.TC_PARTITION not in parts:
                    parts.append(r.TC_PARTITION)
                op = OperationType(r.TC_OPERATION_TYPE)
                if op not in ops:
                    ops.append(op)
                if write_id is None and r.TC_WRITEID is not None:
                    found[(r.TC_DATABASE, r.TC_TABLE)] = (parts, ops, int(r.TC_WRITEID))
            for w in conn.execute(sa.select(t2w.c.T2W_DATABASE, t2w.c.T2W_TABLE, t2w.c.T2W_WRITEID)
                                  .where(t2w.c.T2W_TXNID == int(txn_id))):
                parts, ops, _ = found.get((w.T2W_DATABASE, w.T2W_TABLE), ([], [], None))
                found[(w.T2W_DATABASE, w.T2W_TABLE)] = (parts, ops, int(w.T2W_WRITEID))
            return [TxnWrite(db, table, tuple(parts), tuple(ops), write_id)
                    for (db, table), (parts, ops, write_id) in sorted(found.items(), key=lambda i: (i[0][0],
                                                                                                   i[0][1] or ""))]

        return self.db.run(work, what=f"writes of txn {txn_id}")

    # write ids -----------------------------------------------------------------------------------------

    @overload
    def allocate_write_ids(self, txn_ids: int, db: str, table: str) -> int: ...

    @overload
    def allocate_write_ids(self, txn_ids: Sequence[int], db: str, table: str) -> list[int]: ...

    def allocate_write_ids(self, txn_ids: int | Sequence[int], db: str, table: str) -> int | list[int]:
        """Write ids of ``db.table`` for open, non-read-only txns: an id already held by a txn is reused, new ones
        are dense and follow txn order. One txn id in -> one write id out; a list in -> a list in the same order.
        """
        single = isinstance(txn_ids, int)
        ids = [int(txn_ids)] if isinstance(txn_ids, int) else [int(t) for t in txn_ids]
        mapping = self.db.run(lambda conn: allocate_write_ids_in(conn, ids, db, table),
                              what=f"allocate write ids on {db}.{table}")
        return mapping[ids[0]] if single else [mapping[t] for t in ids]

    def allocate_write_id(self, txn_id: int, db: str, table: str) -> int:
        """The write id of ``txn_id`` on ``db.table`` (allocated on first use)."""
        return self.allocate_write_ids(int(txn_id), db, table)

    def write_id_of(self, txn_id: int, db: str, table: str) -> int | None:
        """The write id ``txn_id`` holds on ``db.table``, or None."""
        d, t = normalize_name(db, "database"), normalize_name(table, "table")
        return self.db.run(lambda conn: lookup_write_id(conn, int(txn_id), d, t), what="write id lookup")

    def add_write_components(self, txn_id: int, db: str, table: str, partitions: Iterable[str | None] | None,
                             op: OperationType, write_id: int | None = None) -> int:
        """Record the partitions ``txn_id`` wrote (Hive's addDynamicPartitions). The txn's write id on the table is
        used (allocated if it has none yet) unless ``write_id`` is given. Returns rows added."""
        op = OperationType(op)
        parts = list(partitions) if partitions is not None else None

        def work(conn: Connection) -> int:
            txn_type = _open_txn_type(conn, int(txn_id), f"record writes to {db}.{table} for")
            writes = op in (OperationType.INSERT, OperationType.UPDATE, OperationType.DELETE)
            if writes and txn_type is TxnType.READ_ONLY:
                raise TxnStateError(f"transaction {txn_id} is read-only: it cannot {op.name.lower()} {db}.{table}")
            wid = write_id
            if wid is None and writes and txn_type not in _COMPACTION_TYPES:
                # the compactor never allocates a write id: its output is hidden by the _vC suffix
                # (docs/hive-acid.md#compactor-transaction)
                wid = allocate_write_ids_in(conn, [int(txn_id)], db, table)[int(txn_id)]
            return insert_txn_components(conn, int(txn_id), db, table, parts, op, wid)

        return self.db.run(work, what=f"add write components txn {txn_id}")

    def add_dynamic_partitions(self, txn_id: int, db: str, table: str, partitions: Iterable[str | None],
                               op: OperationType, write_id: int | None = None) -> int:
        """Hive's addDynamicPartitions: after a dynamic-partition write (locked at table level, which recorded one
        table-level TXN_COMPONENTS placeholder), replace the txn's table-level rows for ``db.table`` by one row
        per partition actually written, so compaction and write-conflict checks see partitions. Returns rows
        added."""
        op = OperationType(op)
        parts = [p for p in dict.fromkeys(partitions) if p is not None]
        d, t = normalize_name(db, "database"), normalize_name(table, "table")

        def work(conn: Connection) -> int:
            _open_txn_type(conn, int(txn_id), f"record dynamic partitions of {d}.{t} for")
            wid = write_id if write_id is not None else lookup_write_id(conn, int(txn_id), d, t)
            conn.execute(sa.delete(TXN_COMPONENTS).where(
                TXN_COMPONENTS.c.TC_TXNID == int(txn_id), TXN_COMPONENTS.c.TC_DATABASE == d,
                TXN_COMPONENTS.c.TC_TABLE == t, TXN_COMPONENTS.c.TC_PARTITION.is_(None)))
            return insert_txn_components(conn, int(txn_id), d, t, parts, op, wid) if parts else 0

        return self.db.run(work, what=f"add dynamic partitions txn {txn_id}")
