"""Through Airflow itself on a fresh AIRFLOW_HOME: the demo warehouse, `airflow dags test acid_compaction` (Initiator
→ Spark via SparkSubmitHook on local[*]), `acid_cleanup`, `acid_manual_compaction` with conf; reads unchanged."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_acid.client.warehouse import AcidWarehouse

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TABLES = ("demo.customers", "demo.sales", "demo.audit_log", "demo.events")


def _run(env, *args, ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / args[0]), *args[1:]], env=env, capture_output=True, text=True, timeout=900)
    if ok:
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return result


def _reads(home: Path) -> dict[str, list[str]]:
    with AcidWarehouse(f"sqlite:///{home / 'metastore.db'}", home / "warehouse", init=False) as wh:
        return {t: sorted(map(str, wh.read(t).to_pylist())) for t in TABLES}


@pytest.mark.slow
def test_demo_compacted_and_cleaned_through_airflow(tmp_path):
    home = tmp_path / "acid"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "AIRFLOW__ACID__"))}
    env.update({"AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "false", "AIRFLOW_ACID_HOME": str(home),
                "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                # The demo's tables stay below Hive's default thresholds: compact anything with 2+ deltas.
                "AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD": "1",
                "AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT": "0",
                # as ./dev demo: up to 3 rows per mapped task, in one Spark application
                "AIRFLOW__ACID__COMPACTION_BATCH_SIZE": "3",
                # OpenLineage events to a file (one JSON event a line); the Spark jobs get the parent job conf
                "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "append": True,
                                                               "log_file_path": str(tmp_path / "lineage.jsonl")}),
                "AIRFLOW__OPENLINEAGE__SPARK_INJECT_PARENT_JOB_INFO": "True"})
    _run(env, "airflow", "db", "migrate")
    _run(env, "airflow-acid", "demo", "--warehouse", str(home / "warehouse"),
         "--metastore-url", f"sqlite:///{home / 'metastore.db'}")
    before = _reads(home)

    log = _run(env, "airflow", "dags", "test", "acid_compaction").stdout
    assert "running on local[*]" in log and "INFO SparkContext" in log  # Spark's progress is in the task log
    labels = re.findall(r"task_id='compact'.*?rendered_map_index='([^']*)'", log)
    assert any(" + " in label and "demo.customers MAJOR" in label for label in labels), labels  # batches, labelled
    with sqlite3.connect(tmp_path / "airflow" / "airflow.db") as db:  # each compacted table is an updated Asset
        updated = {uri for (uri,) in db.execute("SELECT a.uri FROM asset_event e JOIN asset a ON a.id = e.asset_id")}
    assert {"acid://demo/customers", "acid://demo/sales", "acid://demo/sales/ds=2024-01-01"} <= updated
    _run(env, "airflow", "dags", "test", "acid_cleanup")
    assert _reads(home) == before
    events = [json.loads(line) for line in (tmp_path / "lineage.jsonl").read_text().splitlines() if line.strip()]
    completed = [e for e in events if e["eventType"] == "COMPLETE"]
    compact = [e for e in completed if e["job"]["name"] == "acid_compaction.compact"]  # one per mapped task
    assert {o["name"].split("/")[-1] for e in compact for o in e["outputs"]} >= {"customers", "ds=2024-01-01"}
    assert all(o["namespace"] == "file" and (o["namespace"], o["name"]) in {(i["namespace"], i["name"])
                                                                          for i in e["inputs"]}
               for e in compact for o in e["outputs"])
    [clean] = [e for e in completed if e["job"]["name"] == "acid_cleanup.clean"]
    assert clean["outputs"], "the Cleaner's lineage lists the directories it cleaned"

    with AcidWarehouse(f"sqlite:///{home / 'metastore.db'}", home / "warehouse", init=False) as wh:
        shown = {(r.tabname, r.partname): r.state for r in wh.metastore.compactions.show_compactions()}
        location = wh.table("demo.customers").location
    assert shown[("customers", None)] == "succeeded"
    assert shown[("sales", "ds=2024-01-01")] == "succeeded"
    assert shown[("audit_log", None)] == "succeeded"  # insert-only: compacted too, no longer refused
    assert shown[("events", None)] == "succeeded"  # written by Spark through the hive_acid data source
    assert [d for d in os.listdir(location) if d.startswith(("delta_", "delete_delta_"))] == []

    bad = _run(env, "airflow", "dags", "test", "acid_manual_compaction", "-c",
               json.dumps({"database": "demo", "table": "customers", "type": "medium"}), ok=False)
    assert bad.returncode != 0 and "'medium' is not one of ['minor', 'major']" in bad.stdout + bad.stderr
    unknown = _run(env, "airflow", "dags", "test", "acid_manual_compaction", "-c",
                   json.dumps({"database": "demo", "table": "nope"}), ok=False)
    assert "table demo.nope does not exist" in unknown.stdout + unknown.stderr


@pytest.mark.slow
def test_airflow_tasks_test_on_a_fresh_home_uses_the_embedded_metastore(tmp_path):
    airflow_home = tmp_path / "airflow"
    home = airflow_home / "acid"  # the hook's embedded default: $AIRFLOW_HOME/acid
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW_CONN_", "AIRFLOW__ACID__")) and k != "AIRFLOW_ACID_HOME"}
    env.update({"AIRFLOW_HOME": str(airflow_home), "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "false", "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    _run(env, "airflow", "db", "migrate")
    for dag_id, task_id in (("acid_housekeeping", "housekeeping"), ("acid_cleanup", "clean"),
                            ("acid_compaction", "initiator")):
        out = _run(env, "airflow", "tasks", "test", dag_id, task_id).stdout
        assert f"ACID metastore sqlite:///{home / 'metastore.db'}" in out and "not configured: embedded" in out

    _run(env, "airflow-acid", "demo", "--warehouse", str(home / "warehouse"),
         "--metastore-url", f"sqlite:///{home / 'metastore.db'}")
    before = _reads(home)
    conf = {"database": "demo", "table": "customers", "type": "minor", "wait": True,
            "properties": {"compactor.spark.executor.memory": "1g"}}
    _run(env, "airflow", "dags", "test", "acid_manual_compaction", "-c", json.dumps(conf))
    with AcidWarehouse(f"sqlite:///{home / 'metastore.db'}", home / "warehouse", init=False) as wh:
        [row] = wh.metastore.compactions.show_compactions(db="demo", table="customers")
        assert (row.partname, row.type, row.state) == (None, "MINOR", "ready for cleaning")
    assert _reads(home) == before


DEFERRING_DAG = '''
from datetime import datetime
from airflow.sdk import DAG
from airflow_acid.sensors.threshold import AcidDeltaCountSensor
with DAG("acid_deferral_check", schedule=None, start_date=datetime(2024, 1, 1)):
    AcidDeltaCountSensor(task_id="wait_deltas", table="db.t", threshold=1, deferrable=True, poke_interval=1,
                         timeout=300)
'''


@pytest.mark.slow
def test_deferrable_sensor_through_airflow(tmp_path):
    """The trigger resolves the acid connection and polls inside Airflow until a write crosses the threshold."""
    import time

    home, dags = tmp_path / "acid", tmp_path / "dags"
    dags.mkdir()
    home.mkdir()
    (dags / "acid_deferral_check.py").write_text(DEFERRING_DAG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "AIRFLOW__ACID__"))}
    env.update({"AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "false", "AIRFLOW_ACID_HOME": str(home),
                "AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT": "0"})
    _run(env, "airflow", "db", "migrate")
    wh = AcidWarehouse(f"sqlite:///{home / 'metastore.db'}", home / "warehouse")
    wh.create_database("db")
    wh.create_table("db.t", [("id", "int")])
    with wh.transaction() as txn:
        txn.insert("db.t", [(1,)])

    log_path = tmp_path / "dags-test.log"
    with open(log_path, "w") as out:
        process = subprocess.Popen([str(BIN / "airflow"), "dags", "test", "acid_deferral_check"], env=env,
                                   stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 240
            while "running trigger in line" not in log_path.read_text() and time.monotonic() < deadline:
                assert process.poll() is None, log_path.read_text()[-3000:]
                time.sleep(0.2)
            time.sleep(1.5)  # the trigger has polled at least once and found 1 delta
            with wh.transaction() as txn:
                txn.insert("db.t", [(2,)])
            assert process.wait(timeout=240) == 0, log_path.read_text()[-3000:]
        finally:
            if process.poll() is None:
                process.kill()
            wh.close()
    log = log_path.read_text()
    assert "running trigger in line" in log and "1 current delta(s) ≤ sensor threshold=1" in log
    assert "2 current delta(s) > sensor threshold=1" in log
