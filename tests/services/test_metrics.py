"""ACID metrics (services/metrics.py): Hive's acidmetrics/deltametrics figures from the metastore and the
warehouse, the threshold findings, cycle and worker figures, and the documented name list (docs/operations.md table)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.messages import WorkerOutcome, WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.services import request_compaction
from airflow_acid.services.metrics import (
    METRICS,
    Level,
    Sample,
    acid_metrics,
    initiator_cycle_metrics,
    stat_part,
    worker_metrics,
)
from airflow_acid.spark.runners import LocalRunner
from tests.services.support import COLUMNS, CONF, crashed_insert, inserts, unique

METRICS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_queue_transactions_and_deltas_through_a_compaction(wh):
    db = unique("mdb")
    table = f"{db}.events"
    info = wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, table, {"ds": "2024-01-01"}, batches=3)
    aborted = crashed_insert(wh, table, {"ds": "2024-01-01"})
    conf = dataclasses.replace(CONF, deltametrics_delta_num_threshold=3, deltametrics_obsolete_delta_num_threshold=3,
                               oldest_open_txn_warning_s=0, oldest_uncleaned_compaction_s=0,
                               acidmetrics_table_aborted_txns_threshold=0)
    ms = wh.metastore.with_conf(conf)
    suffix = f"{db}.events.ds_2024-01-01"

    pool = unique("pool")
    [queued] = request_compaction(wh, table, "ds=2024-01-01", "major", pool=pool)
    report = acid_metrics(ms, wh)
    assert report.value("compaction_queue_initiated") >= 1 and report.value("compaction_num_initiated") >= 1
    assert report.value("compaction_pools_initiated_item_count", stat_part(pool)) == 1
    assert report.value("compaction_oldest_enqueue_age_in_sec") >= 0
    assert report.value("num_aborted_transactions") >= 1 and report.value("oldest_aborted_txn_id") <= aborted
    assert report.value("compaction_num_active_deltas", suffix) == 3
    assert report.value("compaction_num_obsolete_deltas", suffix) is None   # below the threshold: not reported
    [with_tags] = [s for s in report.samples if s.name == "compaction_num_active_deltas" and s.suffix == suffix]
    assert with_tags.tags == {"database": db, "table": "events", "partition": "ds=2024-01-01"}
    assert report.value("compaction_num_txn_to_writeid") >= 4
    assert report.value("tables_with_x_aborted_transactions") >= 1

    reader = wh.read_snapshot(info).__enter__()
    try:
        assert Worker(ms, runner=LocalRunner()).run_next(pool).status == WorkerStatus.COMPACTED
        report = acid_metrics(ms, wh)
        assert report.value("compaction_queue_ready_for_cleaning") >= 1
        assert report.value("oldest_ready_for_cleaning_age_in_sec") >= 0
        assert report.value("num_open_non_repl_transactions") >= 1
        assert report.value("oldest_open_non_repl_txn_id") <= reader.txn_id
        assert report.value("compaction_num_obsolete_deltas", suffix) == 3
        assert report.value("compaction_num_active_deltas", suffix) is None
        assert report.value("compaction_num_initiators") >= 1
        findings = {f.metric: f for f in report.findings}
        assert findings["oldest_open_non_repl_txn_age_in_sec"].level is Level.WARNING
        assert "ready for cleaning" in findings["oldest_ready_for_cleaning_age_in_sec"].message
    finally:
        reader.__exit__(None, None, None)
    Cleaner(ms).clean(queued.compaction_id)
    report = acid_metrics(ms, wh)
    assert report.value("compaction_num_obsolete_deltas", suffix) is None
    assert report.value("compaction_num_succeeded") >= 1
    assert json.loads(json.dumps(report.to_dict()))["metrics"]["acid.compaction_num_succeeded"] >= 1


def test_delta_metrics_off_lists_nothing(wh):
    table = f"{unique('mdb')}.plain"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=2)
    conf = dataclasses.replace(CONF, deltametrics_delta_num_threshold=1, acidmetrics_ext_on=False)
    report = acid_metrics(wh.metastore.with_conf(conf), wh)
    assert not [s for s in report.samples if s.name == "compaction_num_active_deltas"]
    report = acid_metrics(wh.metastore.with_conf(dataclasses.replace(conf, acidmetrics_ext_on=True)), wh)
    assert report.value("compaction_num_active_deltas", table) == 2   # suffix <db>.<table>


@pytest.mark.parametrize(("hours", "level"), [(1, None), (7, Level.WARNING), (13, Level.ERROR)])
def test_long_running_initiator_thresholds(hours, level):
    report = initiator_cycle_metrics(hours * 3600.0, MetastoreConf())
    assert report.value("compaction_initiator_cycle") == 1
    assert report.value("compaction_initiator_cycle_duration") == hours * 3_600_000
    assert [f.level for f in report.findings] == ([level] if level else [])
    assert report.value("compaction_initiator_long_running") == (1 if level else None)
    conf = MetastoreConf.from_mapping({"metastore.compactor.long.running.initiator.threshold.warning": "30m"})
    assert [f.level for f in initiator_cycle_metrics(3600.0, conf).findings] == [Level.WARNING]


def test_worker_figures_count_only_what_succeeded():
    ok = WorkerOutcome(1, "db.t.ds=a", WorkerStatus.COMPACTED, rows_in=10, rows_out=8, files=2, bytes=300,
                       seconds=1.5)
    bad = WorkerOutcome(2, "db.t.ds=b", WorkerStatus.FAILED, rows_in=99, seconds=0.5)
    report = worker_metrics([ok, bad])
    totals: dict[str, float] = {}
    for s in report.samples:
        totals[s.name] = totals.get(s.name, 0) + s.value
    assert totals == {"compaction_worker_cycle": 2, "compaction_worker_cycle_duration": 2000.0,
                      "compaction_rows_in": 10, "compaction_rows_out": 8, "compaction_files_written": 2,
                      "compaction_bytes_written": 300, "compaction_worker_failed": 1}


def test_names_are_documented_and_statsd_safe():
    with pytest.raises(ValueError, match="not in the documented list"):
        Sample("compaction_num_whatever", 1)
    assert stat_part("ds=2024-01-01/hr=5") == "ds_2024-01-01_hr_5"
    readme = METRICS_PAGE.read_text()
    documented = set(re.findall(r"^\| `acid\.([a-z_]+)(?:\.<[^`]*)?` \|", readme, flags=re.M))
    assert documented == {spec.name for spec in METRICS}
    assert all(re.fullmatch(r"[a-z_]+", spec.name) for spec in METRICS)
