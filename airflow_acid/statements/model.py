"""The Hive statements ``airflow-acid sql`` runs, as typed values (what the parser produces, what the executor runs).

Names keep the case the user typed; the executor resolves them (database ``default`` when none is given, as
Hive's current database).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

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


@dataclass(frozen=True)
class Describe:
    TITLE: ClassVar[str] = "DESCRIBE"
    table: TableName
    formatted: bool = False
    """DESCRIBE FORMATTED (or EXTENDED): also the table's storage and parameters."""
    partition: PartitionSpec | None = None


Statement = (ShowCompactions | ShowTransactions | ShowLocks | AlterTableCompact | AlterTableProperties
             | AlterTableColumns | AbortTransactions | AbortCompactions | CreateTable | Describe)

SUPPORTED = ("SHOW COMPACTIONS", "SHOW TRANSACTIONS", "SHOW LOCKS", "ALTER TABLE … COMPACT",
             "ALTER TABLE … SET/UNSET TBLPROPERTIES", "ALTER TABLE … ADD COLUMNS/REPLACE COLUMNS/CHANGE COLUMN",
             "ABORT TRANSACTIONS", "ABORT COMPACTIONS", "CREATE TABLE",
             "DESCRIBE [FORMATTED]")
"""What ``airflow-acid sql`` understands, for error messages and help."""
