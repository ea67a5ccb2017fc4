"""Pre-flight inspection of a live metastore database: its schema as a compact, dialect-normalised description
(tables, columns, types, primary keys, indexes, foreign keys, unique constraints), the drift between that and
Hive's reference for its VERSION, and the server facts that matter (isolation level, time zone, Hive's mutexes).

Everything here only reads. The reference descriptions (:mod:`.hive_reference`) are made by the same
:func:`describe_schema` on a database where Hive's schema script ran, so a correct database shows no drift.
"""

from __future__ import annotations

import enum
import re
from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.metastore.hive_mutex import HIVE_MUTEX_KEYS
from airflow_acid.metastore.hive_schema import VERSION
from airflow_acid.metastore.schema import AUX_TABLE

Description = dict[str, Any]
"""``{"tables": {name: {"columns": {col: {"type", "nullable", "default"}}, "primary_key", "indexes",
"foreign_keys", "unique"}}}`` — JSON-ready (``default``: the column has a default or is an identity)."""

_INT_WIDTH = re.compile(r"\b(tinyint|smallint|mediumint|int|integer|bigint)\(\d+\)")
_CHARSET = re.compile(r"\s+(character set|charset|collate)\s+\S+")
_SYNONYMS = {"int8": "bigint", "int4": "int", "integer": "int", "int2": "smallint", "bool": "boolean",
             "float8": "double precision", "double": "double precision", "float4": "real",
             "character varying": "varchar", "character": "char", "timestamp without time zone": "timestamp",
             "bytea": "binary data", "blob": "binary data", "longblob": "binary data", "mediumblob": "binary data"}


def normalise_type(type_: sa.types.TypeEngine[Any], dialect: sa.engine.Dialect) -> str:
    """One spelling per type: lower case, no integer display widths or character sets, synonyms folded
    (int8 → bigint, character varying → varchar, bytea/blob → binary data); lengths stay (varchar(767) ≠ varchar(256)).
    """
    text = type_.compile(dialect=dialect).lower()
    text = _CHARSET.sub("", text)
    text = _INT_WIDTH.sub(r"\1", text)
    base, sep, rest = text.partition("(")
    base = _SYNONYMS.get(base.strip(), base.strip())
    return f"{base}{sep}{rest}".strip()


def describe_schema(conn: Connection) -> Description:
    """The live schema of ``conn``'s database (its default schema), normalised as :func:`normalise_type` says.
    Index entries that only back a unique constraint are listed under ``unique``, not twice. On MySQL/MariaDB keys
    come from information_schema: SQLAlchemy's parser of SHOW CREATE TABLE skips every line containing
    "PARTITION", which drops Hive's constraints on PARTITIONS, PARTITION_KEY_VALS …"""
    inspector = sa.inspect(conn)
    dialect = conn.dialect
    mysql_keys = _mysql_keys(conn) if dialect.name in ("mysql", "mariadb") else None
    tables: dict[str, Any] = {}
    for table in sorted(inspector.get_table_names()):
        columns = {c["name"]: {"type": normalise_type(c["type"], dialect), "nullable": bool(c["nullable"]),
                               "default": c.get("default") is not None or bool(c.get("autoincrement") is True)}
                   for c in inspector.get_columns(table)}
        if mysql_keys is not None:
            keys = mysql_keys.get(table) or _empty_keys()
        else:
            keys = _inspected_keys(inspector, table)
        tables[table] = {"columns": columns, **keys}
    return {"tables": tables}


def _empty_keys() -> dict[str, Any]:
    return {"primary_key": [], "indexes": [], "foreign_keys": [], "unique": []}


def _inspected_keys(inspector: Any, table: str) -> dict[str, Any]:
    """Primary key, indexes, foreign keys and unique constraints of ``table`` through SQLAlchemy's inspector."""
    pk = list(inspector.get_pk_constraint(table).get("constrained_columns") or [])
    uniques = [{"name": u["name"], "columns": list(u["column_names"])} for u in inspector.get_unique_constraints(table)]
    unique_names = {u["name"] for u in uniques}
    indexes = [{"name": i["name"], "columns": [str(c) for c in i["column_names"]], "unique": bool(i["unique"])}
               for i in inspector.get_indexes(table)
               if not i.get("duplicates_constraint") and i["name"] not in unique_names]
    fks = [{"name": f["name"], "columns": list(f["constrained_columns"]), "referred_table": f["referred_table"],
            "referred_columns": list(f["referred_columns"])} for f in inspector.get_foreign_keys(table)]
    return _sorted_keys(pk, indexes, fks, uniques)


def _sorted_keys(pk: list[str], indexes: list[dict[str, Any]], fks: list[dict[str, Any]],
                 uniques: list[dict[str, Any]]) -> dict[str, Any]:
    def by_name(entry: dict[str, Any]) -> str:
        return str(entry["name"])

    return {"primary_key": pk, "indexes": sorted(indexes, key=by_name), "foreign_keys": sorted(fks, key=by_name),
            "unique": sorted(uniques, key=by_name)}


def _mysql_keys(conn: Connection) -> dict[str, dict[str, Any]]:
    """Every table's keys on MySQL/MariaDB from information_schema (STATISTICS: primary key, unique and other
    indexes; KEY_COLUMN_USAGE: foreign keys)."""
    stats = conn.execute(sa.text(
        "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
        "WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX")).all()
    refs = conn.execute(sa.text(
        "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "
        "FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() "
        "AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION")).all()
    indexes: dict[str, dict[str, dict[str, Any]]] = {}
    for table, name, non_unique, column in stats:
        entry = indexes.setdefault(table, {}).setdefault(name, {"name": name, "columns": [],
                                                                 "unique": not int(non_unique)})
        entry["columns"].append(column)
    fks: dict[str, dict[str, dict[str, Any]]] = {}
    for table, name, column, ref_table, ref_column in refs:
        entry = fks.setdefault(table, {}).setdefault(name, {"name": name, "columns": [], "referred_table": ref_table,
                                                            "referred_columns": []})
        entry["columns"].append(column)
        entry["referred_columns"].append(ref_column)
    result: dict[str, dict[str, Any]] = {}
    for table in set(indexes) | set(fks):
        named = indexes.get(table, {})
        pk = named["PRIMARY"]["columns"] if "PRIMARY" in named else []
        uniques = [{"name": n, "columns": e["columns"]} for n, e in named.items() if e["unique"] and n != "PRIMARY"]
        others = [e for n, e in named.items() if not e["unique"]]
        result[table] = _sorted_keys(pk, others, list(fks.get(table, {}).values()), uniques)
    return result


class DriftKind(str, enum.Enum):
    """What differs between the live schema and the reference."""

    MISSING_TABLE = "missing table"
    EXTRA_TABLE = "extra table"
    MISSING_COLUMN = "missing column"
    EXTRA_COLUMN = "extra column"
    REQUIRED_EXTRA_COLUMN = "extra NOT NULL column without default"
    COLUMN_TYPE = "column type"
    NULLABILITY = "nullability"
    PRIMARY_KEY = "primary key"
    MISSING_INDEX = "missing index"
    INDEX_CHANGED = "index changed"
    EXTRA_INDEX = "extra index"
    MISSING_FOREIGN_KEY = "missing foreign key"
    FOREIGN_KEY_CHANGED = "foreign key changed"
    EXTRA_FOREIGN_KEY = "extra foreign key"
    MISSING_UNIQUE = "missing unique constraint"
    UNIQUE_CHANGED = "unique constraint changed"
    EXTRA_UNIQUE = "extra unique constraint"

    @property
    def harmless(self) -> bool:
        """Additions (tables, nullable or defaulted columns, indexes, constraints Hive does not have) do not break
        Hive or airflow-acid; a NOT NULL column without a default breaks every insert that does not name it."""
        return self.name.startswith("EXTRA_")


@dataclass(frozen=True)
class Drift:
    """One difference: ``table`` (and ``name``: a column, index or constraint), what Hive's schema has
    (``expected``) and what the database has (``actual``)."""

    kind: DriftKind
    table: str
    name: str | None = None
    expected: str | None = None
    actual: str | None = None

    def describe(self) -> str:
        """One line, e.g. ``column type TXNS.TXN_ID: expected bigint, found int`` or ``missing index T.I (A, B)``."""
        where = f"{self.table}.{self.name}" if self.name else self.table
        if self.expected is not None and self.actual is not None:
            return f"{self.kind.value} {where}: expected {self.expected}, found {self.actual}"
        detail = self.expected if self.expected is not None else self.actual
        return f"{self.kind.value} {where}" + (f" {detail}" if detail else "")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "kind": self.kind.value, "harmless": self.kind.harmless}


def _cols(entry: dict[str, Any]) -> str:
    return ", ".join(entry["columns"])


def _fk_text(fk: dict[str, Any]) -> str:
    return f"({_cols(fk)}) → {fk['referred_table']}({', '.join(fk['referred_columns'])})"


def _index_text(index: dict[str, Any]) -> str:
    return ("unique " if index["unique"] else "") + f"({_cols(index)})"


def _by_name(entries: list[dict[str, Any]], text: Any) -> dict[str, str]:
    """Entries keyed by name (an unnamed one by its content) → their one-line text."""
    return {str(e["name"] or text(e)): text(e) for e in entries}


def compare(expected: Description, actual: Description) -> list[Drift]:
    """Every difference between ``expected`` (Hive's reference) and ``actual`` (the live database), table by table;
    names compare as Hive spells them (upper case; PostgreSQL keeps the case of quoted names)."""
    drifts: list[Drift] = []
    want, have = expected["tables"], actual["tables"]
    for table in sorted(set(want) - set(have)):
        drifts.append(Drift(DriftKind.MISSING_TABLE, table))
    for table in sorted(set(have) - set(want)):
        drifts.append(Drift(DriftKind.EXTRA_TABLE, table))
    for table in sorted(set(want) & set(have)):
        drifts.extend(_compare_table(table, want[table], have[table]))
    return drifts


def _compare_table(table: str, want: dict[str, Any], have: dict[str, Any]) -> list[Drift]:
    drifts: list[Drift] = []
    for column, spec in want["columns"].items():
        found = have["columns"].get(column)
        if found is None:
            drifts.append(Drift(DriftKind.MISSING_COLUMN, table, column, expected=spec["type"]))
            continue
        if found["type"] != spec["type"]:
            drifts.append(Drift(DriftKind.COLUMN_TYPE, table, column, spec["type"], found["type"]))
        if found["nullable"] != spec["nullable"]:
            drifts.append(Drift(DriftKind.NULLABILITY, table, column, _null(spec), _null(found)))
    for column, spec in have["columns"].items():
        if column not in want["columns"]:
            required = not spec["nullable"] and not spec.get("default", True)
            drifts.append(Drift(DriftKind.REQUIRED_EXTRA_COLUMN if required else DriftKind.EXTRA_COLUMN, table,
                                column, actual=spec["type"]))
    if want["primary_key"] != have["primary_key"]:
        drifts.append(Drift(DriftKind.PRIMARY_KEY, table, None, _pk(want["primary_key"]),
                            _pk(have["primary_key"])))
    drifts.extend(_compare_named(table, want["indexes"], have["indexes"], _index_text, DriftKind.MISSING_INDEX,
                                 DriftKind.INDEX_CHANGED, DriftKind.EXTRA_INDEX))
    drifts.extend(_compare_named(table, want["foreign_keys"], have["foreign_keys"], _fk_text,
                                 DriftKind.MISSING_FOREIGN_KEY, DriftKind.FOREIGN_KEY_CHANGED,
                                 DriftKind.EXTRA_FOREIGN_KEY))
    drifts.extend(_compare_named(table, want["unique"], have["unique"], lambda u: f"({_cols(u)})",
                                 DriftKind.MISSING_UNIQUE, DriftKind.UNIQUE_CHANGED, DriftKind.EXTRA_UNIQUE))
    return drifts


def _pk(columns: list[str]) -> str:
    return f"({', '.join(columns)})" if columns else "none"


def _null(spec: dict[str, Any]) -> str:
    return "NULL" if spec["nullable"] else "NOT NULL"


def _compare_named(table: str, want: list[dict[str, Any]], have: list[dict[str, Any]], text: Any,
                   missing: DriftKind, changed: DriftKind, extra: DriftKind) -> list[Drift]:
    """Indexes or constraints by name; one with the same content under another name (a name the engine made up)
    counts as present."""
    wanted, found = _by_name(want, text), _by_name(have, text)
    drifts: list[Drift] = []
    unmatched_found = {n: t for n, t in found.items() if n not in wanted}
    for name, spec in wanted.items():
        if name in found:
            if found[name] != spec:
                drifts.append(Drift(changed, table, name, spec, found[name]))
        elif spec in unmatched_found.values():
            renamed = next(n for n, t in unmatched_found.items() if t == spec)
            del unmatched_found[renamed]
        else:
            drifts.append(Drift(missing, table, name, expected=spec))
    for name, spec in unmatched_found.items():
        drifts.append(Drift(extra, table, name, actual=spec))
    return drifts


# --- server facts ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatabaseFacts:
    """What the server says about itself and about the Hive services that used it."""

    dialect: str
    server_version: str
    isolation_level: str | None
    """The server's default for new sessions (airflow-acid's own connections use READ COMMITTED)."""
    time_zone: str | None
    hive_version: str | None
    """VERSION.SCHEMA_VERSION, None without a VERSION table."""
    alembic_revision: str | None
    """airflow-acid's own schema revision (alembic_version), None without one."""
    mutex_last_run_ms: dict[str, int]
    """AUX_TABLE's MT_KEY2 per Hive service mutex (the last release: Hive's service or airflow-acid's)."""
    now_ms: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def database_facts(conn: Connection) -> DatabaseFacts:
    """Read the facts; tables that are absent leave their fact None/empty."""
    inspector = sa.inspect(conn)
    names = set(inspector.get_table_names())
    dialect = conn.dialect.name
    hive_version = None
    if "VERSION" in names:
        hive_version = conn.execute(sa.select(VERSION.c.SCHEMA_VERSION).limit(1)).scalar()
    revision = None
    if "alembic_version" in names:
        revision = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    mutexes: dict[str, int] = {}
    if "AUX_TABLE" in names:
        rows = conn.execute(sa.select(AUX_TABLE.c.MT_KEY1, AUX_TABLE.c.MT_KEY2)
                            .where(AUX_TABLE.c.MT_KEY1.in_(HIVE_MUTEX_KEYS))).all()
        mutexes = {str(k): int(v) for k, v in rows if v}
    if dialect == "postgresql":
        isolation = conn.execute(sa.text("SHOW default_transaction_isolation")).scalar()
        zone = conn.execute(sa.text("SHOW TimeZone")).scalar()
        now = conn.execute(sa.text("SELECT CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)")).scalar()
    elif dialect in ("mysql", "mariadb"):
        isolation = _first_variable(conn, ("global.transaction_isolation", "global.tx_isolation"))
        zone = conn.execute(sa.text("SELECT @@global.time_zone")).scalar()
        if zone == "SYSTEM":
            zone = f"SYSTEM ({conn.execute(sa.text('SELECT @@system_time_zone')).scalar()})"
        now = conn.execute(sa.text("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")).scalar()
    else:
        isolation, zone = "SERIALIZABLE", None  # SQLite: one writer at a time
        now = conn.execute(sa.text("SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")).scalar()
    server = ".".join(str(p) for p in (conn.dialect.server_version_info or ()))
    return DatabaseFacts(dialect=dialect, server_version=server,
                         isolation_level=str(isolation).upper().replace("-", " ") if isolation else None,
                         time_zone=str(zone) if zone is not None else None, hive_version=hive_version,
                         alembic_revision=revision, mutex_last_run_ms=mutexes, now_ms=int(now or 0))


def _first_variable(conn: Connection, names: tuple[str, ...]) -> str | None:
    """The first server variable of ``names`` that exists (MySQL 8 dropped tx_isolation, MariaDB < 11 lacks
    transaction_isolation)."""
    for name in names:
        try:
            with conn.begin_nested():
                return conn.execute(sa.text(f"SELECT @@{name}")).scalar()
        except sa.exc.DBAPIError:
            continue
    return None
