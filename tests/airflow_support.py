"""Fixtures of the Airflow adapter tests (hooks, operators, sensors, triggers, DAGs): a SQLite warehouse that
``acid_metastore_default`` points at (AIRFLOW_CONN_*). A plugin of tests/conftest.py (``pytest_plugins``)."""

from __future__ import annotations

import json

import pytest

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.conf import MetastoreConf

# Commits are visible to the Initiator at once (no open-transaction window) so tests can look right after writing.
CONF = MetastoreConf(opentxn_timeout_ms=0)


@pytest.fixture
def acid_wh(monkeypatch, metastore_url, tmp_path):
    """An AcidWarehouse on a migrated SQLite metastore; the default acid connection and [acid] settings point at it."""
    location = tmp_path / "wh"
    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", json.dumps(
        {"conn_type": "acid_metastore", "host": metastore_url, "extra": {"warehouse": str(location)}}))
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT", "0")
    wh = AcidWarehouse(metastore_url, location, conf=CONF, user="tester", host="testhost", init=False)
    yield wh
    wh.close()


@pytest.fixture
def table_t(acid_wh):
    """``acid_wh`` holding an empty table ``db.t`` (one int column)."""
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int")])
    return acid_wh


async def first_event(trigger):
    """The first event a trigger's ``run()`` yields."""
    async for event in trigger.run():
        return event


def insert_rows(wh: AcidWarehouse, table: str, n_txns: int, partition: dict | None = None) -> None:
    """``n_txns`` committed one-row inserts: one delta each."""
    for i in range(n_txns):
        with wh.transaction() as txn:
            txn.insert(table, [(i,)], partition=partition)
