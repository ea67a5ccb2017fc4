"""ACID metrics and backlog alerts read Hive 4.2's own schema (PostgreSQL, MariaDB): the queries use only columns
Hive's tables have, and an open transaction shows up as Hive's oldest_open_non_repl_txn_* figures."""

from __future__ import annotations

import pytest

from airflow_acid.config import BacklogLimits
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.services.alerts import check_backlog
from airflow_acid.services.metrics import acid_metrics

pytestmark = pytest.mark.slow


def test_metrics_and_alerts_on_a_hive_metastore(hive_42_url):
    with Metastore(hive_42_url, MetastoreConf(oldest_open_txn_warning_s=0)) as ms:
        assert ms.profile.is_hive
        txn = ms.txns.open_txn(user="hive", host="hs2")
        try:
            report = acid_metrics(ms)
            assert report.value("num_open_non_repl_transactions") >= 1
            assert report.value("oldest_open_non_repl_txn_id") <= txn
            assert report.value("compaction_queue_initiated") == 0 and report.value("num_locks") == 0
            assert any(f.metric == "oldest_open_non_repl_txn_age_in_sec" for f in report.findings)
            assert check_backlog(ms, BacklogLimits(0, 0, 0)) == []
        finally:
            ms.txns.abort(txn)
        assert acid_metrics(ms).value("num_aborted_transactions") >= 1
