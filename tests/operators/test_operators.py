"""Compaction, request, Cleaner and HouseKeeper operators on SQLite with the in-process LocalRunner."""

from __future__ import annotations

import json
import threading
import time

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.errors import MetastoreSchemaError, MetastoreUnavailableError, NoSuchObjectError
from airflow_acid.operators.compaction import (
    COMPACTED_TABLES,
    AcidCompactionOperator,
    AcidRequestCompactionOperator,
    table_asset,
)
from airflow_acid.operators.maintenance import AcidCleanerOperator, AcidHouseKeeperOperator
from airflow_acid.sensors.initiator import AcidInitiatorSensor
from airflow_acid.spark.runners import LocalRunner
from tests.airflow_support import insert_rows
from tests.compactor.worker_support import history, rows


class OutletEvents(dict):
    """The ``outlet_events`` accessor of a task context: records assets added to an alias."""

    def __missing__(self, key):
        accessor = self[key] = _Accessor()
        return accessor


class _Accessor:
    def __init__(self) -> None:
        self.added: list = []

    def add(self, asset, extra=None) -> None:
        self.added.append((asset, extra))


@pytest.fixture
def two_tables(acid_wh):
    acid_wh.create_database("db")
    for name in ("db.t", "db.u"):
        acid_wh.create_table(name, [("id", "int"), ("name", "string")])
        history(acid_wh, name)
    return acid_wh


def _state(wh, cq_id: int) -> str:
    return wh.metastore.compactions.get(cq_id).state.display


def test_sensor_item_is_compacted_then_cleaned_and_reads_stay_identical(two_tables):
    wh = two_tables
    before = rows(wh, "db.t")
    wh.alter_table_properties("db.t", {"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    items = AcidInitiatorSensor(task_id="initiator").poke({}).xcom_value
    [item] = [i for i in items if i["table"] == "t"]
    runner = LocalRunner()
    events = OutletEvents()
    [outcome] = AcidCompactionOperator(task_id="compact", compaction=item, runner=runner).execute(
        {"outlet_events": events})
    assert outcome["status"] == "compacted" and outcome["compaction_id"] == item["compaction_id"]
    json.dumps(outcome)
    assert _state(wh, item["compaction_id"]) == "ready for cleaning"
    assert rows(wh, "db.t") == before
    [(asset, extra)] = events[COMPACTED_TABLES].added
    assert asset == table_asset("db", "t") and extra["compaction_id"] == item["compaction_id"]

    report = AcidCleanerOperator(task_id="clean").execute({})
    assert report["deletions"] > 0
    assert [e["compaction_id"] for e in report["cleaned"]] == [item["compaction_id"]]
    assert _state(wh, item["compaction_id"]) == "succeeded"
    assert rows(wh, "db.t") == before
    shown = wh.metastore.compactions.show_compactions(db="db", table="t")
    assert [r.state for r in shown] == ["succeeded"]


def test_batch_runs_in_one_job(two_tables):
    wh = two_tables
    ids = [wh.metastore.compactions.enqueue("db", t, None).id for t in ("t", "u")]
    runner = LocalRunner()
    outcomes = AcidCompactionOperator(task_id="c", compactions=ids, runner=runner).execute({})
    assert [o["status"] for o in outcomes] == ["compacted", "compacted"]
    assert len(runner.jobs) == 1


def test_row_claimed_elsewhere_is_skipped(two_tables):
    wh = two_tables
    cq_id = wh.metastore.compactions.enqueue("db", "t", None).id
    assert wh.metastore.compactions.claim(cq_id, "otherhost-1") is not None
    with pytest.raises(AirflowSkipException, match=str(cq_id)):
        AcidCompactionOperator(task_id="c", compaction=cq_id, runner=LocalRunner()).execute({})


def test_without_ids_the_next_row_runs_or_the_task_skips(two_tables):
    wh = two_tables
    with pytest.raises(AirflowSkipException, match="no compaction is waiting"):
        AcidCompactionOperator(task_id="c", runner=LocalRunner()).execute({})
    cq_id = wh.metastore.compactions.enqueue("db", "u", None).id
    [outcome] = AcidCompactionOperator(task_id="c", runner=LocalRunner()).execute({})
    assert outcome["compaction_id"] == cq_id


def test_failed_job_fails_the_task_and_the_row(two_tables):
    class Broken:
        def run(self, plan, *, job_name, spark_conf):
            raise RuntimeError("executor lost")

    wh = two_tables
    cq_id = wh.metastore.compactions.enqueue("db", "t", None).id
    with pytest.raises(AirflowFailException, match=f"compaction {cq_id} of db.t failed: .*executor lost"):
        AcidCompactionOperator(task_id="c", compaction=cq_id, runner=Broken()).execute({})
    assert _state(wh, cq_id) == "failed"


def test_bad_compaction_id_is_rejected():
    with pytest.raises(AirflowFailException, match="not a compaction id"):
        AcidCompactionOperator(task_id="c", compaction={"table": "x"}, runner=LocalRunner()).execute({})


@pytest.mark.parametrize("kwargs, message", [
    ({"table": "db.t", "compaction_type": "medium"}, "compaction type 'medium' is not supported; use 'major' or 'minor'"),
    ({"table": "db.t", "compaction_type": "rebalance"}, "compaction type 'rebalance' is not supported"),
    ({"table": "db.nope"}, "table db.nope does not exist"),
    ({"table": "db.t", "partition": "ds=1"}, "db.t is not partitioned"),
    ({"table": "db.t", "properties": {"color": "red"}}, "request property 'color' is not understood"),
])
def test_request_rejects_bad_input_clearly(two_tables, kwargs, message):
    with pytest.raises(AirflowFailException, match=message):
        AcidRequestCompactionOperator(task_id="r", **kwargs).execute({})
    assert two_tables.metastore.compactions.find() == []


def test_request_queues_one_compaction_with_properties(two_tables):
    wh = two_tables
    result = AcidRequestCompactionOperator(task_id="r", table="db.t", compaction_type="MINOR",
                                           properties={"compactor.spark.executor.memory": "1g"}).execute({})
    [item] = result["compactions"]
    info = wh.metastore.compactions.get(item["compaction_id"])
    assert info.type.display == "MINOR" and info.properties == {"compactor.spark.executor.memory": "1g"}
    with pytest.raises(AirflowSkipException, match=f"compaction {item['compaction_id']} of db.t is already "
                                                   "scheduled"):  # refused by Hive's rule: one is already queued
        AcidRequestCompactionOperator(task_id="r", table="db.t").execute({})


def test_request_on_a_partitioned_table_evaluates_each_partition(acid_wh):
    acid_wh.create_database("db")
    acid_wh.create_table("db.p", [("id", "int")], partition_by=[("ds", "string")])
    insert_rows(acid_wh, "db.p", 2, partition={"ds": "a"})
    insert_rows(acid_wh, "db.p", 1, partition={"ds": "b"})
    result = AcidRequestCompactionOperator(
        task_id="r", table="db.p",
        properties={"tblprops.compactorthreshold.hive.compactor.delta.num.threshold": "1"}).execute({})
    assert [(i["partition"], i["type"]) for i in result["compactions"]] == [("ds=a", "MAJOR")]
    assert any("ds=b" in m for m in result["messages"])
    with pytest.raises(AirflowFailException, match="partition ds=zz of table db.p does not exist"):
        AcidRequestCompactionOperator(task_id="r", table="db.p", partition="ds=zz").execute({})


def test_request_and_wait(two_tables):
    wh = two_tables
    with pytest.raises(AirflowException, match=r"1 still waiting for a worker after 0\.3\d* s; they stay queued"):
        AcidRequestCompactionOperator(task_id="r", table="db.t", wait=True, wait_timeout=0.3).execute({})

    def worker_later():
        time.sleep(0.3)
        worker = Worker(wh.metastore, runner=LocalRunner())
        while worker.run_next() is not None:  # the first request's row, then this one
            pass

    thread = threading.Thread(target=worker_later)
    thread.start()
    result = AcidRequestCompactionOperator(task_id="r", table="db.u", wait=True, wait_timeout=60).execute({})
    thread.join()
    assert list(result["states"].values()) == ["ready for cleaning"]


def test_cleaner_dry_run_and_housekeeper(two_tables):
    wh = two_tables
    cq_id = wh.metastore.compactions.enqueue("db", "t", None).id
    AcidCompactionOperator(task_id="c", compaction=cq_id, runner=LocalRunner()).execute({})
    dry = AcidCleanerOperator(task_id="clean", dry_run=True).execute({})
    assert dry["dry_run"] and dry["deletions"] > 0
    assert _state(wh, cq_id) == "ready for cleaning"
    report = AcidHouseKeeperOperator(task_id="hk").execute({})
    assert report["ran"] is True


def test_cleaner_operator_keeps_base_operator_dry_run_callable():
    """The ``dry_run`` argument must not shadow ``BaseOperator.dry_run()`` (it did: 'bool' is not callable)."""
    op = AcidCleanerOperator(task_id="clean", dry_run="{{ params.dry_run }}")
    op.dry_run()  # renders nothing, just logs the template fields
    assert op.report_only == "{{ params.dry_run }}" and "report_only" in op.template_fields


@pytest.mark.parametrize("threads", ["0", "", "2"])
def test_worker_threads_zero_turns_workers_off_as_in_hive(two_tables, monkeypatch, threads):
    """hive.compactor.worker.threads=0 means "no compaction workers here" (Hive): the row stays 'initiated' for
    another worker; unset or N > 0 compacts."""
    wh = two_tables
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.COMPACTOR.WORKER.THREADS", threads)
    cq_id = wh.metastore.compactions.enqueue("db", "t", None).id
    operator = AcidCompactionOperator(task_id="c", compaction=cq_id, runner=LocalRunner())
    if threads == "0":
        with pytest.raises(AirflowSkipException, match="worker.threads=0: compaction workers are off"):
            operator.execute({})
        assert _state(wh, cq_id) == "initiated"
    else:
        [outcome] = operator.execute({})
        assert outcome["status"] == "compacted" and _state(wh, cq_id) == "ready for cleaning"


@pytest.mark.parametrize(("error", "retried"), [
    (MetastoreUnavailableError("the metastore database cannot be reached"), True),
    (MetastoreSchemaError("the metastore database has no airflow-acid schema: run airflow-acid init"), False),
    (NoSuchObjectError("table db.nope does not exist"), False),
])
def test_request_retries_only_an_unreachable_metastore(table_t, monkeypatch, error, retried):
    """A metastore that cannot be reached now is raised for Airflow's retries; other user errors fail the task."""
    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr("airflow_acid.services.compact.request_compaction", refuse)  # imported when the task runs
    op = AcidRequestCompactionOperator(task_id="r", table="db.t")
    with pytest.raises(type(error) if retried else AirflowFailException, match=str(error).split(":")[0]):
        op.execute({})
