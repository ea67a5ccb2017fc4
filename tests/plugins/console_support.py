"""Helpers the UI plugin tests share: a private Airflow home with SimpleAuthManager users of known passwords, a
small warehouse for the console to show, and a real ``airflow api-server`` on it for the browser tests (started by
the ``airflow_server`` fixture of console_fixtures.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from airflow_acid.acid.codes import CompactionType, LockType, OperationType
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.metastore.runs import TaskIdentity
from airflow_acid.spark.runners import LocalRunner

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SERVER_START_S = int(os.environ.get("AIRFLOW_ACID_SERVER_START_S", "90"))
"""How long the api-server may take to answer (raise it on a loaded machine)."""
STEP_MS = 20_000
USERS = {"admin": "ADMIN", "viewer": "VIEWER"}
TASK = TaskIdentity("acid_compaction", "scheduled__2024-01-02T00:00:00+00:00", "compact", 0, 1)
"""The Airflow task instance that ran the scene's compaction."""
SPARK_APP_ID = "local-1704153600000"
SPARK_UI_URL = "http://spark-history.example:18080/history/{app_id}/jobs/"
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"


def auth_env(home: Path, passwords: dict[str, str]) -> dict[str, str]:
    """Airflow settings for a private home: its own SQLite database, SimpleAuthManager with ``USERS``."""
    password_file = home / "simple_auth_manager_passwords.json"
    password_file.write_text(json.dumps(passwords))
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r.lower()}" for u, r in USERS.items()),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(64),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }


def migrate_airflow_db(env: dict[str, str]) -> None:
    """``airflow db migrate`` in a subprocess (a fresh SQLite database takes a few seconds)."""
    result = subprocess.run([str(BIN / "airflow"), "db", "migrate"], env={**os.environ, **env}, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]


@dataclass
class Scene:
    """What :func:`build_scene` built: the warehouse and the ids of the rows the tests look for."""

    warehouse: AcidWarehouse
    compacted_id: int
    queued_id: int
    open_txn: int
    aborted_txn: int


def _insert(wh: AcidWarehouse, table: str, rows: list[tuple], partition: dict | None = None) -> None:
    with wh.transaction() as txn:
        txn.insert(table, rows, partition=partition)


def build_scene(metastore_url: str, location: Path) -> Scene:
    """Two tables in every state the console shows.

    ``default.sales`` (partitioned by ds): ds=2024-01-01 got three deltas, a MAJOR compaction (run in-process, as
    if by the Airflow task ``TASK`` and Spark application ``SPARK_APP_ID``) that waits for cleaning because a reader
    opened a transaction before it committed, then two new deltas on top of
    the base; ds=2024-01-02 has one delta and an aborted write. ``default.customers``: two deltas and a queued MAJOR
    compaction; the reader's transaction holds a shared-read lock on it.
    """
    wh = AcidWarehouse(metastore_url, location, conf=MetastoreConf(opentxn_timeout_ms=0), user="tester",
                       host="testhost")
    ms = wh.metastore
    wh.create_table("sales", [("id", "int"), ("amount", "int")], partition_by=[("ds", "string")])
    wh.create_table("customers", [("id", "int"), ("name", "string")])
    for i in range(3):
        _insert(wh, "sales", [(i, 10 * i), (i + 100, i)], {"ds": "2024-01-01"})
    _insert(wh, "sales", [(3, 30)], {"ds": "2024-01-02"})
    for i in range(2):
        _insert(wh, "customers", [(i, f"c{i}")])
    reader = ms.txns.open_txn(user="analyst", host="bi-host", agent_info="dashboard")
    ms.locks.lock([LockComponent("default", "customers", lock_type=LockType.SHARED_READ,
                                 operation=OperationType.SELECT)], txn_id=reader, user="analyst", host="bi-host")
    compacted = ms.compactions.enqueue("default", "sales", "ds=2024-01-01", CompactionType.MAJOR)
    outcome = Worker(ms, runner=LocalRunner(), worker_id="testhost-7", task=TASK).run_next()
    assert (outcome.compaction_id, outcome.status) == (compacted.id, WorkerStatus.COMPACTED), outcome.message
    # the in-process runner is no Spark application: give the run the id a Spark job records
    ms.runs.record(compacted.id, dataclasses.replace(ms.runs.get(compacted.id), spark_app_id=SPARK_APP_ID))
    for i in range(2):
        _insert(wh, "sales", [(i + 200, i)], {"ds": "2024-01-01"})
    aborted = wh.transaction()
    aborted.insert("sales", [(99, 0)], partition={"ds": "2024-01-02"})
    aborted.abort()
    queued = ms.compactions.enqueue("default", "customers", None, CompactionType.MAJOR)
    return Scene(wh, compacted.id, queued.id, reader, aborted.txn_id)


def acid_connection(metastore_url: str, location: Path) -> str:
    """``AIRFLOW_CONN_ACID_METASTORE_DEFAULT`` for a metastore URL and warehouse folder."""
    return json.dumps({"conn_type": "acid_metastore", "host": metastore_url, "extra": {"warehouse": str(location)}})


def require_chromium() -> None:
    """Skip (fail under ``AIRFLOW_ACID_REQUIRE_BROWSER=1``, as CI sets it) when Debian's Chromium is missing."""
    if CHROMIUM.exists():
        return
    message = f"{CHROMIUM} is missing (apt-get install chromium)"
    if os.environ.get("AIRFLOW_ACID_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(base: str, server: subprocess.Popen, log: Path) -> None:
    """Poll the API server's health endpoint until it answers (fails with the server's log otherwise)."""
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"airflow api-server exited with {server.returncode}:\n{log.read_text()[-5000:]}")
        try:
            if httpx.get(f"{base}/api/v2/monitor/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"airflow api-server did not answer within {SERVER_START_S} s:\n{log.read_text()[-5000:]}")


class AirflowServer(tuple):
    """What the ``airflow_server`` fixture yields: unpacks as (base URL, admin password, log file); ``env`` is the
    server's environment (for ``airflow`` commands on the same Airflow database) and ``metastore`` the URL of the
    ACID metastore it shows."""

    env: dict[str, str]
    metastore: str

    def __new__(cls, base: str, password: str, log: Path, env: dict[str, str], metastore: str) -> AirflowServer:
        server = super().__new__(cls, (base, password, log))
        server.env = env
        server.metastore = metastore
        return server

    @property
    def base(self) -> str:
        return self[0]

    @property
    def password(self) -> str:
        return self[1]

    @property
    def log(self) -> Path:
        return self[2]


@contextmanager
def running_api_server(folder: Path) -> Iterator[AirflowServer]:
    """A running ``airflow api-server`` (its own process group, killed at the end) on a warehouse built by
    :func:`build_scene` in ``folder``, with the repository's DAGs serialized into its database."""
    home, password = folder / "airflow", "acid-admin-pw"
    home.mkdir()
    metastore = f"sqlite:///{folder / 'metastore.db'}"
    build_scene(metastore, folder / "warehouse").warehouse.close()
    port = free_port()
    env = {**os.environ, **auth_env(home, {"admin": password, "viewer": "acid-viewer-pw"}),
           "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"), "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
           "AIRFLOW_CONN_ACID_METASTORE_DEFAULT": acid_connection(metastore, folder / "warehouse"),
           "AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT": "0", "AIRFLOW__ACID__SPARK_UI_URL": SPARK_UI_URL,
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    migrate_airflow_db(env)
    # the acid_* DAGs must be in the database for Airflow's REST API to start them (no dag-processor here)
    subprocess.run([str(BIN / "airflow"), "dags", "reserialize"], env=env, capture_output=True, check=True, timeout=300)
    log = folder / "api-server.log"
    with log.open("w") as out:
        server = subprocess.Popen([str(BIN / "airflow"), "api-server", "--host", "127.0.0.1", "--port", str(port),
                                   "--workers", "1"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(base, server, log)
        yield AirflowServer(base, password, log, env, metastore)
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(server.pid, signal.SIGKILL)


def launch_chromium(playwright):
    """Debian's headless Chromium through Playwright (``require_chromium`` first)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])


def log_in(page, base: str, user: str, password: str, start: str = "/acid/") -> None:
    """Open ``start`` anonymously, sign in on Airflow's login page and come back to it."""
    page.goto(f"{base}{start}")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}{start}**")
