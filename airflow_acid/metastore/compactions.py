"""The compaction queue and its history: COMPACTION_QUEUE and COMPLETED_COMPACTIONS, following Hive 4's
CompactFunction, NextCompactionFunction, PurgeCompactionHistoryFunction and friends
(docs/hive-acid.md#enqueue, docs/hive-acid.md#claiming, docs/hive-acid.md#compactor-transaction,
docs/hive-acid.md#worker-failures, docs/hive-acid.md#queue-states, docs/hive-acid.md#history-retention,
docs/hive-acid.md#commands).

Row life cycle (docs/hive-acid.md#queue-states): ``i`` → claimed ``w`` → compacted ``r`` → cleaned ``s`` (history); failures
``f``, refusals ``c``, aborts ``x`` and "did not initiate" ``a`` go to the history table. Every method is one
database transaction.

This module holds what every consumer shares — the rows, enqueueing, claiming, marking, the history and SHOW /
ABORT COMPACTIONS. The Cleaner's side (cleaning a 'ready for cleaning' row, aborted-write cleanup) is in
:mod:`.cleaning` and the Initiator's lookups (current and failing compactions, revocations) in
:mod:`.initiator_store`, as Hive splits CompactionTxnHandler from TxnHandler.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from typing_extensions import Unpack

from airflow_acid.acid.codes import CompactionState, CompactionType, OperationType
from airflow_acid.acid.writeids import ValidCompactorWriteIdList
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, acquire_mutex, in_literals, now_ms
from airflow_acid.metastore.errors import InvalidInputError, NoSuchObjectError
from airflow_acid.metastore.flavour import profile_of
from airflow_acid.metastore.hive_schema import HIVE_CQ_META
from airflow_acid.metastore.partitions import entity_name, normalize_partition_name
from airflow_acid.metastore.runs import RunFigures, RunHistory, delete_figures, delete_orphans
from airflow_acid.metastore.schema import (
    COMPACTION_QUEUE,
    COMPLETED_COMPACTIONS,
    NEXT_COMPACTION_QUEUE_ID,
)
from airflow_acid.metastore.snapshots import read_valid_txn_list, read_valid_write_ids
from airflow_acid.metastore.txns import insert_txn_components

log = logging.getLogger(__name__)
_CHUNK = 500  # tables per IN list

SCHEDULER_MUTEX = "CompactionScheduler"
DEFAULT_POOL = "default"
NO_VALUE = "---"
CLAIM_BATCH = 50
MAX_PROPERTIES_LENGTH = 2048  # CQ_TBLPROPERTIES width
ABORTED_BY_REQUEST = "Compaction aborted by ABORT COMPACTIONS request."
NOTHING_TO_COMPACT = "None of the compaction thresholds met, compaction request is refused!"

CQ, CC = COMPACTION_QUEUE, COMPLETED_COMPACTIONS
# Columns shared by the queue and the history table, without their CQ_/CC_ prefix.
_SHARED = [c.name[3:] for c in CQ.columns if c.name[3:] in {k.name[3:] for k in CC.columns}]


# --- StringableMap (Hive's encoding of CQ_TBLPROPERTIES) ------------------------------------------------


def encode_properties(properties: dict[str, str] | None) -> str | None:
    """Hive's StringableMap text: ``<n>:`` then ``<len>:<key><len>:<value>`` for each entry."""
    if not properties:
        return None
    parts = [f"{len(properties)}:"]
    for key, value in properties.items():
        key, value = str(key), str(value)
        parts.append(f"{len(key)}:{key}{len(value)}:{value}")
    return "".join(parts)


def decode_properties(text: str | None) -> dict[str, str]:
    """Parse StringableMap text back into a dict (empty for NULL)."""
    if not text:
        return {}
    result: dict[str, str] = {}
    count, pos = _read_number(text, 0)
    for _ in range(count):
        key, pos = _read_string(text, pos)
        value, pos = _read_string(text, pos)
        result[key] = value
    return result


def _read_number(text: str, pos: int) -> tuple[int, int]:
    colon = text.index(":", pos)
    return int(text[pos:colon]), colon + 1


def _read_string(text: str, pos: int) -> tuple[str, int]:
    length, pos = _read_number(text, pos)
    return text[pos:pos + length], pos + length


# --- rows -----------------------------------------------------------------------------------------------


@dataclass
class CompactionInfo:
    """One queue or history row (Hive's CompactionInfo)."""

    id: int
    database: str
    table: str
    partition: str | None
    state: CompactionState
    type: CompactionType
    properties: dict[str, str] = field(default_factory=dict)
    worker_id: str | None = None
    worker_version: str | None = None
    enqueue_time: int | None = None
    start: int | None = None
    end: int | None = None
    run_as: str | None = None
    highest_write_id: int | None = None
    hadoop_job_id: str | None = None
    error_message: str | None = None
    next_txn_id: int | None = None
    txn_id: int | None = None
    commit_time: int | None = None
    initiator_id: str | None = None
    initiator_version: str | None = None
    pool_name: str | None = None
    number_of_buckets: int | None = None
    order_by: str | None = None
    cleaner_start: int | None = None
    retry_retention: int = 0

    @property
    def full_partition_name(self) -> str:
        """``db.table[/partition]`` for messages: the one entity label (:func:`entity_name`)."""
        return entity_name(self.database, self.table, self.partition)


_INFO_COLUMNS = {
    "ID": "id", "DATABASE": "database", "TABLE": "table", "PARTITION": "partition", "WORKER_ID": "worker_id",
    "WORKER_VERSION": "worker_version", "ENQUEUE_TIME": "enqueue_time", "START": "start", "RUN_AS": "run_as",
    "HIGHEST_WRITE_ID": "highest_write_id", "HADOOP_JOB_ID": "hadoop_job_id", "ERROR_MESSAGE": "error_message",
    "NEXT_TXN_ID": "next_txn_id", "TXN_ID": "txn_id", "COMMIT_TIME": "commit_time", "INITIATOR_ID": "initiator_id",
    "INITIATOR_VERSION": "initiator_version", "POOL_NAME": "pool_name", "NUMBER_OF_BUCKETS": "number_of_buckets",
    "ORDER_BY": "order_by", "END": "end", "CLEANER_START": "cleaner_start", "RETRY_RETENTION": "retry_retention",
}


def compaction_info(row: sa.Row[Unpack[tuple[Any, ...]]], prefix: str) -> CompactionInfo:
    """A queue (``prefix`` "CQ") or history ("CC") row as a :class:`CompactionInfo`."""
    mapping = row._mapping
    kwargs = {attr: mapping[f"{prefix}_{col}"] for col, attr in _INFO_COLUMNS.items() if f"{prefix}_{col}" in mapping}
    kwargs["retry_retention"] = int(kwargs.get("retry_retention") or 0)
    return CompactionInfo(state=CompactionState(mapping[f"{prefix}_STATE"]),
                          type=CompactionType(mapping[f"{prefix}_TYPE"]),
                          properties=decode_properties(mapping[f"{prefix}_TBLPROPERTIES"]), **kwargs)


@dataclass(frozen=True)
class EnqueueRequest:
    """One compaction request of a batch (:meth:`CompactionQueue.enqueue_many`): what the Initiator queues."""

    db: str
    table: str
    partition: str | None
    type: CompactionType
    highest_write_id_now: int
    pool: str | None = None
    run_as: str | None = None


@dataclass(frozen=True)
class EnqueueResult:
    """The answer to a compaction request: the new id and 'initiated', or -1 and 'refused' with the reason."""

    id: int
    state: CompactionState
    message: str | None = None
    existing_id: int | None = None
    """Refused because this compaction is already scheduled (Hive's "already scheduled with state=…")."""

    @property
    def accepted(self) -> bool:
        return self.state is CompactionState.INITIATED


@dataclass(frozen=True)
class AbortCompactionResult:
    """The outcome of ABORT COMPACTIONS for one id."""

    id: int
    status: str  # "Success" or "Error", as Hive reports it
    message: str


@dataclass(frozen=True)
class ShowCompactionsRow:
    """One row of SHOW COMPACTIONS with Hive 4's columns (the misspelled ``hightestwriteid`` is Hive's)."""

    compactionid: int
    dbname: str
    tabname: str
    partname: str | None
    type: str
    state: str
    workerhost: str | None
    workerid: str | None
    enqueuetime: int | None
    starttime: int | None
    duration: int | None
    hadoopjobid: str | None
    errormessage: str | None
    initiatorhost: str | None
    initiatorid: str | None
    poolname: str
    txnid: int | None
    nexttxnid: int | None
    committime: int | None
    hightestwriteid: int | None
    # airflow-acid's run figures (ACID_COMPACTION_RUNS), after Hive's columns; None until a run recorded them
    filesin: int | None = None
    bytesin: int | None = None
    rowsin: int | None = None
    filesout: int | None = None
    bytesout: int | None = None
    rowsout: int | None = None
    deltasbefore: int | None = None
    deltasafter: int | None = None
    sparkappid: str | None = None
    coreseconds: float | None = None
    wallseconds: float | None = None
    digestin: str | None = None
    digestout: str | None = None
    # the Airflow task instance that ran it (recorded when the Worker claimed the row)
    dagid: str | None = None
    runid: str | None = None
    taskid: str | None = None
    mapindex: int | None = None
    trynumber: int | None = None

    @classmethod
    def columns(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def hive_columns(cls) -> list[str]:
        """Hive 4's SHOW COMPACTIONS columns (the leading ones)."""
        return cls.columns()[:len(cls.columns()) - len(RUN_COLUMNS)]

    def with_figures(self, figures: RunFigures | None) -> ShowCompactionsRow:
        """This row with a run's figures filled into the extra columns."""
        if figures is None:
            return self
        return replace(self, **{column: getattr(figures, attr) for column, attr in RUN_COLUMNS.items()})

    def as_strings(self) -> list[str]:
        """The row as SHOW COMPACTIONS prints it: every value a string, missing ones as ``---``."""
        return [NO_VALUE if getattr(self, c) is None else str(getattr(self, c)) for c in self.columns()]


RUN_COLUMNS = {"filesin": "files_in", "bytesin": "bytes_in", "rowsin": "rows_in", "filesout": "files_out",
               "bytesout": "bytes_out", "rowsout": "rows_out", "deltasbefore": "deltas_before",
               "deltasafter": "deltas_after", "sparkappid": "spark_app_id", "coreseconds": "core_seconds",
               "wallseconds": "wall_seconds", "digestin": "digest_in", "digestout": "digest_out",
               "dagid": "dag_id", "runid": "run_id", "taskid": "task_id", "mapindex": "map_index",
               "trynumber": "try_number"}
"""SHOW COMPACTIONS' extra columns (after Hive's) → :class:`RunFigures` fields."""


def _split_id(worker_or_initiator_id: str | None) -> tuple[str | None, str | None]:
    """``<host>-<thread>`` -> (host, thread), as SHOW COMPACTIONS splits worker and initiator ids."""
    if not worker_or_initiator_id:
        return None, None
    host, sep, thread = worker_or_initiator_id.rpartition("-")
    return (host, thread) if sep and host else (worker_or_initiator_id, None)


def _show_row(info: CompactionInfo) -> ShowCompactionsRow:
    worker_host, worker_thread = _split_id(info.worker_id)
    initiator_host, initiator_thread = _split_id(info.initiator_id)
    duration = info.end - info.start if info.end is not None and info.start is not None else None
    return ShowCompactionsRow(
        compactionid=info.id, dbname=info.database, tabname=info.table, partname=info.partition,
        type=info.type.display, state=info.state.display, workerhost=worker_host, workerid=worker_thread,
        enqueuetime=info.enqueue_time, starttime=info.start, duration=duration, hadoopjobid=info.hadoop_job_id,
        errormessage=info.error_message, initiatorhost=initiator_host, initiatorid=initiator_thread,
        poolname=info.pool_name or DEFAULT_POOL, txnid=info.txn_id, nexttxnid=info.next_txn_id,
        committime=info.commit_time, hightestwriteid=info.highest_write_id)


def _latest_activity(info: CompactionInfo) -> int | None:
    """The default SHOW COMPACTIONS order key: the latest of end, start and commit time (Hive's CASE expression,
    with missing times ignored instead of turning the whole key NULL)."""
    times = [t for t in (info.end, info.start, info.commit_time) if t is not None]
    return max(times) if times else None


def partition_filter(column: sa.Column[Any], partition: str | None) -> sa.ColumnElement[bool]:
    """Exact entity match: a NULL partition matches only NULL."""
    return column.is_(None) if partition is None else column == partition


def next_compaction_id(conn: Connection) -> int:
    """A fresh id from NEXT_COMPACTION_QUEUE_ID (SELECT … FOR UPDATE, then advance)."""
    value = int(conn.execute(sa.select(NEXT_COMPACTION_QUEUE_ID.c.NCQ_NEXT).with_for_update()).scalar_one())
    conn.execute(sa.update(NEXT_COMPACTION_QUEUE_ID).values(NCQ_NEXT=value + 1))
    return value


def _reserve_ids(conn: Connection, count: int) -> int:
    """``count`` consecutive fresh ids from NEXT_COMPACTION_QUEUE_ID; returns the first."""
    value = int(conn.execute(sa.select(NEXT_COMPACTION_QUEUE_ID.c.NCQ_NEXT).with_for_update()).scalar_one())
    conn.execute(sa.update(NEXT_COMPACTION_QUEUE_ID).values(NCQ_NEXT=value + count))
    return value


def compaction_names(db: str, table: str) -> tuple[str, str]:
    """The database and table names as the queue stores them (lower case); both are required."""
    if not db or not table:
        raise InvalidInputError(f"a compaction needs a database and a table name, got {db!r}.{table!r}")
    return db.lower(), table.lower()


def _own_enqueued_row(conn: Connection, db: str, table: str, partition: str | None, type: CompactionType,
                      initiator_id: str | None, since_ms: int) -> int | None:
    """The id of an 'initiated' row this very request inserted in an earlier attempt (same entity, type and
    initiator, enqueued at or after ``since_ms``), else None."""
    return conn.execute(
        sa.select(CQ.c.CQ_ID).where(
            CQ.c.CQ_DATABASE == db, CQ.c.CQ_TABLE == table,
            CQ.c.CQ_PARTITION.is_(None) if partition is None else CQ.c.CQ_PARTITION == partition,
            CQ.c.CQ_STATE == CompactionState.INITIATED.value, CQ.c.CQ_TYPE == type.value,
            CQ.c.CQ_INITIATOR_ID.is_(None) if initiator_id is None else CQ.c.CQ_INITIATOR_ID == initiator_id,
            CQ.c.CQ_ENQUEUE_TIME >= since_ms)
        .order_by(CQ.c.CQ_ID.desc()).limit(1)).scalar()


def _own_claim(conn: Connection, worker_id: str, since_ms: int, cq_id: int | None = None) -> CompactionInfo | None:
    """The row (``cq_id``, or any) that ``worker_id`` claimed at or after ``since_ms`` in an earlier attempt."""
    query = sa.select(CQ).where(CQ.c.CQ_STATE == CompactionState.WORKING.value, CQ.c.CQ_WORKER_ID == worker_id[:128],
                                CQ.c.CQ_START >= since_ms)
    if cq_id is not None:
        query = query.where(CQ.c.CQ_ID == cq_id)
    row = conn.execute(query.order_by(CQ.c.CQ_ID.desc()).limit(1)).first()
    return None if row is None else compaction_info(row, "CQ")


class CompactionQueue:
    """The compaction queue and history on one metastore database."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    # --- enqueue -----------------------------------------------------------------------------------------

    def enqueue(self, db: str, table: str, partition: str | None = None,
                type: CompactionType = CompactionType.MAJOR, *, pool: str | None = None,
                properties: dict[str, str] | None = None, initiator_id: str | None = None,
                initiator_version: str | None = None, run_as: str | None = None,
                highest_write_id_now: int | None = None, number_of_buckets: int | None = None,
                order_by: str | None = None) -> EnqueueResult:
        """Queue a compaction ('i'), or refuse it when one is already scheduled (docs/hive-acid.md#enqueue).

        Refused when the queue holds a row for the same db/table and partition (any partition when none is
        given) in 'initiated' or 'working', or in 'ready for cleaning' with CQ_HIGHEST_WRITE_ID equal to the
        table's current compactor high watermark (HIVE-26107: nothing new since). The HWM is computed here
        unless the caller passes ``highest_write_id_now``.
        """
        db, table = compaction_names(db, table)
        partition = normalize_partition_name(partition)
        type = CompactionType(type)
        if type is CompactionType.ABORT_TXN_CLEANUP:
            raise InvalidInputError("abort cleanup entries are created by the Cleaner, not by a compaction request")
        encoded = encode_properties({str(k): str(v) for k, v in (properties or {}).items()})
        if encoded and len(encoded) > MAX_PROPERTIES_LENGTH:
            raise InvalidInputError(f"compaction properties for {db}.{table} are {len(encoded)} characters encoded; "
                                    f"the limit is {MAX_PROPERTIES_LENGTH}")

        def recover(conn: Connection, since_ms: int) -> EnqueueResult | None:
            mine = _own_enqueued_row(conn, db, table, partition, type, initiator_id, since_ms)
            return None if mine is None else EnqueueResult(mine, CompactionState.INITIATED)

        def work(conn: Connection) -> EnqueueResult:
            acquire_mutex(conn, SCHEDULER_MUTEX)
            hwm = highest_write_id_now
            if hwm is None:
                txn_list = read_valid_txn_list(conn, self.conf.opentxn_timeout_ms)
                reader = read_valid_write_ids(conn, f"{db}.{table}", txn_list)
                hwm = ValidCompactorWriteIdList.from_reader(reader).high_watermark
            existing = conn.execute(
                sa.select(CQ.c.CQ_ID, CQ.c.CQ_STATE)
                .where(CQ.c.CQ_DATABASE == db, CQ.c.CQ_TABLE == table,
                       sa.true() if partition is None else CQ.c.CQ_PARTITION == partition,
                       sa.or_(CQ.c.CQ_STATE.in_((CompactionState.INITIATED.value, CompactionState.WORKING.value)),
                              sa.and_(CQ.c.CQ_STATE == CompactionState.READY_FOR_CLEANING.value,
                                      CQ.c.CQ_HIGHEST_WRITE_ID == hwm)))
                .order_by(CQ.c.CQ_ID).limit(1)).first()
            if existing is not None:
                state = CompactionState(existing.CQ_STATE)
                message = f"Compaction is already scheduled with state='{state.display}' and id={existing.CQ_ID}"
                log.info("not queueing %s compaction of %s.%s%s: %s", type.display, db, table,
                         f"/{partition}" if partition else "", message)
                return EnqueueResult(-1, CompactionState.REFUSED, message, existing_id=int(existing.CQ_ID))
            cq_id = next_compaction_id(conn)
            profile = profile_of(conn)
            conn.execute(sa.insert(profile.writable(CQ)).values(profile.with_extras(CQ, dict(
                CQ_ID=cq_id, CQ_DATABASE=db, CQ_TABLE=table, CQ_PARTITION=partition,
                CQ_STATE=CompactionState.INITIATED.value, CQ_TYPE=type.value, CQ_TBLPROPERTIES=encoded,
                CQ_ENQUEUE_TIME=now_ms(conn), CQ_RUN_AS=run_as, CQ_INITIATOR_ID=initiator_id,
                CQ_INITIATOR_VERSION=initiator_version, CQ_POOL_NAME=pool or None,
                CQ_NUMBER_OF_BUCKETS=number_of_buckets, CQ_ORDER_BY=order_by, CQ_RETRY_RETENTION=0))))
            return EnqueueResult(cq_id, CompactionState.INITIATED)

        return self.db.run(work, what=f"enqueue compaction of {db}.{table}", recover=recover)

    def enqueue_many(self, requests: Sequence[EnqueueRequest], *, initiator_id: str | None = None,
                     initiator_version: str | None = None) -> list[EnqueueResult]:
        """:meth:`enqueue` for a batch, in ONE transaction (what an Initiator cycle queues): one scheduler mutex,
        one query for the rows already scheduled on the batch's tables, one id reservation, one insert.

        Each request is refused exactly when :meth:`enqueue` would refuse it run after the requests before it.
        After a lost COMMIT reply the retry reports the rows the applied attempt queued as queued (and queues
        nothing twice: the rows themselves refuse a second copy).
        """
        reqs = [EnqueueRequest(*compaction_names(r.db, r.table), normalize_partition_name(r.partition),
                               CompactionType(r.type), int(r.highest_write_id_now), r.pool or None, r.run_as)
                for r in requests]
        if not reqs:
            return []
        # a table-level request is refused by any row of its table, a partition's only by that partition's rows:
        # only tables with a table-level request are read whole (a cycle's batches would otherwise read every row
        # queued on a big table again and again)
        tables = sorted({(r.db, r.table) for r in reqs if r.partition is None})
        whole = set(tables)
        partitions: dict[tuple[str, str], list[str]] = {}
        for r in reqs:
            if r.partition is not None and (r.db, r.table) not in whole:
                partitions.setdefault((r.db, r.table), []).append(r.partition)
        active = (CompactionState.INITIATED.value, CompactionState.WORKING.value,
                  CompactionState.READY_FOR_CLEANING.value)

        def scheduled(conn: Connection) -> list[sa.Row[Unpack[tuple[Any, ...]]]]:
            rows: list[sa.Row[Unpack[tuple[Any, ...]]]] = []
            columns = (CQ.c.CQ_ID, CQ.c.CQ_DATABASE, CQ.c.CQ_TABLE, CQ.c.CQ_PARTITION, CQ.c.CQ_STATE,
                       CQ.c.CQ_HIGHEST_WRITE_ID, CQ.c.CQ_INITIATOR_ID, CQ.c.CQ_ENQUEUE_TIME)
            for start in range(0, len(tables), _CHUNK):
                chunk = tables[start:start + _CHUNK]
                rows += conn.execute(sa.select(*columns).where(
                    sa.tuple_(CQ.c.CQ_DATABASE, CQ.c.CQ_TABLE).in_(chunk), CQ.c.CQ_STATE.in_(active))).all()
            for (db, table), names in sorted(partitions.items()):
                names = sorted(set(names))
                for start in range(0, len(names), _CHUNK):  # inline names: PostgreSQL hashes the list
                    rows += conn.execute(sa.select(*columns).where(
                        CQ.c.CQ_DATABASE == db, CQ.c.CQ_TABLE == table,
                        in_literals(CQ.c.CQ_PARTITION, names[start:start + _CHUNK]), CQ.c.CQ_STATE.in_(active))).all()
            return sorted(rows, key=lambda r: int(r.CQ_ID))

        def recover(conn: Connection, since_ms: int) -> list[EnqueueResult] | None:
            mine = {(r.CQ_DATABASE, r.CQ_TABLE, r.CQ_PARTITION): int(r.CQ_ID) for r in scheduled(conn)
                    if r.CQ_STATE == CompactionState.INITIATED.value and r.CQ_INITIATOR_ID == initiator_id
                    and r.CQ_ENQUEUE_TIME is not None and int(r.CQ_ENQUEUE_TIME) >= since_ms}
            if not mine:
                return None
            return [EnqueueResult(mine[(r.db, r.table, r.partition)], CompactionState.INITIATED)
                    if (r.db, r.table, r.partition) in mine else
                    EnqueueResult(-1, CompactionState.REFUSED, "Compaction is already scheduled (found when "
                                  "retrying after a lost reply)") for r in reqs]

        def work(conn: Connection) -> list[EnqueueResult]:
            acquire_mutex(conn, SCHEDULER_MUTEX)
            # rows in CQ_ID order, by table (a table-level request is blocked by any) and by entity
            Scheduled = tuple[int, str, int | None]  # (id, state, highest write id)
            by_table: dict[tuple[str, str], list[Scheduled]] = {}
            by_entity: dict[tuple[str, str, str | None], list[Scheduled]] = {}
            for row in scheduled(conn):
                item = (int(row.CQ_ID), row.CQ_STATE, row.CQ_HIGHEST_WRITE_ID)
                by_table.setdefault((row.CQ_DATABASE, row.CQ_TABLE), []).append(item)
                by_entity.setdefault((row.CQ_DATABASE, row.CQ_TABLE, row.CQ_PARTITION), []).append(item)
            answers: list[EnqueueResult | None] = []
            for r in reqs:
                rows = by_table.get((r.db, r.table), []) if r.partition is None else \
                    by_entity.get((r.db, r.table, r.partition), [])
                blocker = next(((cq_id, state) for cq_id, state, hwm in rows
                                if state != CompactionState.READY_FOR_CLEANING.value
                                or (hwm is not None and int(hwm) == r.highest_write_id_now)), None)
                if blocker is None:
                    answers.append(None)
                    item = (-1, CompactionState.INITIATED.value, None)
                    by_table.setdefault((r.db, r.table), []).append(item)
                    by_entity.setdefault((r.db, r.table, r.partition), []).append(item)
                    continue
                shown = blocker[0] if blocker[0] > 0 else "(queued earlier in this batch)"
                answers.append(EnqueueResult(-1, CompactionState.REFUSED, "Compaction is already scheduled with "
                                             f"state='{CompactionState(blocker[1]).display}' and id={shown}"))
            accepted = [r for r, a in zip(reqs, answers, strict=True) if a is None]
            if not accepted:
                return [a for a in answers if a is not None]
            first = _reserve_ids(conn, len(accepted))
            now = now_ms(conn)
            profile = profile_of(conn)
            conn.execute(sa.insert(profile.writable(CQ)), profile.with_extras(CQ, [dict(
                CQ_ID=first + i, CQ_DATABASE=r.db, CQ_TABLE=r.table, CQ_PARTITION=r.partition,
                CQ_STATE=CompactionState.INITIATED.value, CQ_TYPE=r.type.value, CQ_TBLPROPERTIES=None,
                CQ_ENQUEUE_TIME=now, CQ_RUN_AS=r.run_as, CQ_INITIATOR_ID=initiator_id,
                CQ_INITIATOR_VERSION=initiator_version, CQ_POOL_NAME=r.pool, CQ_NUMBER_OF_BUCKETS=None,
                CQ_ORDER_BY=None, CQ_RETRY_RETENTION=0) for i, r in enumerate(accepted)]))
            ids = iter(range(first, first + len(accepted)))
            return [a if a is not None else EnqueueResult(next(ids), CompactionState.INITIATED) for a in answers]

        return self.db.run(work, what=f"enqueue {len(reqs)} compaction(s)", recover=recover)

    # --- worker side -------------------------------------------------------------------------------------

    def claim_next(self, worker_id: str, *, worker_version: str | None = None, pool: str | None = None,
                   pool_timeout_s: float | None = None) -> CompactionInfo | None:
        """Claim the oldest 'initiated' row this worker may run and mark it 'working' (docs/hive-acid.md#claiming).

        A pooled worker takes only rows of its pool; a default worker takes rows without a pool and rows of
        any pool that waited longer than metastore.compactor.worker.pool.timeout. The claim is optimistic
        (``UPDATE … WHERE CQ_ID = ? AND CQ_STATE = 'i'``): two workers never get the same row.
        """
        if not worker_id:
            raise InvalidInputError("claiming a compaction needs a worker id (<host>-<thread>)")
        timeout_ms = int(1000 * (self.conf.worker_pool_timeout_s if pool_timeout_s is None else pool_timeout_s))

        def work(conn: Connection) -> CompactionInfo | None:
            now = now_ms(conn)
            if pool:
                pool_filter = CQ.c.CQ_POOL_NAME == pool
            else:
                pool_filter = sa.or_(CQ.c.CQ_POOL_NAME.is_(None), CQ.c.CQ_ENQUEUE_TIME < now - timeout_ms)
            after = -1
            while True:
                ids = list(conn.execute(
                    sa.select(CQ.c.CQ_ID).where(CQ.c.CQ_STATE == CompactionState.INITIATED.value, pool_filter,
                                                CQ.c.CQ_ID > after)
                    .order_by(CQ.c.CQ_ID).limit(CLAIM_BATCH)).scalars())
                if not ids:
                    return None
                for cq_id in ids:
                    updated = conn.execute(
                        sa.update(CQ).where(CQ.c.CQ_ID == cq_id, CQ.c.CQ_STATE == CompactionState.INITIATED.value)
                        .values(CQ_WORKER_ID=worker_id[:128], CQ_WORKER_VERSION=worker_version, CQ_START=now,
                                CQ_STATE=CompactionState.WORKING.value)).rowcount
                    if updated == 1:
                        return compaction_info(conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id)).one(), "CQ")
                    log.debug("compaction %s was claimed by another worker first", cq_id)
                after = ids[-1]

        return self.db.run(work, what=f"claim next compaction for {worker_id}",
                           recover=lambda conn, since_ms: _own_claim(conn, worker_id, since_ms))

    def claim(self, cq_id: int, worker_id: str, *, worker_version: str | None = None) -> CompactionInfo | None:
        """Claim row ``cq_id`` if it is still 'initiated' and mark it 'working'; None when another worker (or an
        ABORT COMPACTIONS) got there first. For callers handed a particular row (mapped Airflow tasks), where
        :meth:`claim_next` takes the oldest one. Optimistic like claim_next, and safe against a lost reply."""
        if not worker_id:
            raise InvalidInputError("claiming a compaction needs a worker id (<host>-<thread>)")
        def work(conn: Connection) -> CompactionInfo | None:
            updated = conn.execute(
                sa.update(CQ).where(CQ.c.CQ_ID == cq_id, CQ.c.CQ_STATE == CompactionState.INITIATED.value)
                .values(CQ_WORKER_ID=worker_id[:128], CQ_WORKER_VERSION=worker_version, CQ_START=now_ms(conn),
                        CQ_STATE=CompactionState.WORKING.value)).rowcount
            if updated != 1:
                return None
            return compaction_info(conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id)).one(), "CQ")

        return self.db.run(work, what=f"claim compaction {cq_id} for {worker_id}",
                           recover=lambda conn, since_ms: _own_claim(conn, worker_id, since_ms, cq_id))

    def set_running(self, cq_id: int, txn_id: int, highest_write_id: int, run_as: str | None = None,
                    hadoop_job_id: str | None = None) -> CompactionInfo:
        """Record the compactor txn C and the compacted HWM, and add C's TXN_COMPONENTS row with operation 'c'
        so the metadata survives if C aborts (docs/hive-acid.md#compacting-one-row step 6)."""

        def work(conn: Connection) -> CompactionInfo:
            info = queued_row(conn, cq_id, CompactionState.WORKING, "record the compactor transaction of")
            values: dict[str, object] = {"CQ_TXN_ID": txn_id, "CQ_HIGHEST_WRITE_ID": highest_write_id}
            if run_as is not None:
                values["CQ_RUN_AS"] = run_as
            if hadoop_job_id is not None:
                values["CQ_HADOOP_JOB_ID"] = _job_id(conn, cq_id, hadoop_job_id)
            conn.execute(sa.update(CQ).where(CQ.c.CQ_ID == cq_id).values(values))
            insert_txn_components(conn, txn_id, info.database, info.table,
                                  [info.partition] if info.partition else None, OperationType.COMPACT,
                                  highest_write_id)
            return compaction_info(conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id)).one(), "CQ")

        return self.db.run(work, what=f"set compaction {cq_id} running")

    def set_job_id(self, cq_id: int, job_id: str) -> None:
        """Store the Spark application / job id of a running compaction (CQ_HADOOP_JOB_ID)."""
        def work(conn: Connection) -> None:
            queued_row(conn, cq_id, None, "set the job id of")
            conn.execute(sa.update(CQ).where(CQ.c.CQ_ID == cq_id).values(CQ_HADOOP_JOB_ID=_job_id(conn, cq_id, job_id)))

        self.db.run(work, what=f"set job id of compaction {cq_id}")

    def mark_compacted(self, cq_id: int, *, txn_id: int | None = None) -> bool:
        """'working' -> 'ready for cleaning'; the worker id is cleared (Hive's markCompacted).

        With ``txn_id`` (a worker finishing its attempt) the row moves only while it still records that compactor
        transaction — one guarded statement, so a row revoked and re-claimed by another worker (which carries that
        worker's txn) is left alone — and the return value says whether it moved. Without it the row must be
        'working' (else InvalidInputError / NoSuchObjectError)."""
        def guarded(conn: Connection) -> bool:
            return conn.execute(
                sa.update(CQ).where(CQ.c.CQ_ID == cq_id, CQ.c.CQ_STATE == CompactionState.WORKING.value,
                                    CQ.c.CQ_TXN_ID == txn_id)
                .values(CQ_STATE=CompactionState.READY_FOR_CLEANING.value, CQ_WORKER_ID=None)).rowcount == 1

        def checked(conn: Connection) -> bool:
            queued_row(conn, cq_id, CompactionState.WORKING, "mark compacted")
            conn.execute(sa.update(CQ).where(CQ.c.CQ_ID == cq_id).values(
                CQ_STATE=CompactionState.READY_FOR_CLEANING.value, CQ_WORKER_ID=None))
            return True

        return self.db.run(checked if txn_id is None else guarded, what=f"mark compaction {cq_id} compacted")

    def mark_failed(self, cq_id: int, error: str, *, db: str | None = None, table: str | None = None,
                    partition: str | None = None, type: CompactionType = CompactionType.MAJOR) -> int:
        """Move a queue row to history as 'failed' with ``error`` (docs/hive-acid.md#worker-failures). With id 0 (a request
        that never got a queue row) a 'did not initiate' row is recorded for ``db``/``table``/``partition`` under a fresh id.
        Returns the history id."""
        if not cq_id:
            if not db or not table:
                raise InvalidInputError("mark_failed with compaction id 0 needs db and table to record")
            db, table = compaction_names(db, table)
            return self.db.run(lambda conn: insert_did_not_initiate(conn, db, table, partition, type, error),
                               what=f"record did-not-initiate for {db}.{table}")
        return self._to_history(cq_id, CompactionState.FAILED, error, "mark failed")

    def mark_refused(self, cq_id: int, message: str = NOTHING_TO_COMPACT) -> int:
        """Move a queue row to history as 'refused' (e.g. nothing to compact, table gone)."""
        return self._to_history(cq_id, CompactionState.REFUSED, message, "mark refused")

    def _to_history(self, cq_id: int, state: CompactionState, message: str | None, action: str) -> int:
        def work(conn: Connection) -> int:
            queued_row(conn, cq_id, None, action)
            copy_to_history(conn, cq_id, state, now_ms(conn), error_message=message)
            conn.execute(sa.delete(CQ).where(CQ.c.CQ_ID == cq_id))
            return cq_id

        return self.db.run(work, what=f"{action} compaction {cq_id}")

    # --- operator commands ------------------------------------------------------------------------------

    def abort_compactions(self, ids: Iterable[int]) -> list[AbortCompactionResult]:
        """ABORT COMPACTIONS: only 'initiated' rows are aborted (moved to history as 'aborted'); every other id
        is reported with the reason it was left alone."""
        wanted = list(dict.fromkeys(int(i) for i in ids))

        def work(conn: Connection) -> list[AbortCompactionResult]:
            results = []
            now = now_ms(conn)
            for cq_id in wanted:
                row = conn.execute(sa.select(CQ.c.CQ_STATE).where(CQ.c.CQ_ID == cq_id).with_for_update()).first()
                state = row.CQ_STATE if row else conn.execute(
                    sa.select(CC.c.CC_STATE).where(CC.c.CC_ID == cq_id)).scalar()
                if state is None:
                    results.append(AbortCompactionResult(cq_id, "Error", "No Such Compaction Id Available"))
                elif state != CompactionState.INITIATED.value:
                    results.append(AbortCompactionResult(
                        cq_id, "Error", "Error while aborting compaction as compaction is in state-"
                        f"{CompactionState(state).display}; only 'initiated' compactions can be aborted"))
                else:
                    copy_to_history(conn, cq_id, CompactionState.ABORTED, now, error_message=ABORTED_BY_REQUEST)
                    conn.execute(sa.delete(CQ).where(CQ.c.CQ_ID == cq_id))
                    results.append(AbortCompactionResult(cq_id, "Success", "Successfully aborted compaction"))
            return results

        return self.db.run(work, what="abort compactions")

    def purge_history(self) -> int:
        """Trim COMPLETED_COMPACTIONS per table/partition to the retention counts (docs/hive-acid.md#history-retention);
        returns rows deleted.

        Newest first, keep hive.compactor.history.retention.{did.not.initiate, failed (at least the failure
        threshold), succeeded, refused} rows of each state; also drop 'did not initiate'/'failed'/'refused' rows
        older than the retention timeout when a newer MAJOR (or, for a MINOR row, any) compaction succeeded.
        """
        conf = self.conf
        failed_keep = max(conf.history_retention_failed, conf.failed_compacts_threshold)
        keep = {CompactionState.DID_NOT_INITIATE: conf.history_retention_did_not_initiate,
                CompactionState.FAILED: failed_keep, CompactionState.SUCCEEDED: conf.history_retention_succeeded,
                CompactionState.REFUSED: conf.history_retention_refused}
        timed_states = (CompactionState.DID_NOT_INITIATE, CompactionState.FAILED, CompactionState.REFUSED)

        def work(conn: Connection) -> int:
            threshold = now_ms(conn) - int(conf.history_retention_timeout_s * 1000)
            rows = conn.execute(sa.select(CC.c.CC_ID, CC.c.CC_DATABASE, CC.c.CC_TABLE, CC.c.CC_PARTITION,
                                          CC.c.CC_STATE, CC.c.CC_START, CC.c.CC_TYPE)
                                .order_by(CC.c.CC_DATABASE, CC.c.CC_TABLE, CC.c.CC_PARTITION, CC.c.CC_ID.desc()))
            doomed: list[int] = []
            entity = None
            for row in rows:
                key = (row.CC_DATABASE, row.CC_TABLE, row.CC_PARTITION)
                if key != entity:
                    entity = key
                    left = dict(keep)
                    major_done = minor_done = False
                state = CompactionState(row.CC_STATE)
                if state not in left:
                    continue  # 'aborted' rows are kept, as in Hive
                left[state] -= 1
                timed_out = (state in timed_states and (row.CC_START or 0) < threshold
                             and (major_done or (minor_done and row.CC_TYPE == CompactionType.MINOR.value)))
                if left[state] < 0 or timed_out:
                    doomed.append(int(row.CC_ID))
                if state is CompactionState.SUCCEEDED:
                    if row.CC_TYPE == CompactionType.MAJOR.value:
                        major_done = True
                    else:
                        minor_done = True
            for start in range(0, len(doomed), 500):
                conn.execute(sa.delete(CC).where(CC.c.CC_ID.in_(doomed[start:start + 500])))
            delete_figures(conn, doomed)  # run figures go with their history rows
            delete_orphans(conn)
            return len(doomed)

        return self.db.run(work, what="purge compaction history")

    # --- queries -----------------------------------------------------------------------------------------

    def get(self, cq_id: int) -> CompactionInfo:
        """One compaction by id, from the queue or the history."""
        def work(conn: Connection) -> CompactionInfo:
            row = conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id)).first()
            if row is not None:
                return compaction_info(row, "CQ")
            row = conn.execute(sa.select(CC).where(CC.c.CC_ID == cq_id)).first()
            if row is None:
                raise NoSuchObjectError(f"compaction {cq_id} does not exist (or its history was purged)")
            return compaction_info(row, "CC")

        return self.db.run(work, what=f"get compaction {cq_id}")

    def find(self, *, id: int | None = None, pool: str | None = None, db: str | None = None,
             table: str | None = None, partition: str | None = None, type: CompactionType | str | None = None,
             state: CompactionState | str | None = None, enqueued_from: int | None = None,
             enqueued_to: int | None = None) -> list[CompactionInfo]:
        """Queue and history rows matching every given filter (SHOW COMPACTIONS' WHERE), unordered;
        ``enqueued_from``/``enqueued_to`` (epoch ms, from inclusive, to exclusive) bound the enqueue time."""
        ctype = None if type is None else (type if isinstance(type, CompactionType) else CompactionType.parse(type))
        cstate = None if state is None else (state if isinstance(state, CompactionState)
                                             else CompactionState.parse(state))

        def query(table_obj: sa.Table, p: str) -> sa.Select[Any]:
            c = table_obj.c
            conditions = []
            for value, column in ((id, "ID"), (db.lower() if db else None, "DATABASE"),
                                  (table.lower() if table else None, "TABLE"), (partition, "PARTITION"),
                                  (ctype.value if ctype else None, "TYPE"), (cstate.value if cstate else None, "STATE")):
                if value is not None:
                    conditions.append(c[f"{p}_{column}"] == value)
            if pool is not None:
                conditions.append(c[f"{p}_POOL_NAME"].is_(None) if pool == DEFAULT_POOL
                                  else c[f"{p}_POOL_NAME"] == pool)
            if enqueued_from is not None:
                conditions.append(c[f"{p}_ENQUEUE_TIME"] >= enqueued_from)
            if enqueued_to is not None:
                conditions.append(c[f"{p}_ENQUEUE_TIME"] < enqueued_to)
            return sa.select(table_obj).where(*conditions)

        def work(conn: Connection) -> list[CompactionInfo]:
            infos = [compaction_info(r, "CQ") for r in conn.execute(query(CQ, "CQ"))]
            return infos + [compaction_info(r, "CC") for r in conn.execute(query(CC, "CC"))]

        return self.db.run(work, what="list compactions")

    def show_compactions(self, *, id: int | None = None, pool: str | None = None, db: str | None = None,
                         table: str | None = None, partition: str | None = None,
                         type: CompactionType | str | None = None, state: CompactionState | str | None = None,
                         order_by: str | Sequence[str] | None = None, limit: int | None = None,
                         enqueued_from: int | None = None, enqueued_to: int | None = None
                         ) -> list[ShowCompactionsRow]:
        """SHOW COMPACTIONS with Hive 4's filters and columns.

        ``order_by`` names SHOW COMPACTIONS columns, each optionally followed by ``asc``/``desc`` (e.g.
        ``"enqueuetime desc, compactionid"``); by default the most recently active first, then by enqueue time.
        ``enqueued_from``/``enqueued_to`` (epoch ms; from inclusive, to exclusive) bound the enqueue time.
        """
        infos = self.find(id=id, pool=pool, db=db, table=table, partition=partition, type=type, state=state,
                          enqueued_from=enqueued_from, enqueued_to=enqueued_to)
        figures = RunHistory(self.db, self.conf).many(i.id for i in infos)
        if order_by:
            rows = order_rows([_show_row(i).with_figures(figures.get(i.id)) for i in infos], order_by)
        else:
            infos.sort(key=lambda i: i.enqueue_time if i.enqueue_time is not None else 0)
            infos.sort(key=lambda i: _latest_activity(i) or -1, reverse=True)
            rows = [_show_row(i).with_figures(figures.get(i.id)) for i in infos]
        if limit is not None:
            if limit < 0:
                raise InvalidInputError(f"SHOW COMPACTIONS limit must be non-negative, got {limit}")
            rows = rows[:limit]
        return rows


def order_rows(rows: list[ShowCompactionsRow], order_by: str | Sequence[str]) -> list[ShowCompactionsRow]:
    """SHOW COMPACTIONS rows in ``order_by``'s order (columns with ``asc``/``desc``); missing values last."""
    for column, descending in reversed(_parse_order_by(order_by)):
        present = [r for r in rows if getattr(r, column) is not None]
        missing = [r for r in rows if getattr(r, column) is None]
        present.sort(key=lambda r: getattr(r, column), reverse=descending)
        rows = present + missing
    return rows


def _parse_order_by(order_by: str | Sequence[str]) -> list[tuple[str, bool]]:
    items = order_by.split(",") if isinstance(order_by, str) else list(order_by)
    allowed = ShowCompactionsRow.columns()
    result = []
    for item in items:
        words = item.strip().lower().split()
        if not words or len(words) > 2 or words[0] not in allowed or (len(words) == 2 and words[1] not in ("asc", "desc")):
            raise InvalidInputError(f"cannot order SHOW COMPACTIONS by {item.strip()!r}; use one of "
                                    f"{', '.join(allowed)} optionally followed by asc or desc")
        result.append((words[0], len(words) == 2 and words[1] == "desc"))
    return result


def _job_id(conn: Connection, cq_id: int, job_name: str) -> str:
    """The job id stored for a job name: shortened to the column's width (Hive: varchar(32)); the full name is
    logged with it so SHOW COMPACTIONS' id leads to the job."""
    job_id = profile_of(conn).job_id(job_name)
    if job_id != job_name:
        log.info("compaction %d: job %s is recorded as job id %s (CQ_HADOOP_JOB_ID holds %d characters)", cq_id,
                 job_name, job_id, len(job_id))
    return job_id


def copy_to_history(conn: Connection, cq_id: int | Sequence[int], state: CompactionState, end: int, *,
                     error_message: str | None = None) -> None:
    """INSERT INTO COMPLETED_COMPACTIONS … SELECT … FROM COMPACTION_QUEUE for one row (or the rows of a list of
    ids, in one statement — the Cleaner's page), with a new state and end.
    Hive's CQ_META_INFO goes along as CC_META_INFO, and newer schemas' catalog columns with their value."""
    if not isinstance(cq_id, int):
        ids = sorted({int(i) for i in cq_id})
        for start in range(0, len(ids), 500):
            _copy_to_history(conn, ids[start:start + 500], state, end, error_message)
        return
    _copy_to_history(conn, [cq_id], state, end, error_message)


def _copy_to_history(conn: Connection, ids: list[int], state: CompactionState, end: int,
                     error_message: str | None) -> None:
    if not ids:
        return
    profile = profile_of(conn)
    columns = [c for c in _SHARED if c not in ("STATE", "ERROR_MESSAGE")]
    extras = profile.extra_values(CC.name)
    select = sa.select(*[CQ.c[f"CQ_{c}"] for c in columns], sa.literal(state.value, CC.c.CC_STATE.type),
                       sa.literal(end, sa.BigInteger()),
                       CQ.c.CQ_ERROR_MESSAGE if error_message is None else sa.literal(error_message, sa.Text()),
                       *[sa.literal(v, sa.String()) for v in extras.values()])
    select = select.where(CQ.c.CQ_ID == ids[0] if len(ids) == 1 else CQ.c.CQ_ID.in_(ids))
    names = [f"CC_{c}" for c in columns] + ["CC_STATE", "CC_END", "CC_ERROR_MESSAGE", *extras]
    target = profile.writable(CC)
    if profile.meta_info_columns:
        cqm = HIVE_CQ_META.alias("CQM")
        meta_of = sa.select(cqm.c.CQ_META_INFO).where(
            cqm.c.CQ_ID == ids[0] if len(ids) == 1 else cqm.c.CQ_ID == CQ.c.CQ_ID).scalar_subquery()
        select = select.add_columns(meta_of)
        names.append("CC_META_INFO")
        target = sa.table(CC.name, *[sa.column(n) for n in names])
    conn.execute(sa.insert(target).from_select(names, select))


def queued_row(conn: Connection, cq_id: int, state: CompactionState | None, action: str) -> CompactionInfo:
    """Queue row ``cq_id`` locked for update, which must be in ``state`` (any when None) for ``action``;
    NoSuchObjectError / InvalidInputError naming the row otherwise."""
    row = conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id).with_for_update()).first()
    if row is None:
        done = conn.execute(sa.select(CC.c.CC_STATE).where(CC.c.CC_ID == cq_id)).scalar()
        where = (f"it is already in the history as '{CompactionState(done).display}'" if done
                 else "no such compaction")
        raise NoSuchObjectError(f"cannot {action} compaction {cq_id}: {where}")
    info = compaction_info(row, "CQ")
    if state is not None and info.state is not state:
        raise InvalidInputError(f"cannot {action} compaction {cq_id} of {info.full_partition_name}: it is "
                                f"'{info.state.display}', not '{state.display}' (revoked or finished elsewhere?)")
    return info


def insert_did_not_initiate(conn: Connection, db: str, table: str, partition: str | None, type: CompactionType,
                            message: str, *, initiator_id: str | None = None, initiator_version: str | None = None,
                            pool: str | None = None) -> int:
    """Insert a 'did not initiate' history row (no queue row) under a fresh id; returns that id. ``db`` and ``table``
    as :func:`compaction_names` returns them."""
    cc_id = next_compaction_id(conn)
    now = now_ms(conn)
    profile = profile_of(conn)
    conn.execute(sa.insert(profile.writable(CC)).values(**profile.extra_values(CC.name),
        CC_ID=cc_id, CC_DATABASE=db, CC_TABLE=table, CC_PARTITION=partition,
        CC_STATE=CompactionState.DID_NOT_INITIATE.value, CC_TYPE=CompactionType(type).value, CC_ENQUEUE_TIME=now,
        CC_START=now, CC_END=now, CC_ERROR_MESSAGE=message, CC_INITIATOR_ID=initiator_id,
        CC_INITIATOR_VERSION=initiator_version, CC_POOL_NAME=pool))
    return cc_id
