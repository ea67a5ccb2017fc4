"""No double compaction when the process running a compaction task dies (issue 30 item 3).

The process running the Worker (what a Celery worker's task runs) is SIGKILLed while its compaction's Spark
application runs; the retried task finds the row's application (CQ_HADOOP_JOB_ID) and the stopped heartbeat of its
compactor transaction, waits for that application instead of submitting a second one, and commits its output: one
application, one output, the row 'ready for cleaning' once, no history row. Also: a live attempt is left alone, and
the retry policy's verdicts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
from airflow.sdk.exceptions import AirflowSkipException

from airflow_acid.acid.codes import CompactionState, CompactionType, TxnState
from airflow_acid.acid.errors import AcidFileError, AcidSchemaError
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.resume import resume_rows
from airflow_acid.compactor.worker import Worker
from airflow_acid.job.errors import PlanError
from airflow_acid.job.runner import attempt_key
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.attempts import CompactionAttempts
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import MetastoreUnavailableError
from airflow_acid.metastore.schema import COMPACTION_QUEUE, COMPLETED_COMPACTIONS
from airflow_acid.operators.compaction import AcidCompactionOperator
from airflow_acid.operators.retry import compaction_retry_policy, retry_verdict
from airflow_acid.operators.spark import SparkSubmitHookRunner
from airflow_acid.spark.job_dirs import process_alive
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.spark.units import FAULT_DELAY_ENV
from tests.backends import backends
from tests.compactor.worker_support import acid_dirs, history, rows

REPO = Path(__file__).resolve().parents[2]
TXN_TIMEOUT_S = 12.0  # the dead worker's heartbeat counts as stopped after 9 s


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _warehouse(url: str, root: Path) -> AcidWarehouse:
    conf = MetastoreConf(opentxn_timeout_ms=0, txn_timeout_s=TXN_TIMEOUT_S)
    return AcidWarehouse(Metastore(url, conf).init(), root, init=False, host="testhost")


@pytest.mark.slow
@pytest.mark.parametrize("empty_db_url", backends("sqlite", "postgresql"), indirect=True)
def test_killed_task_process_then_retry_reattaches_to_its_spark_application(empty_db_url, tmp_path, monkeypatch):
    wh = _warehouse(empty_db_url, tmp_path / "wh")
    wh.create_database("db")
    cqs, before, locations = [], {}, {}
    for table in ("db.t", "db.u"):  # two rows in ONE Spark application
        wh.create_table(table, [("id", "int"), ("name", "string")])
        history(wh, table)
        before[table] = rows(wh, table)
        locations[table] = wh.metastore.catalog.get_table(*table.split(".")).location
        cqs.append(wh.metastore.compactions.enqueue("db", table.split(".")[1], None, CompactionType.MAJOR).id)
    workdir = tmp_path / "jobs"
    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", json.dumps(
        {"conn_type": "acid_metastore", "host": empty_db_url, "extra": {"warehouse": str(tmp_path / "wh")}}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT", "0")
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.TXN.TIMEOUT", f"{TXN_TIMEOUT_S:g}s")
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    env = {**os.environ, "PYTHONPATH": str(REPO), FAULT_DELAY_ENV: "6"}  # each unit sleeps: the kill lands mid-job
    doomed = subprocess.Popen([sys.executable, "-m", "tests.operators.doomed_worker", str(workdir),
                               *map(str, cqs)], env=env, cwd=REPO)
    submit_pid = None
    try:
        def application_on_the_rows():
            assert doomed.poll() is None, f"the task process ended early (code {doomed.returncode})"
            job_ids = {wh.metastore.compactions.get(cq).hadoop_job_id or "" for cq in cqs}
            return job_ids.pop() if len(job_ids) == 1 and next(iter(job_ids)).startswith("local-") else None

        app_id = _wait_for(application_on_the_rows, 240, "the Spark application id on both queue rows")
        submit_pid = int(json.loads(next(workdir.glob("acid-*/submit.json")).read_text())["pid"])
        doomed.send_signal(signal.SIGKILL)  # the task's process dies; spark-submit (own session) runs on
        doomed.wait(30)
        assert process_alive(submit_pid), "the Spark application ended before the task process was killed"
        attempts = [CompactionAttempts(wh.metastore.db).running(cq) for cq in cqs]
        assert all(a is not None and a.job_id == app_id and a.txn_state is TxnState.OPEN for a in attempts), attempts
        txns = [a.txn_id for a in attempts]

        # The same task again, with the same compaction ids: a first try leaves 'working' rows alone, a retry
        # takes them over once their heartbeat stopped, and waits for the running application.
        retry_runner = SparkSubmitHookRunner(workdir=str(workdir), timeout_s=300)
        op = AcidCompactionOperator(task_id="compact", compactions=cqs, runner=retry_runner)
        with pytest.raises(AirflowSkipException):
            op.execute({})
        outcomes = op.execute({"ti": SimpleNamespace(try_number=2)})
    finally:
        if doomed.poll() is None:
            doomed.kill()
        if submit_pid is not None and process_alive(submit_pid):
            os.killpg(submit_pid, signal.SIGKILL)
    assert [o["status"] for o in outcomes] == ["compacted", "compacted"], outcomes
    assert retry_runner.jobs == [], "the retry submitted a Spark application of its own"
    plan = json.loads(next(workdir.glob("acid-*/plan.json")).read_text())
    planned = {str(c["id"]): c["location"] for c in plan["compactions"]}
    first, second = (f"acid-{attempt_key(cq, txn, planned[str(cq)])}" for cq, txn in zip(cqs, txns))
    assert sorted(p.name for p in workdir.iterdir() if p.name.startswith("acid-")) == \
        sorted([first, second])  # one job directory, linked from the second row's key
    assert os.readlink(workdir / second) == first
    assert [p.name for p in workdir.glob("acid-*/application_id")] == ["application_id"] * 2
    assert json.loads((workdir / first / "result.json").read_text())["app_id"] == app_id
    for cq, txn, table in zip(cqs, txns, ("db.t", "db.u")):
        info = wh.metastore.compactions.get(cq)
        assert info.state is CompactionState.READY_FOR_CLEANING and info.hadoop_job_id == app_id
        assert wh.metastore.txns.txn_state(txn) is TxnState.COMMITTED
        assert [d for d in acid_dirs(locations[table]) if d.startswith("base_")] == [f"base_0000005_v{txn:07d}"]
        assert rows(wh, table) == before[table]
    with wh.metastore.db.engine.connect() as conn:
        history_rows = conn.execute(sa.select(sa.func.count()).select_from(COMPLETED_COMPACTIONS)
                                    .where(COMPLETED_COMPACTIONS.c.CC_ID.in_(cqs))).scalar()
    assert history_rows == 0
    wh.close()


def test_a_live_attempt_is_left_alone(tmp_path):
    wh = _warehouse(f"sqlite:///{tmp_path / 'ms.db'}", tmp_path / "wh")
    wh.create_database("db")
    wh.create_table("db.t", [("id", "int"), ("name", "string")])
    history(wh, "db.t")
    ms = wh.metastore
    cq = ms.compactions.enqueue("db", "t", None, CompactionType.MAJOR).id
    ms.compactions.claim(cq, "alive-1")
    txn = ms.txns.open_txn(user="u", host="h")
    ms.compactions.set_running(cq, txn, 5, hadoop_job_id="local-1")
    retry = Worker(ms, runner=LocalRunner(), worker_id="retry-1", reattach=True)
    outcomes, why = resume_rows(retry, [cq], wait_s=0.5)
    assert outcomes == [] and "alive" in why[cq]
    assert ms.compactions.get(cq).worker_id == "alive-1"
    wh.close()


def test_a_row_claimed_before_its_transaction_is_run_by_the_retry(tmp_path):
    wh = _warehouse(f"sqlite:///{tmp_path / 'ms.db'}", tmp_path / "wh")
    wh.create_database("db")
    wh.create_table("db.t", [("id", "int"), ("name", "string")])
    history(wh, "db.t")
    before = rows(wh, "db.t")
    ms = wh.metastore
    cq = ms.compactions.enqueue("db", "t", None, CompactionType.MAJOR).id
    ms.compactions.claim(cq, "died-before-txn")  # no C, so no job: nothing to wait for
    outcomes, why = resume_rows(Worker(ms, runner=LocalRunner(), reattach=True), [cq], wait_s=0)
    assert outcomes == [] and "alive" in why[cq]  # just claimed: its worker may be opening C right now
    with ms.db.engine.begin() as conn:  # claimed a minute ago (longer than the stale limit, 9 s)
        conn.execute(sa.update(COMPACTION_QUEUE).where(COMPACTION_QUEUE.c.CQ_ID == cq)
                     .values(CQ_START=COMPACTION_QUEUE.c.CQ_START - 60_000))
    runner = LocalRunner()
    retry = Worker(ms, runner=runner, worker_id="retry-1", reattach=True)
    outcomes, why = resume_rows(retry, [cq], wait_s=0)
    assert why == {}
    assert outcomes[0].status == "compacted" and len(runner.jobs) == 1
    assert ms.compactions.get(cq).state is CompactionState.READY_FOR_CLEANING
    assert rows(wh, "db.t") == before
    wh.close()


@pytest.mark.parametrize(("error", "verdict"), [
    (PermissionError("AccessDenied"), False),
    (AcidSchemaError("column types differ"), False),
    (AcidFileError("bucket_00000", "not an ORC file"), False),
    (PlanError("plan refused"), False),
    (MetastoreUnavailableError("metastore unreachable"), True),
    (TimeoutError("read timed out"), True),
    (ConnectionResetError("reset by peer"), True),
    (ValueError("bug"), None),
])
def test_retry_verdicts(error, verdict):
    assert retry_verdict(error) is verdict
    policy = compaction_retry_policy()
    assert policy is not None  # the installed Airflow has retry policies
    action = policy.evaluate(error, try_number=1, max_tries=3).action.value
    assert action == {True: "retry", False: "fail", None: "default"}[verdict]
    assert AcidCompactionOperator(task_id="c", compaction=1).retry_policy is not None


@pytest.mark.slow
def test_a_broken_task_log_does_not_fail_a_running_job(acid_wh, monkeypatch, tmp_path):
    """The task's log pipe breaks (its supervisor died) while spark-submit runs: the runner keeps following the job
    and returns its result instead of failing the row."""
    from airflow_acid.operators.spark import AcidSparkSubmitHook

    def broken_log(self, itr):
        next(itr, None)
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(AcidSparkSubmitHook, "_process_spark_submit_log", broken_log)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int"), ("name", "string")])
    history(acid_wh, "db.t")
    before = rows(acid_wh, "db.t")
    cq = acid_wh.metastore.compactions.enqueue("db", "t", None).id
    runner = SparkSubmitHookRunner(workdir=str(tmp_path / "jobs"), timeout_s=300)
    [outcome] = AcidCompactionOperator(task_id="c", compaction=cq, runner=runner).execute({})
    assert outcome["status"] == "compacted", outcome["message"]
    assert rows(acid_wh, "db.t") == before


def test_two_metastores_on_one_host_keep_their_jobs_apart(tmp_path):
    """Row and transaction ids repeat across metastores (two warehouses, parallel test runs): the job directory's
    key carries the location too, so one job never replaces another's files (CI caught two runs colliding)."""
    from airflow_acid.spark.job_dirs import create_job_dir

    one, two = attempt_key(4, 25, "/a/warehouse/sales/ds=1"), attempt_key(4, 25, "/b/warehouse/sales/ds=1")
    assert one != two and attempt_key(4, 25, "/a/warehouse/sales/ds=1/") == one
    first = create_job_dir(str(tmp_path), [one])
    (Path(first.path) / "plan.json").write_text("{}")
    create_job_dir(str(tmp_path), [two])
    assert (Path(first.path) / "plan.json").read_text() == "{}"
