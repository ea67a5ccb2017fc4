"""Shared fixtures of the services, statements, client and CLI tests: ONE migrated metastore per backend and test
module (tests use their own table names), a warehouse on it, and small table histories. A plugin of tests/conftest.py
(``pytest_plugins``)."""

from __future__ import annotations

import itertools
import shutil

import pyarrow.compute as pc
import pytest
import sqlalchemy as sa

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.schema import DBS, TABLE_PARAMS, TBLS
from tests.backends import BACKENDS, server_database

# No open-txn timeout window: a committed compaction is cleanable as soon as its readers are gone.
CONF = MetastoreConf(opentxn_timeout_ms=0)
COLUMNS = [("id", "int"), ("name", "string")]
_names = itertools.count(1)


@pytest.fixture(scope="module", params=BACKENDS)
def module_url(request, migrated_sqlite, tmp_path_factory) -> str:
    """A migrated metastore on each backend, shared by the tests of one module."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("ms") / "metastore.db"
        shutil.copy(migrated_sqlite, path)
        yield f"sqlite:///{path}"
        return
    url, drop = server_database(request.param)
    try:
        with Metastore(url) as ms:
            ms.init()
        yield url
    finally:
        drop()


@pytest.fixture(scope="module")
def module_root(module_url, tmp_path_factory):
    """The warehouse folder that goes with :func:`module_url`."""
    return tmp_path_factory.mktemp("wh")


@pytest.fixture
def wh(module_url, module_root):
    """A warehouse on the module's metastore (host 'testhost')."""
    w = AcidWarehouse(Metastore(module_url, CONF), module_root, init=False, host="testhost")
    yield w
    w.metastore.close()


def unique(prefix: str = "t") -> str:
    """A table name no other test of the run uses."""
    return f"{prefix}{next(_names)}"


def inserts(wh: AcidWarehouse, table: str, partition=None, *, batches: int = 3, start: int = 0) -> None:
    """``batches`` committed inserts: one delta each."""
    for i in range(batches):
        with wh.transaction() as t:
            t.insert(table, [{"id": start + i * 10 + j, "name": f"n{i}{j}"} for j in range(3)], partition)


def delete(wh: AcidWarehouse, table: str, row_id: int) -> None:
    with wh.transaction() as t:
        t.delete(table, where=pc.field("id") == row_id)


def crashed_insert(wh: AcidWarehouse, table: str, partition=None) -> int:
    """A writer that wrote its delta and aborted without removing it; returns its txn id."""
    t = wh.transaction()
    t.insert(table, [{"id": 900, "name": "aborted"}], partition)
    t._written.clear()  # the crash: nothing removes the files
    t.abort()
    return t.txn_id


def make_non_transactional(wh: AcidWarehouse, table: str) -> None:
    """Turn ``table`` into what Hive registers for a plain (non-ACID) table: transactional=false."""
    db, name = table.split(".")
    tbl_id = (sa.select(TBLS.c.TBL_ID).join_from(TBLS, DBS, TBLS.c.DB_ID == DBS.c.DB_ID)
              .where(DBS.c.NAME == db, TBLS.c.TBL_NAME == name).scalar_subquery())
    wh.metastore.db.run(lambda conn: conn.execute(
        sa.update(TABLE_PARAMS).where(TABLE_PARAMS.c.TBL_ID == tbl_id, TABLE_PARAMS.c.PARAM_KEY == "transactional")
        .values(PARAM_VALUE="false")))
