"""Catalog statements on airflow-acid's own metastore: CREATE / DROP DATABASE, USE, SHOW DATABASES / TABLES and
DROP TABLE, as Hive runs them (on a Hive metastore the catalog refuses DDL: Hive's catalog is Hive's).

Hive never creates a database implicitly; database ``default`` exists in every warehouse (its catalog row is written
with the first table created in it), so a fresh warehouse lists it and answers "table not found" in it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from airflow_acid.metastore.catalog import DEFAULT_DATABASE, TableInfo, TableStorage, validate_name
from airflow_acid.metastore.errors import AlreadyExistsError, InvalidInputError, NoSuchObjectError
from airflow_acid.statements.ddl_lock import exclusive_lock
from airflow_acid.statements.model import (
    Column,
    CreateDatabase,
    CreateTable,
    CreateTableLike,
    DescribeDatabase,
    DropDatabase,
    DropTable,
    ShowDatabases,
    ShowTables,
    TableName,
    Use,
)
from airflow_acid.statements.result import Result

if TYPE_CHECKING:
    from airflow_acid.statements.execute import StatementExecutor

EXTERNAL_TABLE = "EXTERNAL_TABLE"


def hive_pattern(pattern: str) -> re.Pattern[str]:
    """Hive's SHOW … LIKE pattern: ``*`` any characters, ``|`` separates alternatives, case-insensitive; everything
    else literal."""
    alternatives = [".*".join(re.escape(part) for part in alt.strip().split("*")) for alt in pattern.split("|")]
    return re.compile("|".join(f"(?:{a})" for a in alternatives), re.IGNORECASE)


def _matching(names: list[str], pattern: str | None) -> list[list[object]]:
    regex = hive_pattern(pattern) if pattern is not None else None
    return [[n] for n in sorted(names) if regex is None or regex.fullmatch(n)]


def database_exists(ex: StatementExecutor, name: str) -> bool:
    """Whether database ``name`` exists (``default`` always does)."""
    name = validate_name("database", name.lower())
    return name == DEFAULT_DATABASE or name in ex.metastore.catalog.list_databases()


def require_database(ex: StatementExecutor, name: str) -> str:
    """``name`` lower-cased; Hive's "Database does not exist: name" when it does not."""
    if not database_exists(ex, name):
        raise NoSuchObjectError(f"Database does not exist: {name.lower()} (CREATE DATABASE {name.lower()} first)")
    return name.lower()


def create_database(ex: StatementExecutor, s: CreateDatabase) -> Result:
    name = validate_name("database", s.name.lower())
    ex.metastore.catalog.check_ddl(f"create database {name}")
    if name == DEFAULT_DATABASE or name in ex.metastore.catalog.list_databases():
        if s.if_not_exists:
            return Result(s.TITLE, messages=[f"database {name} already exists"])
        raise AlreadyExistsError(f"Database {name} already exists")
    ex.warehouse.create_database(name, if_not_exists=s.if_not_exists, description=s.comment, location=s.location)
    info = ex.metastore.catalog.get_database(name)
    return Result(s.TITLE, messages=[f"database {name} created at {info.location}"])


def drop_database(ex: StatementExecutor, s: DropDatabase) -> Result:
    """RESTRICT (the default) refuses while the database has tables; CASCADE drops each as DROP TABLE does (files
    of managed tables removed, refused while a table is in use)."""
    name = validate_name("database", s.name.lower())
    ex.metastore.catalog.check_ddl(f"drop database {name}")
    if name == DEFAULT_DATABASE:
        raise InvalidInputError("Can not drop default database (Hive keeps it in every warehouse)")
    if name not in ex.metastore.catalog.list_databases():
        if s.if_exists:
            return Result(s.TITLE, messages=[f"database {name} does not exist"])
        raise NoSuchObjectError(f"Database does not exist: {name}")
    tables = ex.metastore.catalog.list_tables(name)
    if tables and not s.cascade:
        raise InvalidInputError(f"Database {name} is not empty. One or more tables exist ({', '.join(tables)}); drop "
                                "them first or use DROP DATABASE … CASCADE")
    busy = {t: why for t in tables if (why := ex.metastore.catalog.in_use(name, t)) is not None}
    if busy:  # checked for every table before any is dropped
        table, why = next(iter(busy.items()))
        raise InvalidInputError(f"cannot drop database {name} now: table {name}.{table} is in use ({why}); nothing "
                                "was changed")
    views = set(ex.metastore.catalog.list_views(name))
    for table in tables:
        if table in views:
            ex.metastore.catalog.drop_table(name, table, if_exists=True)
        else:
            drop_table(ex, DropTable(table=TableName(table, name), purge=True))
    info = ex.metastore.catalog.get_database(name)
    ex.metastore.catalog.drop_database(name, cascade=False)
    fs, root = ex.warehouse.io.storage(info.location)
    if fs.exists(root) and not fs.ls(root):  # an empty database directory; anything left in it is kept
        fs.rm(root, recursive=True)
    return Result(s.TITLE, messages=[f"database {name} dropped" + (f" with {len(tables)} table(s)" if tables else "")])


DESCRIBE_DATABASE_COLUMNS = ["db_name", "comment", "location", "managedlocation", "owner_name", "owner_type",
                             "connector_name", "remote_dbname", "parameters"]
"""Hive 4's DESCRIBE DATABASE columns (parameters filled with EXTENDED)."""


def describe_database(ex: StatementExecutor, s: DescribeDatabase) -> Result:
    name = require_database(ex, s.name)
    if name not in ex.metastore.catalog.list_databases():  # default before its first table
        row: list[object] = [name, "Default Hive database", ex.warehouse.location, "", "", "USER", "", "", ""]
    else:
        info = ex.metastore.catalog.get_database(name)
        params = "{" + ", ".join(f"{k}={v}" for k, v in sorted(info.params.items())) + "}" if s.extended \
            and info.params else ""
        row = [info.name, info.description or "", info.location, "", info.owner or "", "USER", "", "", params]
    return Result(s.TITLE, list(DESCRIBE_DATABASE_COLUMNS), [row])


def use(ex: StatementExecutor, s: Use) -> Result:
    ex.database = require_database(ex, s.name)
    return Result(s.TITLE, messages=[f"current database: {ex.database}"])


def show_databases(ex: StatementExecutor, s: ShowDatabases) -> Result:
    names = set(ex.metastore.catalog.list_databases()) | {DEFAULT_DATABASE}
    return Result(s.TITLE, ["database_name"], _matching(list(names), s.pattern))


def show_tables(ex: StatementExecutor, s: ShowTables) -> Result:
    """SHOW TABLES lists tables and views (as Hive); SHOW VIEWS the views only."""
    database = require_database(ex, s.database or ex.database)
    exists = database in ex.metastore.catalog.list_databases()
    if s.views:
        names = ex.metastore.catalog.list_views(database) if exists else []
        return Result("SHOW VIEWS", ["tab_name"], _matching(names, s.pattern))
    names = ex.metastore.catalog.list_tables(database) if exists else []
    return Result(s.TITLE, ["tab_name"], _matching(names, s.pattern))


def before_create_table(ex: StatementExecutor, s: CreateTable) -> None:
    """Hive creates no database implicitly: the table's database must exist (``default`` is created on first use)."""
    ex.metastore.catalog.check_ddl(f"create table {s.table.qualified}")
    database = require_database(ex, s.table.database or ex.database)
    if database == DEFAULT_DATABASE:
        ex.warehouse.create_database(DEFAULT_DATABASE, if_not_exists=True)


STATISTICS_KEYS = frozenset({"numfiles", "numrows", "rawdatasize", "totalsize", "numfileserasurecoded",
                             "column_stats_accurate", "transient_lastddltime"})
"""Table parameters Hive keeps as statistics, not copied by CREATE TABLE LIKE."""


def create_table_like(ex: StatementExecutor, s: CreateTableLike) -> Result:
    """The source's columns, partition keys, bucketing and properties (statistics left out), then the given ones;
    the new table's own location (never the source's files)."""
    source = ex.table_info(s.source)
    properties = {k: v for k, v in source.properties.items() if k.lower() not in STATISTICS_KEYS | {"external"}}
    properties.update(s.properties)
    # Hive copies the storage format: a text table's LIKE is a text table with the same SerDe parameters
    storage = TableStorage.text(source.serde_params) if source.is_text else None
    created = CreateTable(s.table, tuple(Column(c.name, c.type, c.comment) for c in source.columns),
                          partitioned_by=tuple(Column(c.name, c.type, c.comment) for c in source.partition_keys),
                          bucket_by=tuple(source.bucket_cols), num_buckets=source.num_buckets if source.bucket_cols
                          else None, properties=properties, location=s.location, if_not_exists=s.if_not_exists,
                          storage=storage)
    return ex.create_table(created)


def drop_table(ex: StatementExecutor, s: DropTable) -> Result:
    """Metadata rows removed (catalog and transactional records), then a managed table's directory; refused with
    nothing changed while an open transaction writes the table or a lock is held on it. An external table's files
    are kept. PURGE is accepted (there is no trash to skip)."""
    database, table = s.table.qualified.split(".", 1)
    if s.if_exists and not ex.metastore.catalog.table_exists(database, table):  # default may have no row yet
        return Result(s.TITLE, messages=[f"table {database}.{table} does not exist"])
    if table in ex.metastore.catalog.list_views(database):
        ex.metastore.catalog.check_ddl(f"drop table {database}.{table}")
        raise InvalidInputError(f"Cannot drop a view with DROP TABLE: {database}.{table} is a view; use DROP VIEW")
    with exclusive_lock(ex, f"drop table {database}.{table}", database, table) as lock_id:
        info: TableInfo | None = ex.metastore.catalog.drop_table(database, table, if_exists=s.if_exists,
                                                                 refuse_in_use=True, holding=lock_id)
        if info is None:
            return Result(s.TITLE, messages=[f"table {database}.{table} does not exist"])
        external = info.table_type == EXTERNAL_TABLE or (info.property("EXTERNAL") or "").upper() == "TRUE"
        if not external:
            fs, root = ex.warehouse.io.storage(info.location)
            if fs.exists(root):
                fs.rm(root, recursive=True)
    kept = "; its files are kept (external table)" if external else ""
    return Result(s.TITLE, messages=[f"table {info.full_name} dropped{kept}"])


__all__ = ["before_create_table", "create_database", "create_table_like", "describe_database",
           "database_exists", "drop_database", "drop_table",
           "hive_pattern", "require_database", "show_databases", "show_tables", "use"]
