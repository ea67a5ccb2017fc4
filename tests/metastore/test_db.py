"""The database layer: clock, mutexes, transient-error classification, unreachable servers."""

from __future__ import annotations

import time

import pytest

from airflow_acid.metastore.db import Database, acquire_mutex, now_ms, set_mutex_value
from airflow_acid.metastore.errors import MetastoreUnavailableError


def test_database_clock_is_epoch_ms(db):
    assert abs(db.run(now_ms) - time.time() * 1000) < 5_000


def test_mutex_value_round_trip(db):
    assert db.run(lambda c: acquire_mutex(c, "Initiator")) == 0

    def store(conn):
        acquire_mutex(conn, "Initiator")
        set_mutex_value(conn, "Initiator", 1234)

    db.run(store)
    assert db.run(lambda c: acquire_mutex(c, "Initiator")) == 1234


def test_unreachable_server_gives_clear_error():
    database = Database("postgresql+psycopg://nobody@127.0.0.1:1/nothing", retries=0)
    with pytest.raises(MetastoreUnavailableError, match="cannot reach the metastore database at .*127.0.0.1:1"):
        database.run(now_ms)


def test_postgres_error_codes_are_read_from_both_drivers():
    """psycopg2 names the SQLSTATE ``pgcode``, psycopg 3 ``sqlstate``; PyMySQL's ``sqlstate`` is MySQL's own."""
    import psycopg
    import pymysql
    import sqlalchemy as sa

    from airflow_acid.metastore.db import is_transient, sqlstate

    serialization = psycopg.errors.SerializationFailure("could not serialize access")
    assert sqlstate(serialization) == "40001"
    assert is_transient(sa.exc.OperationalError("UPDATE", {}, serialization))
    assert sqlstate(pymysql.err.IntegrityError(1062, "Duplicate entry", sqlstate="23000")) is None
    assert not is_transient(sa.exc.IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("duplicate key")))
