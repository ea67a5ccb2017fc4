"""Hive's ``char(n)`` and ``varchar(n)`` on Arrow string columns: the declared type, and values that fit it.

Arrow has one string type, so a ``char``/``varchar`` column is an Arrow string field whose metadata holds
:data:`HIVE_TYPE_KEY` = ``varchar(10)`` / ``char(5)`` (nested fields too: struct fields, list items, map keys and
values). Writers record that type in the ORC file (the pyorc type string, or the pyarrow-written Type rewritten by
:mod:`airflow_acid.acid.orc_tail`). Values follow Hive's ``HiveBaseChar`` rules, counting Unicode code points:
``varchar(n)`` keeps the first n characters; ``char(n)`` is truncated the same way and padded with spaces to n, the
form Hive's ORC writer stores and Hive returns. NULL stays NULL; an empty varchar stays empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

HIVE_TYPE_KEY = b"hive.type"
"""Arrow field metadata key naming a column's Hive ``char(n)`` / ``varchar(n)`` type."""

_CHAR_TYPE = re.compile(r"\s*(varchar|char)\s*\(\s*(\d+)\s*\)\s*", re.IGNORECASE)
ORC_KINDS = {"varchar": 16, "char": 17}
"""ORC ``Type.Kind`` numbers of VARCHAR and CHAR (STRING is 7; all three share the string stream encodings)."""


@dataclass(frozen=True)
class CharType:
    """A Hive ``char(length)`` or ``varchar(length)`` type."""

    kind: str
    """``"char"`` or ``"varchar"``."""
    length: int

    def __str__(self) -> str:
        return f"{self.kind}({self.length})"


def parse_char_type(text: str | bytes) -> CharType | None:
    """The char/varchar type a Hive type string names, or None for any other type."""
    match = _CHAR_TYPE.fullmatch(text.decode() if isinstance(text, bytes) else text)
    return CharType(match.group(1).lower(), int(match.group(2))) if match else None


def char_type_of(field: pa.Field) -> CharType | None:
    """The char/varchar type recorded on a string field, or None."""
    metadata = field.metadata
    if not metadata or HIVE_TYPE_KEY not in metadata or not _is_text(field.type):
        return None
    return parse_char_type(metadata[HIVE_TYPE_KEY])


def with_char_type(field: pa.Field, char: CharType) -> pa.Field:
    """``field`` (a string field) marked as ``char``; other metadata kept."""
    return field.with_metadata({**(field.metadata or {}), HIVE_TYPE_KEY: str(char).encode()})


def has_char_types(field: pa.Field) -> bool:
    """Whether ``field`` or a field nested in it is a char/varchar column."""
    if char_type_of(field) is not None:
        return True
    return any(has_char_types(child) for child in _children(field.type))


def schema_has_char_types(schema: pa.Schema) -> bool:
    """Whether any column of ``schema`` holds a char/varchar field."""
    return any(has_char_types(f) for f in schema)


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _children(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return list(t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    return []


def enforce(values: pa.Array | pa.ChunkedArray, char: CharType) -> pa.Array | pa.ChunkedArray:
    """String ``values`` as Hive stores them in ``char``: cut to ``length`` code points; a char padded with spaces
    to ``length``. Unchanged (the same object) when every value already fits."""
    lengths = pc.utf8_length(values)
    longest = pc.max(lengths).as_py()
    if longest is None:
        return values
    if longest > char.length:
        values = pc.utf8_slice_codeunits(values, 0, char.length)  # code points, as String.offsetByCodePoints
    if char.kind == "char" and pc.min(lengths).as_py() < char.length:
        values = pc.utf8_rpad(values, char.length, " ")
    return values


def conform(values: pa.Array | pa.ChunkedArray, field: pa.Field) -> pa.Array | pa.ChunkedArray:
    """``values`` of ``field``'s type with every char/varchar value in it (nested ones too) enforced; the same object
    when ``field`` holds no char/varchar."""
    if not has_char_types(field):
        return values
    if isinstance(values, pa.ChunkedArray):
        old = values.chunks
        chunks = [_conform(chunk, field) for chunk in old]
        if all(a is b for a, b in zip(chunks, old)):
            return values
        return pa.chunked_array(chunks, type=values.type)
    return _conform(values, field)


def _conform(array: pa.Array, field: pa.Field) -> pa.Array:
    char = char_type_of(field)
    if char is not None:
        return enforce(array, char)
    t = array.type
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(t):
        flat = array.flatten()
        children = [conform(child, f) for child, f in zip(flat, field.type)]
        if all(a is b for a, b in zip(children, flat)):
            return array
        return pa.StructArray.from_arrays(children, fields=list(field.type), mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        old = array.values
        values = conform(old, field.type.value_field)
        if values is old:
            return array
        kind = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        return kind.from_arrays(array.offsets, values, type=field.type, mask=mask)
    if pa.types.is_map(t):
        old_keys, old_items = array.keys, array.items
        keys, items = conform(old_keys, field.type.key_field), conform(old_items, field.type.item_field)
        if keys is old_keys and items is old_items:
            return array
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=field.type, mask=mask)
    return array


def conform_table(table: pa.Table, schema: pa.Schema | None = None) -> pa.Table:
    """``table`` with its char/varchar columns enforced, typed by ``schema`` (default: the table's own schema, whose
    fields must then carry the char/varchar metadata). The same object when nothing changes."""
    schema = table.schema if schema is None else schema
    if not schema_has_char_types(schema):
        return table
    old = [table.column(f.name) for f in schema]
    columns = [conform(a, f) for a, f in zip(old, schema)]
    if all(a is b for a, b in zip(columns, old)) and table.schema.equals(schema, check_metadata=True):
        return table
    return pa.Table.from_arrays(columns, schema=schema)


def annotated(schema: pa.Schema, char_types: Mapping[int, CharType]) -> pa.Schema:
    """``schema`` (a file's columns under an ORC root struct) with the char/varchar types an ORC Footer records by
    column id (pre-order, the root struct being 0) put on its fields."""
    if not char_types:
        return schema
    next_id = 1

    def visit(field: pa.Field) -> pa.Field:
        nonlocal next_id
        column_id = next_id
        next_id += 1
        t = field.type
        if pa.types.is_struct(t):
            field = field.with_type(pa.struct([visit(f) for f in t]))
        elif pa.types.is_list(t):
            field = field.with_type(pa.list_(visit(t.value_field)))
        elif pa.types.is_large_list(t):
            field = field.with_type(pa.large_list(visit(t.value_field)))
        elif pa.types.is_map(t):
            field = field.with_type(pa.map_(visit(t.key_field), visit(t.item_field)))
        char = char_types.get(column_id)
        return with_char_type(field, char) if char is not None and _is_text(field.type) else field

    return pa.schema([visit(f) for f in schema], metadata=schema.metadata)


def with_hive_chars(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (already of ``schema``'s types) with ``schema``'s char/varchar metadata and values enforced, so a
    file typed ``varchar(n)`` never holds longer values; unchanged when ``schema`` has no char/varchar or the types
    differ (the caller's cast then brings the metadata)."""
    if not schema_has_char_types(schema) or not table.schema.equals(schema):
        return table
    if not table.schema.equals(schema, check_metadata=True):
        table = table.cast(schema)
    return conform_table(table)
