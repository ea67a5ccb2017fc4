"""What database errors mean: transient ones are retried, and on every backend they leave the metastore as its own
errors — an unreachable server or a lost connection (MetastoreUnavailableError), a database without the schema or
with an older one (MetastoreSchemaError), a write a constraint refuses (MetastoreConstraintError) — while any other
database error stays the driver's."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from airflow_acid.errors import AcidError, AcidUnavailableError, AcidUserError
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.db_errors import is_transient, sqlstate
from airflow_acid.metastore.errors import (
    MetastoreConstraintError,
    MetastoreSchemaError,
    MetastoreUnavailableError,
)
from airflow_acid.metastore.init import current_revision, init_schema, upgrade
from airflow_acid.metastore.schema import AUX_TABLE


def _unreachable(url: str, tmp_path) -> str:
    """The same kind of database where nothing answers: a file in a missing folder, a server port nobody listens on."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return f"sqlite:///{tmp_path / 'no such folder' / 'metastore.db'}"
    return parsed.set(port=1).render_as_string(hide_password=False)


def test_an_unreachable_server_is_unavailable(empty_db_url, tmp_path):
    database = Database(_unreachable(empty_db_url, tmp_path), retries=0)
    with pytest.raises(MetastoreUnavailableError, match="cannot reach the metastore database at .*Check that") \
            as caught:
        database.run(now_ms)
    assert isinstance(caught.value, AcidUnavailableError) and isinstance(caught.value.__cause__, sa.exc.DBAPIError)
    with pytest.raises(MetastoreUnavailableError):
        current_revision(database)  # the engine used directly, through Database.translating
    with pytest.raises(MetastoreUnavailableError):
        _ = Metastore(database).profile
    database.dispose()


def test_a_missing_server_database_is_unavailable(empty_db_url):
    if empty_db_url.startswith("sqlite"):
        pytest.skip("SQLite creates a missing database file")
    database = Database(make_url(empty_db_url).set(database="acid_no_such_database").render_as_string(
        hide_password=False), retries=0)
    with pytest.raises(MetastoreUnavailableError, match="cannot reach the metastore database at .*"
                       "acid_no_such_database"):
        database.run(now_ms)
    database.dispose()


def test_an_unmigrated_database_says_to_run_init(empty_db_url):
    ms = Metastore(empty_db_url)
    with pytest.raises(MetastoreSchemaError, match="has no schema yet, or an older one .*airflow-acid init"):
        ms.compactions.show_compactions()
    with pytest.raises(MetastoreSchemaError):
        with ms.db.begin() as conn:
            conn.execute(sa.select(AUX_TABLE))
    ms.close()


def test_an_older_schema_says_to_run_init(empty_db_url):
    database = Database(empty_db_url)
    upgrade(database, "0003")  # before ACID_COMPACTION_RUNS
    with pytest.raises(MetastoreSchemaError, match="airflow-acid init"):
        Metastore(database).runs.get(1)
    init_schema(database)
    assert Metastore(database).runs.get(1) is None
    database.dispose()


def test_a_constraint_violation_is_a_metastore_error(db):
    row = {"MT_KEY1": "acid.test", "MT_KEY2": 0}
    db.run(lambda conn: conn.execute(sa.insert(AUX_TABLE).values(row)))
    with pytest.raises(MetastoreConstraintError, match="refused a change that breaks one of its constraints") as caught:
        db.run(lambda conn: conn.execute(sa.insert(AUX_TABLE).values(row)))
    assert isinstance(caught.value, AcidUserError) and isinstance(caught.value.__cause__, sa.exc.IntegrityError)
    with pytest.raises(MetastoreConstraintError):
        with db.begin() as conn:
            conn.execute(sa.insert(AUX_TABLE).values(row))


def test_a_constraint_handled_inside_the_work_is_not_translated(db):
    """Work that expects a duplicate (a concurrent insert) still catches the driver's IntegrityError itself."""
    row = {"MT_KEY1": "acid.test", "MT_KEY2": 0}

    def insert_twice(conn) -> bool:
        conn.execute(sa.insert(AUX_TABLE).values(row))
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(AUX_TABLE).values(row))
        except sa.exc.IntegrityError:
            return True
        return False

    assert db.run(insert_twice)


def test_a_lost_connection_is_unavailable_after_the_retries(empty_db_url):
    dialect = make_url(empty_db_url).get_backend_name()
    if dialect == "sqlite":
        pytest.skip("an SQLite connection cannot be killed from inside")
    database = Database(empty_db_url, retries=0)
    kill = "SELECT pg_terminate_backend(pg_backend_pid())" if dialect == "postgresql" else "KILL CONNECTION_ID()"
    with pytest.raises(MetastoreUnavailableError, match="lost the connection to the metastore database at"):
        database.run(lambda conn: conn.exec_driver_sql(kill))
    database.dispose()


def test_other_database_errors_stay_the_drivers(db):
    """A statement the database does not understand is a bug: no metastore error hides it."""
    with pytest.raises(sa.exc.DBAPIError) as caught:
        db.run(lambda conn: conn.exec_driver_sql("SELEC 1"))
    assert not isinstance(caught.value, AcidError)


def test_unreachable_server_gives_clear_error():
    database = Database("postgresql+psycopg://nobody@127.0.0.1:1/nothing", retries=0)
    with pytest.raises(MetastoreUnavailableError, match="cannot reach the metastore database at .*127.0.0.1:1"):
        database.run(now_ms)


def test_postgres_error_codes_are_read_from_both_drivers():
    """psycopg2 names the SQLSTATE ``pgcode``, psycopg 3 ``sqlstate``; PyMySQL's ``sqlstate`` is MySQL's own."""
    import psycopg
    import pymysql

    serialization = psycopg.errors.SerializationFailure("could not serialize access")
    assert sqlstate(serialization) == "40001"
    assert is_transient(sa.exc.OperationalError("UPDATE", {}, serialization))
    assert sqlstate(pymysql.err.IntegrityError(1062, "Duplicate entry", sqlstate="23000")) is None
    assert not is_transient(sa.exc.IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("duplicate key")))
