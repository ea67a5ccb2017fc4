"""Initiator and threshold sensors: poke, reschedule and deferrable modes (the trigger's own tests: tests/triggers)."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from airflow.sdk import PokeReturnValue
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowRescheduleException, TaskDeferred

from airflow_acid.config import Budgets
from airflow_acid.metastore.errors import MetastoreSchemaError, MetastoreUnavailableError
from airflow_acid.operators.defaults import compaction_budgets
from airflow_acid.sensors.initiator import AcidInitiatorSensor
from airflow_acid.sensors.threshold import AcidAbortedTxnSensor, AcidDeltaCountSensor, AcidDeltaRatioSensor
from airflow_acid.services.thresholds import ThresholdCheck
from airflow_acid.triggers.threshold import AcidThresholdTrigger
from tests.airflow_support import first_event, insert_rows
from tests.compactor.initiator_support import aborted_writes, synthetic_write


def test_delta_count_sensor_fires_with_the_verdict(table_t):
    insert_rows(table_t, "db.t", 3)
    fired = AcidDeltaCountSensor(task_id="s", table="db.t", threshold=2).poke({})
    assert isinstance(fired, PokeReturnValue) and fired.is_done
    assert fired.xcom_value["met"] and fired.xcom_value["stats"]["delta_count"] == 3
    assert fired.xcom_value["type"] == "MAJOR"  # no base yet
    json.dumps(fired.xcom_value)
    assert AcidDeltaCountSensor(task_id="s", table="db.t", threshold=3).poke({}) is False


def test_delta_count_defaults_to_the_tables_threshold(table_t):
    insert_rows(table_t, "db.t", 3)
    sensor = AcidDeltaCountSensor(task_id="s", table="db.t")
    assert sensor.poke({}) is False  # 3 ≤ hive.compactor.delta.num.threshold=10
    table_t.alter_table_properties("db.t", {"compactorthreshold.hive.compactor.delta.num.threshold": "2"})
    assert AcidDeltaCountSensor(task_id="s", table="db.t").poke({}).xcom_value["threshold"] == 2


def test_poke_mode_execute_returns_the_xcom_or_times_out(table_t):
    insert_rows(table_t, "db.t", 2)
    assert AcidDeltaCountSensor(task_id="s", table="db.t", threshold=1).execute(context={})["met"]
    waiting = AcidDeltaCountSensor(task_id="s", table="db.t", threshold=5, poke_interval=0.01, timeout=0.05)
    with pytest.raises(AirflowException, match="[Tt]imed out|timeout|Sensor"):
        waiting.execute(context={})


def test_reschedule_mode_frees_the_slot(table_t):
    insert_rows(table_t, "db.t", 1)
    sensor = AcidDeltaCountSensor(task_id="s", table="db.t", threshold=2, mode="reschedule", poke_interval=30)
    context = {"ti": _FirstTry()}
    with pytest.raises(AirflowRescheduleException) as rescheduled:
        sensor.execute(context=context)
    assert rescheduled.value.reschedule_date > datetime.now(UTC) + timedelta(seconds=20)
    insert_rows(table_t, "db.t", 2)
    assert sensor.execute(context=context)["stats"]["delta_count"] == 3


class _FirstTry:
    """The task instance of a sensor's first try (no earlier reschedule)."""

    def get_first_reschedule_date(self, context):
        return None


def test_delta_ratio_sensor(acid_wh):
    acid_wh.create_database("db")
    acid_wh.create_table("db.r", [("id", "int")])
    location = acid_wh.table("db.r").location
    synthetic_write(acid_wh.metastore, location, "db", "r", None, kind="base", size=1000)
    synthetic_write(acid_wh.metastore, location, "db", "r", None, size=50)
    assert AcidDeltaRatioSensor(task_id="s", table="db.r").poke({}) is False  # 0.05 ≤ 0.1
    synthetic_write(acid_wh.metastore, location, "db", "r", None, size=100)
    fired = AcidDeltaRatioSensor(task_id="s", table="db.r").poke({})
    assert fired.xcom_value["type"] == "MAJOR" and "delta/base size" in fired.xcom_value["reason"]


def test_aborted_txn_sensor_on_a_partition(acid_wh):
    acid_wh.create_database("db")
    acid_wh.create_table("db.p", [("id", "int")], partition_by=[("ds", "string")])
    insert_rows(acid_wh, "db.p", 1, partition={"ds": "a"})
    aborted_writes(acid_wh.metastore, "db", "p", "ds=a", 3)
    sensor = AcidAbortedTxnSensor(task_id="s", table="db.p", partition="ds=a", threshold=5)
    assert sensor.poke({}) is False
    fired = AcidAbortedTxnSensor(task_id="s", table="db.p", partition="ds=a", threshold=2).poke({})
    assert fired.xcom_value["stats"]["aborted_txns"] == 3 and fired.xcom_value["type"] == "MAJOR"
    old = AcidAbortedTxnSensor(task_id="s", table="db.p", partition="ds=a", threshold=5, age_threshold_s=0)
    time.sleep(0.01)
    assert old.poke({}).xcom_value["type"] == "MINOR"


def test_missing_table_or_partition_fails_clearly(table_t):
    with pytest.raises(AirflowFailException, match="db.nope does not exist"):
        AcidDeltaCountSensor(task_id="s", table="db.nope").poke({})
    table_t.create_table("db.p", [("id", "int")], partition_by=[("ds", "string")])
    with pytest.raises(AirflowFailException, match="partitioned; give the partition"):
        AcidDeltaCountSensor(task_id="s", table="db.p").poke({})
    with pytest.raises(AirflowFailException, match="partition ds=x of db.p does not exist"):
        AcidDeltaCountSensor(task_id="s", table="db.p", partition="ds=x").poke({})


def test_deferrable_sensor_defers_then_completes(table_t):
    insert_rows(table_t, "db.t", 1)
    sensor = AcidDeltaCountSensor(task_id="s", table="db.t", threshold=2, deferrable=True, poke_interval=0.05)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context={})
    trigger = deferred.value.trigger
    assert isinstance(trigger, AcidThresholdTrigger) and deferred.value.method_name == "execute_complete"
    insert_rows(table_t, "db.t", 2)
    event = asyncio.run(first_event(trigger))
    assert event.payload["status"] == "met"
    result = sensor.execute_complete({}, event.payload)
    assert result["stats"]["delta_count"] == 3
    with pytest.raises(AirflowException, match="boom"):
        sensor.execute_complete({}, {"status": "error", "message": "boom"})


def test_deferrable_sensor_returns_at_once_when_already_met(table_t):
    insert_rows(table_t, "db.t", 3)
    sensor = AcidDeltaCountSensor(task_id="s", table="db.t", threshold=2, deferrable=True)
    assert sensor.execute(context={})["met"]


def test_initiator_sensor_fires_with_the_queue(table_t):
    sensor = AcidInitiatorSensor(task_id="initiator")
    assert sensor.poke({}) is False  # nothing written
    insert_rows(table_t, "db.t", 11)
    fired = sensor.poke({})
    assert isinstance(fired, PokeReturnValue) and fired.is_done
    [item] = fired.xcom_value
    assert item["database"] == "db" and item["table"] == "t" and item["partition"] is None
    assert item["type"] == "MAJOR" and item["label"] == "db.t MAJOR" and item["compaction_id"] > 0
    assert "11 current delta(s) > hive.compactor.delta.num.threshold=10" in item["reason"]
    json.dumps(fired.xcom_value)
    again = sensor.poke({}).xcom_value  # still waiting in the queue: offered again, not queued twice
    assert [i["compaction_id"] for i in again] == [item["compaction_id"]]


def test_initiator_sensor_in_shadow_mode_records_and_returns_nothing(table_t, monkeypatch, caplog, capsys):
    monkeypatch.setenv("AIRFLOW__ACID__MODE", "shadow")
    insert_rows(table_t, "db.t", 11)
    ms = table_t.metastore
    ms.compactions.enqueue("db", "t", None)  # queued by Hive's compactor: never offered in shadow mode
    with caplog.at_level("INFO"):
        assert AcidInitiatorSensor(task_id="initiator").poke({}) is False
    logged = caplog.text + capsys.readouterr().out
    assert "shadow mode ([acid] mode = shadow)" in logged and "nothing to compact in shadow mode" in logged
    decision = ms.initiator.latest_decision("db", "t")
    assert decision.initiator_id.endswith("-shadow") and len(ms.compactions.find(state="initiated")) == 1
    monkeypatch.setenv("AIRFLOW__ACID__SCOPE", "other")
    monkeypatch.setenv("AIRFLOW__ACID__MODE", "active")
    assert AcidInitiatorSensor(task_id="initiator").poke({}) is False  # db.t is outside the scope: left to Hive


def test_initiator_sensor_orders_by_benefit_per_cost_within_the_budget(table_t, monkeypatch):
    """Three queued tables: the budget admits the two with the best benefit per cost, best first; the third
    waits for the next run. The [acid] options set the same budget."""
    ms = table_t.metastore
    for name, deltas in (("few", 2), ("many", 8), ("big", 2)):
        info = table_t.create_table(f"db.{name}", [("id", "int")])
        for _ in range(deltas):
            synthetic_write(ms, info.location, "db", name, None, size=(200_000 if name == "big" else 1000))
        ms.compactions.enqueue("db", name, None)
    budgets = Budgets(bytes_per_run=300_000)
    fired = AcidInitiatorSensor(task_id="initiator", budgets=budgets).poke({})
    assert [i["table"] for i in fired.xcom_value] == ["many", "few"]  # "big" (400 kB) does not fit next to them
    monkeypatch.setenv("AIRFLOW__ACID__COMPACTION_BUDGET_BYTES", "300000")
    assert compaction_budgets() == budgets
    assert [i["table"] for i in AcidInitiatorSensor(task_id="i").poke({}).xcom_value] == ["many", "few"]


@pytest.mark.parametrize(("error", "retried"), [
    (MetastoreUnavailableError("the metastore database cannot be reached"), True),
    (MetastoreSchemaError("the metastore database has no airflow-acid schema: run airflow-acid init"), False),
])
def test_threshold_sensor_retries_only_an_unreachable_metastore(table_t, monkeypatch, error, retried):
    """A metastore that cannot be reached now is raised for Airflow's retries; a missing schema fails the task."""
    def refuse(self, metastore):
        raise error

    monkeypatch.setattr(ThresholdCheck, "evaluate", refuse)
    with pytest.raises(type(error) if retried else AirflowFailException, match=str(error).split(":")[0]):
        AcidDeltaCountSensor(task_id="s", table="db.t").poke({})
