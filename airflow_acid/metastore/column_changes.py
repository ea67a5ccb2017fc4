"""Schema evolution of a transactional ORC table: ALTER TABLE … ADD COLUMNS / REPLACE COLUMNS / CHANGE COLUMN with
Hive's rules for ACID ORC tables (issue 16 item 4).

ACID ORC files are read by position (Hive writes the row struct as ``_col0, _col1, …``), with the types they were
written with converted to the table's. So, as Hive's DDL does for ORC with schema evolution on (always, for
transactional tables):

* ADD COLUMNS appends columns; files written before read NULL for them.
* REPLACE COLUMNS may rename, widen and append, never drop (Hive: "Replacing columns cannot drop columns").
* CHANGE COLUMN renames and/or widens one column in place; FIRST / AFTER is refused (Hive: "Reordering columns is
  not supported"), as moving a column would make older files read the wrong values.
* A type may only widen losslessly — the conversions both Hive's ORC reader and this project's reader perform
  exactly: tinyint → smallint → int → bigint, float → double, decimal(p,s) → decimal(p',s) with p' ≥ p,
  varchar(n) → varchar(m ≥ n), char(n)/varchar(n) → string. Anything else (narrowing, int → string, complex types)
  is refused, naming the column, both types and what is allowed.

Partition keys are not columns of the files and cannot be changed here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from airflow_acid.metastore.errors import InvalidInputError

if TYPE_CHECKING:
    from airflow_acid.metastore.catalog import ColumnInfo

_INTEGERS = ("tinyint", "smallint", "int", "bigint")
ALLOWED_TEXT = ("tinyint → smallint → int → bigint, float → double, decimal(p,s) → decimal(p',s) with p' ≥ p, "
                "varchar(n) → varchar(m ≥ n), char(n)/varchar(n) → string")
_PARAM = re.compile(r"(decimal|varchar|char)\((\d+)(?:,(\d+))?\)")


def type_change_allowed(old: str, new: str) -> bool:
    """Whether a column of (normalized) type ``old`` may become ``new`` in a transactional ORC table."""
    if old == new:
        return True
    if old in _INTEGERS and new in _INTEGERS:
        return _INTEGERS.index(old) < _INTEGERS.index(new)
    if (old, new) == ("float", "double"):
        return True
    o, n = _PARAM.fullmatch(old), _PARAM.fullmatch(new)
    if o and new == "string":
        return o.group(1) in ("char", "varchar")
    if o and n and o.group(1) == n.group(1) == "decimal":
        return o.group(3) == n.group(3) and int(n.group(2)) >= int(o.group(2))
    if o and n and o.group(1) == n.group(1) == "varchar":
        return int(n.group(2)) >= int(o.group(2))
    return False


def check_type_change(table: str, column: str, old: str, new: str) -> None:
    if not type_change_allowed(old, new):
        raise InvalidInputError(
            f"table {table}: column {column} cannot change from {old} to {new}; a transactional ORC table's files "
            f"are read with the types they were written with, so only lossless widenings are allowed: {ALLOWED_TEXT}")


def _check_new_names(table: str, columns: Sequence[ColumnInfo], taken: set[str], partition_keys: set[str]) -> None:
    seen: set[str] = set()
    for c in columns:
        if c.name in partition_keys:
            raise InvalidInputError(f"table {table}: {c.name} is a partition key; a column cannot have its name")
        if c.name in seen or c.name in taken:
            raise InvalidInputError(f"table {table}: duplicate column name {c.name}")
        seen.add(c.name)


def add_columns(table: str, existing: Sequence[ColumnInfo], added: Sequence[ColumnInfo],
                partition_keys: Sequence[str] = ()) -> list[ColumnInfo]:
    """ADD COLUMNS: the new columns after the existing ones."""
    if not added:
        raise InvalidInputError(f"table {table}: ADD COLUMNS needs at least one column")
    _check_new_names(table, added, {c.name for c in existing}, set(partition_keys))
    return [*existing, *added]


def replace_columns(table: str, existing: Sequence[ColumnInfo], replacement: Sequence[ColumnInfo],
                    partition_keys: Sequence[str] = ()) -> list[ColumnInfo]:
    """REPLACE COLUMNS: position i of the old list becomes position i of the new one (renamed, widened); more columns
    are appended; fewer are refused."""
    if len(replacement) < len(existing):
        dropped = ", ".join(c.name for c in existing[len(replacement):])
        raise InvalidInputError(
            f"table {table}: replacing columns cannot drop columns ({dropped}); the files of a transactional ORC "
            "table are read by position, so REPLACE COLUMNS may only rename, widen or append columns")
    _check_new_names(table, replacement, set(), set(partition_keys))
    for old, new in zip(existing, replacement):
        check_type_change(table, old.name, old.type, new.type)
    return list(replacement)


def change_column(table: str, existing: Sequence[ColumnInfo], old_name: str, new: ColumnInfo, *,
                  position: str | None = None, partition_keys: Sequence[str] = ()) -> list[ColumnInfo]:
    """CHANGE [COLUMN] old new type [COMMENT …]: rename and/or widen in place; FIRST/AFTER refused."""
    if old_name in partition_keys:
        raise InvalidInputError(f"table {table}: {old_name} is a partition key; partition keys cannot be changed")
    names = [c.name for c in existing]
    if old_name not in names:
        raise InvalidInputError(f"table {table} has no column {old_name}; columns are {', '.join(names)}")
    if position is not None:
        raise InvalidInputError(
            f"table {table}: reordering columns ({position}) is not supported for a transactional ORC table: its "
            "files are read by position, so a moved column would read another column's values")
    index = names.index(old_name)
    others = {n for i, n in enumerate(names) if i != index}
    _check_new_names(table, [new], others, set(partition_keys))
    old = existing[index]
    check_type_change(table, old.name, old.type, new.type)
    comment = new.comment if new.comment is not None else old.comment
    return [*existing[:index], dataclasses.replace(new, comment=comment), *existing[index + 1:]]
