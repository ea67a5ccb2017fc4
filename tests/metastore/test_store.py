"""The Metastore facade: services wired to one database, schema creation, the embedded default."""

from __future__ import annotations

import sqlalchemy as sa

from airflow_acid.metastore import Metastore
from airflow_acid.metastore.catalog import Catalog
from airflow_acid.metastore.compactions import CompactionQueue
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.init import current_revision, head_revision
from airflow_acid.metastore.locks import LockManager


def test_facade_wires_every_service_to_one_database(db):
    conf = MetastoreConf(txn_timeout_s=42)
    ms = Metastore(db, conf)
    assert isinstance(ms.locks, LockManager) and isinstance(ms.compactions, CompactionQueue)
    assert isinstance(ms.catalog, Catalog)
    for service in (ms.txns, ms.snapshots, ms.housekeeping, ms.locks, ms.compactions, ms.catalog):
        assert service.db is db and service.conf is conf
    t = ms.txns.open_txn(user="u", host="h")
    assert str(ms.snapshots.valid_txn_list(t)).startswith(f"{t}:")
    ms.txns.commit(t)
    ms.close()  # the Database belongs to the caller: still usable
    assert db.run(lambda c: c.execute(sa.text("SELECT 1")).scalar()) == 1


def test_init_creates_schema_on_url(empty_db_url):
    with Metastore(empty_db_url) as ms:
        assert ms.init() is ms
        ms.init()
        assert current_revision(ms.db) == head_revision()
        assert ms.txns.open_txns(2, user="u", host="h")


def test_default_is_embedded_sqlite_under_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_ACID_HOME", str(tmp_path / "env-home"))
    with Metastore(home=tmp_path / "home").init() as ms:
        assert ms.db.dialect == "sqlite"
        assert (tmp_path / "home" / "metastore.db").is_file()
    with Metastore().init() as ms:
        assert (tmp_path / "env-home" / "metastore.db").is_file()
        assert "env-home" in ms.url
