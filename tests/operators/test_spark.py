"""SparkSubmitHookRunner: local[*] when spark_default is missing, the connection otherwise, a real job (slow)."""

from __future__ import annotations

import json

import pytest

from airflow_acid.operators.compaction import AcidCompactionOperator
from airflow_acid.operators.spark import AcidSparkSubmitHook, SparkSubmitHookRunner, hook_for
from airflow_acid.spark.submit import SparkSubmitOptions, submit_arguments
from tests.compactor.worker_support import history, rows


def test_missing_spark_default_runs_locally_not_on_yarn(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    hook = AcidSparkSubmitHook(conn_id="spark_default")
    assert hook._connection["master"] == "local[*]"
    assert hook._connection["deploy_mode"] == "client"


def test_configured_connection_decides_the_master(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(
        {"conn_type": "spark", "host": "spark://master.example:7077", "extra": {"deploy-mode": "client"}}))
    hook = AcidSparkSubmitHook(conn_id="spark_default")
    assert hook._connection["master"] == "spark://master.example:7077"


def test_hook_gets_the_submit_arguments(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    from airflow_acid.job.plan import CompactionPlan

    plan = CompactionPlan(compactions=())
    args = submit_arguments(plan, str(tmp_path / "plan.json"), str(tmp_path / "result.json"),
                            SparkSubmitOptions(ship_package=False, conf={"spark.executor.memory": "1g"}))
    command = hook_for(args, "spark_default")._build_spark_submit_command(args.application)
    assert command[:3] == ["spark-submit", "--master", "local[2]"]
    assert "spark.executor.memory=1g" in command and "spark.speculation=false" in command
    assert command[-5:] == [args.application, "--plan", str(tmp_path / "plan.json"), "--result",
                            str(tmp_path / "result.json")]


@pytest.mark.slow
def test_compaction_through_spark_submit_hook(acid_wh, monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int"), ("name", "string")])
    history(acid_wh, "db.t")
    before = rows(acid_wh, "db.t")
    cq_id = acid_wh.metastore.compactions.enqueue("db", "t", None).id
    runner = SparkSubmitHookRunner(workdir=str(tmp_path / "jobs"), timeout_s=300)
    [outcome] = AcidCompactionOperator(task_id="c", compaction=cq_id, runner=runner).execute({})
    assert outcome["status"] == "compacted", outcome["message"]
    assert rows(acid_wh, "db.t") == before


def _live_children() -> set[int]:
    """Pids of this process's live descendants."""
    import psutil

    return {p.pid for p in psutil.Process().children(recursive=True)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE}


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(acid_wh, monkeypatch, tmp_path):
    from airflow.sdk.exceptions import AirflowException

    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int"), ("name", "string")])
    history(acid_wh, "db.t")
    cq_id = acid_wh.metastore.compactions.enqueue("db", "t", None).id
    runner = SparkSubmitHookRunner(workdir=str(tmp_path / "jobs"), timeout_s=3)
    earlier = _live_children()  # e.g. JVMs of SparkSessions other tests of this process keep
    with pytest.raises(AirflowException, match="was killed after 3"):
        AcidCompactionOperator(task_id="c", compaction=cq_id, runner=runner).execute({})
    assert acid_wh.metastore.compactions.get(cq_id).state.display == "failed"
    assert _live_children() - earlier == set()


@pytest.mark.slow
def test_on_kill_kills_the_running_job(acid_wh, monkeypatch, tmp_path):
    import threading
    import time

    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int"), ("name", "string")])
    history(acid_wh, "db.t")
    cq_id = acid_wh.metastore.compactions.enqueue("db", "t", None).id
    runner = SparkSubmitHookRunner(workdir=str(tmp_path / "jobs"))
    op = AcidCompactionOperator(task_id="c", compaction=cq_id, runner=runner)
    errors: list[BaseException] = []
    earlier = _live_children()

    def run() -> None:
        try:
            op.execute({})
        except BaseException as exc:  # noqa: BLE001 - inspected below
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (runner._hook is None or runner._hook.process is None):
        time.sleep(0.1)
    time.sleep(2)  # let spark-submit start its JVM and Python driver
    op.on_kill()
    thread.join(60)
    assert not thread.is_alive()
    assert errors and "was killed" in str(errors[0])
    assert acid_wh.metastore.compactions.get(cq_id).state.display == "failed"
    assert _live_children() - earlier == set()
