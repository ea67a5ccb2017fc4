"""Metastore fixtures: every test that uses them runs on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import pytest

from airflow_acid.metastore.cleaning import CleaningStore
from airflow_acid.metastore.compactions import CompactionQueue
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database
from airflow_acid.metastore.init import init_schema
from airflow_acid.metastore.initiator_store import InitiatorStore
from airflow_acid.metastore.txns import TxnStore


@pytest.fixture
def db(empty_db_url) -> Database:
    """A migrated, seeded metastore database on each backend."""
    database = Database(empty_db_url)
    init_schema(database)
    yield database
    database.dispose()


@pytest.fixture
def conf() -> MetastoreConf:
    """Settings whose commits are visible at once (no open-transaction window)."""
    return MetastoreConf(opentxn_timeout_ms=0)


@pytest.fixture
def queue(db, conf) -> CompactionQueue:
    return CompactionQueue(db, conf)


@pytest.fixture
def txns(db, conf) -> TxnStore:
    return TxnStore(db, conf)


@pytest.fixture
def cleaning(db, conf) -> CleaningStore:
    return CleaningStore(db, conf)


@pytest.fixture
def initiator(db, conf) -> InitiatorStore:
    return InitiatorStore(db, conf)
