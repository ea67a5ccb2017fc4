"""The Cleaner's side of the metastore (Hive's rules: docs/hive-acid.md): 'ready for cleaning' rows of the compaction
queue and their bookkeeping (Hive's CompactionTxnHandler: findReadyToClean, markCleaned, the retry back-off),
aborted-write cleanup without a compaction (findReadyToCleanAborts, HIVE-27020), and who holds the history level
below a watermark. The queue itself (rows, enqueue, claim, history) is :mod:`.compactions`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import CompactionState, CompactionType, OperationType, TxnState
from airflow_acid.metastore.aborts import abort_groups
from airflow_acid.metastore.compactions import (
    SCHEDULER_MUTEX,
    CompactionInfo,
    compaction_info,
    compaction_names,
    copy_to_history,
    next_compaction_id,
    partition_filter,
    queued_row,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, acquire_mutex, now_ms
from airflow_acid.metastore.schema import (
    COMPACTION_QUEUE,
    COMPLETED_TXN_COMPONENTS,
    MIN_HISTORY_LEVEL,
    TXN_COMPONENTS,
    TXNS,
)

CQ = COMPACTION_QUEUE
_CHUNK = 500  # ids per IN list
_MAX_RETENTION_MS = 2 ** 62  # doubling CQ_RETRY_RETENTION stops here instead of overflowing a bigint


@dataclass(frozen=True)
class AbortCleanupCandidate:
    """A table/partition whose aborted writes are due for cleaning without a compaction
    (docs/hive-acid.md#aborted-write-cleanup, findReadyToCleanAborts), with its ABORT_TXN_CLEANUP retry row if an earlier
    attempt failed."""

    database: str
    table: str
    partition: str | None
    aborted_txns: int
    oldest_started: int
    """TXN_STARTED (epoch ms) of the oldest aborted txn."""
    retry_id: int | None = None
    """CQ_ID of the entity's 'c' row (SHOW COMPACTIONS type ABORT_TXN_CLEANUP), None before any failure."""
    retry_retention: int = 0
    """Its CQ_RETRY_RETENTION in ms (0 when there is no retry row)."""


class CleaningStore:
    """The Cleaner's side of the metastore: compactions and aborted writes ready to clean, their bookkeeping, and
    who still reads below a watermark."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def min_history_holders(self, limit: int) -> list[int]:
        """Transactions whose MIN_HISTORY_LEVEL row pins a minimum open txn below ``limit`` (they may still read
        files a compaction committed before ``limit`` made obsolete)."""
        mhl = MIN_HISTORY_LEVEL

        def work(conn: Connection) -> list[int]:
            return [int(t) for t in conn.execute(
                sa.select(mhl.c.MHL_TXNID).where(mhl.c.MHL_MIN_OPEN_TXNID < limit).order_by(mhl.c.MHL_TXNID)
            ).scalars()]

        return self.db.run(work, what="min history level holders")

    def ready_to_clean(self, min_open_txn_id: int, retention_ms: int = 0, *, after_id: int = 0
                       ) -> list[CompactionInfo]:
        """'ready for cleaning' rows whose readers have all finished (docs/hive-acid.md#reader-snapshot-rule step 2).

        A row qualifies when CQ_NEXT_TXN_ID <= ``min_open_txn_id`` (or is NULL) and its commit time (plus the
        cleaner retry delay and ``retention_ms``) has passed; of several rows for one table/partition only the one
        with the lowest CQ_HIGHEST_WRITE_ID is returned (HIVE-25115). Ordered by id, at most
        metastore.compactor.fetch.size rows, with an id above ``after_id`` (the next page of a cycle).
        """
        size = self.conf.compactor_fetch_size

        def work(conn: Connection) -> list[CompactionInfo]:
            now = now_ms(conn)
            base = sa.and_(
                CQ.c.CQ_STATE == CompactionState.READY_FOR_CLEANING.value,
                CQ.c.CQ_TYPE != CompactionType.ABORT_TXN_CLEANUP.value,
                sa.or_(CQ.c.CQ_COMMIT_TIME.is_(None),
                       CQ.c.CQ_COMMIT_TIME < now - CQ.c.CQ_RETRY_RETENTION - int(retention_ms)))
            ready = base
            if min_open_txn_id > 0:
                ready = sa.and_(base, sa.or_(CQ.c.CQ_NEXT_TXN_ID.is_(None), CQ.c.CQ_NEXT_TXN_ID <= min_open_txn_id))
            # Candidates in id order (the (CQ_STATE, CQ_ID) index), then the lowest CQ_HIGHEST_WRITE_ID of just their
            # tables/partitions: each page costs the page, not every ready row (a cycle stays linear).
            result: list[CompactionInfo] = []
            after = after_id
            while len(result) < size:
                chunk = [compaction_info(r, "CQ") for r in conn.execute(
                    sa.select(CQ).where(ready, CQ.c.CQ_ID > after).order_by(CQ.c.CQ_ID).limit(size))]
                if not chunk:
                    break
                lowest = _lowest_write_ids(conn, base, chunk)
                result.extend(i for i in chunk if i.highest_write_id is not None
                              and i.highest_write_id == lowest.get((i.database, i.table, i.partition)))
                if len(chunk) < size:
                    break
                after = chunk[-1].id
            return result[:size]

        return self.db.run(work, what="find compactions ready to clean")

    def mark_cleaner_start(self, cq_id: int) -> None:
        """CQ_CLEANER_START = now (docs/hive-acid.md#cleaning step 2)."""
        self._set_cleaner_start(cq_id, None)

    def clear_cleaner_start(self, cq_id: int) -> None:
        """CQ_CLEANER_START = -1: an attempt removed nothing; the row stays 'ready for cleaning' (docs/hive-acid.md#cleaning
        step 5)."""
        self._set_cleaner_start(cq_id, -1)

    def _set_cleaner_start(self, cq_id: int, value: int | None) -> None:
        def work(conn: Connection) -> None:
            queued_row(conn, cq_id, CompactionState.READY_FOR_CLEANING, "update the cleaner start of")
            conn.execute(sa.update(CQ).where(CQ.c.CQ_ID == cq_id).values(
                CQ_CLEANER_START=now_ms(conn) if value is None else value))

        self.db.run(work, what=f"cleaner start of compaction {cq_id}")

    def mark_cleaned(self, cq_id: int, *, aborted_write_ids: Iterable[int] | None = None) -> None:
        """The Cleaner finished (docs/hive-acid.md#mark-cleaned): history row 'succeeded', queue row and the entity's
        abort-cleanup ('c') rows removed, COMPLETED_TXN_COMPONENTS up to the compacted HWM removed, and TXN_COMPONENTS of
        aborted txns removed up to that HWM — or, when ``aborted_write_ids`` is given (the directory had uncompacted
        aborts), exactly those write ids."""
        exact_ids = None if aborted_write_ids is None else sorted({int(w) for w in aborted_write_ids})

        def work(conn: Connection) -> None:
            info = queued_row(conn, cq_id, None, "mark cleaned")
            hwm = info.highest_write_id or 0
            abort_cleanup = info.type is CompactionType.ABORT_TXN_CLEANUP
            if not abort_cleanup:
                copy_to_history(conn, cq_id, CompactionState.SUCCEEDED, now_ms(conn))
            delete_rows = CQ.c.CQ_ID == cq_id
            if not abort_cleanup:
                delete_rows = sa.or_(delete_rows, sa.and_(
                    CQ.c.CQ_DATABASE == info.database, CQ.c.CQ_TABLE == info.table,
                    sa.true() if info.partition is None else CQ.c.CQ_PARTITION == info.partition,
                    CQ.c.CQ_TYPE == CompactionType.ABORT_TXN_CLEANUP.value))
            conn.execute(sa.delete(CQ).where(delete_rows))
            if not abort_cleanup:
                ctc = COMPLETED_TXN_COMPONENTS
                conditions = [ctc.c.CTC_DATABASE == info.database, ctc.c.CTC_TABLE == info.table]
                if info.partition is not None:
                    conditions.append(ctc.c.CTC_PARTITION == info.partition)
                if hwm:
                    conditions.append(ctc.c.CTC_WRITEID <= hwm)
                conn.execute(sa.delete(ctc).where(*conditions))
            _remove_aborted_components(conn, info, hwm, exact_ids)

        self.db.run(work, what=f"mark compaction {cq_id} cleaned")

    # --- a page of rows at once (the Cleaner's cycle) ------------------------------------------------------

    def txn_states(self, txn_ids: Iterable[int]) -> dict[int, TxnState]:
        """TXNS.TXN_STATE of each of ``txn_ids`` (the compactor txns of a page of rows) in one transaction; an id
        without a TXNS row (committed and cleaned up, or never opened) is missing from the result."""
        ids = sorted({int(t) for t in txn_ids})

        def work(conn: Connection) -> dict[int, TxnState]:
            return {int(r.TXN_ID): TxnState(r.TXN_STATE)
                    for start in range(0, len(ids), _CHUNK)
                    for r in conn.execute(sa.select(TXNS.c.TXN_ID, TXNS.c.TXN_STATE)
                                          .where(TXNS.c.TXN_ID.in_(ids[start:start + _CHUNK])))}

        return self.db.run(work, what="compactor txn states") if ids else {}

    def mark_cleaner_starts(self, cq_ids: Sequence[int]) -> None:
        """CQ_CLEANER_START = now for every 'ready for cleaning' row of ``cq_ids`` (docs/hive-acid.md#cleaning step 2),
        in one transaction."""
        self._set_cleaner_starts(cq_ids, None)

    def clear_cleaner_starts(self, cq_ids: Sequence[int]) -> None:
        """CQ_CLEANER_START = -1 for the rows of ``cq_ids`` (attempts that left obsolete directories), one
        transaction."""
        self._set_cleaner_starts(cq_ids, -1)

    def _set_cleaner_starts(self, cq_ids: Sequence[int], value: int | None) -> None:
        ids = sorted({int(i) for i in cq_ids})
        if not ids:
            return

        def work(conn: Connection) -> None:
            stamp = now_ms(conn) if value is None else value
            for start in range(0, len(ids), _CHUNK):
                conn.execute(sa.update(CQ).where(CQ.c.CQ_ID.in_(ids[start:start + _CHUNK]),
                                                 CQ.c.CQ_STATE == CompactionState.READY_FOR_CLEANING.value)
                             .values(CQ_CLEANER_START=stamp))

        self.db.run(work, what=f"cleaner start of {len(ids)} compaction(s)")

    def mark_many_cleaned(self, cleaned: Mapping[int, Iterable[int] | None]) -> set[int]:
        """:meth:`mark_cleaned` for a page of compaction rows (id → the exact aborted write ids, or None) in ONE
        transaction, with the same effect as marking them one by one: statements grouped by table, high watermark
        and CQ_NEXT_TXN_ID (partitions in one IN list) instead of five transactions per row. Rows no longer in the
        queue (finished elsewhere) are skipped; returns the ids marked cleaned."""
        wanted = sorted({int(i) for i in cleaned})
        exact = {int(k): None if v is None else sorted({int(w) for w in v}) for k, v in cleaned.items()}
        if not wanted:
            return set()

        def work(conn: Connection) -> set[int]:
            infos = [compaction_info(r, "CQ") for start in range(0, len(wanted), _CHUNK) for r in conn.execute(
                sa.select(CQ).where(CQ.c.CQ_ID.in_(wanted[start:start + _CHUNK])).order_by(CQ.c.CQ_ID)
                .with_for_update())]
            if not infos:
                return set()
            compactions = [i for i in infos if i.type is not CompactionType.ABORT_TXN_CLEANUP]
            copy_to_history(conn, [i.id for i in compactions], CompactionState.SUCCEEDED, now_ms(conn))
            ids = [i.id for i in infos]
            for start in range(0, len(ids), _CHUNK):
                conn.execute(sa.delete(CQ).where(CQ.c.CQ_ID.in_(ids[start:start + _CHUNK])))
            # the entities' abort-cleanup ('c') rows, and COMPLETED_TXN_COMPONENTS up to each compacted HWM
            by_table: dict[tuple[str, str], list[CompactionInfo]] = {}
            for i in compactions:
                by_table.setdefault((i.database, i.table), []).append(i)
            ctc = COMPLETED_TXN_COMPONENTS
            for (database, table), rows in by_table.items():
                in_table = [CQ.c.CQ_DATABASE == database, CQ.c.CQ_TABLE == table,
                            CQ.c.CQ_TYPE == CompactionType.ABORT_TXN_CLEANUP.value]
                for parts in _partition_groups(rows):
                    conn.execute(sa.delete(CQ).where(*in_table, _partitions_in(CQ.c.CQ_PARTITION, parts)))
                by_hwm: dict[int, list[CompactionInfo]] = {}
                for i in rows:
                    by_hwm.setdefault(i.highest_write_id or 0, []).append(i)
                for hwm, group in by_hwm.items():
                    conditions = [ctc.c.CTC_DATABASE == database, ctc.c.CTC_TABLE == table]
                    if hwm:
                        conditions.append(ctc.c.CTC_WRITEID <= hwm)
                    for parts in _partition_groups(group):
                        conn.execute(sa.delete(ctc).where(*conditions, _partitions_in(ctc.c.CTC_PARTITION, parts)))
            # TXN_COMPONENTS of aborted txns: rows with exact write ids one by one, the others grouped
            grouped: dict[tuple[str, str, int, int | None], list[CompactionInfo]] = {}
            for i in infos:
                hwm = i.highest_write_id or 0
                if exact.get(i.id) is not None:
                    _remove_aborted_components(conn, i, hwm, exact[i.id])
                elif hwm:
                    grouped.setdefault((i.database, i.table, hwm, i.next_txn_id), []).append(i)
            for (_, _, hwm, _), group in grouped.items():
                for parts in _partition_groups(group):
                    first = group[0] if parts is not None else dataclasses.replace(group[0], partition=None)
                    _remove_aborted_components(conn, first, hwm, None, partitions=parts)
            return set(ids)

        return self.db.run(work, what=f"mark {len(wanted)} compaction(s) cleaned")

    def cleaner_attempt_failed(self, cq_id: int, error: str) -> CompactionInfo | None:
        """A cleaning attempt failed (docs/hive-acid.md#cleaner-retries): delay the next attempt by 2^attempts ×
        hive.compactor.cleaner.retry. retentionTime, or, after hive.compactor.cleaner.retry.maxattempts attempts, mark the
        row failed. Returns the updated queue row, or None when it went to the history as failed."""
        base_ms = int(self.conf.cleaner_retry_retention_s * 1000)

        def work(conn: Connection) -> CompactionInfo | None:
            info = queued_row(conn, cq_id, None, "record a cleaner failure of")
            attempts = 0
            if info.retry_retention > 0 and base_ms > 0:
                attempts = max(0, (info.retry_retention // base_ms).bit_length())
            if attempts >= self.conf.cleaner_retry_max_attempts:
                copy_to_history(conn, cq_id, CompactionState.FAILED, now_ms(conn), error_message=error)
                conn.execute(sa.delete(CQ).where(CQ.c.CQ_ID == cq_id))
                return None
            conn.execute(sa.update(CQ).where(CQ.c.CQ_ID == cq_id).values(
                CQ_RETRY_RETENTION=(2 ** attempts) * base_ms, CQ_ERROR_MESSAGE=error))
            return compaction_info(conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id)).one(), "CQ")

        return self.db.run(work, what=f"cleaner failure of compaction {cq_id}")

    # --- aborted-write cleanup without a compaction (docs/hive-acid.md#aborted-write-cleanup, HIVE-27020) ---

    def ready_to_clean_aborts(self, aborted_threshold: int, aborted_time_threshold_ms: int
                              ) -> list[AbortCleanupCandidate]:
        """Hive's findReadyToCleanAborts: the abort groups over the thresholds (the Initiator's query,
        :func:`~airflow_acid.metastore.aborts.abort_groups`) that name a table, except those whose ABORT_TXN_CLEANUP
        retry row is still inside its retry delay (CQ_COMMIT_TIME + CQ_RETRY_RETENTION > now). Ordered by entity, at
        most metastore.compactor.fetch.size."""
        def work(conn: Connection) -> list[AbortCleanupCandidate]:
            now = now_ms(conn)
            groups = abort_groups(conn, aborted_threshold, aborted_time_threshold_ms)
            retries = {(r.CQ_DATABASE, r.CQ_TABLE, r.CQ_PARTITION): r for r in conn.execute(
                sa.select(CQ.c.CQ_DATABASE, CQ.c.CQ_TABLE, CQ.c.CQ_PARTITION, sa.func.max(CQ.c.CQ_ID).label("ID"),
                          sa.func.max(CQ.c.CQ_RETRY_RETENTION).label("RETENTION"),
                          sa.func.min(CQ.c.CQ_COMMIT_TIME).label("SINCE"))
                .where(CQ.c.CQ_TYPE == CompactionType.ABORT_TXN_CLEANUP.value)
                .group_by(CQ.c.CQ_DATABASE, CQ.c.CQ_TABLE, CQ.c.CQ_PARTITION))}
            result = []
            for g in groups:
                if g.table is None:  # a database-level component: nothing to clean in a directory
                    continue
                retry = retries.get(g.entity)
                waiting = retry is not None and (retry.SINCE or 0) + int(retry.RETENTION or 0) > now
                if not waiting:
                    result.append(AbortCleanupCandidate(
                        g.database, g.table, g.partition, g.count, g.oldest_started_ms,
                        None if retry is None else int(retry.ID), 0 if retry is None else int(retry.RETENTION or 0)))
                if len(result) >= self.conf.compactor_fetch_size:
                    break
            return result

        return self.db.run(work, what="find aborted writes ready to clean")

    def abort_cleanup_failed(self, db: str, table: str, partition: str | None, error: str, *,
                             base_retention_ms: int | None = None) -> CompactionInfo:
        """An aborted-write cleanup attempt failed (Hive's handleCleanerAttemptFailure + setCleanerRetryRetention-
        TimeOnError): the entity's ABORT_TXN_CLEANUP row ('c', 'ready for cleaning', visible in SHOW COMPACTIONS)
        gets CQ_RETRY_RETENTION doubled (hive.compactor.cleaner.retry.retentionTime the first time, when the row is
        inserted with CQ_COMMIT_TIME = now) and the error. There is no attempt limit: the entity is retried once
        CQ_COMMIT_TIME + CQ_RETRY_RETENTION has passed, until a cleanup or a compaction of it succeeds.
        ``base_retention_ms`` overrides this store's hive.compactor.cleaner.retry.retentionTime (the Cleaner's)."""
        db, table = compaction_names(db, table)
        base_ms = max(1, int(self.conf.cleaner_retry_retention_s * 1000) if base_retention_ms is None
                      else int(base_retention_ms))

        def work(conn: Connection) -> CompactionInfo:
            acquire_mutex(conn, SCHEDULER_MUTEX)
            row = conn.execute(sa.select(CQ).where(
                CQ.c.CQ_DATABASE == db, CQ.c.CQ_TABLE == table, partition_filter(CQ.c.CQ_PARTITION, partition),
                CQ.c.CQ_TYPE == CompactionType.ABORT_TXN_CLEANUP.value).order_by(CQ.c.CQ_ID.desc()).limit(1)
                               .with_for_update()).first()
            if row is None:
                cq_id = next_compaction_id(conn)
                conn.execute(sa.insert(CQ).values(
                    CQ_ID=cq_id, CQ_DATABASE=db, CQ_TABLE=table, CQ_PARTITION=partition,
                    CQ_STATE=CompactionState.READY_FOR_CLEANING.value,
                    CQ_TYPE=CompactionType.ABORT_TXN_CLEANUP.value, CQ_RETRY_RETENTION=base_ms,
                    CQ_ERROR_MESSAGE=error, CQ_COMMIT_TIME=now_ms(conn)))
            else:
                cq_id = int(row.CQ_ID)
                retention = int(row.CQ_RETRY_RETENTION or 0)
                retention = min(retention * 2, _MAX_RETENTION_MS) if retention > 0 else base_ms
                conn.execute(sa.update(CQ).where(CQ.c.CQ_ID == cq_id).values(
                    CQ_RETRY_RETENTION=retention, CQ_ERROR_MESSAGE=error))
            return compaction_info(conn.execute(sa.select(CQ).where(CQ.c.CQ_ID == cq_id)).one(), "CQ")

        return self.db.run(work, what=f"record aborted-write cleanup failure of {db}.{table}")

    def mark_aborts_cleaned(self, db: str, table: str, partition: str | None, *, aborted_txns: Sequence[int],
                            max_write_id: int, exact_write_ids: Sequence[int] | None = None,
                            compactor_txns: Sequence[int] = ()) -> int:
        """Hive's markCleaned for an aborted-write cleanup, in one transaction: the entity's ABORT_TXN_CLEANUP
        rows are deleted (no history row) and the TXN_COMPONENTS rows of ``aborted_txns`` (the aborted txns inside
        the cleaning snapshot) for it are removed — write rows with write id ≤ ``max_write_id`` (or exactly
        ``exact_write_ids`` when the directory had uncompacted aborts), and the 'c' rows of aborted compactor
        txns among ``compactor_txns`` whose output was deleted. Returns the TXN_COMPONENTS rows removed."""
        db, table = compaction_names(db, table)
        tc = TXN_COMPONENTS
        entity = [tc.c.TC_DATABASE == db, tc.c.TC_TABLE == table, partition_filter(tc.c.TC_PARTITION, partition)]
        aborted = sorted({int(t) for t in aborted_txns})
        gone = {int(t) for t in compactor_txns}

        def work(conn: Connection) -> int:
            conn.execute(sa.delete(CQ).where(
                CQ.c.CQ_DATABASE == db, CQ.c.CQ_TABLE == table, partition_filter(CQ.c.CQ_PARTITION, partition),
                CQ.c.CQ_TYPE == CompactionType.ABORT_TXN_CLEANUP.value))
            removed = 0
            writes = tc.c.TC_WRITEID.in_(list(exact_write_ids)) if exact_write_ids is not None \
                else tc.c.TC_WRITEID <= max_write_id
            for start in range(0, len(aborted), 500):
                chunk = aborted[start:start + 500]
                removed += conn.execute(sa.delete(tc).where(
                    *entity, tc.c.TC_TXNID.in_(chunk), tc.c.TC_OPERATION_TYPE != OperationType.COMPACT.value,
                    writes)).rowcount
                done = [t for t in chunk if t in gone]
                if done:
                    removed += conn.execute(sa.delete(tc).where(
                        *entity, tc.c.TC_TXNID.in_(done),
                        tc.c.TC_OPERATION_TYPE == OperationType.COMPACT.value)).rowcount
            return removed

        return self.db.run(work, what=f"mark aborted writes of {db}.{table} cleaned")


def _lowest_write_ids(conn: Connection, base: sa.ColumnElement[bool], rows: Sequence[CompactionInfo]
                      ) -> dict[tuple[str, str, str | None], int]:
    """MIN(CQ_HIGHEST_WRITE_ID) over the rows matching ``base`` of each table/partition of ``rows`` (HIVE-25115)."""
    by_table: dict[tuple[str, str], list[CompactionInfo]] = {}
    for i in rows:
        by_table.setdefault((i.database, i.table), []).append(i)
    lowest: dict[tuple[str, str, str | None], int] = {}
    for (database, table), group in by_table.items():
        parts = sorted({i.partition for i in group if i.partition is not None})
        filters: list[sa.ColumnElement[bool]] = [CQ.c.CQ_PARTITION.in_(parts[start:start + _CHUNK])
                                                 for start in range(0, len(parts), _CHUNK)]
        if any(i.partition is None for i in group):
            filters.append(CQ.c.CQ_PARTITION.is_(None))
        for where in filters:
            for r in conn.execute(sa.select(CQ.c.CQ_PARTITION, sa.func.min(CQ.c.CQ_HIGHEST_WRITE_ID).label("MIN_HWM"))
                                  .where(base, CQ.c.CQ_DATABASE == database, CQ.c.CQ_TABLE == table, where)
                                  .group_by(CQ.c.CQ_PARTITION)):
                if r.MIN_HWM is not None:
                    lowest[(database, table, r.CQ_PARTITION)] = int(r.MIN_HWM)
    return lowest


def _partition_groups(rows: Sequence[CompactionInfo]) -> Iterator[list[str] | None]:
    """The partitions of ``rows`` in IN-list chunks; None (the whole table) when a row names no partition."""
    if any(i.partition is None for i in rows):
        yield None
        return
    parts = sorted({i.partition for i in rows if i.partition is not None})
    for start in range(0, len(parts), _CHUNK):
        yield parts[start:start + _CHUNK]


def _partitions_in(column: sa.ColumnElement[str | None], parts: list[str] | None) -> sa.ColumnElement[bool]:
    return sa.true() if parts is None else column.in_(parts)


def _remove_aborted_components(conn: Connection, info: CompactionInfo, hwm: int, exact_ids: list[int] | None, *,
                               partitions: Sequence[str] | None = None) -> None:
    """Delete TXN_COMPONENTS rows of aborted txns covered by the cleaned compaction (docs/hive-acid.md#mark-cleaned step 4).

    An aborted *compactor* txn's row ('c') is the only record that its ``_vC`` output is aborted; it is removed
    only when C is below this compaction's CQ_NEXT_TXN_ID, i.e. inside every cleaning snapshot, where the Cleaner
    has just deleted that output as aborted. Dropping it earlier would let the empty-txn cleaner purge C and make
    its output look committed.
    """
    tc = TXN_COMPONENTS
    compactor_rows_done = (tc.c.TC_TXNID < info.next_txn_id) if info.next_txn_id else sa.false()
    conditions = [
        tc.c.TC_TXNID.in_(sa.select(TXNS.c.TXN_ID).where(TXNS.c.TXN_STATE == TxnState.ABORTED.value)),
        tc.c.TC_DATABASE == info.database, tc.c.TC_TABLE == info.table,
        sa.or_(tc.c.TC_OPERATION_TYPE != OperationType.COMPACT.value, compactor_rows_done),
    ]
    if partitions is not None:  # a group of rows of one table, HWM and CQ_NEXT_TXN_ID (mark_many_cleaned)
        conditions.append(tc.c.TC_PARTITION.in_(list(partitions)))
    elif info.partition is not None:
        conditions.append(tc.c.TC_PARTITION == info.partition)
    if exact_ids is None and hwm:
        conn.execute(sa.delete(tc).where(*conditions, tc.c.TC_WRITEID <= hwm))
    elif exact_ids:
        for start in range(0, len(exact_ids), 500):
            conn.execute(sa.delete(tc).where(*conditions, tc.c.TC_WRITEID.in_(exact_ids[start:start + 500])))
