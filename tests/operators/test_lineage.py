"""OpenLineage: compaction and cleanup tasks report each table/partition directory as input and output (through the
OpenLineage provider's DefaultExtractor, as its listener does), and the Spark job gets the parent job information."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from airflow.providers.openlineage.extractors.base import DefaultExtractor
from airflow.sdk.exceptions import AirflowFailException

from airflow_acid.operators import spark as spark_module
from airflow_acid.operators.compaction import AcidCompactionOperator
from airflow_acid.operators.maintenance import AcidCleanerOperator
from airflow_acid.sensors.initiator import AcidInitiatorSensor
from airflow_acid.services.lineage import dataset_name
from airflow_acid.spark.runners import LocalRunner
from tests.airflow_support import insert_rows


@pytest.mark.parametrize(("location", "expected"), [
    ("/data/wh/db.db/t/ds=1", ("file", "/data/wh/db.db/t/ds=1")),
    ("file:///data/wh/t/", ("file", "/data/wh/t")),
    ("s3://bucket/wh/db.db/t", ("s3://bucket", "wh/db.db/t")),
    ("gs://b/wh/t/ds=1", ("gs://b", "wh/t/ds=1")),
    ("hdfs://nn:8020/warehouse/t", ("hdfs://nn:8020", "/warehouse/t")),
])
def test_dataset_names_follow_openlineage_naming(location, expected):
    assert dataset_name(location) == expected


def _symlink(dataset) -> str:
    [identifier] = dataset.facets["symlinks"].identifiers
    return f"{identifier.namespace}:{identifier.name}:{identifier.type}"


def test_compaction_and_cleanup_report_the_partition_directory(acid_wh):
    acid_wh.create_database("db")
    acid_wh.create_table("db.p", [("id", "int")], partition_by=[("ds", "string")],
                         properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    insert_rows(acid_wh, "db.p", 2, {"ds": "2024-01-01"})
    location = acid_wh.metastore.catalog.get_partition("db", "p", "ds=2024-01-01").location
    [item] = AcidInitiatorSensor(task_id="initiator").poke({}).xcom_value

    compact = AcidCompactionOperator(task_id="compact", compaction=item, runner=LocalRunner())
    compact.execute({})
    lineage = DefaultExtractor(compact).extract_on_complete(None)
    assert [(d.namespace, d.name) for d in lineage.inputs] == [dataset_name(location)] == \
        [(d.namespace, d.name) for d in lineage.outputs]
    assert lineage.inputs[0].namespace == "file" and lineage.inputs[0].name.endswith("/ds=2024-01-01")
    assert _symlink(lineage.outputs[0]) == "acid:db.p:TABLE"

    clean = AcidCleanerOperator(task_id="clean")
    assert clean.execute({})["deletions"] >= 2
    lineage = DefaultExtractor(clean).extract_on_complete(None)
    assert [(d.namespace, d.name) for d in lineage.outputs] == [dataset_name(location)]
    assert _symlink(lineage.inputs[0]) == "acid:db.p:TABLE"
    nothing = AcidCleanerOperator(task_id="clean")
    nothing.execute({})
    assert DefaultExtractor(nothing).extract_on_complete(None).outputs == []


def test_spark_job_gets_the_parent_job_information(acid_wh, monkeypatch):
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int")],
                         properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    insert_rows(acid_wh, "db.t", 2)
    [item] = AcidInitiatorSensor(task_id="initiator").poke({}).xcom_value
    submitted = {}

    def capture(args, conn_id, **kwargs):  # stands in for spark-submit: records the job's conf, then fails the job
        submitted.update(args.conf)
        raise RuntimeError("not running Spark in this test")

    monkeypatch.setattr(spark_module, "hook_for", capture)
    run = SimpleNamespace(conf={}, clear_number=0, logical_date=datetime(2024, 1, 2, tzinfo=UTC),
                          run_after=datetime(2024, 1, 2, tzinfo=UTC))
    ti = SimpleNamespace(dag_id="acid_compaction", task_id="compact", try_number=1, map_index=0, dag_run=run,
                         get_template_context=lambda: {"dag_run": run})
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__SPARK_INJECT_PARENT_JOB_INFO", "True")
    op = AcidCompactionOperator(task_id="compact", compaction=item)
    assert op.openlineage_inject_parent_job_info
    with pytest.raises(AirflowFailException, match="not running Spark"):
        op.execute({"ti": ti, "task_instance": ti, "dag_run": run})
    assert submitted["spark.openlineage.parentJobName"] == "acid_compaction.compact"
    assert submitted["spark.openlineage.rootParentJobName"] == "acid_compaction"
    assert len(submitted["spark.openlineage.parentRunId"]) == 36 and submitted["spark.openlineage.parentJobNamespace"]
    assert AcidCompactionOperator(task_id="c", compaction=1,
                                  openlineage_inject_parent_job_info=False).openlineage_inject_parent_job_info is False
