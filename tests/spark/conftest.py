"""Spark fixtures: the environment spark-submit needs, and a standalone master + worker (the shared
local[2] SparkSession is the ``spark`` fixture of tests/conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def spark_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def standalone_master(tmp_path_factory):
    """A Spark standalone master and one worker (2 cores) started from the pyspark wheel on 127.0.0.1."""
    work = tmp_path_factory.mktemp("standalone")
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = spark_env()
    procs = []
    try:
        with open(work / "master.log", "wb") as log:
            procs.append(subprocess.Popen(
                [str(BIN / "spark-class"), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(ui)], stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True))
        url = f"spark://127.0.0.1:{port}"
        with open(work / "worker.log", "wb") as log:
            procs.append(subprocess.Popen(
                [str(BIN / "spark-class"), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--cores", "2", "--memory", "2g", "--webui-port", str(worker_ui), "--work-dir", str(work / "w")],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as resp:
                    state = json.load(resp)
                if any(w.get("state") == "ALIVE" for w in state.get("workers", [])):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                logs = "\n".join((work / f).read_text(errors="replace")[-2000:] for f in ("master.log", "worker.log"))
                pytest.fail(f"standalone master/worker did not come up within 90 s:\n{logs}")
            time.sleep(1)
        yield url
    finally:
        for p in reversed(procs):
            _stop(p)
