"""``VALUES`` rows made only of literals, as Arrow, typed exactly as DuckDB types them — without DuckDB.

``INSERT INTO t VALUES (1, 'a')`` is the statement a script runs most, and evaluating it through DuckDB costs a cold
``airflow-acid sql`` process most of its time: loading DuckDB, sqlglot's DuckDB generator and opening a connection
(docs/performance.md#cli-latency). For rows whose every value is a literal this module gives the same Arrow table
DuckDB gives for ``SELECT * FROM (VALUES …)`` — same column types, same values —, so everything after it (Hive's
casts into the table's types, :func:`airflow_acid.client.sql_eval.conform`) is unchanged. Anything else — an
expression, a cast (``1L``, ``TIMESTAMP '…'``), a column mixing kinds DuckDB would combine or refuse, rows of
different widths, a number DuckDB would not type as below — returns None and goes through DuckDB as before.

DuckDB's literal types, per column (tests/client/test_literal_values.py compares with DuckDB itself):

- integers: INTEGER when every value fits 32 bits, else BIGINT (64 bits; beyond that: DuckDB);
- decimals written without an exponent: DECIMAL(p, s) with s the largest number of digits after the point and p
  the largest number of digits before it plus s, where each literal counts the digits it is written with (``0.5``
  has one before the point, ``.5`` none); p above 38: DuckDB;
- strings: VARCHAR; TRUE/FALSE: BOOLEAN; a column of NULLs only: NULL; NULLs beside other values take their type.
"""

from __future__ import annotations

from decimal import Decimal
from enum import Enum
from typing import Any

import pyarrow as pa
from sqlglot import exp

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_MAX_PRECISION = 38


class _Kind(Enum):
    NULL = "null"
    INTEGER = "integer"
    DECIMAL = "decimal"
    STRING = "string"
    BOOLEAN = "boolean"


def _number_text(node: exp.Expr) -> tuple[bool, str] | None:
    """(negative, digits as written) of a number literal, possibly negated; None for anything else."""
    negative = False
    while isinstance(node, exp.Neg):
        negative, node = not negative, node.this
    if isinstance(node, exp.Paren):
        return None
    if isinstance(node, exp.Literal) and not node.is_string:
        return negative, str(node.this)
    return None


def _value(node: exp.Expr) -> tuple[_Kind, Any, int, int] | None:
    """(kind, Python value, digits before the point, digits after it) of one literal; None if not one."""
    if isinstance(node, exp.Null):
        return _Kind.NULL, None, 0, 0
    if isinstance(node, exp.Boolean):
        return _Kind.BOOLEAN, bool(node.this), 0, 0
    if isinstance(node, exp.Literal) and node.is_string:
        return _Kind.STRING, str(node.this), 0, 0
    number = _number_text(node)
    if number is None:
        return None
    negative, text = number
    if text.isdigit():
        return _Kind.INTEGER, -int(text) if negative else int(text), 0, 0
    whole, point, fraction = text.partition(".")
    if not point or not (whole + fraction).isdigit() or not fraction:
        return None  # an exponent, a trailing point, …: DuckDB's rules
    return _Kind.DECIMAL, -Decimal(text) if negative else Decimal(text), len(whole), len(fraction)


def _column(values: list[tuple[_Kind, Any, int, int]]) -> pa.Array | None:
    kinds = {kind for kind, *_ in values} - {_Kind.NULL}
    if not kinds:
        return pa.nulls(len(values))
    if len(kinds) > 1:
        return None  # DuckDB combines (integer and decimal) or refuses (string and integer): let it
    (kind,) = kinds
    python = [v for _k, v, _w, _f in values]
    if kind is _Kind.INTEGER:
        present = [v for v in python if v is not None]
        if all(_INT32[0] <= v <= _INT32[1] for v in present):
            return pa.array(python, pa.int32())
        if all(_INT64[0] <= v <= _INT64[1] for v in present):
            return pa.array(python, pa.int64())
        return None
    if kind is _Kind.DECIMAL:
        scale = max(f for k, _v, _w, f in values if k is _Kind.DECIMAL)
        precision = max(w for k, _v, w, _f in values if k is _Kind.DECIMAL) + scale
        if precision > _MAX_PRECISION or precision < 1:
            return None
        return pa.array(python, pa.decimal128(precision, scale))
    return pa.array(python, pa.string() if kind is _Kind.STRING else pa.bool_())


def literal_table(values: exp.Values) -> pa.Table | None:
    """The rows of ``values`` as DuckDB's ``SELECT * FROM (VALUES …)`` gives them (columns ``col0``, ``col1``, …),
    or None when a value is not a literal this module types (see the module docstring)."""
    rows: list[list[tuple[_Kind, Any, int, int]]] = []
    for row in values.expressions:
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        parsed = [_value(item) for item in items]
        if any(p is None for p in parsed):
            return None
        rows.append([p for p in parsed if p is not None])
    if not rows or len({len(r) for r in rows}) != 1:
        return None  # DuckDB's error for rows of different widths
    columns = [_column([r[i] for r in rows]) for i in range(len(rows[0]))]
    if any(c is None for c in columns):
        return None
    return pa.table({f"col{i}": c for i, c in enumerate(columns)})


__all__ = ["literal_table"]
