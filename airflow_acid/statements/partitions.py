"""Partition statements on airflow-acid's own metastore: ALTER TABLE … ADD / DROP PARTITION, SHOW PARTITIONS and
SHOW TBLPROPERTIES, as Hive runs them (a Hive metastore's partitions are added and dropped in Hive)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_acid.metastore.errors import InvalidInputError, NoSuchObjectError
from airflow_acid.statements.catalog import EXTERNAL_TABLE
from airflow_acid.statements.ddl_lock import exclusive_lock
from airflow_acid.statements.model import (
    AlterTableAddPartitions,
    AlterTableDropPartitions,
    ShowPartitions,
    ShowTblProperties,
)
from airflow_acid.statements.result import Result

if TYPE_CHECKING:
    from airflow_acid.statements.execute import StatementExecutor


def add_partitions(ex: StatementExecutor, s: AlterTableAddPartitions) -> Result:
    """Each partition registered (and its directory created), checked all before any is added."""
    info = ex.table_info(s.table)
    if not info.is_partitioned:
        raise InvalidInputError(f"table {info.full_name} is not partitioned; ADD PARTITION needs a partitioned table")
    names = [info.partition_name(spec) for spec, _ in s.partitions]
    existing = {p.name for p in ex.metastore.catalog.list_partitions(info.database, info.name)}
    clash = [n for n in names if n in existing]
    if clash and not s.if_not_exists:
        raise InvalidInputError(f"partition {clash[0]} of table {info.full_name} already exists; use ADD IF NOT "
                                "EXISTS PARTITION")
    messages = []
    for (spec, location), name in zip(s.partitions, names, strict=True):
        if name in existing:
            messages.append(f"partition {name} of {info.full_name} already exists")
            continue
        part = ex.metastore.catalog.add_partition(info.database, info.name, spec, location=location)
        fs, root = ex.warehouse.io.storage(part.location)
        fs.makedirs(root, exist_ok=True)
        messages.append(f"partition {name} of {info.full_name} added at {part.location}")
    return Result(s.TITLE, messages=messages)


def drop_partitions(ex: StatementExecutor, s: AlterTableDropPartitions) -> Result:
    """Each partition's metastore rows removed, then (managed tables) its directory; refused while the partition is
    in use, as DROP TABLE is. Every spec is checked before any partition is dropped."""
    info = ex.table_info(s.table)
    ex.metastore.catalog.check_ddl(f"drop a partition of {info.full_name}")
    names = [info.partition_name(spec) for spec in s.partitions]
    existing = {p.name for p in ex.metastore.catalog.list_partitions(info.database, info.name)}
    missing = [n for n in names if n not in existing]
    if missing and not s.if_exists:
        raise NoSuchObjectError(f"partition {missing[0]} of table {info.full_name} does not exist; use DROP IF "
                                "EXISTS PARTITION")
    external = info.table_type == EXTERNAL_TABLE or (info.property("EXTERNAL") or "").upper() == "TRUE"
    messages = []
    for name in dict.fromkeys(n for n in names if n in existing):
        with exclusive_lock(ex, f"drop partition {name} of {info.full_name}", info.database, info.name,
                            name) as lock_id:
            part = ex.metastore.catalog.drop_partition(info.database, info.name, name, if_exists=True,
                                                       refuse_in_use=True, holding=lock_id)
            if part is None:
                continue
            if not external:
                fs, root = ex.warehouse.io.storage(part.location)
                if fs.exists(root):
                    fs.rm(root, recursive=True)
        messages.append(f"partition {name} of {info.full_name} dropped")
    return Result(s.TITLE, messages=messages or [f"no partition of {info.full_name} to drop"])


def show_partitions(ex: StatementExecutor, s: ShowPartitions) -> Result:
    info = ex.table_info(s.table)
    if not info.is_partitioned:
        raise InvalidInputError(f"Table {info.full_name} is not a partitioned table")
    keys = [k.name.lower() for k in info.partition_keys]
    wanted = {k.lower(): v for k, v in (s.partition or {}).items()}
    unknown = [k for k in wanted if k not in keys]
    if unknown:
        raise InvalidInputError(f"unknown key {unknown[0]!r}; the partition keys are {', '.join(keys)}")
    parts = ex.metastore.catalog.list_partitions(info.database, info.name)
    rows: list[list[object]] = [[p.name] for p in parts
                                if all({k.lower(): v for k, v in p.spec.items()}.get(k) == v
                                       for k, v in wanted.items())]
    return Result(s.TITLE, ["partition"], sorted(rows, key=lambda r: str(r[0])))


def show_tblproperties(ex: StatementExecutor, s: ShowTblProperties) -> Result:
    info = ex.table_info(s.table)
    if s.key is None:
        return Result(s.TITLE, ["prpt_name", "prpt_value"], [[k, v] for k, v in sorted(info.properties.items())])
    value = info.property(s.key)
    if value is None:
        return Result(s.TITLE, ["prpt_value"], [[f"Table {info.full_name} does not have property: {s.key}"]])
    return Result(s.TITLE, ["prpt_value"], [[value]])


__all__ = ["add_partitions", "drop_partitions", "show_partitions", "show_tblproperties"]
