"""Fixtures for the UI plugin: real Airflow authentication (a migrated Airflow database, SimpleAuthManager with an
admin and a viewer whose passwords are known, tokens from ``POST /auth/token``), the console mounted at ``/acid`` as
the API server mounts it, and a small warehouse on each metastore backend for it to show; for the browser tests a
real ``airflow api-server`` (``airflow_server``). A plugin of tests/conftest.py (``pytest_plugins``): the console and
reliability tests use them."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import pytest

from tests.plugins.console_support import (
    SPARK_UI_URL,
    USERS,
    Scene,
    acid_connection,
    auth_env,
    build_scene,
    migrate_airflow_db,
    running_api_server,
)


# Module scope: the Airflow settings below must not leak into other test folders of the same run.
@pytest.fixture(scope="module")
def passwords() -> dict[str, str]:
    return {user: secrets.token_urlsafe(12) for user in USERS}


@pytest.fixture(scope="module")
def airflow_auth(tmp_path_factory, passwords):
    """This process's Airflow ORM and auth manager on a private migrated database for the module (restored after)."""
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


@pytest.fixture(scope="module")
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


@pytest.fixture(scope="module")
def module_clients(acid_host, passwords) -> Clients:
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
def clients(module_clients, acid_host) -> Clients:
    yield module_clients
    close_console_warehouses(acid_host)


@pytest.fixture
def scene(empty_db_url, tmp_path, monkeypatch, acid_host) -> Scene:
    """:func:`build_scene` on each backend, with ``acid_metastore_default`` pointing at it."""
    location = tmp_path / "warehouse"
    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", acid_connection(empty_db_url, location))
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT", "0")
    monkeypatch.setenv("AIRFLOW__ACID__SPARK_UI_URL", SPARK_UI_URL)
    built = build_scene(empty_db_url, location)
    yield built
    close_console_warehouses(acid_host)
    built.warehouse.close()


@pytest.fixture(scope="module")
def airflow_server(tmp_path_factory):
    """A running ``airflow api-server`` on a warehouse built by :func:`build_scene`, one per test module (start-ups
    are slow); yields an :class:`~tests.plugins.console_support.AirflowServer`: (base URL, admin password, log
    file), plus its ``env`` and ``metastore`` URL."""
    with running_api_server(tmp_path_factory.mktemp("airflow-server")) as server:
        yield server
