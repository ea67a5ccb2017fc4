"""AcidMetastoreHook: connection URL forms, [acid] settings, embedded fallback, secrets kept out of logs."""

from __future__ import annotations

import json
import logging

import pytest
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_acid.hooks.errors import AcidMetastoreConnectionError
from airflow_acid.hooks.metastore import AcidMetastoreHook, sqlalchemy_url_of
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import MetastoreSchemaError, MetastoreUnavailableError


def _conn_env(monkeypatch, conn_id: str, value) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", value if isinstance(value, str) else json.dumps(value))


def test_connection_host_is_the_sqlalchemy_url(monkeypatch, metastore_url, tmp_path):
    _conn_env(monkeypatch, "acid_metastore_default",
              {"conn_type": "acid_metastore", "host": metastore_url, "extra": {"warehouse": str(tmp_path / "wh")}})
    hook = AcidMetastoreHook()
    assert hook.get_uri() == metastore_url
    assert not hook.is_embedded
    ms = hook.get_metastore()
    assert ms.catalog.list_databases() == []  # the query ran on the migrated schema
    assert hook.warehouse_location == str(tmp_path / "wh")
    assert hook.test_connection()[0]
    hook.close()


def test_uri_form_connection_is_built_from_its_parts(monkeypatch):
    _conn_env(monkeypatch, "pg_meta", "postgres://acid:s3cr%40t@db.example:5433/metastore")
    hook = AcidMetastoreHook("pg_meta")
    assert hook.get_uri() == "postgresql+psycopg://acid:s3cr%40t@db.example:5433/metastore"


def test_login_and_password_fields_go_into_a_url_without_them(monkeypatch):
    _conn_env(monkeypatch, "m", {"conn_type": "acid_metastore", "login": "acid", "password": "pw-secret-1",
                                 "extra": {"metastore_uri": "mysql+pymysql://db:3306/meta"}})
    assert AcidMetastoreHook("m").get_uri() == "mysql+pymysql://acid:pw-secret-1@db:3306/meta"


def test_connection_without_a_database_is_rejected_with_its_name(monkeypatch):
    _conn_env(monkeypatch, "empty_meta", {"conn_type": "acid_metastore"})
    with pytest.raises(AcidMetastoreConnectionError, match="empty_meta.*SQLAlchemy URL"):
        AcidMetastoreHook("empty_meta").get_uri()


def test_unknown_non_default_connection_is_an_error(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_NOT_THERE", raising=False)
    with pytest.raises(AirflowNotFoundException, match="not_there"):
        AcidMetastoreHook("not_there").get_metastore()


def test_no_connection_falls_back_to_the_embedded_metastore(monkeypatch, tmp_path):
    monkeypatch.delenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", raising=False)
    monkeypatch.setenv("AIRFLOW_ACID_HOME", str(tmp_path / "acid"))
    hook = AcidMetastoreHook()
    assert hook.is_embedded
    ms = hook.get_metastore()
    assert ms.url == f"sqlite:///{(tmp_path / 'acid' / 'metastore.db').resolve()}"
    assert ms.catalog.list_databases() == []  # migrated on first use
    assert hook.warehouse_location == str(tmp_path / "acid" / "warehouse")
    hook.close()


def test_embedded_schema_is_migrated_by_the_first_task_only(monkeypatch, tmp_path, caplog):
    """Every task opens the metastore through a new hook: the first one in a process migrates a new embedded
    metastore (and logs it), the next ones neither migrate nor log an upgrade."""
    monkeypatch.delenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", raising=False)
    monkeypatch.setenv("AIRFLOW_ACID_HOME", str(tmp_path / "acid"))

    def upgrades() -> list[str]:
        return [r.getMessage() for r in caplog.records if "schema upgrade" in r.getMessage()]

    with caplog.at_level("INFO", logger="airflow_acid.metastore.init"):
        first = AcidMetastoreHook()
        first.get_metastore()
        assert len(upgrades()) == 1
        first.close()
        for _ in range(2):
            hook = AcidMetastoreHook()
            assert hook.get_metastore().catalog.list_databases() == []
            hook.close()
    assert len(upgrades()) == 1


def test_settings_come_from_the_acid_section(monkeypatch):
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD", "3")
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.TXN.TIMEOUT", "10m")
    settings = AcidMetastoreHook().get_settings()
    assert settings.delta_num_threshold == 3
    assert settings.txn_timeout_s == 600.0
    assert settings.delta_pct_threshold == MetastoreConf().delta_pct_threshold


def test_bad_setting_names_the_section_and_key(monkeypatch):
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD", "many")
    with pytest.raises(ValueError, match=r"\[acid\].*hive.compactor.delta.num.threshold"):
        AcidMetastoreHook().get_settings()


def test_password_never_reaches_the_log(monkeypatch, caplog, capsys):
    _conn_env(monkeypatch, "m", {"conn_type": "acid_metastore", "host": "postgresql+psycopg://acid@127.0.0.1:1/meta",
                                 "password": "hunter2-very-secret"})
    caplog.set_level(logging.DEBUG)
    hook = AcidMetastoreHook("m")
    assert "hunter2-very-secret" in hook.get_uri()
    metastore = hook.get_metastore()  # no query yet: nothing connects to the unreachable server
    logged = caplog.text + capsys.readouterr().out  # Airflow's structlog writes to stdout
    assert "acid:***@127.0.0.1:1/meta" in logged
    assert "hunter2-very-secret" not in logged
    assert "hunter2-very-secret" not in repr(metastore)
    hook.close()


def test_sqlalchemy_url_of_sqlite_uri_form():
    class Conn:
        conn_id, conn_type, host, login, password, schema, port = "s", "sqlite", "", None, None, "/tmp/m.db", None
        extra_dejson: dict = {}

    assert sqlalchemy_url_of(Conn()) == "sqlite:////tmp/m.db"


def test_storage_options_from_acid_section_and_connection_extra(monkeypatch, tmp_path):
    """[acid] storage_options is the base, the connection's storage_options extra overrides it; both reach fsspec's
    config of the process (every task's Initiator/Worker/Cleaner) and a secret among them is refused."""
    import fsspec.config

    from airflow_acid.acid.storage_options import StorageOptions

    monkeypatch.setenv("AIRFLOW__ACID__STORAGE_OPTIONS", json.dumps({"region": "eu-west-1", "endpoint_url": "http://a"}))
    _conn_env(monkeypatch, "s3meta", {"conn_type": "acid_metastore", "host": f"sqlite:///{tmp_path / 'm.db'}",
                                      "extra": {"warehouse": "s3://bucket/wh",
                                                "storage_options": {"endpoint_url": "http://minio:9000"}}})
    monkeypatch.setattr(fsspec.config, "conf", {})
    hook = AcidMetastoreHook("s3meta")
    assert hook.get_storage_options() == StorageOptions(endpoint_url="http://minio:9000", region="eu-west-1")
    hook.get_metastore().init()
    assert fsspec.config.conf["s3"] == {"endpoint_url": "http://minio:9000",
                                        "client_kwargs": {"region_name": "eu-west-1"}}
    hook.close()
    _conn_env(monkeypatch, "leaky", {"conn_type": "acid_metastore", "host": f"sqlite:///{tmp_path / 'm.db'}",
                                     "extra": {"storage_options": {"secret_key": "x"}}})
    with pytest.raises(ValueError, match="credentials"):
        AcidMetastoreHook("leaky").get_storage_options()


def test_a_connection_without_a_database_is_not_retried_an_unreachable_database_is():
    """Airflow tasks retry only what may get through later: a lost or unreachable metastore database, not a
    connection that names no database nor a metastore without its schema."""
    assert not AcidMetastoreConnectionError("acid_metastore_default names no database").retryable
    assert MetastoreUnavailableError("cannot reach 127.0.0.1:5432").retryable
    assert not MetastoreSchemaError("no airflow-acid schema: run airflow-acid init").retryable
