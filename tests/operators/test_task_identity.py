"""The compaction operator records the Airflow task instance it runs in with each compaction (the console links a
compaction to that task's log): DAG, run, task, map index and try from the context's ``ti``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_acid.metastore.runs import TaskIdentity
from airflow_acid.operators.compaction import AcidCompactionOperator
from airflow_acid.operators.task_identity import task_identity
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import history


def _ti(**overrides):
    values = {"dag_id": "acid_compaction", "run_id": "scheduled__2026-11-27T10:00:00+00:00", "task_id": "compact",
              "map_index": 2, "try_number": 3}
    return SimpleNamespace(**{**values, **overrides})


def test_task_identity_of_a_context():
    assert task_identity({"ti": _ti()}) == TaskIdentity("acid_compaction", "scheduled__2026-11-27T10:00:00+00:00",
                                                        "compact", 2, 3)
    assert task_identity({"ti": _ti(map_index=None, try_number=0)}).map_index == -1
    assert task_identity({"ti": _ti(map_index=None, try_number=0)}).try_number == 1
    assert task_identity({}) is None and task_identity(None) is None
    assert task_identity({"ti": SimpleNamespace(dag_id="d")}) is None  # not a task instance


@pytest.fixture
def table(acid_wh):
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int"), ("name", "string")])
    history(acid_wh, "db.t")
    return acid_wh


def test_the_operator_records_its_task_with_the_compaction_even_when_it_fails(table):
    class Broken:
        def run(self, plan, *, job_name, spark_conf):
            raise RuntimeError("executor lost")

    ms = table.metastore
    failed = ms.compactions.enqueue("db", "t", None).id
    with pytest.raises(AirflowFailException):
        AcidCompactionOperator(task_id="compact", compaction=failed, runner=Broken()).execute({"ti": _ti()})
    (row,) = ms.compactions.show_compactions(id=failed)
    assert (row.state, row.dagid, row.taskid, row.mapindex, row.trynumber) == ("failed", "acid_compaction",
                                                                              "compact", 2, 3)

    done = ms.compactions.enqueue("db", "t", None).id
    [outcome] = AcidCompactionOperator(task_id="compact", compaction=done, runner=LocalRunner()).execute(
        {"ti": _ti(run_id="manual__1", map_index=-1, try_number=1)})
    assert outcome["status"] == "compacted"
    figures = ms.runs.get(done)
    assert figures.task == TaskIdentity("acid_compaction", "manual__1", "compact", -1, 1) and figures.files_in
