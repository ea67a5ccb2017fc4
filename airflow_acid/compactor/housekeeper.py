"""The HouseKeeper (docs/hive-acid.md#housekeeping): one pass of Hive's AcidHouseKeeperService, CompactionHouseKeeperService
and AcidTxnCleanerService under the ``HouseKeeper`` lease — abort timed-out transactions, drop timed-out locks,
garbage-collect WRITE_SET, clean TXN_TO_WRITE_ID and empty TXNS rows, purge compaction history by retention, and
trim airflow-acid's shadow decision log (ACID_INITIATOR_DECISION_LOG) to airflow.acid.initiator.decision.log.retention.

A thin layer over :class:`Housekeeping` and :meth:`CompactionQueue.purge_history`; the lease (see
``initiator_store``) keeps two schedulers from running a pass at the same time.
"""

from __future__ import annotations

import logging
import socket
import time

from airflow_acid.compactor.messages import HouseKeeperReport
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.store import Metastore

log = logging.getLogger(__name__)

HOUSEKEEPER_MUTEX = "HouseKeeper"
DEFAULT_LEASE_S = 600.0


class HouseKeeper:
    """Metastore housekeeping for one warehouse; ``conf`` defaults to the metastore's settings."""

    def __init__(self, metastore: Metastore, conf: MetastoreConf | None = None, *, host: str | None = None,
                 lease_s: float = DEFAULT_LEASE_S) -> None:
        self.conf = conf or metastore.conf
        self.host = host or socket.gethostname()
        self.lease_s = lease_s
        services = metastore.with_conf(self.conf)
        self.housekeeping = services.housekeeping
        self.queue = services.compactions
        self.store = services.initiator

    def run_once(self) -> HouseKeeperReport:
        """docs/hive-acid.md#timeouts (timeouts, WRITE_SET, TXN_TO_WRITE_ID), docs/hive-acid.md#empty-txns (empty TXNS) and
        docs/hive-acid.md#history-retention (history retention), in that order, each step its own database transaction;
        nothing when another HouseKeeper is running."""
        clock = time.perf_counter()
        holder = f"{self.host}-housekeeper:{id(self):x}:{time.time_ns()}"
        lease = self.store.acquire_lease(HOUSEKEEPER_MUTEX, holder, int(self.lease_s * 1000))
        if not lease.acquired:
            return HouseKeeperReport(ran=False, message=f"another HouseKeeper ({lease.holder}) is running; its "
                                     f"lease expires at {lease.until_ms} (epoch ms)")
        try:
            done = self.housekeeping.run_once()
            report = HouseKeeperReport(
                ran=True, aborted_txns=done.aborted_txns, deleted_locks=done.deleted_locks,
                write_set_rows_deleted=done.write_set_rows_deleted,
                min_history_rows_deleted=done.min_history_rows_deleted,
                txn_to_write_id_rows_deleted=done.txn_to_write_id_rows_deleted, txns_deleted=done.txns_deleted)
            report.history_rows_purged = self.queue.purge_history()
            report.decision_log_rows_purged = self.store.purge_decision_log()
        finally:
            self.store.release_lease(HOUSEKEEPER_MUTEX, holder)
        report.seconds = time.perf_counter() - clock
        log.info("HouseKeeper: %s", report.to_dict())
        return report
