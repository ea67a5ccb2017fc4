"""Unqualified table names resolved in the session's current database (USE db), as Hive resolves them."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from sqlglot import exp

from airflow_acid.statements.model import DEFAULT_DATABASE, TableName

S = TypeVar("S")


def in_database(statement: S, database: str) -> S:
    """``statement`` with every table name that names no database (typed names and those inside queries, CTE names
    left alone) qualified with ``database``; the statement itself when that is ``default`` (nothing changes)."""
    if database == DEFAULT_DATABASE or not dataclasses.is_dataclass(statement) or isinstance(statement, type):
        return statement
    changes: dict[str, object] = {}
    for f in dataclasses.fields(statement):
        value = getattr(statement, f.name)
        if isinstance(value, TableName) and value.database is None:
            changes[f.name] = TableName(value.table, database)
        elif isinstance(value, exp.Expr):
            changes[f.name] = qualify_tables(value, database)
        elif isinstance(value, tuple) and any(dataclasses.is_dataclass(v) for v in value):
            changes[f.name] = tuple(in_database(v, database) for v in value)
    return dataclasses.replace(statement, **changes) if changes else statement


def qualify_tables(node: exp.Expr, database: str) -> exp.Expr:
    """A copy of ``node`` whose table references without a database name ``database``."""
    node = node.copy()
    ctes = {c.alias_or_name.lower() for c in node.find_all(exp.CTE)}
    for table in node.find_all(exp.Table):
        if table.name and not table.db and table.name.lower() not in ctes:
            table.set("db", exp.to_identifier(database))
    return node


__all__ = ["in_database", "qualify_tables"]
