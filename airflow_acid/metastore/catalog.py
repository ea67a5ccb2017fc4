"""The catalog: databases, transactional tables and partitions in Hive's DBS/TBLS/SDS/… tables.

Every call is one database transaction: a failing call leaves nothing half-written. Names follow Hive's
identifier rules and are stored lower-cased. Tables created here are transactional (``transactional=true``, the
default; ``transactional_properties`` is ``default`` (full ACID) or ``insert_only`` and cannot change after
creation), or plain ORC tables (``transactional=false``) that ``SET TBLPROPERTIES ('transactional'='true')``
converts.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from typing_extensions import Unpack

from airflow_acid.metastore import column_changes
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.db_errors import sqlstate
from airflow_acid.metastore.drops import in_use
from airflow_acid.metastore.errors import (
    AlreadyExistsError,
    HiveMetastoreError,
    InvalidInputError,
    MetastoreError,
    NoSuchObjectError,
)
from airflow_acid.metastore.flavour import DEFAULT_CATALOG, profile_of
from airflow_acid.metastore.hive_schema import HIVE_DBS, HIVE_SDS, HIVE_SERDE_PARAMS
from airflow_acid.metastore.hive_schema import SERDES as HIVE_SERDES
from airflow_acid.metastore.hive_types import is_primitive, normalize_type
from airflow_acid.metastore.locations import check_free, normalize_location
from airflow_acid.metastore.partitions import (
    make_partition_name,
    normalize_spec,
    parse_partition_name,
    partition_location,
)
from airflow_acid.metastore.schema import (
    BUCKETING_COLS,
    COLUMNS_V2,
    DATABASE_PARAMS,
    DBS,
    KEY_CONSTRAINTS,
    PARTITION_KEYS,
    PARTITION_PARAMS,
    PARTITIONS,
    SDS,
    SERDE_PARAMS,
    SERDES,
    TABLE_PARAMS,
    TBLS,
)
from airflow_acid.metastore.table_properties import (
    COMPACTOR_THRESHOLD_PREFIX,
    TRANSACTIONAL,
    TRANSACTIONAL_PROPERTIES,
    check_properties,
    property_value,
    validate_table_properties,
)
from airflow_acid.metastore.txn_records import delete_txn_records

log = logging.getLogger(__name__)

DEFAULT_DATABASE = "default"
"""Hive's current database when none is named; every warehouse has it (created with its first table)."""
MANAGED_TABLE = "MANAGED_TABLE"
ORC_INPUT_FORMAT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
VIRTUAL_VIEW = "VIRTUAL_VIEW"
"""TBLS.TBL_TYPE of a view (its query in VIEW_ORIGINAL_TEXT / VIEW_EXPANDED_TEXT, no data)."""
VIEW_INPUT_FORMAT = "org.apache.hadoop.mapred.SequenceFileInputFormat"
VIEW_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat"
"""The formats Hive records in a view's storage descriptor."""
TEXT_INPUT_FORMAT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
MAX_BUCKETS = 4096  # BucketCodec V1 has 12 bits for the bucket id

# Hive keys stored lower-case whatever case the user typed (other keys keep their case, e.g. Spark confs).
_CANONICAL_KEYS = (TRANSACTIONAL, TRANSACTIONAL_PROPERTIES, "no_auto_compaction", "no_cleanup",
                   "hive.compactor.worker.pool")
_LOWERCASE_VALUES = (TRANSACTIONAL, TRANSACTIONAL_PROPERTIES)  # stored as Hive spells them

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")
MAX_PROPERTY_KEY_LENGTH = 256
"""Width of TABLE_PARAMS.PARAM_KEY: a longer key was a raw database error on PostgreSQL/MariaDB (SQLite kept it)."""
MAX_TABLE_NAME_LENGTH = 255
"""The table name is its directory's name: longer names fail on every common filesystem at the first write."""


def validate_name(kind: str, name: object, max_length: int = 128) -> str:
    """A Hive identifier (letters, digits, underscore), lower-cased; InvalidInputError otherwise."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise InvalidInputError(
            f"{kind} name {_quoted(name)} is not valid: use only letters, digits and underscores")
    if len(name) > max_length:
        raise InvalidInputError(f"{kind} name {_quoted(name)} is longer than {max_length} characters")
    return name.lower()


def _quoted(value: object, limit: int = 60) -> str:
    """``repr`` of a user's value for a message, at most ``limit`` characters of it (a huge name is not echoed)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value)} characters)"
    return repr(value)


@dataclass(frozen=True)
class ColumnInfo:
    """One column or partition key: name and Hive type."""

    name: str
    type: str
    comment: str | None = None
    default: str | None = None
    """The column's DEFAULT constraint as Hive stores its text (``1``, ``'x'``, ``CURRENT_TIMESTAMP()``), or None."""


DEFAULT_CONSTRAINT = 4
"""KEY_CONSTRAINTS.CONSTRAINT_TYPE of a DEFAULT constraint (Hive's MConstraint.DEFAULT_CONSTRAINT)."""
ENABLE = 4
"""ENABLE_VALIDATE_RELY of Hive's default ``ENABLE NOVALIDATE NORELY``."""


@dataclass(frozen=True)
class DatabaseInfo:
    """A row of DBS with its DATABASE_PARAMS."""

    name: str
    location: str
    description: str | None
    owner: str | None
    create_time: int | None
    params: dict[str, str] = field(default_factory=dict)

    def param(self, key: str) -> str | None:
        """A database parameter by case-insensitive key (Hive accepts e.g. NO_AUTO_COMPACTION)."""
        return property_value(self.params, key)


@dataclass(frozen=True)
class TableInfo:
    """A table with its storage, columns, partition keys, buckets and TBLPROPERTIES."""

    database: str
    name: str
    columns: list[ColumnInfo]
    partition_keys: list[ColumnInfo]
    bucket_cols: list[str]
    num_buckets: int
    location: str
    properties: dict[str, str]
    owner: str | None = None
    create_time: int | None = None
    table_type: str = MANAGED_TABLE
    input_format: str | None = None
    """The storage descriptor's InputFormat class (``OrcInputFormat`` for ORC tables)."""
    output_format: str | None = None
    serde: str | None = None
    """The SerDe class (SERDES.SLIB); None when the metastore recorded none (airflow-acid's ORC tables)."""
    serde_params: dict[str, str] = field(default_factory=dict)
    """SERDE_PARAMS: ``field.delim``, ``serialization.format``, ``serialization.null.format``, ``escape.delim``…"""
    view_original_text: str | None = None
    view_expanded_text: str | None = None
    """A view's query as written, and with its names qualified (what readers run)."""

    @property
    def is_view(self) -> bool:
        return self.table_type == VIRTUAL_VIEW

    @property
    def is_text(self) -> bool:
        """Stored as text (TextInputFormat) — read as Hive's LazySimpleSerDe lays rows out."""
        return self.input_format == TEXT_INPUT_FORMAT

    @property
    def is_external(self) -> bool:
        return self.table_type == EXTERNAL_TABLE or (self.property("EXTERNAL") or "").upper() == "TRUE"

    @property
    def full_name(self) -> str:
        """``db.table`` as used in ValidWriteIdList strings and messages."""
        return f"{self.database}.{self.name}"

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_keys)

    @property
    def is_transactional(self) -> bool:
        return (self.property(TRANSACTIONAL) or "").lower() == "true"

    @property
    def is_insert_only(self) -> bool:
        return (self.property(TRANSACTIONAL_PROPERTIES) or "").lower() == "insert_only"

    def property(self, key: str) -> str | None:
        """A table property by case-insensitive key."""
        return property_value(self.properties, key)

    def partition_spec(self, spec: Mapping[str, object]) -> dict[str, str]:
        """Check a full partition spec for this table; return it normalized (InvalidInputError if bad)."""
        return normalize_spec([k.name for k in self.partition_keys], spec, table=self.full_name)

    def partition_name(self, spec: Mapping[str, object]) -> str:
        """Hive's partition name (``k1=v1/k2=v2``) for a spec of this table."""
        return make_partition_name(self.partition_spec(spec))


@dataclass(frozen=True)
class TableStorage:
    """How a table's files are laid out, as Hive's storage descriptor records it: InputFormat / OutputFormat class
    names and the SerDe with its parameters (SERDES / SERDE_PARAMS)."""

    input_format: str
    output_format: str
    serde: str
    serde_params: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_orc(self) -> bool:
        return self.input_format == ORC_INPUT_FORMAT

    @classmethod
    def text(cls, serde_params: Mapping[str, str] | None = None) -> TableStorage:
        """STORED AS TEXTFILE: Hive's TextInputFormat, HiveIgnoreKeyTextOutputFormat and LazySimpleSerDe."""
        return cls(TEXT_INPUT_FORMAT, TEXT_OUTPUT_FORMAT, LAZY_SIMPLE_SERDE, dict(serde_params or {}))


ORC_STORAGE = TableStorage(ORC_INPUT_FORMAT, ORC_OUTPUT_FORMAT, ORC_SERDE)


@dataclass(frozen=True)
class PartitionInfo:
    """A row of PARTITIONS with its location and PARTITION_PARAMS."""

    database: str
    table: str
    name: str
    spec: dict[str, str]
    location: str
    create_time: int
    params: dict[str, str] = field(default_factory=dict)

    def param(self, key: str) -> str | None:
        return property_value(self.params, key)


def _as_text(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise InvalidInputError(f"property {key!r}: value must be a string, number or boolean, not {type(value).__name__}")


def _canonical_key(key: object) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidInputError(f"property key {key!r} must be a string with a visible character")
    if len(key) > MAX_PROPERTY_KEY_LENGTH:
        raise InvalidInputError(f"property key {key[:40]!r}… is {len(key)} characters long; the limit is "
                                f"{MAX_PROPERTY_KEY_LENGTH} (TABLE_PARAMS.PARAM_KEY)")
    lowered = key.lower()
    if lowered in _CANONICAL_KEYS or lowered.startswith(COMPACTOR_THRESHOLD_PREFIX):
        return lowered
    return key


def merge_properties(existing: Mapping[str, str], updates: Mapping[str, object],
                     unset: Iterable[str] = ()) -> dict[str, str]:
    """Apply SET and UNSET TBLPROPERTIES: keys match case-insensitively; Hive's own keys are stored lower-case."""
    result = dict(existing)
    for key in unset:
        for k in [k for k in result if k.lower() == str(key).lower()]:
            del result[k]
    for key, value in updates.items():
        canonical = _canonical_key(key)
        for k in [k for k in result if k.lower() == canonical.lower()]:
            del result[k]
        text = _as_text(canonical, value)
        result[canonical] = text.strip().lower() if canonical in _LOWERCASE_VALUES else text
    return result


class Catalog:
    """Databases, tables and partitions of the warehouse. On a Hive metastore it is read-only: DDL belongs to Hive."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def check_ddl(self, what: str) -> None:
        """HiveMetastoreError ("run the DDL in Hive") when the catalog is a Hive metastore's: checked before a
        statement's other checks so the user learns first that the statement belongs in Hive."""
        self._refuse_ddl(what)

    def _refuse_ddl(self, what: str) -> None:
        """DDL on a Hive metastore is Hive's (HMS keeps ids, notifications, statistics and privileges in step)."""
        if self.db.profile.is_hive:
            raise HiveMetastoreError(
                f"cannot {what}: the metastore at {self.db.url} is a Hive metastore and its catalog is read-only for "
                "airflow-acid; run the DDL in Hive (beeline / HiveServer2) or through the Hive Metastore service. "
                "Transactional writes into existing tables and partitions work here.")

    # --- databases ----------------------------------------------------------------------------------

    def create_database(self, name: str, location: str, *, description: str | None = None, owner: str | None = None,
                        params: Mapping[str, object] | None = None, if_not_exists: bool = False) -> DatabaseInfo:
        """Create a database at ``location`` (e.g. ``<warehouse>/<name>.db``) with optional parameters."""
        self._refuse_ddl(f"create database {name}")
        name = validate_name("database", name)
        if not isinstance(location, str) or not location.strip():
            raise InvalidInputError(f"database {name}: location must be a non-empty path or URI")
        clean_params = {str(k): _as_text(str(k), v) for k, v in (params or {}).items()}

        def work(conn: Connection) -> DatabaseInfo:
            if _database_id(conn, name) is not None:
                if if_not_exists:
                    return _load_database(conn, name)
                raise AlreadyExistsError(f"database {name} already exists")
            db_id = _insert(conn, DBS, {"NAME": name, "DESC": description, "DB_LOCATION_URI": location.rstrip("/"),
                                        "OWNER_NAME": owner, "CREATE_TIME": now_ms(conn)}, name=f"database {name}")
            for key, value in clean_params.items():
                conn.execute(sa.insert(DATABASE_PARAMS).values(DB_ID=db_id, PARAM_KEY=key, PARAM_VALUE=value))
            return _load_database(conn, name)

        return self.db.run(work, what=f"create database {name}")

    def get_database(self, name: str) -> DatabaseInfo:
        name = validate_name("database", name)
        return self.db.run(lambda conn: _load_database(conn, name), what=f"get database {name}")

    def list_databases(self) -> list[str]:
        def work(conn: Connection) -> list[str]:
            if profile_of(conn).is_hive:
                return list(conn.execute(sa.select(HIVE_DBS.c.NAME).where(HIVE_DBS.c.CTLG_NAME == DEFAULT_CATALOG)
                                         .order_by(HIVE_DBS.c.NAME)).scalars())
            return list(conn.execute(sa.select(DBS.c.NAME).order_by(DBS.c.NAME)).scalars())

        return self.db.run(work, what="list databases")

    def alter_database_params(self, name: str, params: Mapping[str, object | None]) -> DatabaseInfo:
        """Set (or, with value None, remove) database parameters such as ``no_auto_compaction``."""
        self._refuse_ddl(f"alter database {name}")
        name = validate_name("database", name)

        def work(conn: Connection) -> DatabaseInfo:
            db_id = _require_database(conn, name)
            for key, value in params.items():
                conn.execute(sa.delete(DATABASE_PARAMS).where(DATABASE_PARAMS.c.DB_ID == db_id,
                                                              DATABASE_PARAMS.c.PARAM_KEY == str(key)))
                if value is not None:
                    conn.execute(sa.insert(DATABASE_PARAMS).values(DB_ID=db_id, PARAM_KEY=str(key),
                                                                   PARAM_VALUE=_as_text(str(key), value)))
            return _load_database(conn, name)

        return self.db.run(work, what=f"alter database {name}")

    def drop_database(self, name: str, *, cascade: bool = False, if_exists: bool = False) -> None:
        """Drop a database; with tables in it only when ``cascade`` (then its tables are dropped too)."""
        self._refuse_ddl(f"drop database {name}")
        name = validate_name("database", name)

        def work(conn: Connection) -> None:
            db_id = _database_id(conn, name)
            if db_id is None:
                if if_exists:
                    return
                raise NoSuchObjectError(f"database {name} does not exist")
            tables = list(conn.execute(sa.select(TBLS.c.TBL_ID, TBLS.c.TBL_NAME).where(TBLS.c.DB_ID == db_id)))
            if tables and not cascade:
                raise InvalidInputError(
                    f"database {name} is not empty (tables: {', '.join(sorted(t.TBL_NAME for t in tables))}); "
                    "drop them first or use cascade")
            for table in tables:
                _delete_table(conn, table.TBL_ID)
            delete_txn_records(conn, name)
            conn.execute(sa.delete(DATABASE_PARAMS).where(DATABASE_PARAMS.c.DB_ID == db_id))
            conn.execute(sa.delete(DBS).where(DBS.c.DB_ID == db_id))

        self.db.run(work, what=f"drop database {name}")

    # --- tables -------------------------------------------------------------------------------------

    def create_table(self, database: str, name: str, columns: Sequence[tuple[str, str] | ColumnInfo], *,
                     partition_keys: Sequence[tuple[str, str] | ColumnInfo] = (), bucket_cols: Sequence[str] = (),
                     num_buckets: int | None = None, location: str | None = None,
                     properties: Mapping[str, object] | None = None, owner: str | None = None,
                     if_not_exists: bool = False, storage: TableStorage = ORC_STORAGE,
                     external: bool = False) -> TableInfo:
        """Create a table (transactional unless ``properties`` say ``transactional=false``); ``location`` defaults to
        ``<database location>/<name>``. ``storage``: its formats and SerDe (ORC by default; a text table is never
        transactional: Hive's ACID tables are ORC). ``external``: Hive's EXTERNAL_TABLE with ``EXTERNAL=TRUE``
        (never transactional; DROP TABLE keeps its files)."""
        self._refuse_ddl(f"create table {database}.{name}")
        database = validate_name("database", database)
        name = validate_name("table", name, MAX_TABLE_NAME_LENGTH)
        full = f"{database}.{name}"
        cols = _columns(full, columns, "column")
        if not cols:
            raise InvalidInputError(f"table {full} needs at least one column")
        keys = _columns(full, partition_keys, "partition key")
        col_names = {c.name for c in cols}
        for key in keys:
            if key.name in col_names:
                raise InvalidInputError(f"table {full}: partition key {key.name} is also a column; use another name")
            if not is_primitive(key.type):
                raise InvalidInputError(f"table {full}: partition key {key.name} must have a primitive type, not {key.type}")
        buckets = [validate_name("bucket column", c, 256) for c in bucket_cols]
        for col in buckets:
            if col not in col_names:
                raise InvalidInputError(f"table {full}: bucket column {col} is not a column of the table")
        if len(set(buckets)) != len(buckets):
            raise InvalidInputError(f"table {full}: a bucket column is listed twice in {list(bucket_cols)}")
        if buckets:
            if isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or not 1 <= num_buckets <= MAX_BUCKETS:
                raise InvalidInputError(
                    f"table {full}: num_buckets must be an integer between 1 and {MAX_BUCKETS} when bucket columns "
                    f"are given, not {num_buckets!r}")
        elif num_buckets not in (None, -1):
            raise InvalidInputError(f"table {full}: num_buckets={num_buckets!r} needs bucket columns (bucket_cols)")
        props = merge_properties({}, dict(properties or {}))
        if external:
            props["EXTERNAL"] = "TRUE"
        if property_value(props, TRANSACTIONAL) is None:
            props[TRANSACTIONAL] = "false" if external or not storage.is_orc else "true"
        if (property_value(props, TRANSACTIONAL) or "").strip().lower() == "true" and (external or not storage.is_orc):
            why = "an external table" if external else f"a table stored with {storage.input_format}"
            raise InvalidInputError(f"table {full}: {why} cannot be transactional (Hive's ACID tables are managed ORC "
                                    "tables); leave out 'transactional'='true' or create a managed ORC table")
        validate_table_properties(full, props)
        if location is not None and (not isinstance(location, str) or not location.strip()):
            raise InvalidInputError(f"table {full}: location must be a non-empty path or URI")
        if location is not None:
            location = normalize_location(location, f"table {full}")

        def work(conn: Connection) -> TableInfo:
            db_id = _require_database(conn, database)
            if _table_id(conn, db_id, name) is not None:
                if if_not_exists:
                    return _load_table(conn, database, name)
                raise AlreadyExistsError(f"table {full} already exists")
            db_location = conn.execute(sa.select(DBS.c.DB_LOCATION_URI).where(DBS.c.DB_ID == db_id)).scalar_one()
            table_location = (location or f"{db_location.rstrip('/')}/{name}").rstrip("/")
            check_free(conn, table_location, f"table {full}")
            sd_id = _insert(conn, SDS, {"LOCATION": table_location, "INPUT_FORMAT": storage.input_format,
                                        "OUTPUT_FORMAT": storage.output_format,
                                        "NUM_BUCKETS": num_buckets if buckets else -1}, name=f"table {full}")
            if not storage.is_orc:  # Hive's SERDES / SERDE_PARAMS rows (keyed by SD_ID in airflow-acid's schema)
                _insert_serde(conn, sd_id, storage)
            tbl_id = _insert(conn, TBLS, {"DB_ID": db_id, "TBL_NAME": name,
                                          "TBL_TYPE": EXTERNAL_TABLE if external else MANAGED_TABLE, "OWNER": owner,
                                          "CREATE_TIME": now_ms(conn), "SD_ID": sd_id}, name=f"table {full}")
            _insert_columns(conn, sd_id, tbl_id, cols, keys, buckets)
            _insert_table_params(conn, tbl_id, props)
            return _load_table(conn, database, name)

        return self.db.run(work, what=f"create table {full}")

    def create_view(self, database: str, name: str, columns: Sequence[ColumnInfo], *, original_text: str,
                    expanded_text: str, replace: bool = False, owner: str | None = None) -> TableInfo:
        """CREATE [OR REPLACE] VIEW as Hive records it: a TBLS row of type VIRTUAL_VIEW with its query texts, its
        columns (COLUMNS_V2) and a storage descriptor without location. ``replace`` swaps an existing view's query
        and columns (a table of that name is never replaced)."""
        self._refuse_ddl(f"create view {database}.{name}")
        database = validate_name("database", database)
        name = validate_name("table", name, MAX_TABLE_NAME_LENGTH)
        full = f"{database}.{name}"
        cols = _columns(full, columns, "column")

        def work(conn: Connection) -> TableInfo:
            db_id = _require_database(conn, database)
            tbl_id = _table_id(conn, db_id, name)
            if tbl_id is not None:
                existing = _load_table(conn, database, name)
                if not existing.is_view:
                    raise AlreadyExistsError(f"Table {full} already exists and is not a view; drop it or choose "
                                             "another name")
                if not replace:
                    raise AlreadyExistsError(f"View {full} already exists; use CREATE OR REPLACE VIEW or ALTER "
                                             "VIEW … AS")
                _delete_table(conn, tbl_id)
            sd_id = _insert(conn, SDS, {"LOCATION": "", "INPUT_FORMAT": VIEW_INPUT_FORMAT,
                                        "OUTPUT_FORMAT": VIEW_OUTPUT_FORMAT, "NUM_BUCKETS": -1}, name=f"view {full}")
            tbl_id = _insert(conn, TBLS, {"DB_ID": db_id, "TBL_NAME": name, "TBL_TYPE": VIRTUAL_VIEW, "OWNER": owner,
                                          "CREATE_TIME": now_ms(conn), "SD_ID": sd_id,
                                          "VIEW_ORIGINAL_TEXT": original_text,
                                          "VIEW_EXPANDED_TEXT": expanded_text}, name=f"view {full}")
            _insert_columns(conn, sd_id, tbl_id, cols, [], [])
            return _load_table(conn, database, name)

        return self.db.run(work, what=f"create view {full}")

    def list_views(self, database: str) -> list[str]:
        """The names of the database's views (SHOW VIEWS; none when the database does not exist)."""
        database = validate_name("database", database)

        def work(conn: Connection) -> list[str]:
            db_id = _database_id(conn, database)
            if db_id is None:
                return []
            return list(conn.execute(sa.select(TBLS.c.TBL_NAME).where(TBLS.c.DB_ID == db_id,
                                                                     TBLS.c.TBL_TYPE == VIRTUAL_VIEW)
                                     .order_by(TBLS.c.TBL_NAME)).scalars())

        return self.db.run(work, what=f"list views of {database}")

    def get_table(self, database: str, name: str) -> TableInfo:
        """The table's metadata; NoSuchObjectError if the database or table does not exist."""
        database = validate_name("database", database)
        name = validate_name("table", name, MAX_TABLE_NAME_LENGTH)
        return self.db.run(lambda conn: _load_table(conn, database, name), what=f"get table {database}.{name}")

    def table_exists(self, database: str, name: str) -> bool:
        try:
            self.get_table(database, name)
        except NoSuchObjectError:
            return False
        return True

    def list_tables(self, database: str) -> list[str]:
        database = validate_name("database", database)

        def work(conn: Connection) -> list[str]:
            db_id = _require_database(conn, database)
            return list(conn.execute(sa.select(TBLS.c.TBL_NAME).where(TBLS.c.DB_ID == db_id)
                                     .order_by(TBLS.c.TBL_NAME)).scalars())

        return self.db.run(work, what=f"list tables of {database}")

    def drop_table(self, database: str, name: str, *, if_exists: bool = False,
                   refuse_in_use: bool = False, holding: int | None = None) -> TableInfo | None:
        """Remove the table, its partitions, parameters and transactional records from the catalog (files are not
        touched); the table as it was (None when ``if_exists`` and there was none). ``refuse_in_use``: refuse, with
        nothing changed, while an open transaction writes it or a lock is held on it (:mod:`.drops`) other than
        ``holding``, the dropping statement's own EXCLUSIVE lock."""
        self._refuse_ddl(f"drop table {database}.{name}")
        database = validate_name("database", database)
        name = validate_name("table", name, MAX_TABLE_NAME_LENGTH)

        def work(conn: Connection) -> TableInfo | None:
            db_id = _database_id(conn, database)
            tbl_id = None if db_id is None else _table_id(conn, db_id, name)
            if tbl_id is None:
                if if_exists:
                    return None
                return _load_table(conn, database, name)  # raises Hive's "table not found"
            info = _load_table(conn, database, name)
            busy = in_use(conn, database, name, holding=holding) if refuse_in_use else None
            if busy is not None:
                raise InvalidInputError(f"cannot drop table {database}.{name} now: {busy}; nothing was changed. "
                                        "Drop it when those transactions have ended (SHOW TRANSACTIONS)")
            _delete_table(conn, tbl_id)
            delete_txn_records(conn, database, name)
            return info

        return self.db.run(work, what=f"drop table {database}.{name}")

    def in_use(self, database: str, name: str, partition: str | None = None) -> str | None:
        """Why the table (partition) cannot be dropped now (open writers, locks), or None (:mod:`.drops`)."""
        return self.db.run(lambda conn: in_use(conn, database, name, partition),
                           what=f"check use of {database}.{name}")

    def alter_table_properties(self, database: str, name: str, properties: Mapping[str, object] | None = None, *,
                               unset: Iterable[str] = ()) -> TableInfo:
        """ALTER TABLE … SET/UNSET TBLPROPERTIES with the transactional rules checked first."""
        self._refuse_ddl(f"alter the properties of table {database}.{name}")
        database = validate_name("database", database)
        name = validate_name("table", name, MAX_TABLE_NAME_LENGTH)
        unset = list(unset)

        def work(conn: Connection) -> TableInfo:
            table = _load_table(conn, database, name)
            updates = dict(properties or {})
            merged = merge_properties(table.properties, updates, unset)
            changed = merge_properties({}, updates)
            validate_table_properties(table.full_name, merged, previous=table.properties, unset=unset,
                                      changed=changed)
            tbl_id = _require_table_id(conn, database, name)
            conn.execute(sa.delete(TABLE_PARAMS).where(TABLE_PARAMS.c.TBL_ID == tbl_id))
            _insert_table_params(conn, tbl_id, merged)
            return _load_table(conn, database, name)

        return self.db.run(work, what=f"alter table {database}.{name}")

    def alter_table_columns(self, database: str, name: str, action: str, columns: Sequence[tuple[str, str] | ColumnInfo],
                            *, old_name: str | None = None, position: str | None = None) -> TableInfo:
        """ALTER TABLE … ADD COLUMNS / REPLACE COLUMNS / CHANGE COLUMN (``action`` 'add', 'replace', 'change') with
        Hive's rules for ACID ORC tables (:mod:`airflow_acid.metastore.column_changes`); one database transaction."""
        self._refuse_ddl(f"change the columns of table {database}.{name}")
        database = validate_name("database", database)
        name = validate_name("table", name, MAX_TABLE_NAME_LENGTH)
        full = f"{database}.{name}"
        given = _columns(full, columns, "column")

        def work(conn: Connection) -> TableInfo:
            table = _load_table(conn, database, name)
            keys = [k.name for k in table.partition_keys]
            if action == "add":
                new = column_changes.add_columns(full, table.columns, given, keys)
            elif action == "replace":
                new = column_changes.replace_columns(full, table.columns, given, keys)
            elif action == "change" and old_name is not None and len(given) == 1:
                new = column_changes.change_column(full, table.columns, validate_name("column", old_name), given[0],
                                                   position=position, partition_keys=keys)
            else:
                raise InvalidInputError(f"unknown column change {action!r} of table {full}")
            for old, now in zip(table.columns, new):
                if old.name in table.bucket_cols and (old.name, old.type) != (now.name, now.type):
                    raise InvalidInputError(f"table {full}: bucket column {old.name} cannot be renamed or change its "
                                            "type (rows are assigned to buckets by its name and typed hash)")
            tbl_id = _require_table_id(conn, database, name)
            sd_id = conn.execute(sa.select(TBLS.c.SD_ID).where(TBLS.c.TBL_ID == tbl_id)).scalar_one()
            conn.execute(sa.delete(COLUMNS_V2).where(COLUMNS_V2.c.CD_ID == sd_id))
            conn.execute(sa.insert(COLUMNS_V2), [
                {"CD_ID": sd_id, "COLUMN_NAME": c.name, "TYPE_NAME": c.type, "COMMENT": c.comment, "INTEGER_IDX": i}
                for i, c in enumerate(new)])
            # a column's DEFAULT follows it by name (CHANGE: from its old name) to its new position
            kept = {c.name: c.default for c in table.columns if c.default is not None}
            if action == "change" and old_name is not None and validate_name("column", old_name) in kept:
                kept[given[0].name] = kept.pop(validate_name("column", old_name))
            conn.execute(sa.delete(KEY_CONSTRAINTS).where(KEY_CONSTRAINTS.c.PARENT_TBL_ID == tbl_id,
                                                          KEY_CONSTRAINTS.c.CONSTRAINT_TYPE == DEFAULT_CONSTRAINT))
            _insert_defaults(conn, sd_id, tbl_id, [ColumnInfo(c.name, c.type, c.comment, c.default or kept.get(c.name))
                                                   for c in new])
            return _load_table(conn, database, name)

        return self.db.run(work, what=f"alter the columns of table {full}")

    # --- partitions ---------------------------------------------------------------------------------

    def add_partition(self, database: str, table: str, spec: Mapping[str, object], *, location: str | None = None,
                      params: Mapping[str, object] | None = None, if_not_exists: bool = False) -> PartitionInfo:
        """Register a partition; its location defaults to ``<table location>/<partition name>``."""
        database = validate_name("database", database)
        table = validate_name("table", table, MAX_TABLE_NAME_LENGTH)

        def work(conn: Connection) -> PartitionInfo:
            info = _load_table(conn, database, table)
            part_spec = info.partition_spec(spec)
            part_name = make_partition_name(part_spec)
            tbl_id = _require_table_id(conn, database, table)
            if _partition_row(conn, tbl_id, part_name) is not None:
                if if_not_exists:
                    _warn_collation_twins(conn, info, tbl_id, part_name)
                    return _load_partition(conn, info, tbl_id, part_name)
                raise AlreadyExistsError(f"partition {part_name} of table {info.full_name} already exists")
            if profile_of(conn).is_hive:
                # Hive-compatible choice: HMS's add_partitions also writes SERDES/CDS rows, notification events and
                # statistics parameters; only Hive does that faithfully, so the user adds the partition there.
                values = ", ".join(f"{k}='{v}'" for k, v in part_spec.items())
                raise HiveMetastoreError(
                    f"partition {part_name} of table {info.full_name} is not registered in the Hive metastore; "
                    f"add it in Hive first (ALTER TABLE {info.full_name} ADD PARTITION ({values})), then write again")
            default_location = partition_location(info.location, part_name).rstrip("/")
            part_location = (location or default_location).rstrip("/")
            if part_location != default_location:
                part_location = normalize_location(part_location, f"partition {part_name} of {info.full_name}")
                check_free(conn, part_location, f"partition {part_name} of {info.full_name}", own_table_id=tbl_id)
            try:
                with conn.begin_nested():  # a partition created concurrently since the check takes its SDS row back
                    sd_id = _insert(conn, SDS, {"LOCATION": part_location,
                                                "INPUT_FORMAT": info.input_format or ORC_INPUT_FORMAT,
                                                "OUTPUT_FORMAT": info.output_format or ORC_OUTPUT_FORMAT,
                                                "NUM_BUCKETS": info.num_buckets},
                                    name=f"partition {part_name} of {info.full_name}")
                    part_id = _insert(conn, PARTITIONS, {"CREATE_TIME": now_ms(conn), "PART_NAME": part_name,
                                                         "SD_ID": sd_id, "TBL_ID": tbl_id},
                                      name=f"partition {part_name} of {info.full_name}")
            except AlreadyExistsError:
                if not if_not_exists:
                    raise
                return _load_partition(conn, info, tbl_id, part_name)  # another writer registered it first
            for key, value in (params or {}).items():
                conn.execute(sa.insert(PARTITION_PARAMS).values(PART_ID=part_id, PARAM_KEY=str(key),
                                                                PARAM_VALUE=_as_text(str(key), value)))
            return _load_partition(conn, info, tbl_id, part_name)

        return self.db.run(work, what=f"add partition to {database}.{table}")

    def get_partition(self, database: str, table: str, spec: Mapping[str, object] | str) -> PartitionInfo:
        """A partition by spec dict or by Hive partition name; NoSuchObjectError if it is not registered."""
        database = validate_name("database", database)
        table = validate_name("table", table, MAX_TABLE_NAME_LENGTH)

        def work(conn: Connection) -> PartitionInfo:
            info = _load_table(conn, database, table)
            part_name = _name_of(info, spec)
            tbl_id = _require_table_id(conn, database, table)
            if _partition_row(conn, tbl_id, part_name) is None:
                raise NoSuchObjectError(f"partition {part_name} of table {info.full_name} does not exist")
            return _load_partition(conn, info, tbl_id, part_name)

        return self.db.run(work, what=f"get partition of {database}.{table}")

    def list_partitions(self, database: str, table: str) -> list[PartitionInfo]:
        """All partitions of a table, ordered by name."""
        database = validate_name("database", database)
        table = validate_name("table", table, MAX_TABLE_NAME_LENGTH)

        def work(conn: Connection) -> list[PartitionInfo]:
            info = _load_table(conn, database, table)
            tbl_id = _require_table_id(conn, database, table)
            names = conn.execute(sa.select(PARTITIONS.c.PART_NAME).where(PARTITIONS.c.TBL_ID == tbl_id)).scalars()
            return [_load_partition(conn, info, tbl_id, n) for n in sorted(names)]

        return self.db.run(work, what=f"list partitions of {database}.{table}")

    def alter_partition_params(self, database: str, table: str, spec: Mapping[str, object] | str,
                               params: Mapping[str, object | None]) -> PartitionInfo:
        """Set (or, with value None, remove) partition parameters such as ``no_cleanup``."""
        self._refuse_ddl(f"alter a partition of {database}.{table}")
        database = validate_name("database", database)
        table = validate_name("table", table, MAX_TABLE_NAME_LENGTH)

        def work(conn: Connection) -> PartitionInfo:
            info, tbl_id, part_name, row = _find_partition(conn, database, table, spec)
            if row is None:
                raise NoSuchObjectError(f"partition {part_name} of table {info.full_name} does not exist")
            check_properties(f"{info.full_name} partition {part_name}",
                             {str(k): _as_text(str(k), v) for k, v in params.items() if v is not None})
            for key, value in params.items():
                conn.execute(sa.delete(PARTITION_PARAMS).where(PARTITION_PARAMS.c.PART_ID == row.PART_ID,
                                                               PARTITION_PARAMS.c.PARAM_KEY == str(key)))
                if value is not None:
                    conn.execute(sa.insert(PARTITION_PARAMS).values(PART_ID=row.PART_ID, PARAM_KEY=str(key),
                                                                    PARAM_VALUE=_as_text(str(key), value)))
            return _load_partition(conn, info, tbl_id, part_name)

        return self.db.run(work, what=f"alter partition of {database}.{table}")

    def drop_partition(self, database: str, table: str, spec: Mapping[str, object] | str, *,
                       if_exists: bool = False, refuse_in_use: bool = False,
                       holding: int | None = None) -> PartitionInfo | None:
        """Remove a partition and its transactional records from the catalog (its files are not touched); the
        partition as it was (None when ``if_exists`` and there was none). ``refuse_in_use``: refuse, with nothing
        changed, while an open transaction writes it or a lock is held on it (:mod:`.drops`) other than
        ``holding``, the dropping statement's own EXCLUSIVE lock."""
        self._refuse_ddl(f"drop a partition of {database}.{table}")
        database = validate_name("database", database)
        table = validate_name("table", table, MAX_TABLE_NAME_LENGTH)

        def work(conn: Connection) -> PartitionInfo | None:
            info, tbl_id, part_name, row = _find_partition(conn, database, table, spec)
            if row is None:
                if if_exists:
                    return None
                raise NoSuchObjectError(f"partition {part_name} of table {info.full_name} does not exist")
            busy = in_use(conn, database, table, part_name, holding=holding) if refuse_in_use else None
            if busy is not None:
                raise InvalidInputError(f"cannot drop partition {part_name} of table {info.full_name} now: {busy}; "
                                        "nothing was changed. Drop it when those transactions have ended")
            before = _load_partition(conn, info, tbl_id, part_name)
            _delete_partition(conn, row.PART_ID, row.SD_ID)
            delete_txn_records(conn, database, table, part_name)
            return before

        return self.db.run(work, what=f"drop partition of {database}.{table}")


# --- row helpers --------------------------------------------------------------------------------------


def _name_of(info: TableInfo, spec: Mapping[str, object] | str) -> str:
    if isinstance(spec, str):
        return make_partition_name(info.partition_spec(parse_partition_name(spec)))
    return info.partition_name(spec)


def _columns(table: str, columns: Sequence[tuple[str, str] | ColumnInfo], kind: str) -> list[ColumnInfo]:
    result: list[ColumnInfo] = []
    seen: set[str] = set()
    for entry in columns:
        default = None
        if isinstance(entry, ColumnInfo):
            raw_name, raw_type, comment, default = entry.name, entry.type, entry.comment, entry.default
        else:
            try:
                raw_name, raw_type = entry
            except (TypeError, ValueError):
                raise InvalidInputError(f"table {table}: {kind} {entry!r} must be a (name, hive_type) pair") from None
            comment = None
        name = validate_name(kind, raw_name, 128)
        if name in seen:
            raise InvalidInputError(f"table {table}: {kind} {name} is listed twice")
        seen.add(name)
        result.append(ColumnInfo(name, normalize_type(raw_type, column=f"{table}.{name}"), comment, default))
    return result


def _insert(conn: Connection, table: sa.Table, values: dict[str, Any], *, name: str) -> int:
    try:
        with conn.begin_nested():
            key = conn.execute(sa.insert(table).values(values)).inserted_primary_key
            assert key is not None, "a single-row INSERT always reports its primary key"
            return int(key[0])
    except sa.exc.IntegrityError as exc:
        if is_unique_violation(exc):
            raise AlreadyExistsError(f"{name} already exists (created concurrently)") from None
        raise MetastoreError(f"cannot register {name}: the database refused the {table.name} row "
                             f"({_driver_message(exc)}); nothing was created") from exc


_PG_UNIQUE_VIOLATION = "23505"
_MYSQL_DUPLICATE_KEYS = (1062, 1586)


def is_unique_violation(exc: sa.exc.IntegrityError) -> bool:
    """Whether an IntegrityError is a duplicate key (not a NOT NULL, foreign key or check violation)."""
    orig = exc.orig
    pgcode = sqlstate(orig)
    if pgcode is not None:
        return pgcode == _PG_UNIQUE_VIOLATION
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    if args and isinstance(args[0], int):
        return args[0] in _MYSQL_DUPLICATE_KEYS
    text = str(orig)
    return "UNIQUE constraint failed" in text or "PRIMARY KEY" in text and "constraint failed" in text


def _driver_message(exc: sa.exc.DBAPIError) -> str:
    return " ".join(str(exc.orig).split())[:300]


def _insert_columns(conn: Connection, sd_id: int, tbl_id: int, cols: list[ColumnInfo], keys: list[ColumnInfo],
                    buckets: list[str]) -> None:
    if cols:
        conn.execute(sa.insert(COLUMNS_V2), [
            {"CD_ID": sd_id, "COLUMN_NAME": c.name, "TYPE_NAME": c.type, "COMMENT": c.comment, "INTEGER_IDX": i}
            for i, c in enumerate(cols)])
    if keys:
        conn.execute(sa.insert(PARTITION_KEYS), [
            {"TBL_ID": tbl_id, "PKEY_NAME": k.name, "PKEY_TYPE": k.type, "PKEY_COMMENT": k.comment, "INTEGER_IDX": i}
            for i, k in enumerate(keys)])
    if buckets:
        conn.execute(sa.insert(BUCKETING_COLS), [
            {"SD_ID": sd_id, "BUCKET_COL_NAME": b, "INTEGER_IDX": i} for i, b in enumerate(buckets)])
    _insert_defaults(conn, sd_id, tbl_id, cols)


def _insert_defaults(conn: Connection, sd_id: int, tbl_id: int, cols: Sequence[ColumnInfo]) -> None:
    """One KEY_CONSTRAINTS row per column DEFAULT, as Hive's metastore writes it (a generated constraint name)."""
    rows = [{"PARENT_CD_ID": sd_id, "PARENT_INTEGER_IDX": i, "PARENT_TBL_ID": tbl_id, "POSITION": 1,
             "CONSTRAINT_NAME": uuid.uuid4().hex, "CONSTRAINT_TYPE": DEFAULT_CONSTRAINT, "ENABLE_VALIDATE_RELY": ENABLE,
             "DEFAULT_VALUE": c.default} for i, c in enumerate(cols) if c.default is not None]
    if rows:
        conn.execute(sa.insert(KEY_CONSTRAINTS), rows)


def _load_defaults(conn: Connection, tbl_id: int) -> dict[int, str]:
    """Column position → DEFAULT text of a table (Hive's KEY_CONSTRAINTS rows, or airflow-acid's)."""
    return {int(r.PARENT_INTEGER_IDX): r.DEFAULT_VALUE for r in conn.execute(
        sa.select(KEY_CONSTRAINTS.c.PARENT_INTEGER_IDX, KEY_CONSTRAINTS.c.DEFAULT_VALUE)
        .where(KEY_CONSTRAINTS.c.PARENT_TBL_ID == tbl_id, KEY_CONSTRAINTS.c.CONSTRAINT_TYPE == DEFAULT_CONSTRAINT))
        if r.DEFAULT_VALUE is not None}


def _insert_table_params(conn: Connection, tbl_id: int, props: Mapping[str, str]) -> None:
    if props:
        conn.execute(sa.insert(TABLE_PARAMS), [
            {"TBL_ID": tbl_id, "PARAM_KEY": k, "PARAM_VALUE": v} for k, v in props.items()])


def _database_id(conn: Connection, name: str) -> int | None:
    if profile_of(conn).is_hive:  # DBS names are unique per catalog (CTLG_NAME); airflow-acid uses Hive's default
        return conn.execute(sa.select(HIVE_DBS.c.DB_ID).where(HIVE_DBS.c.NAME == name,
                                                             HIVE_DBS.c.CTLG_NAME == DEFAULT_CATALOG)
                            ).scalar_one_or_none()
    return conn.execute(sa.select(DBS.c.DB_ID).where(DBS.c.NAME == name)).scalar_one_or_none()


_warned_twins: set[tuple[str, str]] = set()


def _warn_collation_twins(conn: Connection, info: TableInfo, tbl_id: int, part_name: str) -> None:
    """On a Hive metastore whose transactional tables compare names case- and accent-insensitively (Hive's MySQL
    latin1 tables), warn once per partition that has a registered twin differing only in case or accents: Hive's
    and airflow-acid's queries then track both as one entity (commits, queue, cleanup), as Hive itself does."""
    profile = profile_of(conn)
    if not profile.case_insensitive_names or (info.full_name, part_name) in _warned_twins:
        return
    collation = profile.entity_collation
    twins = list(conn.execute(sa.text(
        f"SELECT PART_NAME FROM PARTITIONS WHERE TBL_ID = :tbl AND PART_NAME <> :name AND "
        f"CONVERT(PART_NAME USING latin1) COLLATE {collation} = CONVERT(:name USING latin1) COLLATE {collation}"),
        {"tbl": tbl_id, "name": part_name}).scalars())
    _warned_twins.add((info.full_name, part_name))
    if twins:
        log.warning(
            "partition %s of %s and %s differ only in case or accents, which this Hive metastore's transactional "
            "tables do not distinguish (collation %s): commits, compaction requests and cleanup records of these "
            "partitions are tracked as one, by Hive and by airflow-acid alike. Compacting one of them can clear the "
            "other's pending-compaction records (it is then compacted only after its next write or on request). "
            "Data and reads are not affected; use partition values that differ by more than case or accents.",
            part_name, info.full_name, ", ".join(twins), collation)


def _to_ms(conn: Connection, create_time: int | None) -> int | None:
    """Catalog CREATE_TIME in epoch ms (Hive stores seconds)."""
    if create_time is None or not profile_of(conn).is_hive:
        return create_time
    return int(create_time) * 1000


def _require_database(conn: Connection, name: str) -> int:
    db_id = _database_id(conn, name)
    if db_id is None:
        raise NoSuchObjectError(f"database {name} does not exist; create it first")
    return db_id


def _table_id(conn: Connection, db_id: int, name: str) -> int | None:
    return conn.execute(sa.select(TBLS.c.TBL_ID).where(TBLS.c.DB_ID == db_id, TBLS.c.TBL_NAME == name)
                        ).scalar_one_or_none()


def _require_table_id(conn: Connection, database: str, name: str) -> int:
    tbl_id = _table_id(conn, _require_database(conn, database), name)
    if tbl_id is None:
        raise NoSuchObjectError(f"table {database}.{name} does not exist")
    return tbl_id


def _partition_row(conn: Connection, tbl_id: int, part_name: str) -> sa.Row[Unpack[tuple[Any, ...]]] | None:
    return conn.execute(sa.select(PARTITIONS.c.PART_ID, PARTITIONS.c.SD_ID).where(
        PARTITIONS.c.TBL_ID == tbl_id, PARTITIONS.c.PART_NAME == part_name)).first()


def _load_database(conn: Connection, name: str) -> DatabaseInfo:
    db_id = _database_id(conn, name)
    row = None if db_id is None else conn.execute(sa.select(DBS).where(DBS.c.DB_ID == db_id)).first()
    if row is None:
        raise NoSuchObjectError(f"database {name} does not exist")
    params = {r.PARAM_KEY: r.PARAM_VALUE for r in conn.execute(
        sa.select(DATABASE_PARAMS.c.PARAM_KEY, DATABASE_PARAMS.c.PARAM_VALUE).where(DATABASE_PARAMS.c.DB_ID == row.DB_ID))}
    return DatabaseInfo(name=row.NAME, location=row.DB_LOCATION_URI, description=row.DESC, owner=row.OWNER_NAME,
                        create_time=_to_ms(conn, row.CREATE_TIME), params=params)


def _load_table(conn: Connection, database: str, name: str) -> TableInfo:
    db_id = _database_id(conn, database)
    if db_id is None:  # Hive's "Table not found"; database default exists in every warehouse, even before its first table
        why = "" if database == DEFAULT_DATABASE else f" (database {database} does not exist)"
        raise NoSuchObjectError(f"table {database}.{name} does not exist{why}")
    row = conn.execute(sa.select(TBLS).where(TBLS.c.DB_ID == db_id, TBLS.c.TBL_NAME == name)).first()
    if row is None:
        raise NoSuchObjectError(f"table {database}.{name} does not exist")
    sd = conn.execute(sa.select(SDS).where(SDS.c.SD_ID == row.SD_ID)).one()
    cd_id = sd.SD_ID  # airflow-acid's own schema keys columns by SD_ID; Hive by SDS.CD_ID -> CDS
    if profile_of(conn).is_hive:
        cd_id = conn.execute(sa.select(HIVE_SDS.c.CD_ID).where(HIVE_SDS.c.SD_ID == sd.SD_ID)).scalar()
    defaults = _load_defaults(conn, row.TBL_ID)
    cols = [ColumnInfo(r.COLUMN_NAME, r.TYPE_NAME, r.COMMENT, defaults.get(int(r.INTEGER_IDX))) for r in conn.execute(
        sa.select(COLUMNS_V2).where(COLUMNS_V2.c.CD_ID == cd_id).order_by(COLUMNS_V2.c.INTEGER_IDX))]
    keys = [ColumnInfo(r.PKEY_NAME, r.PKEY_TYPE, r.PKEY_COMMENT) for r in conn.execute(
        sa.select(PARTITION_KEYS).where(PARTITION_KEYS.c.TBL_ID == row.TBL_ID).order_by(PARTITION_KEYS.c.INTEGER_IDX))]
    buckets = list(conn.execute(sa.select(BUCKETING_COLS.c.BUCKET_COL_NAME).where(BUCKETING_COLS.c.SD_ID == sd.SD_ID)
                                .order_by(BUCKETING_COLS.c.INTEGER_IDX)).scalars())
    props = {r.PARAM_KEY: r.PARAM_VALUE for r in conn.execute(
        sa.select(TABLE_PARAMS.c.PARAM_KEY, TABLE_PARAMS.c.PARAM_VALUE).where(TABLE_PARAMS.c.TBL_ID == row.TBL_ID))}
    serde, serde_params = _load_serde(conn, sd.SD_ID)
    return TableInfo(database=database, name=row.TBL_NAME, columns=cols, partition_keys=keys, bucket_cols=buckets,
                     num_buckets=sd.NUM_BUCKETS, location=sd.LOCATION, properties=props, owner=row.OWNER,
                     create_time=_to_ms(conn, row.CREATE_TIME), table_type=row.TBL_TYPE,
                     input_format=sd.INPUT_FORMAT, output_format=sd.OUTPUT_FORMAT, serde=serde,
                     serde_params=serde_params, view_original_text=row.VIEW_ORIGINAL_TEXT,
                     view_expanded_text=row.VIEW_EXPANDED_TEXT)


def _load_serde(conn: Connection, sd_id: int) -> tuple[str | None, dict[str, str]]:
    """(SERDES.SLIB, SERDE_PARAMS) of a storage descriptor: Hive's through ``SDS.SERDE_ID``, airflow-acid's keyed
    by SD_ID."""
    if profile_of(conn).is_hive:
        serde_id = conn.execute(sa.select(HIVE_SDS.c.SERDE_ID).where(HIVE_SDS.c.SD_ID == sd_id)).scalar()
        if serde_id is None:
            return None, {}
        slib = conn.execute(sa.select(HIVE_SERDES.c.SLIB).where(HIVE_SERDES.c.SERDE_ID == serde_id)).scalar()
        params = {r.PARAM_KEY: r.PARAM_VALUE for r in conn.execute(
            sa.select(HIVE_SERDE_PARAMS.c.PARAM_KEY, HIVE_SERDE_PARAMS.c.PARAM_VALUE)
            .where(HIVE_SERDE_PARAMS.c.SERDE_ID == serde_id))}
        return slib, params
    slib = conn.execute(sa.select(SERDES.c.SLIB).where(SERDES.c.SERDE_ID == sd_id)).scalar()
    if slib is None:
        return None, {}
    params = {r.PARAM_KEY: r.PARAM_VALUE for r in conn.execute(
        sa.select(SERDE_PARAMS.c.PARAM_KEY, SERDE_PARAMS.c.PARAM_VALUE).where(SERDE_PARAMS.c.SERDE_ID == sd_id))}
    return slib, params


def _insert_serde(conn: Connection, sd_id: int, storage: TableStorage) -> None:
    conn.execute(sa.insert(SERDES).values(SERDE_ID=sd_id, NAME=None, SLIB=storage.serde))
    for key, value in storage.serde_params.items():
        conn.execute(sa.insert(SERDE_PARAMS).values(SERDE_ID=sd_id, PARAM_KEY=key, PARAM_VALUE=value))


def _delete_serde(conn: Connection, sd_id: int) -> None:
    conn.execute(sa.delete(SERDE_PARAMS).where(SERDE_PARAMS.c.SERDE_ID == sd_id))
    conn.execute(sa.delete(SERDES).where(SERDES.c.SERDE_ID == sd_id))


def _load_partition(conn: Connection, info: TableInfo, tbl_id: int, part_name: str) -> PartitionInfo:
    row = conn.execute(sa.select(PARTITIONS.c.PART_ID, PARTITIONS.c.CREATE_TIME, SDS.c.LOCATION)
                       .join_from(PARTITIONS, SDS, PARTITIONS.c.SD_ID == SDS.c.SD_ID)
                       .where(PARTITIONS.c.TBL_ID == tbl_id, PARTITIONS.c.PART_NAME == part_name)).one()
    params = {r.PARAM_KEY: r.PARAM_VALUE for r in conn.execute(
        sa.select(PARTITION_PARAMS.c.PARAM_KEY, PARTITION_PARAMS.c.PARAM_VALUE)
        .where(PARTITION_PARAMS.c.PART_ID == row.PART_ID))}
    return PartitionInfo(database=info.database, table=info.name, name=part_name,
                         spec=parse_partition_name(part_name), location=row.LOCATION,
                         create_time=_to_ms(conn, row.CREATE_TIME) or 0,
                         params=params)


def _find_partition(conn: Connection, database: str, table: str, spec: Mapping[str, object] | str,
                    ) -> tuple[TableInfo, int, str, sa.Row[Unpack[tuple[Any, ...]]] | None]:
    """(table info, table id, partition name, PARTITIONS row or None) for a spec of an existing table."""
    info = _load_table(conn, database, table)
    part_name = _name_of(info, spec)
    tbl_id = _require_table_id(conn, database, table)
    return info, tbl_id, part_name, _partition_row(conn, tbl_id, part_name)


def _delete_partition(conn: Connection, part_id: int, sd_id: int | None) -> None:
    conn.execute(sa.delete(PARTITION_PARAMS).where(PARTITION_PARAMS.c.PART_ID == part_id))
    conn.execute(sa.delete(PARTITIONS).where(PARTITIONS.c.PART_ID == part_id))
    if sd_id is not None:
        conn.execute(sa.delete(SDS).where(SDS.c.SD_ID == sd_id))


def _delete_table(conn: Connection, tbl_id: int) -> None:
    for part in conn.execute(sa.select(PARTITIONS.c.PART_ID, PARTITIONS.c.SD_ID)
                             .where(PARTITIONS.c.TBL_ID == tbl_id)).all():
        _delete_partition(conn, part.PART_ID, part.SD_ID)
    sd_id = conn.execute(sa.select(TBLS.c.SD_ID).where(TBLS.c.TBL_ID == tbl_id)).scalar_one()
    conn.execute(sa.delete(TABLE_PARAMS).where(TABLE_PARAMS.c.TBL_ID == tbl_id))
    conn.execute(sa.delete(PARTITION_KEYS).where(PARTITION_KEYS.c.TBL_ID == tbl_id))
    conn.execute(sa.delete(KEY_CONSTRAINTS).where(KEY_CONSTRAINTS.c.PARENT_TBL_ID == tbl_id))
    conn.execute(sa.delete(TBLS).where(TBLS.c.TBL_ID == tbl_id))
    if sd_id is not None:
        conn.execute(sa.delete(BUCKETING_COLS).where(BUCKETING_COLS.c.SD_ID == sd_id))
        conn.execute(sa.delete(COLUMNS_V2).where(COLUMNS_V2.c.CD_ID == sd_id))
        _delete_serde(conn, sd_id)
        conn.execute(sa.delete(SDS).where(SDS.c.SD_ID == sd_id))
