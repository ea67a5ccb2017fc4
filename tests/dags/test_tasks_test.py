"""The README's `airflow tasks test` commands, run as a user would from a shell on a fresh AIRFLOW_HOME with the
embedded SQLite metastore: each succeeds and has its documented effect."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_acid.client.warehouse import AcidWarehouse

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(BIN / args[0]), *args[1:]], env=env, capture_output=True, text=True, timeout=300)
    if ok:
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return result


@pytest.mark.slow
def test_readme_airflow_tasks_test_commands(tmp_path):
    home = tmp_path / "acid"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "AIRFLOW__ACID__"))}
    env.update({"AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "false", "AIRFLOW_ACID_HOME": str(home),
                "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    url = f"sqlite:///{home / 'metastore.db'}"
    _run(env, "airflow", "db", "migrate")
    _run(env, "airflow-acid", "demo", "--warehouse", str(home / "warehouse"), "--metastore-url", url)

    # The README's commands, verbatim.
    request = _run(env, "airflow", "tasks", "test", "acid_manual_compaction", "request",
                   "-t", '{"database":"demo","table":"customers","type":"minor"}')
    assert "Invalid input for param" not in request.stdout + request.stderr
    with AcidWarehouse(url, home / "warehouse", init=False) as wh:
        [row] = wh.metastore.compactions.show_compactions(db="demo", table="customers")
    assert (row.partname, row.type, row.state) == (None, "MINOR", "initiated")  # queued for acid_compaction

    # (acid_compaction initiator, acid_cleanup clean, acid_housekeeping housekeeping without -t: see
    # test_end_to_end.test_airflow_tasks_test_on_a_fresh_home_uses_the_embedded_metastore)
    clean = _run(env, "airflow", "tasks", "test", "acid_cleanup", "clean", "-t", '{"dry_run": true}')
    assert "Invalid input for param" not in clean.stdout + clean.stderr

    # A missing table is refused by the task, naming the param, and queues nothing (Airflow 3.3's `airflow tasks
    # test` logs a failed task but exits 0, so the log is what tells; `airflow dags test` exits 1, see below).
    missing = _run(env, "airflow", "tasks", "test", "acid_manual_compaction", "request",
                   "-t", json.dumps({"database": "demo"}), ok=False)
    assert "params 'database' and 'table' are required" in missing.stdout + missing.stderr
    with AcidWarehouse(url, home / "warehouse", init=False) as wh:
        assert len(wh.metastore.compactions.show_compactions()) == 1

    # The metrics task through Airflow's own task runner, Airflow configured for StatsD on a loopback socket.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(0.5)
        statsd = {**env, "AIRFLOW__METRICS__STATSD_ON": "True", "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
                  "AIRFLOW__METRICS__STATSD_PORT": str(sock.getsockname()[1]),
                  "AIRFLOW__ACID__METASTORE.DELTAMETRICS.DELTA.NUM.THRESHOLD": "1"}
        _run(statsd, "airflow", "tasks", "test", "acid_housekeeping", "metrics")
        lines = []
        while True:
            try:
                lines += sock.recv(65535).decode().splitlines()
            except TimeoutError:
                break
    assert "airflow.acid.compaction_queue_initiated:1|g" in lines  # the MINOR request above is still queued
    assert any(line.startswith("airflow.acid.compaction_num_active_deltas.demo.") for line in lines)


@pytest.mark.slow
def test_refused_manual_request_fails_the_run_with_a_note(tmp_path):
    """README "Reading the outcome": a MAJOR of a partition with one delta and no base is not queued (the Worker
    would refuse it); `airflow dags test` exits 1, the request task and the run are failed and the run's note says
    why; `airflow tasks test` exits 0 (Airflow's CLI) with the reason as the ERROR line. Queued anyway, the Worker
    refuses it and the compact task fails the run the same way."""
    import sqlite3

    home = tmp_path / "acid"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "AIRFLOW__ACID__"))}
    env.update({"AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "false", "AIRFLOW_ACID_HOME": str(home),
                "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    url = f"sqlite:///{home / 'metastore.db'}"
    _run(env, "airflow", "db", "migrate")
    _run(env, "airflow-acid", "demo", "--warehouse", str(home / "warehouse"), "--metastore-url", url)
    conf = {"database": "demo", "table": "sales", "partition": "ds=2024-01-02", "type": "major"}
    reason = "major compaction needs original files or more than one of base + current deltas"

    task = _run(env, "airflow", "tasks", "test", "acid_manual_compaction", "request", "-t", json.dumps(conf))
    assert task.returncode == 0  # Airflow 3.3's `tasks test` never reports the task's state in its exit code
    errors = [line for line in (task.stdout + task.stderr).splitlines() if "[error" in line and reason in line]
    assert errors and "not queued: the Worker would refuse this MAJOR compaction" in errors[0]

    def last_run() -> tuple[str, str | None, dict[str, str]]:
        """The newest acid_manual_compaction run: its state, note and task states."""
        with sqlite3.connect(tmp_path / "airflow" / "airflow.db") as db:
            run_id, state, note = db.execute(
                "SELECT dr.run_id, dr.state, n.content FROM dag_run dr LEFT JOIN dag_run_note n ON "
                "n.dag_run_id = dr.id WHERE dr.dag_id = 'acid_manual_compaction' ORDER BY dr.id DESC LIMIT 1"
            ).fetchone()
            tasks = dict(db.execute("SELECT task_id, state FROM task_instance WHERE run_id = ?", (run_id,)).fetchall())
        return state, note, tasks

    dag = _run(env, "airflow", "dags", "test", "acid_manual_compaction", "-c", json.dumps(conf), ok=False)
    assert dag.returncode == 1, (dag.stdout + dag.stderr)[-3000:]
    state, note, tasks = last_run()
    assert (state, tasks["request"]) == ("failed", "failed")
    assert note is not None and note.startswith("compaction of demo.sales/ds=2024-01-02 not queued") and reason in note
    with AcidWarehouse(url, home / "warehouse", init=False) as wh:
        assert wh.metastore.compactions.show_compactions(db="demo", table="sales") == []

    anyway = _run(env, "airflow", "dags", "test", "acid_manual_compaction", "-c",
                  json.dumps({**conf, "queue_anyway": True}), ok=False)
    assert anyway.returncode == 1, (anyway.stdout + anyway.stderr)[-3000:]
    state, note, tasks = last_run()
    assert (state, tasks["request"], tasks["compact"]) == ("failed", "success", "failed")
    assert note is not None and ": refused — " in note and reason in note
    with AcidWarehouse(url, home / "warehouse", init=False) as wh:
        [row] = wh.metastore.compactions.show_compactions(db="demo", table="sales")
    assert (row.state, row.initiatorid) == ("refused", "dag:dag_test")  # `dags test` triggers as user dag_test
