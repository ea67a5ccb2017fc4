"""The Hive statements ``airflow-acid sql`` runs, as typed values (what the parser produces, what the executor runs).

Names keep the case the user typed; the executor resolves them (database ``default`` when none is given, as
Hive's current database).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from sqlglot import exp

from airflow_acid.metastore.catalog import TableStorage

DEFAULT_DATABASE = "default"


@dataclass(frozen=True)
class TableName:
    """``[db.]table``."""

    table: str
    database: str | None = None

    @property
    def qualified(self) -> str:
        """``db.table`` (database ``default`` when none was given)."""
        return f"{(self.database or DEFAULT_DATABASE).lower()}.{self.table.lower()}"


PartitionSpec = dict[str, str]
"""PARTITION (k='v', …) as written: keys as typed, values as text."""


@dataclass(frozen=True)
class ShowCompactions:
    TITLE: ClassVar[str] = "SHOW COMPACTIONS"
    compaction_id: int | None = None
    database: str | None = None
    table: TableName | None = None
    partition: PartitionSpec | None = None
    pool: str | None = None
    type: str | None = None
    status: str | None = None
    order_by: tuple[tuple[str, bool], ...] = ()
    """(column, descending) pairs."""
    limit: int | None = None


@dataclass(frozen=True)
class ShowTransactions:
    TITLE: ClassVar[str] = "SHOW TRANSACTIONS"


@dataclass(frozen=True)
class ShowLocks:
    TITLE: ClassVar[str] = "SHOW LOCKS"
    database: str | None = None
    table: TableName | None = None
    partition: PartitionSpec | None = None
    extended: bool = False


@dataclass(frozen=True)
class AlterTableCompact:
    TITLE: ClassVar[str] = "ALTER TABLE COMPACT"
    table: TableName
    compaction_type: str
    partition: PartitionSpec | None = None
    wait: bool = False
    pool: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    """WITH OVERWRITE TBLPROPERTIES."""
    number_of_buckets: int | None = None
    """CLUSTERED INTO n BUCKETS (REBALANCE only)."""
    order_by: tuple[tuple[str, bool], ...] = ()
    """ORDER BY (column, descending) pairs (REBALANCE only)."""


@dataclass(frozen=True)
class AlterTableProperties:
    """ALTER TABLE t [PARTITION (…)] SET TBLPROPERTIES (…) / UNSET TBLPROPERTIES [IF EXISTS] (…)."""

    TITLE: ClassVar[str] = "ALTER TABLE TBLPROPERTIES"
    table: TableName
    set: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    unset_if_exists: bool = False
    partition: PartitionSpec | None = None


@dataclass(frozen=True)
class AlterTableColumns:
    """ALTER TABLE t ADD COLUMNS (…) / REPLACE COLUMNS (…) / CHANGE [COLUMN] old new type [COMMENT …] [FIRST|AFTER c]
    [CASCADE|RESTRICT]."""

    TITLE: ClassVar[str] = "ALTER TABLE COLUMNS"
    table: TableName
    action: str
    """'add', 'replace' or 'change'."""
    columns: tuple[Column, ...]
    old_name: str | None = None
    """CHANGE: the column changed."""
    position: str | None = None
    """CHANGE: 'FIRST' or 'AFTER col' (refused for transactional ORC tables)."""
    partition: PartitionSpec | None = None


@dataclass(frozen=True)
class AbortTransactions:
    TITLE: ClassVar[str] = "ABORT TRANSACTIONS"
    ids: tuple[int, ...]


@dataclass(frozen=True)
class AbortCompactions:
    TITLE: ClassVar[str] = "ABORT COMPACTIONS"
    ids: tuple[int, ...]


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str | None = None
    default: str | None = None
    """DEFAULT: the value's Hive text (a constant or a function of constants)."""


@dataclass(frozen=True)
class CreateTable:
    TITLE: ClassVar[str] = "CREATE TABLE"
    table: TableName
    columns: tuple[Column, ...]
    partitioned_by: tuple[Column, ...] = ()
    bucket_by: tuple[str, ...] = ()
    num_buckets: int | None = None
    properties: dict[str, str] = field(default_factory=dict)
    """TBLPROPERTIES (and the table COMMENT as ``comment``, as Hive stores it)."""
    location: str | None = None
    if_not_exists: bool = False
    external: bool = False
    """CREATE EXTERNAL TABLE: never transactional, its files kept by DROP TABLE."""
    storage: TableStorage | None = None
    """STORED AS / ROW FORMAT (None: ORC, airflow-acid's default)."""


@dataclass(frozen=True)
class CreateTableAs:
    """CREATE TABLE t [COMMENT …] [STORED AS ORC] [LOCATION …] [TBLPROPERTIES (…)] AS SELECT …: the table with the
    query's columns (Hive's names and types), then INSERT … SELECT in its own transaction."""

    TITLE: ClassVar[str] = "CREATE TABLE AS SELECT"
    table: TableName
    query: exp.Query
    properties: dict[str, str] = field(default_factory=dict)
    location: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateTableLike:
    """CREATE TABLE [IF NOT EXISTS] t LIKE source [LOCATION 'path'] [TBLPROPERTIES (…)]: the source's columns,
    partitioning, bucketing and properties (statistics left out), then the given properties."""

    TITLE: ClassVar[str] = "CREATE TABLE"
    table: TableName
    source: TableName
    properties: dict[str, str] = field(default_factory=dict)
    location: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class Describe:
    TITLE: ClassVar[str] = "DESCRIBE"
    table: TableName
    formatted: bool = False
    """DESCRIBE FORMATTED (or EXTENDED): also the table's storage and parameters."""
    partition: PartitionSpec | None = None


# --- catalog: databases, USE, SHOW DATABASES/TABLES, DROP TABLE (airflow-acid's own metastore; Hive's are Hive's) ---


@dataclass(frozen=True)
class CreateDatabase:
    """CREATE (DATABASE|SCHEMA) [IF NOT EXISTS] db [COMMENT 'c'] [LOCATION 'path']."""

    TITLE: ClassVar[str] = "CREATE DATABASE"
    name: str
    if_not_exists: bool = False
    comment: str | None = None
    location: str | None = None


@dataclass(frozen=True)
class DropDatabase:
    """DROP (DATABASE|SCHEMA) [IF EXISTS] db [RESTRICT|CASCADE] (RESTRICT, the default, refuses while it has
    tables)."""

    TITLE: ClassVar[str] = "DROP DATABASE"
    name: str
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class Use:
    """USE db: the session's current database, where unqualified table names resolve."""

    TITLE: ClassVar[str] = "USE"
    name: str


@dataclass(frozen=True)
class DescribeDatabase:
    """DESCRIBE (DATABASE|SCHEMA) [EXTENDED] db."""

    TITLE: ClassVar[str] = "DESCRIBE DATABASE"
    name: str
    extended: bool = False


@dataclass(frozen=True)
class ShowDatabases:
    """SHOW (DATABASES|SCHEMAS) [LIKE 'pattern']."""

    TITLE: ClassVar[str] = "SHOW DATABASES"
    pattern: str | None = None


@dataclass(frozen=True)
class ShowTables:
    """SHOW TABLES [(IN|FROM) db] [[LIKE] 'pattern']."""

    TITLE: ClassVar[str] = "SHOW TABLES"
    database: str | None = None
    pattern: str | None = None
    views: bool = False
    """SHOW VIEWS: the views only."""


@dataclass(frozen=True)
class DropTable:
    """DROP TABLE [IF EXISTS] t [PURGE]."""

    TITLE: ClassVar[str] = "DROP TABLE"
    table: TableName
    if_exists: bool = False
    purge: bool = False


@dataclass(frozen=True)
class AlterTableAddPartitions:
    """ALTER TABLE t ADD [IF NOT EXISTS] PARTITION (…) [LOCATION 'path'] [PARTITION (…) …]."""

    TITLE: ClassVar[str] = "ALTER TABLE ADD PARTITION"
    table: TableName
    partitions: tuple[tuple[PartitionSpec, str | None], ...]
    """(spec, location or None) pairs."""
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterTableDropPartitions:
    """ALTER TABLE t DROP [IF EXISTS] PARTITION (…)[, PARTITION (…) …] [PURGE]."""

    TITLE: ClassVar[str] = "ALTER TABLE DROP PARTITION"
    table: TableName
    partitions: tuple[PartitionSpec, ...]
    if_exists: bool = False
    purge: bool = False


@dataclass(frozen=True)
class ShowPartitions:
    """SHOW PARTITIONS t [PARTITION (…)] (a partial spec lists the partitions it matches)."""

    TITLE: ClassVar[str] = "SHOW PARTITIONS"
    table: TableName
    partition: PartitionSpec | None = None


@dataclass(frozen=True)
class ShowTblProperties:
    """SHOW TBLPROPERTIES t [('key')]."""

    TITLE: ClassVar[str] = "SHOW TBLPROPERTIES"
    table: TableName
    key: str | None = None


@dataclass(frozen=True)
class ShowCreateTable:
    """SHOW CREATE TABLE t: the CREATE TABLE statement that makes the table again, as Hive prints it."""

    TITLE: ClassVar[str] = "SHOW CREATE TABLE"
    table: TableName


@dataclass(frozen=True)
class CreateView:
    """CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(col, …)] [COMMENT '…'] AS SELECT …, and ALTER VIEW v AS SELECT …
    (``alter``: the view must exist)."""

    TITLE: ClassVar[str] = "CREATE VIEW"
    view: TableName
    query: exp.Query
    columns: tuple[str, ...] | None = None
    replace: bool = False
    if_not_exists: bool = False
    alter: bool = False


@dataclass(frozen=True)
class DropView:
    """DROP VIEW [IF EXISTS] v."""

    TITLE: ClassVar[str] = "DROP VIEW"
    view: TableName
    if_exists: bool = False


@dataclass(frozen=True)
class LoadData:
    """LOAD DATA [LOCAL] INPATH 'path' [OVERWRITE] INTO TABLE t [PARTITION (…)]."""

    TITLE: ClassVar[str] = "LOAD DATA"
    table: TableName
    path: str
    local: bool = False
    """LOCAL: the path is on this machine's filesystem and the files are copied (else moved, as Hive does)."""
    overwrite: bool = False
    partition: PartitionSpec | None = None


# --- DML and queries: expressions stay sqlglot nodes (Hive syntax); DuckDB evaluates them (client/sql_eval.py) ---


@dataclass(frozen=True)
class Query:
    """SELECT … (WITH, UNION, joins, aggregates, ORDER BY, LIMIT; ``ROW__ID``) over the warehouse's tables."""

    TITLE: ClassVar[str] = "SELECT"
    query: exp.Query


@dataclass(frozen=True)
class Insert:
    """INSERT INTO [TABLE] t [PARTITION (k='v' | k, …)] [(columns)] VALUES … | SELECT …, and INSERT OVERWRITE TABLE."""

    TITLE: ClassVar[str] = "INSERT"
    table: TableName
    source: exp.Expr
    """exp.Values or a query."""
    partition: dict[str, str | None] | None = None
    """Static values, None for a dynamic key (``PARTITION (k)``)."""
    columns: tuple[str, ...] | None = None
    overwrite: bool = False


@dataclass(frozen=True)
class MultiInsert:
    """Hive's multi-table INSERT: ``FROM src INSERT OVERWRITE TABLE a SELECT … INSERT INTO TABLE b SELECT …`` — every
    INSERT (its SELECT reading ``src``) in one transaction, all committed or none."""

    TITLE: ClassVar[str] = "INSERT"
    inserts: tuple[Insert, ...]


@dataclass(frozen=True)
class Truncate:
    TITLE: ClassVar[str] = "TRUNCATE TABLE"
    table: TableName
    partition: PartitionSpec | None = None


@dataclass(frozen=True)
class Update:
    TITLE: ClassVar[str] = "UPDATE"
    table: TableName
    assignments: tuple[tuple[str, exp.Expr], ...]
    where: exp.Expr | None = None


@dataclass(frozen=True)
class Delete:
    TITLE: ClassVar[str] = "DELETE"
    table: TableName
    where: exp.Expr | None = None


@dataclass(frozen=True)
class MergeWhen:
    """One WHEN clause: matched → ``update`` (column, expression) pairs or ``delete``; not matched → ``insert``
    values (with ``insert_columns`` when named)."""

    matched: bool
    condition: exp.Expr | None = None
    update: tuple[tuple[str, exp.Expr], ...] | None = None
    delete: bool = False
    insert: tuple[exp.Expr, ...] | None = None
    insert_columns: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Merge:
    TITLE: ClassVar[str] = "MERGE"
    table: TableName
    target_alias: str
    source: TableName | exp.Query
    source_alias: str
    on: exp.Expr
    clauses: tuple[MergeWhen, ...]


Statement = (ShowCompactions | ShowTransactions | ShowLocks | AlterTableCompact | AlterTableProperties
             | AlterTableColumns | AbortTransactions | AbortCompactions | CreateTable | CreateTableLike
             | CreateTableAs | Describe
             | CreateDatabase | DropDatabase | DescribeDatabase | Use | ShowDatabases | ShowTables | DropTable
             | AlterTableAddPartitions | AlterTableDropPartitions | ShowPartitions | ShowTblProperties
             | ShowCreateTable | LoadData | CreateView | DropView
             | Query | Insert | MultiInsert | Truncate | Update | Delete | Merge)

SUPPORTED = ("SELECT", "INSERT INTO/OVERWRITE", "FROM … INSERT … INSERT …", "UPDATE", "DELETE", "MERGE", "TRUNCATE TABLE",
             "SHOW COMPACTIONS", "SHOW TRANSACTIONS", "SHOW LOCKS", "ALTER TABLE … COMPACT",
             "ALTER TABLE … SET/UNSET TBLPROPERTIES", "ALTER TABLE … ADD COLUMNS/REPLACE COLUMNS/CHANGE COLUMN",
             "ABORT TRANSACTIONS", "ABORT COMPACTIONS", "CREATE [TRANSACTIONAL] TABLE [LIKE | AS SELECT]",
             "DROP TABLE [PURGE]", "CREATE DATABASE", "DROP DATABASE [RESTRICT|CASCADE]",
             "DESCRIBE DATABASE [EXTENDED]", "USE", "SHOW DATABASES [LIKE]",
             "SHOW TABLES [IN db] [LIKE]", "ALTER TABLE … ADD/DROP PARTITION", "SHOW PARTITIONS",
             "SHOW TBLPROPERTIES", "SHOW CREATE TABLE", "DESCRIBE [FORMATTED]",
             "LOAD DATA [LOCAL] INPATH … [OVERWRITE] INTO TABLE", "CREATE [OR REPLACE] VIEW … AS SELECT",
             "ALTER VIEW … AS SELECT", "DROP VIEW", "SHOW VIEWS")
"""What ``airflow-acid sql`` understands, for error messages and help."""
