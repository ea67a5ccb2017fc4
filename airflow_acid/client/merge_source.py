"""The source of a client MERGE as an Arrow table: rows (tuples in table column order, or dicts), a pyarrow Table
or a pandas DataFrame, with its ON columns named and typed as the table's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from airflow_acid.client.errors import SchemaMismatchError
from airflow_acid.client.table_schema import python_column, to_arrow_table


def merge_source(table: str, data: Any, keys: list[str], full: pa.Schema) -> pa.Table:
    """``data`` as a table: columns named like a table column typed as it, ``keys`` (ON columns, which must be
    table columns the source has) spelled and typed as the table's."""
    if isinstance(data, (list, tuple)) and data and all(isinstance(r, (tuple, list)) for r in data):
        src = to_arrow_table(data, full, table=f"MERGE source for {table}")
    else:
        if isinstance(data, (list, tuple)):
            data = _typed_rows(list(data), full) if data else full.empty_table()
        src = to_arrow_table(data, pa.schema([]), table=f"MERGE source for {table}",
                             extra=list(full)) if _only_known(data, full) else _as_table(data)
    lowered = {c.lower(): c for c in src.column_names}
    for k in keys:
        if k not in full.names:
            raise SchemaMismatchError(f"table {table}: MERGE key {k!r} is not a column of the table "
                                      f"({full.names})")
        if k.lower() not in lowered:
            raise SchemaMismatchError(f"table {table}: MERGE source has no key column {k!r} "
                                      f"(source columns {src.column_names})")
    src = src.rename_columns([c if c.lower() not in {k.lower() for k in keys} else
                              next(k for k in keys if k.lower() == c.lower()) for c in src.column_names])
    cols = []
    for name in src.column_names:
        col = src.column(name)
        if name in keys and col.type != full.field(name).type:
            try:
                col = col.cast(full.field(name).type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(f"table {table}: MERGE key {name} of the source ({col.type}) "
                                          f"does not convert to {full.field(name).type}: {exc}") from None
        cols.append(col)
    return pa.Table.from_arrays(cols, names=src.column_names)


def _as_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    try:
        import pandas as pd
        if isinstance(data, pd.DataFrame):
            return pa.Table.from_pandas(data, preserve_index=False)
    except ImportError:  # pragma: no cover
        pass
    raise SchemaMismatchError(f"MERGE source must be rows, a pyarrow Table or a pandas DataFrame, "
                              f"not {type(data).__name__}")


def _typed_rows(rows: list[Any], full: pa.Schema) -> pa.Table:
    """Dict rows as a Table: columns named like a table column take its type (a dict for a map column is a map, not
    a struct), the others are inferred."""
    if not all(isinstance(r, Mapping) for r in rows):
        raise SchemaMismatchError("MERGE source rows must all be dicts, or all tuples in table column order")
    by_lower = {f.name.lower(): f for f in full}
    names = list(dict.fromkeys(k for r in rows for k in r))
    columns = []
    for name in names:
        values = [r.get(name) for r in rows]
        field = by_lower.get(str(name).lower())
        if field is not None:  # typed like the table's column (any year, maps, char/varchar), as inserted rows are
            columns.append(python_column(field, values, "MERGE source"))
            continue
        try:
            columns.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaMismatchError(f"MERGE source column {name!r}: {str(exc).splitlines()[0]}") from None
    return pa.Table.from_arrays(columns, names=[str(n) for n in names])


def _only_known(data: Any, full: pa.Schema) -> bool:
    """Whether every column of the source is a table column (then it is typed like the table)."""
    table = _as_table(data)
    known = {n.lower() for n in full.names}
    return all(c.lower() in known for c in table.column_names)
