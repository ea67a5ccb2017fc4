"""Database access: engines for SQLite/PostgreSQL/MariaDB, one-transaction units of work with bounded
retries of transient errors, the database clock, and AUX_TABLE named mutexes. Database errors leave a
:class:`Database` as the metastore's errors (:func:`.db_errors.translate`)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError

from airflow_acid.metastore.db_errors import is_transient, translate
from airflow_acid.metastore.flavour import Flavour, SchemaProfile, detect, register
from airflow_acid.metastore.schema import AUX_TABLE

log = logging.getLogger(__name__)
T = TypeVar("T")

SQLITE_BUSY_TIMEOUT_MS = 30_000

def create_engine(url: str, **kwargs: Any) -> Engine:
    """An engine tuned for the metastore: SQLite in WAL mode with a busy timeout so several processes can
    share one file; servers with pre-ping pooling and READ COMMITTED isolation."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = sa.create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "isolation_level": None},
                                  **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:  # pragma: no cover - exercised by every SQLite test
            cur = dbapi_conn.cursor()
            if parsed.database not in (None, "", ":memory:"):
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Connection) -> None:  # pragma: no cover
            # Take the write lock at BEGIN so read-then-write units of work cannot deadlock on upgrade.
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    kwargs.setdefault("isolation_level", "READ COMMITTED")
    ping_idle = "pool_pre_ping" not in kwargs  # an explicit pool_pre_ping (True: every checkout) wins
    engine = sa.create_engine(url, **kwargs)
    if ping_idle:
        _ping_idle_connections(engine)
    return engine


IDLE_PING_S = 5.0
"""A pooled connection idle longer than this is pinged before use (see :func:`_ping_idle_connections`)."""


def _ping_idle_connections(engine: Engine) -> None:
    """Ping a pooled connection before use only when it sat idle for more than IDLE_PING_S.

    SQLAlchemy's ``pool_pre_ping`` pings on every checkout: one round trip more per metastore call. A connection
    in steady use needs none — a connection that drops while in use fails its first statement, which
    :meth:`Database.run` retries on a fresh connection (the pool is invalidated) — while one that sat idle (the
    server restarted, a firewall timed it out) is caught here and replaced before the caller sees it.
    """

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn: Any, record: Any) -> None:
        record.info["acid_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("acid_idle_since")
        if idle_since is None or time.monotonic() - idle_since <= IDLE_PING_S:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:  # any failure means: replace this connection
            raise sa.exc.DisconnectionError(f"idle metastore connection is gone: {exc}") from exc


class Database:
    """An engine plus the rules for using it: every state change is one transaction, retried as a whole
    on transient errors a bounded number of times, each retry logged."""

    def __init__(self, url: str | Engine, *, retries: int = 10, flavour: Flavour | str | None = None,
                 **engine_kwargs: Any) -> None:
        self.engine = url if isinstance(url, Engine) else create_engine(url, **engine_kwargs)
        self.retries = retries
        self.flavour = Flavour.parse(flavour)
        self._profile: SchemaProfile | None = None

    @property
    def profile(self) -> SchemaProfile:
        """What kind of metastore this is (detected once from the live schema; see :mod:`.flavour`)."""
        if self._profile is None:
            with self.translating():
                return self._detect_profile()
        return self._profile

    def _detect_profile(self) -> SchemaProfile:
        self._profile = register(self.engine, detect(self.engine, self.flavour))
        return self._profile

    def forget_profile(self) -> None:
        """Detect the profile again on next use (after the schema changed, e.g. ``init``)."""
        self._profile = None

    @property
    def dialect(self) -> str:
        """'sqlite', 'postgresql' or 'mysql' (MariaDB reports 'mysql')."""
        return self.engine.dialect.name

    @property
    def url(self) -> str:
        """The URL with any password hidden, safe for logs and messages."""
        return self.engine.url.render_as_string(hide_password=True)

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """One database transaction, no retry. State changes go through :meth:`run` instead."""
        with self.translating(), self._transaction() as conn:
            yield conn

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        if self._profile is None:
            self._detect_profile()  # detect the flavour before the first transaction uses it
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def translating(self) -> Iterator[None]:
        """Raise a database error from inside as the metastore's error it means (unreachable, schema missing or
        older, constraint refused; :func:`.db_errors.translate`); any other stays the driver's (a bug). For code
        that uses :attr:`engine` directly; :meth:`run` and :meth:`begin` already do it."""
        try:
            yield
        except DBAPIError as exc:
            self._raise_translated(exc)

    def _raise_translated(self, exc: DBAPIError) -> NoReturn:
        error = translate(exc, self.url)
        if error is None:
            raise exc
        raise error from exc

    def run(self, work: Callable[[Connection], T], *, what: str = "metastore call",
            recover: Callable[[Connection, int], T | None] | None = None, recover_needs_clock: bool = True) -> T:
        """Run ``work(conn)`` in one transaction; re-run it from the start on transient errors.

        A dropped connection can hide that an attempt's COMMIT reached the server (its reply was lost). For work that
        must not be applied twice, ``recover(conn, since_ms)`` runs before each retry with the database clock at the
        start of the first attempt; when it finds that attempt's effect it returns the result to report (not None),
        and ``work`` is not run again. A ``recover`` that ignores the clock says so with ``recover_needs_clock=False``
        (it then receives 0), which saves the first attempt a round trip.

        An error that is not transient, or still there after the last retry, is raised as the metastore's error it
        means (:meth:`translating`).
        """
        attempt = 0
        since_ms: int | None = None
        while True:
            try:
                with self._transaction() as conn:
                    if recover is not None:
                        if since_ms is None:
                            since_ms = now_ms(conn) if recover_needs_clock else 0
                        else:
                            found = recover(conn, since_ms)
                            if found is not None:
                                log.warning("%s: an earlier attempt was applied before the connection was lost; "
                                            "not applying it again", what)
                                return found
                    return work(conn)
            except DBAPIError as exc:
                if not is_transient(exc) or attempt >= self.retries:
                    self._raise_translated(exc)
                attempt += 1
                delay = min(2.0, 0.01 * (2 ** attempt)) * (0.5 + random.random())
                log.warning("%s hit a transient database error (attempt %d/%d, retrying in %.2fs): %s",
                            what, attempt, self.retries, delay, exc.orig)
                time.sleep(delay)

    def dispose(self) -> None:
        self.engine.dispose()


CLOCK_SQL = {
    "postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    "mysql": "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
    "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
}


def in_literals(column: sa.ColumnElement[Any], values: Iterable[Any]) -> sa.ColumnElement[bool]:
    """``column IN (v1, v2, …)`` with the values rendered inline (escaped by the column's type) at execution.

    For long lists of names: bound, they make one statement text per list length, which psycopg prepares after a
    few runs, and PostgreSQL's generic plan then compares every row against every parameter (no hashed IN, no
    index probe for the list) — 180 ms per 500-name DELETE on a 5,000-row table. Inline, each list is planned
    with its values.
    """
    return column.in_(sa.bindparam(None, list(values), expanding=True, literal_execute=True, type_=column.type))


def clock_ms(conn: Connection) -> sa.ColumnElement[int]:
    """The database clock in epoch milliseconds as a column expression, to read it in a statement that is sent
    anyway (one round trip less than :func:`now_ms`)."""
    return clock_column(conn.dialect.name)


def clock_column(dialect: str) -> sa.ColumnElement[int]:
    """:func:`clock_ms` for a dialect name (statements built once per dialect)."""
    return sa.literal_column(CLOCK_SQL[dialect], sa.BigInteger)


def runs_alone(conn: Connection) -> bool:
    """Whether a write transaction runs alone from its BEGIN (SQLite's BEGIN IMMEDIATE): every statement then sees
    what every earlier transaction committed, so a row check and the reads that depend on it can share a
    statement. On servers under READ COMMITTED a statement that waits on a row lock keeps its older snapshot."""
    return conn.dialect.name == "sqlite"


def writes_in_ctes(conn: Connection) -> bool:
    """Whether the database runs INSERT/UPDATE/DELETE inside WITH (PostgreSQL's data-modifying CTEs), so the hot
    path can send several writes as one statement; SQLite and MariaDB/MySQL allow only SELECT there."""
    return conn.dialect.name == "postgresql"


def now_ms(conn: Connection) -> int:
    """The database clock in epoch milliseconds (Hive uses the DB clock, not the client's)."""
    return int(conn.exec_driver_sql(f"SELECT {CLOCK_SQL[conn.dialect.name]}").scalar_one())


def acquire_mutex(conn: Connection, key: str) -> int:
    """Take the named AUX_TABLE mutex for the rest of ``conn``'s transaction (SELECT … FOR UPDATE).

    Returns the MT_KEY2 value stored with it (Hive 4 keeps e.g. the Initiator's last-cycle time there).
    """
    row = conn.execute(
        sa.select(AUX_TABLE.c.MT_KEY2).where(AUX_TABLE.c.MT_KEY1 == key).with_for_update()
    ).first()
    if row is None:
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(AUX_TABLE).values(MT_KEY1=key, MT_KEY2=0))
        except sa.exc.IntegrityError:
            pass  # another process created it first
        row = conn.execute(
            sa.select(AUX_TABLE.c.MT_KEY2).where(AUX_TABLE.c.MT_KEY1 == key).with_for_update()
        ).first()
        if row is None:  # inserted just above (by us or a racing process); rows are only replaced in one txn
            raise RuntimeError(f"metastore mutex row {key!r} is missing from AUX_TABLE after creating it")
    return int(row[0])


def peek_mutex_value(conn: Connection, key: str) -> int:
    """MT_KEY2 of the named AUX_TABLE row without locking or creating it (0 when missing): for dry runs."""
    value = conn.execute(sa.select(AUX_TABLE.c.MT_KEY2).where(AUX_TABLE.c.MT_KEY1 == key)).scalar()
    return int(value or 0)


def set_mutex_value(conn: Connection, key: str, value: int) -> None:
    """Store MT_KEY2 for a mutex held by ``conn`` (key column is part of the primary key: replace the row)."""
    conn.execute(sa.delete(AUX_TABLE).where(AUX_TABLE.c.MT_KEY1 == key))
    conn.execute(sa.insert(AUX_TABLE).values(MT_KEY1=key, MT_KEY2=value))
