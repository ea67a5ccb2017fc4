"""``where`` predicates and ``set`` values of the client API, as pyarrow compute expressions.

A predicate is one of:

* a ``pyarrow.compute.Expression`` over the table's columns (partition keys included), e.g.
  ``pc.field("id") == 2`` or ``(pc.field("ds") == "2024-01-01") & (pc.field("amount") < 0)``;
* a dict ``{column: value}`` — the AND of ``column == value`` (``None`` means ``IS NULL``);
* ``None`` — every row.

A ``set`` value (UPDATE, MERGE) is a Python literal or an expression over the row's columns; in MERGE the
source row's columns are ``source("col")`` (a field named ``source.col``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.client.errors import SchemaMismatchError
from airflow_acid.client.table_schema import cast_to_column, conform_column, python_column

SOURCE_PREFIX = "source."

Predicate: TypeAlias = pc.Expression | Mapping[str, Any] | None


def source(column: str) -> pc.Expression:
    """The MERGE source row's ``column`` inside ``when_matched_update`` / ``when_not_matched_insert`` values."""
    return pc.field(SOURCE_PREFIX + column)


def as_expression(where: Predicate, *, table: str) -> pc.Expression | None:
    """Normalize a predicate to an Expression (None = all rows)."""
    if where is None or isinstance(where, pc.Expression):
        return where
    if isinstance(where, Mapping):
        if not where:
            return None
        expr = None
        for column, value in where.items():
            term = pc.field(column).is_null() if value is None else pc.field(column) == pc.scalar(value)
            expr = term if expr is None else expr & term
        return expr
    raise SchemaMismatchError(
        f"table {table}: where must be a pyarrow.compute Expression (e.g. pc.field('id') == 2), a dict "
        f"{{column: value}} or None, not {type(where).__name__}")


def check_predicate(expr: pc.Expression | None, schema: pa.Schema, *, table: str) -> None:
    """Fail early (before any lock or file) when ``expr`` does not apply to ``schema`` or is not boolean."""
    if expr is None:
        return
    import pyarrow.dataset as ds  # loads pandas: only when a predicate is checked

    try:
        result = ds.dataset(schema.empty_table()).to_table(columns={"_": expr}).column("_")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, KeyError) as exc:
        raise SchemaMismatchError(
            f"table {table}: predicate {expr} does not apply to the columns {schema.names}: "
            f"{str(exc).splitlines()[0]}") from None
    if result.type != pa.bool_():
        raise SchemaMismatchError(f"table {table}: predicate {expr} gives {result.type} values, not booleans")


def select_rows(rows: pa.Table, expr: pc.Expression | None) -> pa.Table:
    """The rows matching ``expr`` (all rows when None)."""
    return rows if expr is None else rows.filter(expr)


def as_value_expression(value: Any) -> pc.Expression:
    """A literal or an expression as an Expression."""
    return value if isinstance(value, pc.Expression) else pc.scalar(value)


def project(rows: pa.Table, values: Mapping[str, Any], target: pa.Schema, *, table: str) -> pa.Table:
    """Evaluate ``{column: literal | expression}`` over ``rows`` as the ``target`` fields named: a literal is typed
    by its column (as an inserted value is), an expression's result cast to it; char/varchar as Hive stores them."""
    expressions = {name: v for name, v in values.items() if isinstance(v, pc.Expression)}
    import pyarrow.dataset as ds  # loads pandas: only when values are projected

    try:
        out = ds.dataset(rows).to_table(columns=expressions) if rows.num_rows else \
            ds.dataset(rows.schema.empty_table()).to_table(columns=expressions)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, KeyError) as exc:
        raise SchemaMismatchError(f"table {table}: cannot evaluate {dict(values)} over the columns {rows.column_names}: "
                                  f"{str(exc).splitlines()[0]}") from None
    arrays = []
    for name, value in values.items():
        field = target.field(name)
        if name not in expressions:
            arrays.append(python_column(field, [value] * rows.num_rows, table))
            continue
        col = out.column(name)
        if col.type != field.type:
            try:
                col = cast_to_column(col, field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise SchemaMismatchError(
                    f"table {table}: the value for column {name} ({col.type}) does not fit {field.type}: "
                    f"{str(exc).splitlines()[0]}") from None
        if col.type == pa.null():
            col = pa.chunked_array([pa.nulls(len(col), field.type)])
        arrays.append(conform_column(col, field))
    return pa.Table.from_arrays(arrays, names=list(values))
