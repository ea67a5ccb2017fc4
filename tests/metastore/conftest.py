"""Metastore fixtures: every test that uses them runs on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import pytest

from airflow_acid.metastore.db import Database
from airflow_acid.metastore.init import init_schema


@pytest.fixture
def db(empty_db_url) -> Database:
    """A migrated, seeded metastore database on each backend."""
    database = Database(empty_db_url)
    init_schema(database)
    yield database
    database.dispose()
