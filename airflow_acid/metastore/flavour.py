"""Which kind of metastore database this is — airflow-acid's own (Alembic-managed) or an existing Hive 4 metastore
(created by Hive's schematool) — and the few facts about its live schema that change how rows are written.

The services never branch on "is this Hive?" themselves: they ask the :class:`SchemaProfile` (``profile_of(conn)``)
for the SQL piece that differs (commit timestamps, job id width, optional columns, catalog filters).
"""

from __future__ import annotations

import enum
import functools
import logging
import re
import weakref
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from airflow_acid.metastore.errors import HiveMetastoreError, InvalidInputError

log = logging.getLogger(__name__)

DEFAULT_CATALOG = "hive"
"""Hive's default catalog (CTLGS.NAME, DBS.CTLG_NAME); 4.3's catalog columns of the transactional tables get it."""
FLAVOUR_ENV = "AIRFLOW_ACID_METASTORE_FLAVOUR"
DECISIONS_TABLE = "ACID_INITIATOR_DECISIONS"
"""airflow-acid's own table (not Hive's); on a Hive metastore it exists only after ``airflow-acid hive
create-decisions-table``."""
DECISION_LOG_TABLE = "ACID_INITIATOR_DECISION_LOG"
"""airflow-acid's log of shadow decisions per cycle; on a Hive metastore made by ``airflow-acid hive
create-decisions-table`` (or ``create-extra-tables``) together with the decisions table."""
RUNS_TABLE = "ACID_COMPACTION_RUNS"
RUN_TASK_COLUMNS = ("ACR_DAG_ID", "ACR_RUN_ID", "ACR_TASK_ID", "ACR_MAP_INDEX", "ACR_TRY_NUMBER")
"""Added to ACID_COMPACTION_RUNS later (migration 0006): the Airflow task instance that ran a compaction."""
"""airflow-acid's own table of compaction run figures; on a Hive metastore it exists only after ``airflow-acid hive
create-extra-tables``."""
_OWN_JOB_ID_WIDTH = 128
# Transactional tables whose inserts may need a 4.3+ catalog column filled in.
_CATALOG_TABLES = ("TXN_COMPONENTS", "COMPLETED_TXN_COMPONENTS", "HIVE_LOCKS", "COMPACTION_QUEUE",
                   "COMPLETED_COMPACTIONS", "TXN_TO_WRITE_ID", "NEXT_WRITE_ID", "WRITE_SET")


class Flavour(str, enum.Enum):
    """The metastore database's owner: ``acid`` (airflow-acid's Alembic schema) or ``hive`` (Hive's schematool)."""

    ACID = "acid"
    HIVE = "hive"

    @classmethod
    def parse(cls, value: Flavour | str | None) -> Flavour | None:
        """``acid``/``hive``; None or ``auto`` means detect. ValueError names the accepted values."""
        if value is None or isinstance(value, Flavour):
            return value
        text = str(value).strip().lower()
        if text in ("", "auto"):
            return None
        try:
            return cls(text)
        except ValueError:
            raise InvalidInputError(f"metastore flavour {value!r} is not known; use auto, acid or hive") from None


@dataclass(frozen=True)
class SchemaProfile:
    """Facts about one metastore database that decide how rows are written and read."""

    flavour: Flavour
    hive_version: str | None = None
    commit_time_is_timestamp: bool = False
    """COMPLETED_TXN_COMPONENTS.CTC_TIMESTAMP is a ``timestamp DEFAULT CURRENT_TIMESTAMP`` (Hive), not epoch ms."""
    job_id_width: int = _OWN_JOB_ID_WIDTH
    """Width of CQ_HADOOP_JOB_ID / CC_HADOOP_JOB_ID (Hive: varchar(32))."""
    meta_info_columns: bool = False
    """COMPACTION_QUEUE.CQ_META_INFO and COMPLETED_COMPACTIONS.CC_META_INFO exist (copied into history)."""
    catalog_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """NOT NULL catalog columns without a default (Hive 4.3+, e.g. HIVE_LOCKS.HL_CATALOG) per table."""
    decisions_table: bool = True
    """ACID_INITIATOR_DECISIONS exists (always on airflow-acid's own schema)."""
    decision_log_table: bool = True
    """ACID_INITIATOR_DECISION_LOG exists (always on airflow-acid's own schema): shadow cycles log every decision."""
    runs_table: bool = True
    """ACID_COMPACTION_RUNS exists (always on airflow-acid's own schema): run figures are recorded."""
    run_digest_columns: bool = True
    """ACID_COMPACTION_RUNS has ACR_DIGEST_IN/OUT (a Hive metastore's table made by an older release has not)."""
    run_task_columns: bool = True
    """ACID_COMPACTION_RUNS has the Airflow task columns ACR_DAG_ID … ACR_TRY_NUMBER (likewise)."""
    case_insensitive_names: bool = False
    """Names in the transactional tables compare case- and accent-insensitively (Hive's MySQL latin1 tables)."""
    entity_collation: str | None = None
    """That collation (e.g. ``latin1_swedish_ci``; MySQL/MariaDB only)."""
    dialect: str = "sqlite"

    @property
    def is_hive(self) -> bool:
        return self.flavour is Flavour.HIVE

    def describe(self) -> str:
        """One line for ``airflow-acid status`` and logs."""
        if not self.is_hive:
            return "airflow-acid metastore (schema managed by airflow-acid init)"
        extra = "" if self.decisions_table else "; Initiator decisions not recorded (no ACID_INITIATOR_DECISIONS)"
        extra += "" if self.runs_table else "; run figures not recorded (no ACID_COMPACTION_RUNS)"
        if self.decisions_table and not self.decision_log_table:
            extra += "; shadow decisions not logged per cycle (no ACID_INITIATOR_DECISION_LOG)"
        return f"Hive metastore, schema {self.hive_version or 'unknown'} (read-only catalog, schema never altered{extra})"

    # --- commit timestamps (CTC_TIMESTAMP) ---------------------------------------------------------------

    def commit_time_value(self, now_ms: int) -> Any | None:
        """The CTC_TIMESTAMP value to insert, or None: leave it to the column default (Hive)."""
        return None if self.commit_time_is_timestamp else now_ms

    def commit_time_ms(self, column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
        """``column`` (CTC_TIMESTAMP) as epoch milliseconds. Hive's timestamps are in the writer's session time zone;
        they convert back with the same zone (PostgreSQL: timestamp → timestamptz; MySQL: UNIX_TIMESTAMP)."""
        if not self.commit_time_is_timestamp:
            return column
        if self.dialect == "postgresql":
            return sa.cast(sa.extract("epoch", sa.cast(column, sa.TIMESTAMP(timezone=True))) * 1000, sa.BigInteger)
        return sa.cast(sa.func.unix_timestamp(column) * 1000, sa.BigInteger)

    def commit_time_since(self, column: sa.ColumnElement[Any], since_ms: int) -> sa.ColumnElement[bool]:
        """``column >= since_ms`` for CTC_TIMESTAMP. A Hive timestamp may hold whole seconds only (MySQL
        ``timestamp``), so the bound moves back one second: a table looked at twice costs less than one missed."""
        if not self.commit_time_is_timestamp:
            return column >= since_ms
        seconds = max(0, since_ms - 1000) / 1000.0
        bound: sa.ColumnElement[Any]
        if self.dialect == "postgresql":
            bound = sa.cast(sa.func.to_timestamp(seconds), sa.TIMESTAMP(timezone=False))
        else:
            bound = sa.func.from_unixtime(seconds)
        return column >= bound

    # --- compaction job ids ------------------------------------------------------------------------------

    def job_id(self, job_name: str) -> str:
        """A job id that fits CQ_HADOOP_JOB_ID: the name itself when short enough, else its head plus a checksum
        of the whole (stable, so the log line naming both can be found from SHOW COMPACTIONS)."""
        if len(job_name) <= self.job_id_width:
            return job_name
        digest = f"{zlib.crc32(job_name.encode()):08x}"
        return f"{job_name[:self.job_id_width - len(digest) - 1]}~{digest}"

    # --- optional columns -----------------------------------------------------------------------------------

    def extra_values(self, table: str) -> dict[str, str]:
        """Values for columns of newer Hive schemas that airflow-acid's tables do not have (the default catalog)."""
        return {column: DEFAULT_CATALOG for column in self.catalog_columns.get(table, ())}

    def writable(self, table: sa.Table) -> sa.TableClause | sa.Table:
        """``table`` for an INSERT: a lightweight clause that also names the extra catalog columns when there are."""
        return writable_table(table, tuple(self.catalog_columns.get(table.name, ())))

    def with_extras(self, table: sa.Table, rows: dict[str, Any] | list[dict[str, Any]]
                    ) -> dict[str, Any] | list[dict[str, Any]]:
        """Rows for :meth:`writable` with the extra columns filled in."""
        extra = self.extra_values(table.name)
        if not extra:
            return rows
        if isinstance(rows, dict):
            return {**rows, **extra}
        return [{**row, **extra} for row in rows]


ACID_PROFILE = SchemaProfile(Flavour.ACID)


def insert_into(profile: SchemaProfile, table: sa.Table) -> sa.Insert:
    """``INSERT INTO table`` (rows as parameters) naming ``profile``'s extra catalog columns: built once per table
    and column set, as the transaction hot path runs it for every lock and write."""
    return _insert_into(table, tuple(profile.catalog_columns.get(table.name, ())))


@functools.cache
def _insert_into(table: sa.Table, extra: tuple[str, ...]) -> sa.Insert:
    return sa.insert(writable_table(table, extra))


@functools.cache
def writable_table(table: sa.Table, extra: tuple[str, ...]) -> sa.TableClause | sa.Table:
    """``table`` itself, or a lightweight clause naming its columns plus the ``extra`` (String) ones."""
    if not extra:
        return table
    return sa.table(table.name, *[sa.column(c.name, c.type) for c in table.columns],
                    *[sa.column(name, sa.String()) for name in extra])

_PROFILES: weakref.WeakKeyDictionary[Engine, SchemaProfile] = weakref.WeakKeyDictionary()


def register(engine: Engine, profile: SchemaProfile) -> SchemaProfile:
    """Remember the profile of an engine so code holding only a connection can ask :func:`profile_of`."""
    _PROFILES[engine] = profile
    return profile


def profile_of(conn: Connection) -> SchemaProfile:
    """The profile of the database ``conn`` belongs to (airflow-acid's own when never detected)."""
    return _PROFILES.get(conn.engine, ACID_PROFILE)


def detect(engine: Engine, requested: Flavour | str | None = None) -> SchemaProfile:
    """Inspect the live schema: Hive's ``VERSION`` and ``CTLGS`` tables mean a Hive metastore. ``requested`` (from
    the connection, CLI or constructor) must agree with what is found; a wrong explicit choice is refused."""
    wanted = Flavour.parse(requested)
    inspector = sa.inspect(engine)
    names = set(inspector.get_table_names())
    is_hive = "VERSION" in names and "CTLGS" in names
    if wanted is Flavour.HIVE and not is_hive:
        raise HiveMetastoreError(
            f"the metastore at {engine.url.render_as_string(hide_password=True)} is not a Hive metastore (no VERSION "
            "and CTLGS tables); create it with Hive's schematool, or use flavour acid/auto")
    if wanted is Flavour.ACID and is_hive:
        raise HiveMetastoreError(
            f"the metastore at {engine.url.render_as_string(hide_password=True)} is a Hive metastore (it has Hive's "
            "VERSION and CTLGS tables); airflow-acid must not manage its schema — use flavour hive or auto")
    if not is_hive:
        return SchemaProfile(Flavour.ACID, dialect=engine.dialect.name)
    return _hive_profile(engine, inspector, names)


def _hive_profile(engine: Engine, inspector: Any, names: set[str]) -> SchemaProfile:
    with engine.connect() as conn:
        version = conn.execute(sa.text('SELECT "SCHEMA_VERSION" FROM "VERSION"') if engine.dialect.name == "postgresql"
                               else sa.text("SELECT SCHEMA_VERSION FROM VERSION")).scalar()
    columns = {table: {c["name"]: c for c in inspector.get_columns(table)}
               for table in ("COMPLETED_TXN_COMPONENTS", "COMPACTION_QUEUE", "COMPLETED_COMPACTIONS", *_CATALOG_TABLES)
               if table in names}
    ctc = columns.get("COMPLETED_TXN_COMPONENTS", {}).get("CTC_TIMESTAMP")
    job = columns.get("COMPACTION_QUEUE", {}).get("CQ_HADOOP_JOB_ID")
    width = getattr(job["type"], "length", None) if job else None
    catalog_columns = {}
    for table in _CATALOG_TABLES:
        extra = tuple(name for name, col in columns.get(table, {}).items()
                      if ("CATALOG" in name.upper() or "CTLG" in name.upper()) and not col.get("nullable", True)
                      and col.get("default") is None)
        if extra:
            catalog_columns[table] = extra
    collation = None
    if engine.dialect.name == "mysql":
        collation = _collation(engine, "COMPLETED_TXN_COMPONENTS", "CTC_PARTITION")
    ci = collation is not None and not collation.endswith("_bin")
    profile = SchemaProfile(
        flavour=Flavour.HIVE, hive_version=version,
        commit_time_is_timestamp=ctc is not None and not isinstance(ctc["type"], sa.types.Integer),
        job_id_width=int(width or 32),
        meta_info_columns="CQ_META_INFO" in columns.get("COMPACTION_QUEUE", {})
        and "CC_META_INFO" in columns.get("COMPLETED_COMPACTIONS", {}),
        catalog_columns=catalog_columns,
        decisions_table=DECISIONS_TABLE in names,
        decision_log_table=DECISION_LOG_TABLE in names,
        runs_table=RUNS_TABLE in names,
        run_digest_columns=RUNS_TABLE in names
        and {c["name"].upper() for c in inspector.get_columns(RUNS_TABLE)} >= {"ACR_DIGEST_IN", "ACR_DIGEST_OUT"},
        run_task_columns=RUNS_TABLE in names
        and {c["name"].upper() for c in inspector.get_columns(RUNS_TABLE)} >= set(RUN_TASK_COLUMNS),
        case_insensitive_names=ci,
        entity_collation=collation if ci else None,
        dialect=engine.dialect.name,
    )
    log.info("metastore at %s: %s", engine.url.render_as_string(hide_password=True), profile.describe())
    if not profile.decisions_table:
        log.warning("Hive metastore without %s: Initiator decisions are not recorded ('why' shows only the queue "
                    "and history); create the table with: airflow-acid hive create-decisions-table", DECISIONS_TABLE)
    elif not profile.decision_log_table:
        log.warning("Hive metastore without %s: shadow cycles record only the latest decision, so 'shadow report' "
                    "cannot follow decisions over time; add it with: airflow-acid hive create-decisions-table",
                    DECISION_LOG_TABLE)
    return profile


def _collation(engine: Engine, table: str, column: str) -> str | None:
    with engine.connect() as conn:
        collation = conn.execute(sa.text(
            "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
            "AND TABLE_NAME = :t AND COLUMN_NAME = :c"), {"t": table, "c": column}).scalar()
    return collation if collation and re.fullmatch(r"[A-Za-z0-9_]+", collation) else None
