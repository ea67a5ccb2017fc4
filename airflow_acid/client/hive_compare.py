"""Hive's implicit conversions when a column is compared with a string literal (``WHERE id = '7'``, ``ts >
'2014-09-01'``): Hive compares a number with a string as DOUBLEs, and a date or timestamp with a string as that
type, a string column with a number as DOUBLEs; a string that is not such a value gives NULL (the comparison is not
true, never an error). DuckDB would cast
the literal to the column's type and fail on ``'abc'``; :func:`hive_comparisons` writes Hive's conversion into the
expression instead, the literal converted here by :mod:`airflow_acid.client.hive_casts`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pyarrow as pa
from sqlglot import exp

from airflow_acid.acid.timestamps import format_timestamp, is_timestamp_type
from airflow_acid.client.hive_casts import exact_timestamp, string_values

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
TypeOf = Callable[[exp.Column], "pa.DataType | None"]
"""The Arrow type of a column reference, or None when it is not known (a subquery's column, an ambiguous name)."""


def _number(text: str) -> exp.Expr:
    [value] = string_values([text], pa.float64())
    if value is None:
        return exp.cast(exp.null(), exp.DataType.build("DOUBLE"))
    return exp.cast(exp.Literal.string(repr(value)), exp.DataType.build("DOUBLE"))


def _date(text: str) -> exp.Expr:
    [value] = string_values([text], pa.date32())
    if value is None:
        return exp.cast(exp.null(), exp.DataType.build("DATE"))
    assert isinstance(value, dt.date)
    return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.build("DATE"))


def _timestamp(text: str) -> exp.Expr:
    value = exact_timestamp(text)
    if value is None:
        return exp.cast(exp.null(), exp.DataType.build("TIMESTAMP"))
    return exp.cast(exp.Literal.string(format_timestamp(value["epoch_seconds"], value["nanos_of_second"])),
                    exp.DataType.build("TIMESTAMP"))


def _converted(column: exp.Column, literal: exp.Literal, typ: pa.DataType) -> tuple[exp.Expr, exp.Expr] | None:
    """(column side, literal side) as Hive compares them, or None where DuckDB's own rule already agrees."""
    text = literal.this
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return exp.cast(column.copy(), exp.DataType.build("DOUBLE")), _number(text)
    if pa.types.is_date32(typ):
        return column.copy(), _date(text)
    if is_timestamp_type(typ):
        return column.copy(), _timestamp(text)
    return None


def _string_with_number(column: exp.Column, literal: exp.Literal) -> tuple[exp.Expr, exp.Expr]:
    """A string column compared with a number: both as DOUBLE, a string that is no number giving NULL."""
    return exp.TryCast(this=column.copy(), to=exp.DataType.build("DOUBLE")), \
        exp.cast(literal.copy(), exp.DataType.build("DOUBLE"))


def hive_comparisons(node: exp.Expr, type_of: TypeOf) -> exp.Expr:
    """``node`` with each comparison of a typed column and a string literal converted as Hive converts it."""
    def convert(n: exp.Expr) -> exp.Expr:
        if not isinstance(n, _COMPARISONS):
            return n
        left, right = n.this, n.expression
        for col, lit, column_left in ((left, right, True), (right, left, False)):
            if isinstance(col, exp.Column) and isinstance(lit, exp.Literal):
                typ = type_of(col)
                if typ is None:
                    return n
                if lit.is_string:
                    sides = _converted(col, lit, typ)
                elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
                    sides = _string_with_number(col, lit)
                else:
                    sides = None
                if sides is None:
                    return n
                column_side, literal_side = sides
                n.set("this", column_side if column_left else literal_side)
                n.set("expression", literal_side if column_left else column_side)
                return n
        return n

    return node.transform(convert)


def column_types(tables: dict[str, pa.Schema]) -> TypeOf:
    """Looks a column up in the tables a statement reads (alias → schema): by its qualifier, else by a name only
    one type answers to."""
    by_alias = {alias.lower(): {f.name.lower(): f.type for f in schema} for alias, schema in tables.items()}

    def type_of(column: exp.Column) -> pa.DataType | None:
        name = column.name.lower()
        if column.table:
            return by_alias.get(column.table.lower(), {}).get(name)
        found = {str(t): t for fields in by_alias.values() if (t := fields.get(name)) is not None}
        return next(iter(found.values())) if len(found) == 1 else None

    return type_of
