"""The provider on the oldest and the newest declared Airflow (tests/compat/combos.py), each in its own cached
environment: provider, plugin, the DAGs, the console, then ``airflow dags test acid_compaction`` and
``acid_cleanup`` on a tiny warehouse — compaction runs on the environment's own Spark (3.5 on the oldest)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest

from airflow_acid import AcidWarehouse
from tests.compat.combos import NEWEST_AIRFLOW, OLDEST_AIRFLOW
from tests.compat.venvs import REPO, Combo, compat_venv

pytestmark = pytest.mark.slow

DAG_IDS = ["acid_approved_action", "acid_cleanup", "acid_compaction", "acid_housekeeping", "acid_manual_compaction"]
TABLES = ["emp", "sales", "events"]
ABSENT_FEATURE_LINES = [
    "this Airflow has no exception-aware retry policy (Airflow 3.3+)",  # operators/retry.py
    "no task state store (Airflow before 3.3, or not run as a task)",  # operators/compaction.py
]
"""What a compaction task logs on an Airflow without the feature, and never where it has it."""


def _tiny_warehouse(acid: Path) -> dict[str, list[dict]]:
    """Three tables with three deltas each (full ACID with a delete, partitioned, insert-only); their rows."""
    with AcidWarehouse(f"sqlite:///{acid}/metastore.db", str(acid / "warehouse")) as wh:
        wh.create_table("emp", [("id", "int"), ("name", "string")])
        wh.create_table("sales", [("id", "int"), ("amount", "int")], partition_by=[("ds", "string")])
        wh.create_table("events", [("id", "int")], transactional_properties="insert_only")
        for i in range(3):
            with wh.transaction() as txn:
                txn.insert("emp", [(i, f"n{i}")])
                txn.insert("sales", [(i, 10 * i)], partition={"ds": "2024-01-01"})
                txn.insert("events", [(i,)])
        with wh.transaction() as txn:
            txn.delete("emp", where=pc.field("id") == 1)
        return {t: sorted(wh.read(t).to_pylist(), key=str) for t in TABLES}


def _dirs(warehouse: Path) -> list[str]:
    return sorted(str(p.relative_to(warehouse)) for p in warehouse.rglob("*") if p.is_dir()
                  and p.name.startswith(("base_", "delta_", "delete_delta_")))


def _run(args: list[str], env: dict[str, str], log: Path, timeout: float) -> float:
    started = time.monotonic()
    with open(log, "wb") as out:
        done = subprocess.run(args, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
    text = log.read_text(errors="replace")
    assert done.returncode == 0, f"{' '.join(args[1:])} failed:\n{text[-5000:]}"
    return time.monotonic() - started


@pytest.mark.parametrize("combo", [OLDEST_AIRFLOW, NEWEST_AIRFLOW], ids=lambda c: c.name)
def test_provider_dags_console_and_compaction(combo: Combo, tmp_path, record_property):
    timings: dict[str, float] = {}
    started = time.monotonic()
    venv = compat_venv(combo)
    timings["venv"] = time.monotonic() - started
    bin_dir = venv / "bin"
    acid, home = tmp_path / "acid", tmp_path / "airflow"
    acid.mkdir()
    home.mkdir()
    before = _tiny_warehouse(acid)
    own = ("AIRFLOW", "PYSPARK", "SPARK_", "VIRTUAL_ENV", "PYTHON")  # the suite's settings stay out
    env = {k: v for k, v in os.environ.items() if not k.startswith(own)}
    env.update({"AIRFLOW_HOME": str(home), "AIRFLOW_ACID_HOME": str(acid), "PATH": f"{bin_dir}:{env.get('PATH', '')}",
                "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"), "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True", "SPARK_LOCAL_IP": "127.0.0.1",
                # every table qualifies; the three compactions run as one Spark application (saves two JVM starts)
                "AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD": "1", "AIRFLOW__ACID__COMPACTION_BATCH_SIZE": "3"})
    airflow = [str(bin_dir / "airflow")]

    timings["db migrate"] = _run([*airflow, "db", "migrate"], env, tmp_path / "migrate.log", 300)
    smoke_log = tmp_path / "smoke.log"
    timings["provider, plugin, DAGs, console"] = _run(
        [str(bin_dir / "python"), str(Path(__file__).with_name("airflow_smoke.py")), str(REPO / "dags")],
        env, smoke_log, 300)
    line = next(ln for ln in smoke_log.read_text().splitlines() if ln.startswith("SMOKE "))
    found = json.loads(line.removeprefix("SMOKE "))
    assert found["provider"], found
    assert found["plugin"] == ["airflow_acid"] and not found["plugin_errors"], found
    assert found["dags"] == DAG_IDS and not found["dag_errors"], found["dag_errors"]
    assert found["console"] == 200, found  # the console answers a login (the suite tests who may see what)
    assert found["features_3_1"] == {"react_apps": True, "hitl": True, "deadline_alerts": True}, found

    for dag in ("acid_compaction", "acid_cleanup"):
        log = tmp_path / f"{dag}.log"
        timings[f"dags test {dag}"] = _run([*airflow, "dags", "test", dag], env, log, 600)
        assert "state=success" in log.read_text(errors="replace").split("DagRun Finished")[-1], log.read_text()[-3000:]

    # Airflow 3.3's exception-aware retry policy and task state store are used where present; on older releases a
    # compaction task says, once, what it does without them (and the DAGs parsed above with no import error)
    compaction_log = (tmp_path / "acid_compaction.log").read_text(errors="replace")
    without = [line for line in ABSENT_FEATURE_LINES if line in compaction_log]
    newer = tuple(int(p) for p in found["airflow"].split(".")[:2]) >= (3, 3)
    assert without == ([] if newer else ABSENT_FEATURE_LINES), (found["airflow"], without)

    # every table compacted to a base (the Initiator's threshold is one delta), the deltas cleaned, the rows kept
    dirs = _dirs(acid / "warehouse")
    assert [d.rsplit("/", 1)[0] for d in dirs] == ["emp", "events", "sales/ds=2024-01-01"], dirs
    assert all(d.rsplit("/", 1)[1].startswith("base_") for d in dirs), dirs
    with AcidWarehouse(f"sqlite:///{acid}/metastore.db", str(acid / "warehouse"), init=False) as wh:
        assert {t: sorted(wh.read(t).to_pylist(), key=str) for t in TABLES} == before

    # PySpark reads of the compacted table with the environment's Spark (after the Cleaner: the data source's read
    # transaction stays open until hive.txn.timeout and would keep the deltas): the plain helper and the data
    # source's message on Spark 3.5; the data source found without register() on Spark 4 (the checkout on
    # PYTHONPATH: Spark lists top-level modules with pkgutil, which does not see an editable install's packages; a
    # wheel puts pyspark_hive_acid there)
    mode = "plain" if found["pyspark"].startswith("3.") else "auto"
    reads_env = {**env, "PYSPARK_PYTHON": str(bin_dir / "python"), "PYSPARK_DRIVER_PYTHON": str(bin_dir / "python")}
    if mode == "auto":
        reads_env["PYTHONPATH"] = str(REPO)
    reads_log = tmp_path / "reads.log"
    timings[f"PySpark read ({mode})"] = _run(
        [str(bin_dir / "python"), str(Path(__file__).with_name("spark_reads.py")), mode], reads_env, reads_log, 300)
    reads = json.loads(next(ln for ln in reads_log.read_text().splitlines() if ln.startswith("READS "))[6:])
    assert reads["ids"] == [0, 2], reads
    if mode == "plain":
        assert "needs Spark 4.0 or later" in reads["data_source_import"], reads
    else:
        assert reads["data_source_import"] == "ok", reads

    timings["total"] = time.monotonic() - started
    record_property("timings", {k: round(v, 1) for k, v in timings.items()})
    print(f"{combo.name} ({found['python']}, Airflow {found['airflow']}, pyspark {found['pyspark']}):",
          ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
