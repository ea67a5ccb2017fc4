"""Fixtures for the UI plugin: real Airflow authentication (a migrated Airflow database, SimpleAuthManager with an
admin and a viewer whose passwords are known, tokens from ``POST /auth/token``), the console mounted at ``/acid`` as
the API server mounts it, and a small warehouse on each metastore backend for it to show."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_acid.metastore.codes import CompactionType, LockType, OperationType
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.warehouse import AcidWarehouse

BIN = Path(sys.executable).parent
USERS = {"admin": "ADMIN", "viewer": "VIEWER"}
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


@pytest.fixture(scope="session")
def passwords() -> dict[str, str]:
    return {user: secrets.token_urlsafe(12) for user in USERS}


@pytest.fixture(scope="session")
def airflow_auth(tmp_path_factory, passwords):
    """This process's Airflow ORM and auth manager on a private migrated database for the session (restored after)."""
    from airflow import settings
    from airflow.api_fastapi import app as api_app

    env = auth_env(tmp_path_factory.mktemp("airflow"), passwords)
    migrate_airflow_db(env)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        settings.configure_vars()
        settings.reconfigure_orm()
        api_app.purge_cached_app()
        yield env
    api_app.purge_cached_app()
    settings.configure_vars()
    settings.reconfigure_orm()


@pytest.fixture(scope="session")
def acid_host(airflow_auth):
    """What the API server does with the plugin: the console at ``/acid`` beside the auth manager's ``/auth``."""
    from airflow.api_fastapi.app import init_auth_manager
    from fastapi import FastAPI

    from airflow_acid.plugins.app import create_app

    host, console = FastAPI(), create_app()
    host.mount("/acid", console)
    init_auth_manager(host)
    yield host
    console.state.warehouses.close()


@dataclass
class Clients:
    """TestClients on the host app: ``anonymous``, and ``admin``/``viewer`` with their bearer tokens."""

    anonymous: object
    admin: object
    viewer: object


@pytest.fixture(scope="session")
def session_clients(acid_host, passwords) -> Clients:
    from fastapi.testclient import TestClient

    def login(user: str) -> TestClient:
        client = TestClient(acid_host)
        answer = client.post("/auth/token", json={"username": user, "password": passwords[user]})
        assert answer.status_code == 201, answer.text
        client.headers["Authorization"] = f"Bearer {answer.json()['access_token']}"
        return client

    return Clients(TestClient(acid_host), login("admin"), login("viewer"))


def close_console_warehouses(host) -> None:
    """Dispose the engines the console opened (before a test database is dropped)."""
    for route in host.routes:
        if getattr(route, "path", None) == "/acid":
            route.app.state.warehouses.close()


@pytest.fixture
def clients(session_clients, acid_host) -> Clients:
    yield session_clients
    close_console_warehouses(acid_host)


@dataclass
class Scene:
    """What :func:`scene` built: table names, partitions, and the ids of the rows it created."""

    warehouse: AcidWarehouse
    queued_id: int
    open_txn: int
    aborted_txn: int


@pytest.fixture
def scene(empty_db_url, tmp_path, monkeypatch, acid_host) -> Scene:
    """A warehouse on each backend that ``acid_metastore_default`` points at: ``default.sales`` (partitioned,
    three deltas in ds=2024-01-01, one in ds=2024-01-02, an aborted write), ``default.customers`` (two deltas, a
    queued MAJOR compaction), an open transaction holding a shared-read lock on customers."""
    location = tmp_path / "warehouse"
    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", json.dumps(
        {"conn_type": "acid_metastore", "host": empty_db_url, "extra": {"warehouse": str(location)}}))
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT", "0")
    wh = AcidWarehouse(empty_db_url, location, conf=MetastoreConf(opentxn_timeout_ms=0), user="tester",
                       host="testhost")
    wh.create_table("sales", [("id", "int"), ("amount", "int")], partition_by=[("ds", "string")])
    wh.create_table("customers", [("id", "int"), ("name", "string")])
    for i, ds in enumerate(["2024-01-01"] * 3 + ["2024-01-02"]):
        with wh.transaction() as txn:
            txn.insert("sales", [(i, 10 * i)], partition={"ds": ds})
    for i in range(2):
        with wh.transaction() as txn:
            txn.insert("customers", [(i, f"c{i}")])
    aborted = wh.transaction()
    aborted.insert("sales", [(99, 0)], partition={"ds": "2024-01-02"})
    aborted.abort()
    ms = wh.metastore
    queued = ms.compactions.enqueue("default", "customers", None, CompactionType.MAJOR)
    reader = ms.txns.open_txn(user="analyst", host="bi-host", agent_info="dashboard")
    ms.locks.lock([LockComponent("default", "customers", lock_type=LockType.SHARED_READ,
                                 operation=OperationType.SELECT)], txn_id=reader, user="analyst", host="bi-host")
    yield Scene(wh, queued.id, reader, aborted.txn_id)
    close_console_warehouses(acid_host)
    wh.close()
