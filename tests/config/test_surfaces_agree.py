"""The CLI and the DAGs read the same [acid] section. Reproduced before: with hive.compactor.delta.pct.threshold = 0.9
in [acid], `airflow-acid plan` said "would queue MAJOR (threshold=0.1)" while the DAG's dry run said "not needed
(0.9)": the CLI read only its own AIRFLOW_ACID__* variables, never airflow.cfg nor AIRFLOW__ACID__*."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from airflow_acid.cli.commands import main
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.conf import MetastoreConf
from tests.compactor.initiator_support import synthetic_write

DAGS = Path(__file__).resolve().parents[2] / "dags"
THRESHOLD = "hive.compactor.delta.pct.threshold"
# Run the compaction DAG's dry_run task in a fresh interpreter, so Airflow loads the airflow.cfg of its AIRFLOW_HOME.
DAG_DRY_RUN = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
dag = DagBag(dag_folder=sys.argv[1]).dags["acid_compaction"]
print("RESULT " + json.dumps(dag.get_task("dry_run").python_callable(params={"dry_run": True})))
"""


@pytest.fixture
def ratio_table(metastore_url, tmp_path, monkeypatch):
    """db.t whose delta is 0.2 of its base: past the default threshold (0.1), not past 0.9. The acid connection
    points at its metastore; commits are visible to the Initiator at once."""
    root = tmp_path / "wh"
    wh = AcidWarehouse(metastore_url, root, conf=MetastoreConf(opentxn_timeout_ms=0), init=False)
    wh.create_database("db")
    info = wh.create_table("db.t", [("id", "int")])
    synthetic_write(wh.metastore, info.location, "db", "t", None, kind="base", size=10_000)
    synthetic_write(wh.metastore, info.location, "db", "t", None, size=2_000)
    wh.close()
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    monkeypatch.delenv("AIRFLOW_CONFIG", raising=False)
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT", "0")
    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", json.dumps(
        {"conn_type": "acid_metastore", "host": metastore_url, "extra": {"warehouse": str(root)}}))
    return metastore_url, root


def decision(result: dict) -> tuple[bool, str]:
    """Whether db.t would be queued, and the reason given."""
    [row] = [r for r in result["would_queue"] + result["declined"] if r["table"] == "db.t"]
    return row in result["would_queue"], row["reason"]


def cli_plan(url: str, root: Path) -> tuple[bool, str]:
    shown = CliRunner().invoke(main, ["plan", "--json", "--metastore-url", url, "--warehouse", str(root)])
    assert shown.exit_code == 0, shown.output
    return decision(json.loads(shown.stdout))


def test_cli_plan_and_dag_dry_run_agree_on_a_threshold_in_the_environment(ratio_table, monkeypatch, tmp_path):
    from airflow.dag_processing.dagbag import DagBag

    url, root = ratio_table
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "no-airflow-cfg"))  # the CLI finds no airflow.cfg
    dry_run = DagBag(dag_folder=str(DAGS / "acid_compaction.py")).dags["acid_compaction"].get_task("dry_run")
    assert cli_plan(url, root)[0] and decision(dry_run.python_callable(params={"dry_run": True}))[0]  # default 0.1
    monkeypatch.setenv(f"AIRFLOW__ACID__{THRESHOLD.upper()}", "0.9")
    from_cli = cli_plan(url, root)
    assert from_cli == decision(dry_run.python_callable(params={"dry_run": True}))
    assert not from_cli[0] and f"{THRESHOLD}=0.9" in from_cli[1]


@pytest.mark.slow
def test_cli_plan_and_dag_dry_run_agree_on_a_threshold_in_airflow_cfg(ratio_table, monkeypatch, tmp_path):
    url, root = ratio_table
    home = tmp_path / "airflow"
    home.mkdir()
    (home / "airflow.cfg").write_text(f"[core]\ndags_folder = {DAGS}\nload_examples = False\n\n[acid]\n"
                                      f"{THRESHOLD} = 0.9\n")
    monkeypatch.setenv("AIRFLOW_HOME", str(home))
    from_cli = cli_plan(url, root)
    assert not from_cli[0] and f"{THRESHOLD}=0.9" in from_cli[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__ACID__HIVE.COMPACTOR")}
    ran = subprocess.run([sys.executable, "-c", DAG_DRY_RUN, str(DAGS / "acid_compaction.py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    [line] = [line for line in ran.stdout.splitlines() if line.startswith("RESULT ")]
    assert decision(json.loads(line[len("RESULT "):])) == from_cli
