"""Airflow conventions of the provider: every sensor deferrable and honouring [operators] default_deferrable, triggers
that serialise and run, Context-typed execute methods, ``:param …:`` docs, Assets per compacted table/partition."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json

import pytest
from airflow.sdk import BaseOperator, BaseSensorOperator
from airflow.sdk.exceptions import AirflowException, TaskDeferred

from airflow_acid.get_provider_info import get_provider_info
from airflow_acid.operators.compaction import COMPACTED_TABLES, AcidCompactionOperator, table_asset
from airflow_acid.sensors.initiator import AcidInitiatorSensor
from airflow_acid.sensors.threshold import AcidDeltaCountSensor
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.triggers.initiator import AcidInitiatorTrigger
from tests.airflow_support import first_event, insert_rows
from tests.operators.test_operators import OutletEvents


def _classes(kind: str) -> list[type]:
    modules = [m for entry in get_provider_info()[kind] for m in entry["python-modules"]]
    found = []
    for name in modules:
        module = importlib.import_module(name)
        found += [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == name
                  and issubclass(c, BaseOperator)]
    return found


OPERATORS = _classes("operators") + _classes("sensors")


def test_every_sensor_follows_default_deferrable(monkeypatch):
    sensors = [c for c in OPERATORS if issubclass(c, BaseSensorOperator)]
    assert {c.__name__ for c in sensors} >= {"AcidInitiatorSensor", "AcidDeltaCountSensor", "AcidAbortedTxnSensor"}
    args = {"table": "db.t"}
    for value, expected in (("False", False), ("True", True)):
        monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", value)
        for cls in sensors:
            kwargs = {} if cls is AcidInitiatorSensor else args
            assert cls(task_id="s", **kwargs).deferrable is expected, cls.__name__
            assert cls(task_id="s", deferrable=not expected, **kwargs).deferrable is (not expected)


def test_initiator_sensor_defers_and_the_trigger_fires_with_the_queue(table_t):
    sensor = AcidInitiatorSensor(task_id="initiator", deferrable=True, poke_interval=0.05, timeout=60)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context={})
    trigger = deferred.value.trigger
    assert isinstance(trigger, AcidInitiatorTrigger) and deferred.value.method_name == "execute_complete"
    path, kwargs = trigger.serialize()
    again = AcidInitiatorTrigger(**json.loads(json.dumps(kwargs)))
    assert again.serialize() == (path, kwargs) and path == "airflow_acid.triggers.initiator.AcidInitiatorTrigger"

    insert_rows(table_t, "db.t", 11)
    event = asyncio.run(first_event(again))
    assert event.payload["status"] == "waiting"
    [item] = sensor.execute_complete({}, event.payload)
    assert (item["table"], item["type"]) == ("t", "MAJOR") and json.dumps(item)
    assert sensor.execute(context={})[0]["compaction_id"] == item["compaction_id"]  # queued: fires at once
    with pytest.raises(AirflowException, match="Initiator cycle failed: boom"):
        sensor.execute_complete({}, {"status": "error", "message": "boom"})


def test_initiator_trigger_reports_a_broken_metastore_as_an_error_event(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_BROKEN", json.dumps({"conn_type": "acid_metastore",
                                                          "host": "sqlite:////nonexistent/dir/m.db"}))
    event = asyncio.run(first_event(AcidInitiatorTrigger(acid_conn_id="broken", poll_interval=0.01)))
    assert event.payload["status"] == "error" and event.payload["message"]


def test_deferrable_threshold_sensor_still_defers(table_t):
    with pytest.raises(TaskDeferred):
        AcidDeltaCountSensor(task_id="s", table="db.t", threshold=5, deferrable=True).execute(context={})


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__name__)
def test_context_typing_and_param_docs(cls):
    for method in ("execute", "poke", "execute_complete"):
        if method in vars(cls):
            annotation = inspect.signature(getattr(cls, method)).parameters["context"].annotation
            assert annotation == "Context", f"{cls.__name__}.{method}(context: {annotation})"
    documented = "".join(inspect.getdoc(c) or "" for c in cls.__mro__ if c.__module__.startswith("airflow_acid"))
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name != "self" and param.kind is inspect.Parameter.KEYWORD_ONLY:
            assert f":param {name}:" in documented, f"{cls.__name__} does not document {name}"


def test_compacted_partition_adds_the_table_and_partition_assets(acid_wh):
    acid_wh.create_database("db")
    acid_wh.create_table("db.p", [("id", "int")], partition_by=[("ds", "string")],
                         properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    insert_rows(acid_wh, "db.p", 2, {"ds": "2024-01-01"})
    [item] = AcidInitiatorSensor(task_id="initiator").poke({}).xcom_value
    events = OutletEvents()
    AcidCompactionOperator(task_id="compact", compaction=item, runner=LocalRunner()).execute(
        {"outlet_events": events})
    added = events[COMPACTED_TABLES].added
    assert [a.uri for a, _ in added] == ["acid://db/p", "acid://db/p/ds=2024-01-01"]
    assert added[1][0] == table_asset("db", "p", "ds=2024-01-01")
    assert {e["compaction_id"] for _, e in added} == {item["compaction_id"]} and added[0][1]["rows_out"] == 2
