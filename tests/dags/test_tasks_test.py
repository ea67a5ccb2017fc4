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

    # A missing table is refused by the task, naming the param, and queues nothing (`airflow tasks test` logs a
    # failed task but exits 0, so the log is what tells).
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
