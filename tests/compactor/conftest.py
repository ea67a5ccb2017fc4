"""Fixtures of the compactor tests: warehouses on a FRESH metastore per test (the Initiator, Worker and Cleaner
tests look at the whole queue and every open transaction). ``wh`` here overrides the module-wide ``wh`` of
tests/services/support.py that the other folders share."""

from __future__ import annotations

import pytest

from tests.compactor.worker_support import make_warehouse


@pytest.fixture
def wh(empty_db_url, tmp_path):
    """A warehouse on a fresh metastore on each backend (SQLite, PostgreSQL, MariaDB)."""
    w = make_warehouse(empty_db_url, tmp_path / "wh")
    yield w
    w.metastore.close()


@pytest.fixture
def sqlite_wh(tmp_path):
    """A warehouse on a fresh SQLite metastore (tests of one code path that does not depend on the backend)."""
    w = make_warehouse(f"sqlite:///{tmp_path / 'metastore.db'}", tmp_path / "wh")
    yield w
    w.metastore.close()
