"""Fixtures for the client API tests: a migrated SQLite metastore copied per test (migrating once per session
keeps the suite fast), and warehouses on it. Import the fixtures into a test module to use them."""

from __future__ import annotations

import shutil

import pytest

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf

EMPLOYEE = [("id", "int"), ("name", "string"), ("salary", "int")]
SEED_ROWS = [(1, "Jerry", 5000), (2, "Tom", 8000), (3, "Kate", 6000)]


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory):
    """A SQLite metastore file at the latest migration, made once per session."""
    path = tmp_path_factory.mktemp("template") / "metastore.db"
    with Metastore(f"sqlite:///{path}") as ms:
        ms.init()
    return path


@pytest.fixture
def metastore_url(migrated_sqlite, tmp_path) -> str:
    path = tmp_path / "metastore.db"
    shutil.copy(migrated_sqlite, path)
    return f"sqlite:///{path}"


def make_warehouse(url: str, location, conf: MetastoreConf | None = None, **kwargs) -> AcidWarehouse:
    return AcidWarehouse(url, location, conf=conf, init=False, **kwargs)


@pytest.fixture
def warehouse(metastore_url, tmp_path):
    wh = make_warehouse(metastore_url, tmp_path / "wh")
    yield wh
    wh.close()


def tree(root) -> list[str]:
    """Every file below ``root``, relative, sorted (``dir/file``)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
