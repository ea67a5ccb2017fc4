"""Metastore housekeeping primitives (docs/hive-acid.md#timeouts, docs/hive-acid.md#empty-txns): abort timed-out txns, drop
timed-out locks, clean TXN_TO_WRITE_ID below the low-water mark, remove empty ended TXNS rows, garbage-collect WRITE_SET
and stale MIN_HISTORY_LEVEL rows. Each step is its own database transaction and safe to run concurrently."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import TxnState
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.schema import (
    HIVE_LOCKS,
    MIN_HISTORY_LEVEL,
    TXN_COMPONENTS,
    TXN_TO_WRITE_ID,
    TXNS,
    WRITE_SET,
)
from airflow_acid.metastore.txns import AbortReason, abort_txns_in, min_open_txn_watermark

log = logging.getLogger(__name__)

@dataclass
class HousekeepingReport:
    """What one housekeeping pass did."""

    aborted_txns: list[int] = field(default_factory=list)
    deleted_locks: int = 0
    write_set_rows_deleted: int = 0
    txn_to_write_id_rows_deleted: int = 0
    min_history_rows_deleted: int = 0
    txns_deleted: int = 0


class Housekeeping:
    """The AcidHouseKeeperService and AcidTxnCleanerService work as callable primitives."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    @property
    def _timeout_ms(self) -> int:
        return int(self.conf.txn_timeout_s * 1000)

    # docs/hive-acid.md#timeouts step 1 -----------------------------------------------------------------

    def delete_timed_out_locks(self) -> int:
        """Delete locks held outside a txn (HL_TXNID = 0) whose heartbeat is older than hive.txn.timeout."""

        def work(conn: Connection) -> int:
            cutoff = now_ms(conn) - self._timeout_ms
            return conn.execute(
                sa.delete(HIVE_LOCKS).where(HIVE_LOCKS.c.HL_TXNID == 0, HIVE_LOCKS.c.HL_LAST_HEARTBEAT < cutoff)
            ).rowcount

        deleted = self.db.run(work, what="delete timed-out locks")
        if deleted:
            log.info("deleted %d timed-out lock component(s) held outside transactions", deleted)
        return deleted

    def abort_timed_out_txns(self) -> list[int]:
        """Abort open txns whose last heartbeat is older than hive.txn.timeout, in batches of
        hive.txn.timedout.abort.batch; a txn heartbeated in between is skipped. Returns the aborted ids."""
        batch = max(1, self.conf.timedout_txn_abort_batch)
        aborted_all: list[int] = []
        while True:
            def work(conn: Connection) -> tuple[list[int], bool]:
                cutoff = now_ms(conn) - self._timeout_ms
                candidates = [int(r[0]) for r in conn.execute(
                    sa.select(TXNS.c.TXN_ID)
                    .where(TXNS.c.TXN_STATE == TxnState.OPEN.value, TXNS.c.TXN_LAST_HEARTBEAT < cutoff)
                    .order_by(TXNS.c.TXN_ID).limit(batch)
                )]
                done = abort_txns_in(conn, candidates, AbortReason.TIMEOUT, heartbeat_before=cutoff)
                return done, len(candidates) == batch

            done, more = self.db.run(work, what="abort timed-out txns")
            aborted_all.extend(done)
            if not more or not done:
                break
        if aborted_all:
            log.warning("aborted %d transaction(s) without a heartbeat for %g s: %s",
                        len(aborted_all), self.conf.txn_timeout_s, aborted_all)
        return aborted_all

    # docs/hive-acid.md#timeouts steps 2 and 3 ----------------------------------------------------------

    def write_set_gc(self) -> int:
        """Delete WRITE_SET rows committed before every open txn began: no open txn can conflict with them."""

        def work(conn: Connection) -> int:
            mark = min_open_txn_watermark(conn, self.conf.opentxn_timeout_ms)
            return conn.execute(sa.delete(WRITE_SET).where(WRITE_SET.c.WS_COMMIT_ID < mark)).rowcount

        return self.db.run(work, what="write set gc")

    def clean_txn_to_write_id(self) -> int:
        """DELETE FROM TXN_TO_WRITE_ID below the low-water mark = min(lowest open or aborted txn (MAX(TXN_ID) when
        none), lowest MIN_HISTORY_LEVEL entry); every txn below it is committed or gone."""

        def work(conn: Connection) -> int:
            uncommitted = conn.execute(
                sa.select(sa.func.min(TXNS.c.TXN_ID))
                .where(TXNS.c.TXN_STATE.in_((TxnState.OPEN.value, TxnState.ABORTED.value)))
            ).scalar()
            if uncommitted is None:
                uncommitted = conn.execute(sa.select(sa.func.coalesce(sa.func.max(TXNS.c.TXN_ID), 0))).scalar_one()
            mark = int(uncommitted)
            mhl = conn.execute(sa.select(sa.func.min(MIN_HISTORY_LEVEL.c.MHL_MIN_OPEN_TXNID))).scalar()
            if mhl is not None:
                mark = min(mark, int(mhl))
            return conn.execute(sa.delete(TXN_TO_WRITE_ID).where(TXN_TO_WRITE_ID.c.T2W_TXNID < mark)).rowcount

        return self.db.run(work, what="clean TXN_TO_WRITE_ID")

    def clean_min_history_level(self) -> int:
        """Remove MIN_HISTORY_LEVEL rows whose txn is no longer open (left by a crash between steps)."""

        def work(conn: Connection) -> int:
            open_ids = sa.select(TXNS.c.TXN_ID).where(TXNS.c.TXN_STATE == TxnState.OPEN.value)
            return conn.execute(
                sa.delete(MIN_HISTORY_LEVEL).where(MIN_HISTORY_LEVEL.c.MHL_TXNID.not_in(open_ids))
            ).rowcount

        return self.db.run(work, what="clean MIN_HISTORY_LEVEL")

    # docs/hive-acid.md#empty-txns -----------------------------------------------------------------------

    def clean_empty_txns(self) -> int:
        """Delete aborted and committed TXNS rows without TXN_COMPONENTS, below the highest txn that started
        before the open-txn timeout window (so the newest txn and the snapshot gap window are never touched)."""

        def work(conn: Connection) -> int:
            now = now_ms(conn)
            limit = conn.execute(
                sa.select(sa.func.max(TXNS.c.TXN_ID)).where(TXNS.c.TXN_STARTED < now - self.conf.opentxn_timeout_ms)
            ).scalar()
            if limit is None:
                return 0
            has_components = sa.select(TXN_COMPONENTS.c.TC_TXNID).where(TXN_COMPONENTS.c.TC_TXNID == TXNS.c.TXN_ID)
            ids = [int(r[0]) for r in conn.execute(
                sa.select(TXNS.c.TXN_ID).where(
                    TXNS.c.TXN_STATE.in_((TxnState.ABORTED.value, TxnState.COMMITTED.value)),
                    TXNS.c.TXN_ID < int(limit),
                    ~sa.exists(has_components),
                ).limit(self.conf.timedout_txn_abort_batch)
            )]
            if not ids:
                return 0
            # Re-check emptiness in the DELETE itself: a component could have been added concurrently.
            return conn.execute(
                sa.delete(TXNS).where(TXNS.c.TXN_ID.in_(ids), ~sa.exists(has_components),
                                      TXNS.c.TXN_STATE.in_((TxnState.ABORTED.value, TxnState.COMMITTED.value)))
            ).rowcount

        total = 0
        while True:
            deleted = self.db.run(work, what="clean empty txns")
            total += deleted
            if deleted < self.conf.timedout_txn_abort_batch:
                return total

    # one pass ------------------------------------------------------------------------------------------

    def run_once(self) -> HousekeepingReport:
        """One AcidHouseKeeperService pass followed by one AcidTxnCleanerService pass."""
        report = HousekeepingReport()
        report.deleted_locks = self.delete_timed_out_locks()
        report.aborted_txns = self.abort_timed_out_txns()
        report.write_set_rows_deleted = self.write_set_gc()
        report.min_history_rows_deleted = self.clean_min_history_level()
        report.txn_to_write_id_rows_deleted = self.clean_txn_to_write_id()
        report.txns_deleted = self.clean_empty_txns()
        return report
