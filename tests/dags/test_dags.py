"""The DAGs in dags/: import without errors, wiring, and the manual form's validation."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path

import pytest

DAGS = Path(__file__).resolve().parents[2] / "dags"
DAG_IDS = {"acid_compaction", "acid_manual_compaction", "acid_cleanup", "acid_housekeeping", "acid_approved_action"}


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))  # 3.3: examples are a separate bundle, never in this folder


def test_every_dag_imports_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert DAG_IDS <= set(dagbag.dag_ids)


def test_approved_action_dag_waits_for_airflows_approval_before_acting(dagbag):
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    from airflow_acid.plugins.approval import hitl_missing

    assert hitl_missing() is None  # the installed Airflow has human-in-the-loop
    dag = dagbag.dags["acid_approved_action"]
    approve = dag.get_task("approve")
    assert isinstance(approve, ApprovalOperator) and approve.options == ["Approve", "Reject"]
    assert approve.upstream_task_ids == {"describe"} and approve.downstream_task_ids == {"act"}
    assert dag.schedule is None and "describe" in approve.body and "describe" in approve.subject


def test_compaction_dag_wiring(dagbag):
    dag = dagbag.dags["acid_compaction"]
    assert dag.schedule == timedelta(seconds=300) or getattr(dag.timetable, "_delta", None) == timedelta(seconds=300)
    sensor, compact = dag.get_task("initiator"), dag.get_task("compact")
    assert sensor.mode == "reschedule" and sensor.soft_fail
    assert compact.upstream_task_ids == {"initiator"}
    assert compact.partial_kwargs["map_index_template"] == "{{ task.compaction['label'] }}"
    assert [a.name for a in compact.partial_kwargs["outlets"]] == ["acid-compacted-tables"]
    assert compact.partial_kwargs["retries"] == 3 and compact.partial_kwargs["retry_exponential_backoff"]


def _validated(dag, conf):
    params = copy.deepcopy(dag.params)
    params.update(conf)
    return params.validate()


def test_manual_form_accepts_a_good_request(dagbag):
    dag = dagbag.dags["acid_manual_compaction"]
    values = _validated(dag, {"database": "db", "table": "t", "type": "minor", "properties": {"a": "b"}})
    assert values["type"] == "minor" and values["wait"] is True and values["partition"] is None


@pytest.mark.parametrize("conf", [{"table": "t", "type": "medium"}, {"table": ""}, {"table": "t", "wait": "x"}])
def test_manual_form_rejects_bad_input(dagbag, conf):
    from airflow.sdk.exceptions import ParamValidationError

    dag = dagbag.dags["acid_manual_compaction"]
    with pytest.raises(ParamValidationError):
        _validated(dag, conf)


def test_compaction_pools_get_their_own_airflow_pool(monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("AIRFLOW__ACID__COMPACTION_POOLS", "etl, big")
    monkeypatch.setenv("AIRFLOW__ACID__COMPACTION_POOL", "acid_compaction")
    bag = DagBag(dag_folder=str(DAGS / "acid_compaction.py"))
    assert bag.import_errors == {}
    dag = bag.dags["acid_compaction"]
    assert {t.task_id: t.pool for t in dag.tasks if t.task_id.startswith("compact")} == {
        "compact": "acid_compaction", "compact_etl": "etl", "compact_big": "big"}
    assert dag.get_task("compact_etl").upstream_task_ids == {"select_etl"}


def test_rows_for_pool_splits_the_queue():
    from airflow_acid.operators.defaults import rows_for_pool

    items = [{"compaction_id": 1, "pool": None}, {"compaction_id": 2, "pool": "etl"},
             {"compaction_id": 3, "pool": "other"}]
    assert [i["compaction_id"] for i in rows_for_pool(items, "etl", ["etl"])] == [2]
    assert [i["compaction_id"] for i in rows_for_pool(items, None, ["etl"])] == [1, 3]


def test_batches_run_several_rows_per_task(monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("AIRFLOW__ACID__COMPACTION_BATCH_SIZE", "4")
    bag = DagBag(dag_folder=str(DAGS / "acid_compaction.py"))
    assert bag.import_errors == {}
    dag = bag.dags["acid_compaction"]
    compact = dag.get_task("compact")
    assert compact.upstream_task_ids == {"batch_compact"}
    assert dag.get_task("batch_compact").upstream_task_ids == {"initiator"}
    assert "join(' + ')" in compact.partial_kwargs["map_index_template"]


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_batch_size_is_a_clear_import_error(monkeypatch, value):
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("AIRFLOW__ACID__COMPACTION_BATCH_SIZE", value)
    bag = DagBag(dag_folder=str(DAGS / "acid_compaction.py"))
    [error] = bag.import_errors.values()
    assert f"[acid] compaction_batch_size must be a positive integer, got {value!r}" in error


def test_batches_of_keeps_order_and_size():
    from airflow_acid.operators.defaults import batches_of

    items = [{"compaction_id": i, "label": f"t{i}"} for i in range(1, 8)]
    assert [[r["compaction_id"] for r in b] for b in batches_of(items, 3)] == [[1, 2, 3], [4, 5, 6], [7]]
    assert batches_of([], 3) == []
    with pytest.raises(ValueError, match="positive"):
        batches_of(items, 0)


def test_compaction_dag_dry_run_plans_and_writes_nothing(dagbag, acid_wh):
    from airflow.sdk.exceptions import AirflowSkipException

    from tests.airflow_support import insert_rows
    from tests.compactor.test_dry_run import metastore_fingerprint

    dag = dagbag.dags["acid_compaction"]
    assert _validated(dag, {})["dry_run"] is False  # scheduled runs are real runs
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int")])
    insert_rows(acid_wh, "db.t", 11)
    dry = dag.get_task("dry_run")
    sensor = dag.get_task("initiator")
    before = metastore_fingerprint(acid_wh.metastore)
    with pytest.raises(AirflowSkipException):
        sensor._pre_execute_hook({"params": {"dry_run": True}})  # a dry run never starts the Initiator
    result = dry.python_callable(params={"dry_run": True})
    assert metastore_fingerprint(acid_wh.metastore) == before
    assert [w["table"] for w in result["would_queue"]] == ["db.t"]
    assert result["plans"][0]["estimate"]["files_in"] == 11 and result["plans"][0]["admitted"]
    with pytest.raises(AirflowSkipException):
        dry.python_callable(params={"dry_run": False})
    sensor._pre_execute_hook({"params": {"dry_run": False}})  # a real run goes on


def test_mapped_compactions_carry_the_order_as_priority_weight(dagbag):
    from airflow.serialization.serialized_objects import DagSerialization

    from airflow_acid.plugins.priority import ACID_QUEUE_ORDER, MAX_MAPPED, AcidQueueOrder, weight_for

    compact = dagbag.dags["acid_compaction"].get_task("compact")
    assert compact.partial_kwargs["weight_rule"] == ACID_QUEUE_ORDER
    restored = DagSerialization.from_dict(DagSerialization.to_dict(dagbag.dags["acid_compaction"]))
    assert isinstance(restored.get_task("compact").weight_rule, AcidQueueOrder)  # registered by the plugin

    class _Ti:
        def __init__(self, index):
            self.task, self.map_index = compact, index

    weights = [AcidQueueOrder().get_weight(_Ti(i)) for i in range(3)]
    assert weights == sorted(weights, reverse=True) and weights[0] == compact.priority_weight + MAX_MAPPED
    assert weight_for(5, -1) == 5 and weight_for(5, MAX_MAPPED + 3) == 5
