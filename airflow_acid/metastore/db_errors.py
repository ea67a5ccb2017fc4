"""What a database error means, read from the driver's error codes: worth retrying the unit of work (a deadlock,
a lock wait, a lost connection), or — once retrying is over — one of the metastore's errors: the server cannot be
reached, the schema is missing or older than this version, a constraint refused a write. :func:`translate` is the
one place that reads driver errors; everything above the metastore catches
:class:`~airflow_acid.metastore.errors.MetastoreError` instead."""

from __future__ import annotations

import sqlite3

from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from airflow_acid.metastore.errors import (
    MetastoreConstraintError,
    MetastoreError,
    MetastoreSchemaError,
    MetastoreUnavailableError,
)

# Error codes that mean "try the whole transaction again": deadlocks, serialization failures,
# lock wait timeouts and lost connections.
_PG_TRANSIENT = {"40001", "40P01", "55P03", "57P01", "08000", "08003", "08006"}
_MYSQL_TRANSIENT = {1205, 1213, 2006, 2013, 1927, 4031}

_PG_BUSY = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available
_MYSQL_BUSY = {1205, 1213}  # lock wait timeout, deadlock
_SQLITE_BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED (primary codes)

_PG_UNREACHABLE_PREFIXES = ("08", "28", "3D000", "57P0")
"""Connection exceptions, failed authentication, no such database, server shut down or starting."""
_MYSQL_UNREACHABLE = {1044, 1045, 1049, 1130, 1927, 2002, 2003, 2005, 2006, 2013, 4031}
"""Access denied (database, user), unknown database, host not allowed, connection killed, cannot connect (socket,
TCP, unknown host), server gone away, connection lost, disconnected for inactivity."""
_SQLITE_UNREACHABLE = {14, 26}  # SQLITE_CANTOPEN, SQLITE_NOTADB (primary codes)

_PG_SCHEMA = {"42P01", "42703", "3F000"}  # undefined table, undefined column, no such schema
_MYSQL_SCHEMA = {1146, 1054}  # no such table, unknown column
_SQLITE_SCHEMA = ("no such table", "no such column")
"""SQLite reports a missing table or column with its generic SQLITE_ERROR code: only the message tells."""

_MYSQL_CONSTRAINT = {1048, 1062, 1364, 1451, 1452, 1586, 3819, 4025}
"""NULL into NOT NULL, duplicate key, no default value, foreign key (parent, child), duplicate key, CHECK
(MySQL, MariaDB): the ones PyMySQL does not already raise as IntegrityError included."""


def sqlstate(orig: BaseException | None) -> str | None:
    """The PostgreSQL SQLSTATE of a driver error: ``pgcode`` (psycopg2) or ``sqlstate`` (psycopg 3); None for other
    drivers (PyMySQL's errors carry a ``sqlstate`` too, MySQL's own, not PostgreSQL's)."""
    code = getattr(orig, "pgcode", None)
    if code is None and type(orig).__module__.startswith("psycopg"):
        code = getattr(orig, "sqlstate", None)
    return str(code) if code else None


def mysql_errno(orig: BaseException | None) -> int | None:
    """The MySQL/MariaDB error number of a PyMySQL (or mysqlclient) error, else None."""
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


_SQLITE_MESSAGES = (("no such table", 1), ("no such column", 1), ("database is locked", 5),
                    ("database table is locked", 6), ("unable to open database file", 14),
                    ("file is not a database", 26))
"""Python 3.10's sqlite3 errors carry no result code: the primary code their message stands for."""


def sqlite_code(orig: BaseException | None) -> int | None:
    """The primary SQLite result code of an sqlite3 error (``sqlite_errorcode``, Python 3.11+; on 3.10 inferred from
    the message of the errors this module tells apart), else None."""
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    if isinstance(orig, sqlite3.Error) and not hasattr(orig, "sqlite_errorcode"):
        text = str(orig).lower()
        return next((known for message, known in _SQLITE_MESSAGES if text.startswith(message)), None)
    return None


def is_transient(exc: BaseException) -> bool:
    """Whether a database error is worth retrying (the whole unit of work is re-run)."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    if sqlstate(orig) in _PG_TRANSIENT:
        return True
    if mysql_errno(orig) in _MYSQL_TRANSIENT:
        return True
    if isinstance(exc, OperationalError):
        text = str(orig).lower()
        if "database is locked" in text or "database table is locked" in text:
            return True
        if "server closed the connection" in text or "connection refused" in text or "lost connection" in text:
            return True
    return False


def translate(exc: DBAPIError, url: str) -> MetastoreError | None:
    """The metastore's error for a database error a user or operator can act on — :class:`MetastoreConstraintError`,
    :class:`MetastoreSchemaError` or :class:`MetastoreUnavailableError`, naming the database (``url``, password
    hidden) and what to do — or None for anything else (a bug: the driver's error stays as it is)."""
    text = str(exc.orig).strip()
    detail = " ".join(text.splitlines()[0].split()) if text else type(exc.orig).__name__  # the driver's first line
    if _is_constraint(exc):
        return MetastoreConstraintError(
            f"the metastore database at {url} refused a change that breaks one of its constraints: {detail}. "
            "Another process may have changed the same rows at the same moment, or rows were edited outside "
            "airflow-acid; try again, and report it if it repeats")
    if _is_schema_missing(exc):
        return MetastoreSchemaError(
            f"the metastore database at {url} has no schema yet, or an older one than this version of airflow-acid "
            f"needs ({detail}); run `airflow-acid init --metastore-url <url>` against it (a Hive metastore's schema "
            "comes from Hive's schematool instead)")
    if _is_unreachable(exc):
        if exc.statement is not None:
            return MetastoreUnavailableError(
                f"lost the connection to the metastore database at {url}: {detail}. Check that the server is running "
                "and reachable from here, then try again")
        check = ("that its folder exists and can be written, and that the URL is right" if url.startswith("sqlite")
                 else "that the server is running and the connection URL (host, port, database, user, password) "
                      "is right")
        return MetastoreUnavailableError(f"cannot reach the metastore database at {url}: {detail}. Check {check}")
    return None


def _is_constraint(exc: DBAPIError) -> bool:
    return isinstance(exc, IntegrityError) or mysql_errno(exc.orig) in _MYSQL_CONSTRAINT


def _is_schema_missing(exc: DBAPIError) -> bool:
    orig = exc.orig
    if sqlstate(orig) in _PG_SCHEMA or mysql_errno(orig) in _MYSQL_SCHEMA:
        return True
    return sqlite_code(orig) == 1 and str(orig).lower().startswith(_SQLITE_SCHEMA)


def _is_unreachable(exc: DBAPIError) -> bool:
    orig = exc.orig
    if exc.connection_invalidated:
        return True
    pg, errno, lite = sqlstate(orig), mysql_errno(orig), sqlite_code(orig)
    if pg is not None:
        return pg.startswith(_PG_UNREACHABLE_PREFIXES)
    if errno is not None:
        return errno in _MYSQL_UNREACHABLE
    if lite is not None:
        return lite in _SQLITE_UNREACHABLE
    # No code at all (psycopg's "connection failed: …"): SQLAlchemy names no statement for an error raised while
    # connecting.
    return exc.statement is None
