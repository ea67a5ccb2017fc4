"""The DAGs in dags/: import without errors, wiring, and the manual form's validation."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path

import pytest

DAGS = Path(__file__).resolve().parents[2] / "dags"
DAG_IDS = {"acid_compaction", "acid_manual_compaction", "acid_cleanup", "acid_housekeeping"}


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))  # 3.3: examples are a separate bundle, never in this folder


def test_every_dag_imports_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert DAG_IDS <= set(dagbag.dag_ids)


def test_compaction_dag_wiring(dagbag):
    dag = dagbag.dags["acid_compaction"]
    assert dag.schedule == timedelta(seconds=300) or getattr(dag.timetable, "_delta", None) == timedelta(seconds=300)
    sensor, compact = dag.get_task("initiator"), dag.get_task("compact")
    assert sensor.mode == "reschedule" and sensor.soft_fail
    assert compact.upstream_task_ids == {"initiator"}
    assert compact.partial_kwargs["map_index_template"] == "{{ task.compaction['label'] }}"
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
