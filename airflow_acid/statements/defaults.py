"""Column DEFAULT constraints in DML, as Hive applies them: an INSERT (or MERGE's WHEN NOT MATCHED INSERT) with a
column list fills the columns it leaves out from their DEFAULT, and the ``DEFAULT`` keyword in VALUES, UPDATE … SET
and MERGE's UPDATE SET / INSERT VALUES stands for the column's DEFAULT (NULL when it has none).

The statement is rewritten before it is compiled — the DEFAULT's text (as KEY_CONSTRAINTS keeps it) parsed into the
expression — so the values go through the same casts as any other value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.statements.dialect import HiveAcid
from airflow_acid.statements.model import Insert, Merge, MergeWhen, MultiInsert, TableName, Update

if TYPE_CHECKING:
    from airflow_acid.statements.execute import StatementExecutor

Lookup = Callable[[TableName], TableInfo]


def is_default_keyword(node: exp.Expr) -> bool:
    """The unquoted keyword ``DEFAULT`` where a value goes (sqlglot reads it as a variable or a column)."""
    if isinstance(node, exp.Var):
        return node.name.upper() == "DEFAULT"
    return (isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier)
            and not node.this.quoted and node.name.upper() == "DEFAULT")


def default_expression(info: TableInfo, column: str) -> exp.Expr:
    """The DEFAULT of ``column`` as an expression (NULL when it has none)."""
    for c in info.columns:
        if c.name.lower() == column.lower():
            return sqlglot.parse_one(c.default, read=HiveAcid) if c.default is not None else exp.Null()
    return exp.Null()


def with_defaults(ex: StatementExecutor, s: Any) -> Any:
    """``s`` with DEFAULTs applied (itself when it has nothing to apply)."""
    if isinstance(s, Insert):
        return _insert(ex.table_info, s)
    if isinstance(s, MultiInsert):
        return dataclasses.replace(s, inserts=tuple(_insert(ex.table_info, i) for i in s.inserts))
    if isinstance(s, Update) and any(is_default_keyword(v) for _, v in s.assignments):
        info = ex.table_info(s.table)
        return dataclasses.replace(s, assignments=tuple((c, default_expression(info, c) if is_default_keyword(v)
                                                         else v) for c, v in s.assignments))
    if isinstance(s, Merge) and any(c.insert is not None or c.update for c in s.clauses):
        info = ex.table_info(s.table)
        return dataclasses.replace(s, clauses=tuple(_merge_clause(info, c) for c in s.clauses))
    return s


def _insert(lookup: Lookup, s: Insert) -> Insert:
    keywords = isinstance(s.source, exp.Values) and any(is_default_keyword(v) for row in s.source.expressions
                                                        for v in _items(row))
    if s.columns is None and not keywords:
        return s
    info = lookup(s.table)
    data = [c.name for c in info.columns]
    targets = list(s.columns) if s.columns is not None else data
    given = {t.lower() for t in targets}
    missing = [c.name for c in info.columns if s.columns is not None and c.name.lower() not in given
               and c.default is not None]
    if not missing and not keywords:
        return s
    fill = [default_expression(info, c) for c in missing]
    source = s.source
    if isinstance(source, exp.Values):
        rows = []
        for row in source.expressions:
            values = [default_expression(info, targets[i]) if i < len(targets) and is_default_keyword(v) else v
                      for i, v in enumerate(_items(row))]
            rows.append(exp.Tuple(expressions=values + [f.copy() for f in fill]))
        source = exp.Values(expressions=rows)
    elif missing and isinstance(source, exp.Query):
        inner = source.subquery("_acid_default_source")
        source = exp.select(exp.Star(), *(f.as_(f"_acid_default_{i}") for i, f in enumerate(fill))).from_(inner)
    columns = (*s.columns, *missing) if s.columns is not None else None
    return dataclasses.replace(s, source=source, columns=columns)


def _items(row: exp.Expr) -> list[exp.Expr]:
    return list(row.expressions) if isinstance(row, exp.Tuple) else [row]


def _merge_clause(info: TableInfo, c: MergeWhen) -> MergeWhen:
    if c.update:
        return dataclasses.replace(c, update=tuple((col, default_expression(info, col) if is_default_keyword(v)
                                                    else v) for col, v in c.update))
    if c.insert is None:
        return c
    targets = list(c.insert_columns) if c.insert_columns is not None else [col.name for col in info.columns]
    values = [default_expression(info, targets[i]) if i < len(targets) and is_default_keyword(v) else v
              for i, v in enumerate(c.insert)]
    if c.insert_columns is None:
        return dataclasses.replace(c, insert=tuple(values))
    given = {t.lower() for t in targets}
    missing = [col.name for col in info.columns if col.name.lower() not in given and col.default is not None]
    return dataclasses.replace(c, insert=tuple(values) + tuple(default_expression(info, m) for m in missing),
                               insert_columns=(*c.insert_columns, *missing))


__all__ = ["default_expression", "is_default_keyword", "with_defaults"]
