"""Create, upgrade or downgrade the metastore schema with the Alembic migrations in ``migrations/``.

No alembic.ini: the configuration is built here, with the package's ``migrations`` folder as script location.
"""

from __future__ import annotations

import ast
import functools
import logging
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.metastore.db import Database
from airflow_acid.metastore.errors import HiveMetastoreError
from airflow_acid.metastore.schema import (
    ACID_COMPACTION_RUNS,
    ACID_INITIATOR_DECISION_LOG,
    ACID_INITIATOR_DECISIONS,
    NEXT_COMPACTION_QUEUE_ID,
    NEXT_LOCK_ID,
    TXN_LOCK_TBL,
)

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
INITIAL_REVISION = "0001"
_MIGRATION_LOCK = "airflow_acid_schema_migration"
_CURRENT: set[str] = set()
"""Databases (by URL) found at the head revision in this process: checked once, never migrated again."""
_CURRENT_LOCK = threading.Lock()


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """An Alembic Config pointing at the package's migrations, bound to ``connection`` (or ``url``)."""
    from alembic.config import Config  # Alembic loads only to migrate: checking the revision stays light

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@functools.cache
def head_revision() -> str:
    """The newest migration in the package: the one revision no other names as its ``down_revision``, read from
    the migration files' assignments (every command checks it; loading Alembic for it took most of a second).
    Anything but one plain chain is left to Alembic to resolve."""
    revisions: dict[str, object] = {}
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        values = {t.id: n.value.value for n in ast.parse(path.read_text()).body if isinstance(n, ast.Assign)
                  for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
        if isinstance(values.get("revision"), str):
            revisions[str(values["revision"])] = values.get("down_revision")
    heads = set(revisions) - set(revisions.values())
    if len(heads) == 1:
        return heads.pop()
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no Alembic revision in {MIGRATIONS_DIR}: the package is incomplete")
    return head


def current_revision(db: Database | str) -> str | None:
    """The revision the database is at, or None when it has never been migrated (Alembic's ``alembic_version``
    row, read with one query)."""
    database, owned = _database(db)
    try:
        with database.translating(), database.engine.connect() as conn:
            if not sa.inspect(conn).has_table("alembic_version"):
                return None
            versions = list(conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars())
            if len(versions) <= 1:
                return versions[0] if versions else None
            from alembic.migration import MigrationContext

            return MigrationContext.configure(conn).get_current_revision()  # several heads: Alembic's error
    finally:
        if owned:
            database.dispose()


def seed(conn: Connection) -> None:
    """Insert the single-row tables Hive creates at install time, if missing (idempotent; the initial migration
    already did this — kept to repair a database whose rows were deleted by hand)."""
    for table, column in ((NEXT_LOCK_ID, "NL_NEXT"), (NEXT_COMPACTION_QUEUE_ID, "NCQ_NEXT"), (TXN_LOCK_TBL, "TXN_LOCK")):
        if conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 0:
            conn.execute(sa.insert(table).values({column: 1}))


def upgrade(db: Database | str, revision: str = "head") -> None:
    """Migrate the database up to ``revision`` (default the newest). Safe to call repeatedly and concurrently."""
    from alembic import command

    _migrate(db, lambda cfg: command.upgrade(cfg, revision), f"upgrade to {revision}")


def downgrade(db: Database | str, revision: str = "base") -> None:
    """Migrate the database down to ``revision`` (``base`` drops every metastore table and its data)."""
    from alembic import command

    _migrate(db, lambda cfg: command.downgrade(cfg, revision), f"downgrade to {revision}")


def init_schema(db: Database) -> None:
    """Bring an empty or older database to the current schema. Safe to call repeatedly."""
    upgrade(db, "head")
    db.forget_profile()
    db.run(seed, what="seed metastore")


def ensure_schema(db: Database) -> bool:
    """Bring the database to the current schema once per process: a cheap revision check (one query) each time a
    process first meets the database, a migration only when it is behind. Returns True when it migrated (and
    logged it); False when the schema was already current — which is silent, so tasks do not log an upgrade each."""
    key = db.engine.url.render_as_string(hide_password=False)
    with _CURRENT_LOCK:
        if key in _CURRENT:
            return False
        migrated = current_revision(db) != head_revision()
        if migrated:
            init_schema(db)
        _CURRENT.add(key)
    return migrated


def refuse_hive(database: Database, what: str) -> None:
    """Raise :class:`HiveMetastoreError` when ``database`` is a Hive metastore: its schema belongs to Hive."""
    database.forget_profile()
    profile = database.profile
    if profile.is_hive:
        raise HiveMetastoreError(
            f"refusing to {what} on {database.url}: it is a Hive metastore (schema {profile.hive_version}), whose "
            "schema is managed by Hive's schematool; airflow-acid uses it as it is and never changes it. "
            "Nothing to initialise — point airflow-acid at it directly (flavour hive); to record Initiator "
            "decisions there, run: airflow-acid hive create-decisions-table")


def create_decisions_table(database: Database) -> bool:
    """Create ACID_INITIATOR_DECISIONS and its shadow-cycle log ACID_INITIATOR_DECISION_LOG on a Hive metastore
    (explicit request only), whichever is missing; False if both exist already."""
    profile = database.profile
    if not profile.is_hive:
        raise HiveMetastoreError(f"{database.url} is not a Hive metastore; airflow-acid init creates the decisions "
                                 "table with the rest of its schema")
    wanted = [t for t, present in ((ACID_INITIATOR_DECISIONS, profile.decisions_table),
                                   (ACID_INITIATOR_DECISION_LOG, profile.decision_log_table)) if not present]
    if not wanted:
        return False
    with database.translating(), database.engine.begin() as conn:
        for table in wanted:
            table.create(conn, checkfirst=True)
    database.forget_profile()
    log.warning("created %s in the Hive metastore at %s (airflow-acid's Initiator decisions)",
                ", ".join(t.name for t in wanted), database.url)
    return True


def create_extra_tables(database: Database) -> list[str]:
    """Create airflow-acid's own tables missing from a Hive metastore (ACID_INITIATOR_DECISIONS,
    ACID_INITIATOR_DECISION_LOG, ACID_COMPACTION_RUNS; explicit request only); returns the names created. Hive's
    tables are never touched."""
    profile = database.profile
    if not profile.is_hive:
        raise HiveMetastoreError(f"{database.url} is not a Hive metastore; airflow-acid init creates its own tables "
                                 "with the rest of its schema")
    wanted = [t for t, present in ((ACID_INITIATOR_DECISIONS, profile.decisions_table),
                                   (ACID_INITIATOR_DECISION_LOG, profile.decision_log_table),
                                   (ACID_COMPACTION_RUNS, profile.runs_table)) if not present]
    with database.translating(), database.engine.begin() as conn:
        for table in wanted:
            table.create(conn, checkfirst=True)
    database.forget_profile()
    if wanted:
        log.warning("created %s in the Hive metastore at %s (airflow-acid's own tables)",
                    ", ".join(t.name for t in wanted), database.url)
    return [t.name for t in wanted]


def _database(db: Database | str) -> tuple[Database, bool]:
    return (db, False) if isinstance(db, Database) else (Database(db), True)


def _migrate(db: Database | str, action: Callable[[Config], None], what: str) -> None:
    database, owned = _database(db)
    try:
        refuse_hive(database, f"run the schema {what}")
        with database.translating(), database.engine.connect() as conn, _migration_lock(conn):
            _adopt_unversioned(conn)
            action(alembic_config(conn))
            if conn.in_transaction():
                conn.commit()
        log.info("metastore schema %s done on %s", what, database.url)
    finally:
        if owned:
            database.dispose()


def _adopt_unversioned(conn: Connection) -> None:
    """A database built by ``metadata.create_all`` before migrations existed: record it as the initial revision."""
    inspector = sa.inspect(conn)
    if inspector.has_table("TXNS") and not inspector.has_table("alembic_version"):
        log.warning("metastore tables exist without a migration version; stamping revision %s", INITIAL_REVISION)
        from alembic import command

        command.stamp(alembic_config(conn), INITIAL_REVISION)
    if conn.in_transaction():
        conn.commit()


@contextmanager
def _migration_lock(conn: Connection) -> Iterator[None]:
    """Serialize migrations of one database across processes (server advisory locks; SQLite's BEGIN IMMEDIATE
    already serializes writers)."""
    dialect = conn.dialect.name
    key = zlib.crc32(_MIGRATION_LOCK.encode())
    if dialect == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_lock({key})")
        conn.commit()
        try:
            yield
        finally:
            conn.rollback()
            conn.exec_driver_sql(f"SELECT pg_advisory_unlock({key})")
            conn.commit()
    elif dialect == "mysql":
        conn.exec_driver_sql(f"SELECT GET_LOCK('{_MIGRATION_LOCK}', 300)")
        conn.commit()
        try:
            yield
        finally:
            conn.rollback()
            conn.exec_driver_sql(f"SELECT RELEASE_LOCK('{_MIGRATION_LOCK}')")
            conn.commit()
    else:
        yield
