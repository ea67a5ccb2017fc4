"""The backlog check task: passes within limits, fails (no retries) past them with the blocking transaction named,
and appears in acid_housekeeping only when [acid] alert_max_* limits are set."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_acid.operators.alerts import AcidBacklogCheckOperator
from airflow_acid.operators.compaction import AcidCompactionOperator
from airflow_acid.sensors.initiator import AcidInitiatorSensor
from airflow_acid.spark.runners import LocalRunner
from tests.airflow_support import insert_rows

DAGS = Path(__file__).resolve().parents[2] / "dags"


def test_fails_naming_the_blocking_transaction(acid_wh):
    acid_wh.create_database("db")
    info = acid_wh.create_table("db.t", [("id", "int")],
                                properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    insert_rows(acid_wh, "db.t", 2)
    check = AcidBacklogCheckOperator(task_id="backlog_check", max_backlog="5", max_ready_for_cleaning_age=0)
    assert check.execute({}) == {"alerts": []} and check.retries == 0
    [item] = AcidInitiatorSensor(task_id="initiator").poke({}).xcom_value
    with acid_wh.read_snapshot(info) as reader:
        AcidCompactionOperator(task_id="compact", compaction=item, runner=LocalRunner()).execute({})
        with pytest.raises(AirflowFailException) as failed:
            check.execute({})
    message = str(failed.value)
    assert message.startswith("ACID backlog alert: compaction ")
    assert f"compaction {item['compaction_id']} of db.t has been 'ready for cleaning'" in message
    assert f"blocked by transaction {reader.txn_id} (tester@testhost" in message


def test_bad_limit_fails_clearly():
    with pytest.raises(AirflowFailException, match="bad backlog limit"):
        AcidBacklogCheckOperator(task_id="c", max_backlog="lots").limits()


@pytest.mark.parametrize("limit", [None, "24h"])
def test_housekeeping_dag_has_the_check_only_with_limits(monkeypatch, limit):
    from airflow.dag_processing.dagbag import DagBag

    if limit:
        monkeypatch.setenv("AIRFLOW__ACID__ALERT_MAX_READY_FOR_CLEANING_AGE", limit)
    dag = DagBag(dag_folder=str(DAGS / "acid_housekeeping.py")).dags["acid_housekeeping"]
    assert ("backlog_check" in dag.task_ids) is bool(limit)
    if limit:
        task = dag.get_task("backlog_check")
        assert task.max_ready_for_cleaning_age == 86400.0 and task.max_backlog is None and task.retries == 0
    assert dag.get_task("metrics").trigger_rule == "all_done"
