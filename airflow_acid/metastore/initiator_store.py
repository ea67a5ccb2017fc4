"""Metastore queries of the Initiator (docs/hive-acid.md#initiator-cycle): potential compactions from
COMPLETED_TXN_COMPONENTS, aborted-txn groups, the last-checked time and a run lease in AUX_TABLE, partition
locations in bulk, the latest decision per table/partition (ACID_INITIATOR_DECISIONS), and the compaction queue as
the Initiator sees it (a current or repeatedly failing compaction of a candidate, 'did not initiate' records,
revoking timed-out workers; Hive's CompactionTxnHandler lookups).

The lease replaces Hive's "hold SELECT … FOR UPDATE on the mutex row for the whole cycle": a cycle lists
directories for minutes, and an embedded SQLite metastore cannot keep a write transaction open that long while the
cycle itself writes. A lease row (``<name>.lease``: MT_KEY2 = expiry in epoch ms, MT_COMMENT = holder) gives the
same "one active instance" rule, and a crashed holder stops blocking once its lease expires.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from typing_extensions import Unpack

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.metastore import hive_mutex
from airflow_acid.metastore.aborts import AbortGroup, abort_groups
from airflow_acid.metastore.compactions import (
    CompactionInfo,
    compaction_info,
    compaction_names,
    insert_did_not_initiate,
    partition_filter,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, acquire_mutex, in_literals, now_ms, peek_mutex_value, set_mutex_value
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.flavour import profile_of
from airflow_acid.metastore.schema import (
    ACID_INITIATOR_DECISION_LOG,
    ACID_INITIATOR_DECISIONS,
    AUX_TABLE,
    COMPACTION_QUEUE,
    COMPLETED_COMPACTIONS,
    COMPLETED_TXN_COMPONENTS,
    DBS,
    PARTITION_PARAMS,
    PARTITIONS,
    SDS,
    TBLS,
)

INITIATOR_MUTEX = "Initiator"
HIVE_KEYS_OF_LEASE = {"Initiator": (hive_mutex.INITIATOR,), "HouseKeeper": (hive_mutex.HOUSEKEEPER,
                                                                          hive_mutex.TXN_CLEANER)}
"""On a Hive metastore a lease also holds these Hive mutexes (Hive's AcidHouseKeeperService and
AcidTxnCleanerService together do what airflow-acid's HouseKeeper does)."""
log = logging.getLogger(__name__)
LEASE_SUFFIX = ".lease"
STREAM_WRITE_TIMEOUT_S = 3600
"""MariaDB's net_write_timeout on the connection that streams an Initiator cycle's candidates (the server must
not drop it while the cycle works on a batch)."""
_CHUNK = 500

AID, CTC, CC, CQ = ACID_INITIATOR_DECISIONS, COMPLETED_TXN_COMPONENTS, COMPLETED_COMPACTIONS, COMPACTION_QUEUE
ADL = ACID_INITIATOR_DECISION_LOG
Entity = tuple[str, str, str | None]
"""(database, table, partition name or None)."""


class Outcome(str, enum.Enum):
    """ACID_INITIATOR_DECISIONS.AID_OUTCOME: what the Initiator did with a candidate."""

    QUEUED = "q"            # a compaction was enqueued
    NOT_NEEDED = "n"        # below every threshold (docs/hive-acid.md#compaction-type step 5)
    # not eligible (docs/hive-acid.md#initiator-cycle step 5: no_auto_compaction, already queued, back-off, dropped …)
    SKIPPED = "s"
    REFUSED = "r"           # the queue refused the request (docs/hive-acid.md#enqueue)
    ERROR = "e"             # evaluating the candidate failed
    WOULD_QUEUE = "w"       # a dry run or shadow cycle found a compaction it would queue (stored by shadow cycles)
    DECLINED = "d"          # in [acid] scope, but Hive's own compactor would compact it too (takeover refused)

    @property
    def display(self) -> str:
        return {"q": "queued", "n": "not needed", "s": "skipped", "r": "refused", "e": "error",
                "w": "would queue", "d": "declined"}[self.value]


@dataclass(frozen=True)
class InitiatorDecisionRecord:
    """One row of ACID_INITIATOR_DECISIONS: the latest decision for a table or partition."""

    database: str
    table: str
    partition: str | None
    outcome: Outcome
    reason: str
    decided_at: int | None = None
    type: CompactionType | None = None
    rule: str | None = None
    compaction_id: int | None = None
    initiator_id: str | None = None
    base_size: int | None = None
    delta_size: int | None = None
    delta_count: int | None = None

    @property
    def entity(self) -> Entity:
        return self.database, self.table, self.partition


@dataclass(frozen=True)
class WriteCandidate:
    """A table/partition with committed writes since the last cycle, or whose latest history row is 'did not
    initiate' or 'failed'."""

    database: str
    table: str
    partition: str | None
    last_commit_ms: int | None
    retry: bool = False  # found through its latest 'a'/'f' history row

    @property
    def entity(self) -> Entity:
        return self.database, self.table, self.partition


@dataclass(frozen=True)
class PartitionLocation:
    """Where a registered partition lives, with its parameters."""

    name: str
    location: str
    params: dict[str, str]


@dataclass(frozen=True)
class LeaseState:
    """The outcome of a lease request: ``acquired`` or who holds it until when."""

    acquired: bool
    holder: str | None
    until_ms: int


def _same_partition(column: sa.Column[Any], other: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    return sa.or_(sa.and_(column.is_(None), other.is_(None)), column == other)


def _entity_filter(db_col: sa.ColumnElement[Any], table_col: sa.ColumnElement[Any], part_col: sa.ColumnElement[Any],
                   entity: Entity) -> sa.ColumnElement[bool]:
    db, table, part = entity
    return sa.and_(db_col == db, table_col == table, part_col.is_(None) if part is None else part_col == part)


class InitiatorStore:
    """The Initiator's reads and writes on one metastore database; every method is one transaction."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()
        self._held: dict[str, list[hive_mutex.HeldMutex]] = {}
        self._last_checked: dict[str, int] = {}

    # --- clock, lease and last-checked time -------------------------------------------------------------

    def now_ms(self) -> int:
        """The database clock (epoch ms)."""
        return self.db.run(now_ms, what="database clock")

    def acquire_lease(self, name: str, holder: str, lease_ms: int) -> LeaseState:
        """Take (or renew) the run lease ``name`` for ``holder``; refused while another holder's lease is live."""
        key = name + LEASE_SUFFIX

        def work(conn: Connection) -> LeaseState:
            until = acquire_mutex(conn, key)
            current = conn.execute(sa.select(AUX_TABLE.c.MT_COMMENT).where(AUX_TABLE.c.MT_KEY1 == key)).scalar()
            now = now_ms(conn)
            if current and current != holder and until > now:
                return LeaseState(False, current, until)
            conn.execute(sa.update(AUX_TABLE).where(AUX_TABLE.c.MT_KEY1 == key)
                         .values(MT_KEY2=now + lease_ms, MT_COMMENT=holder[:255]))
            return LeaseState(True, holder, now + lease_ms)

        state = self.db.run(work, what=f"acquire {name} lease")
        if state.acquired and self.db.profile.is_hive:
            busy = self._hold_hive_mutexes(name)
            if busy is not None:
                self.release_lease(name, holder)
                return LeaseState(False, f"Hive's {busy} (AUX_TABLE mutex {busy!r} is locked)", state.until_ms)
        return state

    def _hold_hive_mutexes(self, name: str) -> str | None:
        """Lock Hive's mutexes of lease ``name`` for the cycle; the key of a busy one (nothing held then) or None."""
        held: list[hive_mutex.HeldMutex] = []
        for key in HIVE_KEYS_OF_LEASE.get(name, (name,)):
            mutex = hive_mutex.try_acquire(self.db, key)
            if mutex is None:
                for m in held:
                    m.release()
                return key
            held.append(mutex)
        self._held[name] = held
        return None

    def renew_lease(self, name: str, holder: str, lease_ms: int) -> bool:
        """Extend ``holder``'s lease ``name`` to now + ``lease_ms`` (a long cycle, between batches); False when it
        no longer holds it (its lease expired and another instance took it)."""
        key = name + LEASE_SUFFIX

        def work(conn: Connection) -> bool:
            now = now_ms(conn)
            return bool(conn.execute(sa.update(AUX_TABLE).where(
                AUX_TABLE.c.MT_KEY1 == key, AUX_TABLE.c.MT_COMMENT == holder[:255]).values(
                MT_KEY2=now + lease_ms)).rowcount)

        return self.db.run(work, what=f"renew {name} lease")

    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease back (only if ``holder`` still holds it), and Hive's mutexes held with it."""
        for mutex in self._held.pop(name, []):
            stored = self._last_checked.pop(name, None) if mutex.key == name else None
            mutex.release(stored)
        key = name + LEASE_SUFFIX
        self.db.run(lambda conn: conn.execute(
            sa.update(AUX_TABLE).where(AUX_TABLE.c.MT_KEY1 == key, AUX_TABLE.c.MT_COMMENT == holder[:255])
            .values(MT_KEY2=0, MT_COMMENT=None)), what=f"release {name} lease")

    def last_checked(self, name: str = INITIATOR_MUTEX) -> int:
        """MT_KEY2 of the mutex row: the start of the previous successful cycle (0 when none)."""
        held = [m for m in self._held.get(name, []) if m.key == name]
        if held:  # Hive's mutex row is locked by this process's own holding connection: read what it read
            return held[0].last_update_ms
        return self.db.run(lambda conn: acquire_mutex(conn, name), what=f"read {name} last-checked time")

    def peek_last_checked(self, name: str = INITIATOR_MUTEX) -> int:
        """:meth:`last_checked` read only: no lock, no row created (the plan dry run)."""
        return self.db.run(lambda conn: peek_mutex_value(conn, name), what=f"peek {name} last-checked time")

    def store_last_checked(self, value_ms: int, name: str = INITIATOR_MUTEX) -> None:
        """Store the next cycle's last-checked time under the mutex row (while Hive's mutex is held: written when
        it is released, as Hive's releaseLocks(timestamp) does)."""
        if any(m.key == name for m in self._held.get(name, [])):
            self._last_checked[name] = int(value_ms)
            return

        def work(conn: Connection) -> None:
            acquire_mutex(conn, name)
            set_mutex_value(conn, name, int(value_ms))

        self.db.run(work, what=f"store {name} last-checked time")

    # --- candidates -------------------------------------------------------------------------------------

    def write_candidates(self, since_ms: int | None, limit: int) -> tuple[list[WriteCandidate], int | None]:
        """Distinct table/partitions in COMPLETED_TXN_COMPONENTS with CTC_TIMESTAMP ≥ ``since_ms`` (all when None),
        oldest latest-commit first, at most ``limit`` (metastore.compactor.fetch.size). Returns the candidates and,
        when more were waiting, the latest-commit time of the last one taken (the next window must start there so
        nothing is lost), else None.

        A window that cannot move — more than ``limit`` candidates share the commit time it starts at (one
        dynamic-partition insert into thousands of partitions commits them all at one CTC_TIMESTAMP) — would give
        the same first page every cycle and never reach the rest; this cycle then pages on by key through every
        candidate up to that time, plus one page after it, so the next window starts later."""
        def work(conn: Connection) -> tuple[list[WriteCandidate], int | None]:
            profile = profile_of(conn)  # Hive: CTC_TIMESTAMP is a timestamp; compared and read back as epoch ms
            latest = profile.commit_time_ms(sa.func.max(CTC.c.CTC_TIMESTAMP))
            partition = sa.func.coalesce(CTC.c.CTC_PARTITION, "")
            order = (latest, CTC.c.CTC_DATABASE, CTC.c.CTC_TABLE, partition)

            def page(after: WriteCandidate | None) -> list[WriteCandidate]:
                """Up to ``limit`` + 1 candidates in window order, after ``after`` when given."""
                query = sa.select(CTC.c.CTC_DATABASE, CTC.c.CTC_TABLE, CTC.c.CTC_PARTITION, latest.label("latest"))
                if since_ms is not None:
                    query = query.where(profile.commit_time_since(CTC.c.CTC_TIMESTAMP, since_ms))
                query = query.group_by(CTC.c.CTC_DATABASE, CTC.c.CTC_TABLE, CTC.c.CTC_PARTITION)
                if after is not None:
                    query = query.having(sa.tuple_(*order) > sa.tuple_(
                        sa.literal(after.last_commit_ms), sa.literal(after.database), sa.literal(after.table),
                        sa.literal(after.partition or "")))
                rows = conn.execute(query.order_by(*order).limit(limit + 1)).all()
                return [WriteCandidate(r[0], r[1], r[2], int(r[3])) for r in rows]

            def last_ms() -> int:
                return found[-1].last_commit_ms or 0  # window candidates always have a commit time

            rows = page(None)
            found, more = rows[:limit], len(rows) > limit
            stuck_at = since_ms if since_ms is not None and more and last_ms() <= since_ms else None
            while stuck_at is not None and more and last_ms() <= stuck_at:
                rows = page(found[-1])  # the next window starts after stuck_at
                found, more = found + rows[:limit], len(rows) > limit
            resume = found[-1].last_commit_ms if more and found else None
            return found, resume

        return self.db.run(work, what="find compaction candidates")

    def stream_write_candidates(self, since_ms: int | None, batch: int) -> Iterator[list[WriteCandidate]]:
        """Every distinct table/partition of COMPLETED_TXN_COMPONENTS with CTC_TIMESTAMP ≥ ``since_ms`` (all when
        None), in batches of at most ``batch``, ordered by (database, table, partition): the candidates of one
        whole cycle without holding them in memory.

        On PostgreSQL and MariaDB one query is read through a server-side cursor (``stream_results``; the
        aggregation runs once, rows arrive ``batch`` at a time, on a read-only connection of its own while the
        cycle writes on others). SQLite takes write locks at BEGIN (a long read would stall every writer), so there
        each batch is its own short read, resumed after the last key taken (keyset pagination)."""
        if batch < 1:
            raise InvalidInputError(f"candidate batch size must be at least 1, not {batch}")
        if self.db.dialect == "sqlite":
            yield from self._keyset_write_candidates(since_ms, batch)
            return
        self.db.profile  # noqa: B018 - detect the flavour before the first query builds on it
        with self.db.translating(), self.db.engine.connect() as conn:
            if conn.dialect.name == "mysql":  # the server waits while the cycle lists a batch: not a dead client
                conn.exec_driver_sql(f"SET SESSION net_write_timeout = {STREAM_WRITE_TIMEOUT_S}")
            result = conn.execution_options(stream_results=True, yield_per=batch).execute(
                _window_query(conn, since_ms, keyset=False))
            try:
                for rows in result.partitions():
                    yield [WriteCandidate(r[0], r[1], r[2], int(r[3])) for r in rows]
            finally:
                result.close()  # a cycle that stops early: the cursor is closed before its connection

    def _keyset_write_candidates(self, since_ms: int | None, batch: int) -> Iterator[list[WriteCandidate]]:
        after: WriteCandidate | None = None
        while True:
            def work(conn: Connection, after: WriteCandidate | None = after) -> list[WriteCandidate]:
                query = _window_query(conn, since_ms, keyset=True)
                if after is not None:
                    partition = sa.func.coalesce(CTC.c.CTC_PARTITION, "")
                    query = query.having(sa.tuple_(CTC.c.CTC_DATABASE, CTC.c.CTC_TABLE, partition) > sa.tuple_(
                        sa.literal(after.database), sa.literal(after.table), sa.literal(after.partition or "")))
                return [WriteCandidate(r[0], r[1], r[2], int(r[3])) for r in conn.execute(query.limit(batch))]

            rows = self.db.run(work, what="find compaction candidates")
            if rows:
                yield rows
            if len(rows) < batch:
                return
            after = rows[-1]

    def retry_candidates(self, limit: int) -> list[WriteCandidate]:
        """Table/partitions still in COMPLETED_TXN_COMPONENTS whose newest COMPLETED_COMPACTIONS row is 'did not
        initiate' or 'failed' (so the Initiator looks at them again; docs/hive-acid.md#initiator-cycle step 4)."""
        def work(conn: Connection) -> list[WriteCandidate]:
            newest = (sa.select(sa.func.max(CC.c.CC_ID))
                      .group_by(CC.c.CC_DATABASE, CC.c.CC_TABLE, CC.c.CC_PARTITION).scalar_subquery())
            has_writes = sa.exists(sa.select(CTC.c.CTC_TXNID).where(
                CTC.c.CTC_DATABASE == CC.c.CC_DATABASE, CTC.c.CTC_TABLE == CC.c.CC_TABLE,
                _same_partition(CTC.c.CTC_PARTITION, CC.c.CC_PARTITION)))
            rows = conn.execute(
                sa.select(CC.c.CC_DATABASE, CC.c.CC_TABLE, CC.c.CC_PARTITION)
                .where(CC.c.CC_ID.in_(newest),
                       CC.c.CC_STATE.in_((CompactionState.DID_NOT_INITIATE.value, CompactionState.FAILED.value)),
                       has_writes)
                .order_by(CC.c.CC_ID).limit(limit)).all()
            return [WriteCandidate(r[0], r[1], r[2], None, retry=True) for r in rows]

        return self.db.run(work, what="find failed compaction candidates")

    def abort_groups(self, count_threshold: int, time_threshold_ms: int) -> list[AbortGroup]:
        """Aborted txns per table/partition over the thresholds (:func:`~airflow_acid.metastore.aborts.abort_groups`,
        shared with the Cleaner; ``-1, -1`` lists every group)."""
        return self.db.run(lambda conn: abort_groups(conn, count_threshold, time_threshold_ms),
                           what="find aborted transaction groups")

    def busy_or_failed_entities(self) -> set[Entity]:
        """Table/partitions with a queue row in 'initiated'/'working' or any 'failed' history row: the only ones
        the per-candidate "already queued / failing" check (docs/hive-acid.md#initiator-cycle step 5.3) can stop, found with
        two queries."""
        def work(conn: Connection) -> set[Entity]:
            busy = conn.execute(sa.select(COMPACTION_QUEUE.c.CQ_DATABASE, COMPACTION_QUEUE.c.CQ_TABLE,
                                          COMPACTION_QUEUE.c.CQ_PARTITION).distinct().where(
                COMPACTION_QUEUE.c.CQ_STATE.in_((CompactionState.INITIATED.value, CompactionState.WORKING.value))))
            failed = conn.execute(sa.select(CC.c.CC_DATABASE, CC.c.CC_TABLE, CC.c.CC_PARTITION).distinct()
                                  .where(CC.c.CC_STATE == CompactionState.FAILED.value))
            return {(r[0], r[1], r[2]) for r in busy} | {(r[0], r[1], r[2]) for r in failed}

        return self.db.run(work, what="find queued or failed compactions")

    # --- the queue as the Initiator sees it ---------------------------------------------------------------

    def current_compaction(self, db: str, table: str, partition: str | None = None) -> CompactionInfo | None:
        """The 'initiated' or 'working' row for exactly this table/partition, if any (docs/hive-acid.md#initiator-cycle step
        5.3)."""
        db, table = compaction_names(db, table)

        def work(conn: Connection) -> CompactionInfo | None:
            row = conn.execute(sa.select(CQ).where(
                CQ.c.CQ_DATABASE == db, CQ.c.CQ_TABLE == table, partition_filter(CQ.c.CQ_PARTITION, partition),
                CQ.c.CQ_STATE.in_((CompactionState.INITIATED.value, CompactionState.WORKING.value)))
                .order_by(CQ.c.CQ_ID).limit(1)).first()
            return None if row is None else compaction_info(row, "CQ")

        return self.db.run(work, what="current compaction lookup")

    def failing_since(self, db: str, table: str, partition: str | None = None) -> int | None:
        """If the newest hive.compactor.initiator.failed.compacts.threshold finished attempts ('succeeded' or
        'failed', newest first) all failed and the retry time (hive.compactor.initiator.failed.retry.time) after
        the newest failure has not passed, the enqueue time of that newest failure; else None
        (docs/hive-acid.md#initiator-cycle step 5.3)."""
        db, table = compaction_names(db, table)
        threshold = self.conf.failed_compacts_threshold
        retry_ms = int(self.conf.failed_retry_time_s * 1000)

        def work(conn: Connection) -> int | None:
            rows = conn.execute(sa.select(CC.c.CC_STATE, CC.c.CC_ENQUEUE_TIME).where(
                CC.c.CC_DATABASE == db, CC.c.CC_TABLE == table, partition_filter(CC.c.CC_PARTITION, partition),
                CC.c.CC_STATE.in_((CompactionState.SUCCEEDED.value, CompactionState.FAILED.value)))
                .order_by(CC.c.CC_ID.desc()).limit(threshold)).all()
            if len(rows) < threshold or any(r.CC_STATE != CompactionState.FAILED.value for r in rows):
                return None
            newest = max((r.CC_ENQUEUE_TIME or 0) for r in rows)
            if retry_ms > 0 and newest + retry_ms < now_ms(conn):
                return None
            return newest

        return self.db.run(work, what="failed compactions lookup")

    def initiator_skip_reason(self, db: str, table: str, partition: str | None = None,
                              type: CompactionType = CompactionType.MAJOR, *, record: bool = True,
                              initiator_id: str | None = None) -> str | None:
        """Hive's foundCurrentOrFailedCompactions: why the Initiator must not queue this entity now, or None.

        A consecutive-failure skip is recorded as a 'did not initiate' history row unless ``record`` is False.
        """
        current = self.current_compaction(db, table, partition)
        if current is not None:
            return (f"compaction {current.id} of {current.full_partition_name} is already "
                    f"'{current.state.display}'")
        newest_failure = self.failing_since(db, table, partition)
        if newest_failure is None:
            return None
        threshold = self.conf.failed_compacts_threshold
        message = (f"Compaction is not initiated since last {threshold} consecutive compaction attempts failed "
                   f"(hive.compactor.initiator.failed.compacts.threshold={threshold}); it is retried "
                   f"{self.conf.failed_retry_time_s:g} s after the last failure "
                   "(hive.compactor.initiator.failed.retry.time) or when requested manually")
        if record:
            self.record_did_not_initiate(db, table, partition, type, message, initiator_id=initiator_id)
        return message

    def record_did_not_initiate(self, db: str, table: str, partition: str | None, type: CompactionType,
                                message: str, *, initiator_id: str | None = None,
                                initiator_version: str | None = None, pool: str | None = None) -> int:
        """Record the Initiator's decision not to schedule a compaction ('did not initiate', history only)."""
        db, table = compaction_names(db, table)
        type = CompactionType(type)
        return self.db.run(lambda conn: insert_did_not_initiate(
            conn, db, table, partition, type, message, initiator_id=initiator_id, initiator_version=initiator_version,
            pool=pool), what=f"record did-not-initiate for {db}.{table}")

    def revoke_timed_out_workers(self, timeout_s: float | None = None) -> list[int]:
        """Put 'working' rows claimed longer than ``timeout_s`` (hive.compactor.worker.timeout) ago back to
        'initiated'; returns their ids."""
        timeout_ms = int(1000 * (self.conf.worker_timeout_s if timeout_s is None else timeout_s))

        def work(conn: Connection) -> list[int]:
            cutoff = now_ms(conn) - timeout_ms
            return self._revoke(conn, CQ.c.CQ_START < cutoff)

        return self.db.run(work, what="revoke timed-out workers")

    def revoke_from_local_workers(self, host: str) -> list[int]:
        """Put 'working' rows whose worker id starts with ``host`` back to 'initiated' (Initiator restart)."""
        if not host:
            raise InvalidInputError("revoking local workers needs the host name")
        return self.db.run(lambda conn: self._revoke(conn, CQ.c.CQ_WORKER_ID.startswith(host, autoescape=True)),
                           what=f"revoke workers of {host}")

    @staticmethod
    def _revoke(conn: Connection, condition: sa.ColumnElement[bool]) -> list[int]:
        where = sa.and_(CQ.c.CQ_STATE == CompactionState.WORKING.value, condition)
        ids = sorted(conn.execute(sa.select(CQ.c.CQ_ID).where(where).with_for_update()).scalars())
        if ids:
            conn.execute(sa.update(CQ).where(CQ.c.CQ_ID.in_(ids), CQ.c.CQ_STATE == CompactionState.WORKING.value)
                         .values(CQ_STATE=CompactionState.INITIATED.value, CQ_WORKER_ID=None, CQ_START=None))
            log.warning("compactions %s went back to 'initiated' (their workers stopped or timed out)", ids)
        return ids

    # --- catalog in bulk --------------------------------------------------------------------------------

    def partition_locations(self, database: str, table: str, names: Iterable[str] | None = None
                            ) -> dict[str, PartitionLocation]:
        """Locations and parameters of the named partitions (every partition when ``names`` is None) of one table in
        one transaction; a name missing from the result is not registered (the partition was dropped)."""
        wanted = None if names is None else sorted(set(names))

        def work(conn: Connection) -> dict[str, PartitionLocation]:
            tbl_id = conn.execute(sa.select(TBLS.c.TBL_ID).join_from(TBLS, DBS, TBLS.c.DB_ID == DBS.c.DB_ID)
                                  .where(DBS.c.NAME == database, TBLS.c.TBL_NAME == table)).scalar()
            if tbl_id is None:
                return {}
            query = (sa.select(PARTITIONS.c.PART_ID, PARTITIONS.c.PART_NAME, SDS.c.LOCATION)
                     .join_from(PARTITIONS, SDS, PARTITIONS.c.SD_ID == SDS.c.SD_ID).where(PARTITIONS.c.TBL_ID == tbl_id))
            if wanted is None:
                rows = conn.execute(query.order_by(PARTITIONS.c.PART_NAME)).all()
            else:
                rows = [r for start in range(0, len(wanted), _CHUNK) for r in conn.execute(
                    query.where(in_literals(PARTITIONS.c.PART_NAME, wanted[start:start + _CHUNK])))]
            params: dict[int, dict[str, str]] = {}
            ids = [r.PART_ID for r in rows]
            for start in range(0, len(ids), _CHUNK):
                for p in conn.execute(sa.select(PARTITION_PARAMS)
                                      .where(PARTITION_PARAMS.c.PART_ID.in_(ids[start:start + _CHUNK]))):
                    params.setdefault(p.PART_ID, {})[p.PARAM_KEY] = p.PARAM_VALUE
            return {r.PART_NAME: PartitionLocation(r.PART_NAME, r.LOCATION, params.get(r.PART_ID, {})) for r in rows}

        return self.db.run(work, what=f"partition locations of {database}.{table}")

    # --- decisions --------------------------------------------------------------------------------------

    def record_decisions(self, records: Sequence[InitiatorDecisionRecord], *, log_cycle: bool = False) -> None:
        """Replace the stored decision of every table/partition in ``records`` (one transaction). A Hive metastore
        without the decisions table records nothing (said once, when the metastore was first used).

        ``log_cycle`` (shadow cycles): also append every decision to ACID_INITIATOR_DECISION_LOG, one row per
        table/partition stamped with this cycle's time, and delete log rows past
        airflow.acid.initiator.decision.log.retention in the same transaction — a shadow cycle on a Hive metastore
        runs where no airflow-acid HouseKeeper may run, so the log stays bounded by itself."""
        if not records or not self.db.profile.decisions_table:
            return
        latest = {r.entity: r for r in records}
        log_rows = log_cycle and self.db.profile.decision_log_table and self.conf.decision_log_retention_s > 0

        def work(conn: Connection) -> None:
            now = now_ms(conn)
            by_table: dict[tuple[str, str], list[str | None]] = {}
            for db, table, part in latest:
                by_table.setdefault((db, table), []).append(part)
            for (db, table), parts in by_table.items():
                named = [p for p in parts if p is not None]
                base = (AID.c.AID_DATABASE == db, AID.c.AID_TABLE == table)
                if len(named) < len(parts):
                    conn.execute(sa.delete(AID).where(*base, AID.c.AID_PARTITION.is_(None)))
                for start in range(0, len(named), _CHUNK):
                    conn.execute(sa.delete(AID).where(*base, in_literals(AID.c.AID_PARTITION, named[start:start + _CHUNK])))
            conn.execute(sa.insert(AID), [{
                "AID_DATABASE": r.database, "AID_TABLE": r.table, "AID_PARTITION": r.partition,
                "AID_DECIDED_AT": r.decided_at if r.decided_at is not None else now,
                "AID_OUTCOME": r.outcome.value, "AID_TYPE": r.type.value if r.type is not None else None,
                "AID_RULE": r.rule, "AID_REASON": r.reason, "AID_COMPACTION_ID": r.compaction_id,
                "AID_INITIATOR_ID": r.initiator_id, "AID_BASE_SIZE": r.base_size, "AID_DELTA_SIZE": r.delta_size,
                "AID_DELTA_COUNT": r.delta_count} for r in latest.values()])
            if log_rows:
                rows = [{"ADL_DATABASE": r.database, "ADL_TABLE": r.table, "ADL_PARTITION": r.partition,
                         "ADL_DECIDED_AT": r.decided_at if r.decided_at is not None else now,
                         "ADL_OUTCOME": r.outcome.value, "ADL_TYPE": r.type.value if r.type is not None else None,
                         "ADL_RULE": r.rule, "ADL_REASON": r.reason, "ADL_INITIATOR_ID": r.initiator_id,
                         "ADL_BASE_SIZE": r.base_size, "ADL_DELTA_SIZE": r.delta_size,
                         "ADL_DELTA_COUNT": r.delta_count} for r in latest.values()]
                for start in range(0, len(rows), _CHUNK):
                    conn.execute(sa.insert(ADL), rows[start:start + _CHUNK])
                _trim_decision_log(conn, now - int(self.conf.decision_log_retention_s * 1000))

        self.db.run(work, what="record Initiator decisions")

    def purge_decision_log(self) -> int:
        """Delete ACID_INITIATOR_DECISION_LOG rows older than airflow.acid.initiator.decision.log.retention (every
        row when it is 0); the HouseKeeper's pass. Returns rows deleted (0 without the table)."""
        if not self.db.profile.decision_log_table:
            return 0
        retention_ms = int(self.conf.decision_log_retention_s * 1000)

        def work(conn: Connection) -> int:
            now = now_ms(conn)
            return _trim_decision_log(conn, now - retention_ms if retention_ms > 0 else now + 1)

        return self.db.run(work, what="purge the Initiator decision log")

    def latest_decision(self, database: str, table: str, partition: str | None = None
                        ) -> InitiatorDecisionRecord | None:
        """The stored decision for exactly this table/partition, or None if the Initiator never looked at it (or
        decisions are not recorded: a Hive metastore without the decisions table)."""
        if not self.db.profile.decisions_table:
            return None

        def work(conn: Connection) -> InitiatorDecisionRecord | None:
            row = conn.execute(sa.select(AID).where(
                _entity_filter(AID.c.AID_DATABASE, AID.c.AID_TABLE, AID.c.AID_PARTITION,
                               (database, table, partition))).order_by(AID.c.AID_ID.desc()).limit(1)).first()
            return None if row is None else decision_record(row)

        return self.db.run(work, what="read Initiator decision")

    def decisions(self, database: str | None = None, table: str | None = None,
                  outcome: Outcome | None = None) -> list[InitiatorDecisionRecord]:
        """Stored decisions filtered by database, table and outcome, by table then partition."""
        if not self.db.profile.decisions_table:
            return []

        def work(conn: Connection) -> list[InitiatorDecisionRecord]:
            conditions = []
            if database is not None:
                conditions.append(AID.c.AID_DATABASE == database)
            if table is not None:
                conditions.append(AID.c.AID_TABLE == table)
            if outcome is not None:
                conditions.append(AID.c.AID_OUTCOME == Outcome(outcome).value)
            rows = conn.execute(sa.select(AID).where(*conditions).order_by(
                AID.c.AID_DATABASE, AID.c.AID_TABLE, AID.c.AID_PARTITION)).all()
            return [decision_record(r) for r in rows]

        return self.db.run(work, what="list Initiator decisions")


def _trim_decision_log(conn: Connection, before_ms: int) -> int:
    """Delete log rows decided before ``before_ms``; the number deleted."""
    return int(conn.execute(sa.delete(ADL).where(ADL.c.ADL_DECIDED_AT < before_ms)).rowcount or 0)


def _window_query(conn: Connection, since_ms: int | None, *, keyset: bool) -> sa.Select[Any]:
    """The candidate window of :meth:`InitiatorStore.stream_write_candidates`: one row per table/partition with its
    latest commit (epoch ms), by (database, table, partition; a table-level row first)."""
    profile = profile_of(conn)  # Hive: CTC_TIMESTAMP is a timestamp; compared and read back as epoch ms
    latest = profile.commit_time_ms(sa.func.max(CTC.c.CTC_TIMESTAMP))
    query = sa.select(CTC.c.CTC_DATABASE, CTC.c.CTC_TABLE, CTC.c.CTC_PARTITION, latest.label("latest"))
    if since_ms is not None:
        query = query.where(profile.commit_time_since(CTC.c.CTC_TIMESTAMP, since_ms))
    query = query.group_by(CTC.c.CTC_DATABASE, CTC.c.CTC_TABLE, CTC.c.CTC_PARTITION)
    partition = sa.func.coalesce(CTC.c.CTC_PARTITION, "") if keyset else CTC.c.CTC_PARTITION
    return query.order_by(CTC.c.CTC_DATABASE, CTC.c.CTC_TABLE, partition)


def decision_record(row: sa.Row[Unpack[tuple[Any, ...]]]) -> InitiatorDecisionRecord:
    return InitiatorDecisionRecord(
        database=row.AID_DATABASE, table=row.AID_TABLE, partition=row.AID_PARTITION, outcome=Outcome(row.AID_OUTCOME),
        reason=row.AID_REASON, decided_at=row.AID_DECIDED_AT,
        type=CompactionType(row.AID_TYPE) if row.AID_TYPE else None, rule=row.AID_RULE,
        compaction_id=row.AID_COMPACTION_ID, initiator_id=row.AID_INITIATOR_ID, base_size=row.AID_BASE_SIZE,
        delta_size=row.AID_DELTA_SIZE, delta_count=row.AID_DELTA_COUNT)


def logged_decision_record(row: sa.Row[Unpack[tuple[Any, ...]]]) -> InitiatorDecisionRecord:
    """One ACID_INITIATOR_DECISION_LOG row as a decision record (a shadow decision: no compaction id)."""
    return InitiatorDecisionRecord(
        database=row.ADL_DATABASE, table=row.ADL_TABLE, partition=row.ADL_PARTITION, outcome=Outcome(row.ADL_OUTCOME),
        reason=row.ADL_REASON, decided_at=row.ADL_DECIDED_AT,
        type=CompactionType(row.ADL_TYPE) if row.ADL_TYPE else None, rule=row.ADL_RULE,
        initiator_id=row.ADL_INITIATOR_ID, base_size=row.ADL_BASE_SIZE, delta_size=row.ADL_DELTA_SIZE,
        delta_count=row.ADL_DELTA_COUNT)
