"""Table schemas between Hive and Arrow, and turning user data (rows, pyarrow, pandas) into a table's schema.

Hive column types map to Arrow as ORC stores them: tinyint→int8, smallint→int16, int→int32, bigint→int64,
float→float32, double→float64, boolean→bool, string/varchar/char→string, binary→binary, date→date32,
timestamp→timestamp[ns] (or another exact form for values outside 1677–2262, see acid/timestamps.py),
decimal(p,s)→decimal128(p,s), array/map/struct recursively. A ``char(n)``/``varchar(n)`` field carries its Hive type
in its metadata (``acid/hive_chars.py``): data turned into the table's schema is cut/padded to it as Hive does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from airflow_acid.acid.event_schema import orc_type
from airflow_acid.acid.hive_chars import conform as conform_chars
from airflow_acid.acid.hive_chars import parse_char_type, with_char_type
from airflow_acid.acid.timestamps import (
    TimestampForm,
    has_timestamps,
    in_form,
    is_out_of_nanosecond_range,
    keep_timestamp_forms,
    microsecond_type,
    narrowest,
)
from airflow_acid.client.errors import SchemaMismatchError

_SIMPLE = {
    "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "integer": pa.int32(), "bigint": pa.int64(),
    "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(), "string": pa.string(),
    "binary": pa.binary(), "date": pa.date32(), "timestamp": pa.timestamp("ns"),
}


def split_top_level(text: str) -> list[str]:
    """Split on commas that are not nested inside <> or ()."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def arrow_type(hive_type: str) -> pa.DataType:
    """The Arrow type of a (normalized) Hive column type."""
    t = hive_type.strip()
    low = t.lower()
    if low in _SIMPLE:
        return _SIMPLE[low]
    if low.startswith(("varchar", "char")):
        return pa.string()
    if low.startswith("decimal"):
        args = low[len("decimal"):].strip("() ")
        precision, scale = (int(x) for x in args.split(",")) if "," in args else (int(args or 10), 0)
        return pa.decimal128(precision, scale)
    if low.startswith("array<") and low.endswith(">"):
        return pa.list_(arrow_type(t[6:-1]))
    if low.startswith("map<") and low.endswith(">"):
        key, value = split_top_level(t[4:-1])
        return pa.map_(arrow_type(key), arrow_type(value))
    if low.startswith("struct<") and low.endswith(">"):
        fields = []
        for part in split_top_level(t[7:-1]):
            name, _, typ = part.partition(":")
            fields.append(pa.field(name.strip().strip("`"), arrow_type(typ)))
        return pa.struct(fields)
    raise SchemaMismatchError(f"Hive type {hive_type!r} has no Arrow equivalent supported by airflow-acid")


def arrow_field(name: str, hive_type: str) -> pa.Field:
    """The Arrow field of a column of a (normalized) Hive type: :func:`arrow_type`, with char/varchar types (nested
    ones too) recorded on their fields."""
    t = hive_type.strip()
    low = t.lower()
    char = parse_char_type(low)
    if char is not None:
        return with_char_type(pa.field(name, pa.string()), char)
    if low.startswith("array<") and low.endswith(">"):
        return pa.field(name, pa.list_(arrow_field("item", t[6:-1])))
    if low.startswith("map<") and low.endswith(">"):
        key, value = split_top_level(t[4:-1])
        return pa.field(name, pa.map_(arrow_field("key", key).with_nullable(False), arrow_field("value", value)))
    if low.startswith("struct<") and low.endswith(">"):
        fields = []
        for part in split_top_level(t[7:-1]):
            child, _, typ = part.partition(":")
            fields.append(arrow_field(child.strip().strip("`"), typ))
        return pa.field(name, pa.struct(fields))
    return pa.field(name, arrow_type(t))


def conform_column(column: pa.ChunkedArray | pa.Array, field: pa.Field) -> pa.ChunkedArray | pa.Array:
    """A column already of ``field``'s Arrow type with its char/varchar values cut/padded as Hive stores them."""
    return conform_chars(column, field)


def hive_type(arrow: pa.DataType, column: str = "?") -> str:
    """The Hive type name for an Arrow type (as ORC spells it)."""
    try:
        return orc_type(arrow, column)
    except ValueError as exc:
        raise SchemaMismatchError(str(exc)) from None


def arrow_schema(columns: Sequence[Any]) -> pa.Schema:
    """Arrow schema of catalog columns (objects with ``name`` and ``type``)."""
    return pa.schema([arrow_field(c.name, c.type) for c in columns])


def _describe(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name} {f.type}" for f in schema) + ")"


def to_arrow_table(data: Any, schema: pa.Schema, *, table: str, extra: Sequence[pa.Field] = ()) -> pa.Table:
    """Turn ``data`` into a pyarrow Table with exactly ``schema`` (plus any ``extra`` fields present).

    ``data``: a list of dicts (keys = column names) or of tuples (values in column order), a pyarrow Table or
    RecordBatch, or a pandas DataFrame. Column names match case-insensitively; a missing or unknown column or a
    value that does not convert raises :class:`SchemaMismatchError` naming the table, column and row.
    """
    allowed = list(schema) + [f for f in extra if f.name not in schema.names]
    by_lower = {f.name.lower(): f for f in allowed}
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        data = _from_python(data, schema, by_lower, table)
    rename = []
    for name in data.column_names:
        field = by_lower.get(name.lower())
        if field is None:
            raise SchemaMismatchError(
                f"table {table}: data has column {name!r}, which the table does not have; table columns are "
                f"{_describe(schema)}")
        rename.append(field.name)
    if len(set(rename)) != len(rename):
        raise SchemaMismatchError(f"table {table}: data names a column twice (case-insensitively): {data.column_names}")
    data = data.rename_columns(rename)
    missing = [f.name for f in schema if f.name not in rename]
    if missing:
        raise SchemaMismatchError(
            f"table {table}: data lacks column(s) {', '.join(missing)}; give a value (or None) for every column of "
            f"{_describe(schema)}")
    target = [f for f in allowed if f.name in rename]
    arrays = []
    for field in target:
        col = data.column(field.name)
        if col.type != field.type:
            try:
                col = cast_to_column(col, field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise SchemaMismatchError(
                    f"table {table}: column {field.name} expects {field.type} but the data holds {col.type} values "
                    f"that do not convert ({str(exc).splitlines()[0]})") from None
        arrays.append(conform_column(col, field))
    fields = [pa.field(f.name, a.type, metadata=f.metadata) for f, a in zip(target, arrays)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def cast_to_column(column: pa.ChunkedArray | pa.Array, typ: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """``column`` as ``typ``, its timestamps in the narrowest exact form (``acid/timestamps.py``: nanoseconds, else
    microseconds — e.g. for years outside 1677–2262 —, else the wide form); never rounds a timestamp. A decimal
    becomes the nearest FLOAT as Hive's HiveDecimal.floatValue (through its text: Arrow's own cast truncates, giving
    3.1399998 for 3.14)."""
    target = keep_timestamp_forms(typ, column.type)
    if pa.types.is_float32(target) and pa.types.is_decimal(column.type):
        column = column.cast(pa.string())
    try:
        out = column if column.type == target else column.cast(target, safe=True)
    except pa.ArrowInvalid as exc:
        wide = microsecond_type(target)
        if wide == target or not is_out_of_nanosecond_range(exc):
            raise
        out = column.cast(wide, safe=True)
    return narrowest(out) if has_timestamps(out.type) else out


def _from_python(data: Any, schema: pa.Schema, by_lower: Mapping[str, pa.Field], table: str) -> pa.Table:
    try:
        import pandas as pd  # optional
    except ImportError:  # pragma: no cover - pandas is a test/extra dependency
        pd = None
    if pd is not None and isinstance(data, pd.DataFrame):
        try:
            return pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaMismatchError(f"table {table}: the DataFrame does not convert to Arrow: {exc}") from None
    if isinstance(data, Mapping) or not isinstance(data, Sequence) or isinstance(data, (str, bytes)):
        raise SchemaMismatchError(
            f"table {table}: data must be a list of rows (dicts or tuples), a pyarrow Table or a pandas DataFrame, "
            f"not {type(data).__name__}")
    rows = list(data)
    if not rows:
        return schema.empty_table()
    if all(isinstance(r, Mapping) for r in rows):
        names: list[str] = []
        for i, row in enumerate(rows):
            for key in row:
                if str(key).lower() not in by_lower:
                    raise SchemaMismatchError(
                        f"table {table}: row {i} has column {key!r}, which the table does not have; table columns are "
                        f"{_describe(schema)}")
                if key not in names:
                    names.append(key)
        columns = {}
        for name in names:
            field = by_lower[str(name).lower()]
            absent = [i for i, r in enumerate(rows) if name not in r]
            if absent:
                raise SchemaMismatchError(f"table {table}: row {absent[0]} lacks column {field.name!r} "
                                          "(give None for a NULL)")
            columns[name] = _column(field, [r[name] for r in rows], table)
        return pa.table(columns)
    if all(isinstance(r, (tuple, list)) for r in rows):
        width = len(schema)
        for i, row in enumerate(rows):
            if len(row) != width:
                raise SchemaMismatchError(
                    f"table {table}: row {i} has {len(row)} values but the table has {width} columns "
                    f"{_describe(schema)}")
        return pa.table({f.name: _column(f, [r[j] for r in rows], table) for j, f in enumerate(schema)})
    raise SchemaMismatchError(f"table {table}: rows must all be dicts or all be tuples")


def python_column(field: pa.Field, values: list, table: str) -> pa.Array:
    """Python values (rows' cells, literals) as a column of ``field``: timestamps in their narrowest exact form
    (``datetime``, pandas timestamps, or dicts of the wide form's fields), dicts as maps where the type says map,
    char/varchar as Hive stores them; a :class:`SchemaMismatchError` names the first value that does not fit."""
    return conform_column(_column(field, values, table), field)


def _column(field: pa.Field, values: list, table: str) -> pa.Array:
    try:
        return pa.array(values, type=field.type)
    except pa.ArrowInvalid as exc:
        if not is_out_of_nanosecond_range(exc) or microsecond_type(field.type) == field.type:
            return _column_error(field, values, table)
        return _column(field.with_type(microsecond_type(field.type)), values, table)
    except (pa.ArrowTypeError, TypeError, OverflowError, ValueError):
        if has_timestamps(field.type):  # timestamps given in the wide form's fields (any year at nanoseconds)
            try:
                return narrowest(pa.array(values, type=in_form(field.type, TimestampForm.WIDE)))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, ValueError, KeyError):
                pass
        return _column_error(field, values, table)


def _column_error(field: pa.Field, values: list, table: str) -> pa.Array:
    """Raise a :class:`SchemaMismatchError` naming the first value of ``values`` that does not fit ``field``."""
    try:
        return pa.array(values, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, ValueError):
        for i, v in enumerate(values):
            try:
                pa.array([v], type=field.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, ValueError) as exc:
                raise SchemaMismatchError(
                    f"table {table}: row {i}, column {field.name}: value {v!r} does not fit {field.type} "
                    f"({str(exc).splitlines()[0]})") from None
        raise  # pragma: no cover - a failure no single value reproduces
