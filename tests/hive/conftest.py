"""Fixtures of the Hive-metastore tests: a fresh database per Hive schema script (4.0.0 / 4.1.0 / 4.2.0 × PostgreSQL,
MariaDB), loaded the way schematool loads it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.backends import SERVER_BACKENDS, backends, server_database
from tests.external_fixtures import external_fixture
from tests.hive import hms

MATRIX = [pytest.param((backend, version), marks=pytest.mark.servers, id=f"{backend}-{version}")
          for backend in SERVER_BACKENDS for version in hms.VERSIONS]


def load_hive_database(backend: str, version: str) -> tuple[str, callable]:
    script = external_fixture(hms.script_name(backend, version), f"Hive's {version} schema script for {backend}")
    url, drop = server_database(backend)
    try:
        hms.load_schema(url, script)
    except BaseException:
        drop()
        raise
    return url, drop


@pytest.fixture(params=MATRIX)
def hive_url(request) -> str:
    """A fresh database holding exactly what Hive's schematool creates for one version and engine."""
    url, drop = load_hive_database(*request.param)
    try:
        yield url
    finally:
        drop()


@pytest.fixture(scope="module", params=backends(*SERVER_BACKENDS))
def hive_42_url(request) -> str:
    """One Hive 4.2.0 metastore database per engine, shared by a module (tests use their own database names)."""
    url, drop = load_hive_database(request.param, "4.2.0")
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def hive_engine(hive_url):
    engine = sa.create_engine(hive_url)
    yield engine
    engine.dispose()
