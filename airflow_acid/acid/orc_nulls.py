"""Work around pyarrow's ORC writer misplacing values under a NULL nested struct.

When a struct nested in another struct (every ACID ``row`` holding a struct column) is NULL in some row but its
children still hold values there (Arrow allows that; pyarrow builds ``""`` or ``0`` under a NULL struct), the
Arrow ORC writer shifts the child values of the following rows: ``[{s:'x'}, NULL, {s:'y'}]`` is read back by
Java/Hive, pyorc and pyarrow itself as ``[{s:'x'}, NULL, {s:''}]``. With the children NULL wherever their struct is,
it writes correctly, so every pyarrow-written file goes through :func:`orc_safe` first.
"""

from __future__ import annotations

import pyarrow as pa


def _has_nested_struct(t: pa.DataType, nested: bool = False) -> bool:
    if pa.types.is_struct(t):
        return nested or any(_has_nested_struct(f.type, True) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_nested_struct(t.value_type, True)
    if pa.types.is_map(t):
        return _has_nested_struct(t.key_type, True) or _has_nested_struct(t.item_type, True)
    return False


def _safe_array(array: pa.Array) -> pa.Array:
    """``array`` with every struct's NULL pushed into its children, recursively."""
    t = array.type
    if pa.types.is_struct(t):
        children = array.flatten()  # children with the struct's nulls merged in
        return pa.StructArray.from_arrays([_safe_array(c) for c in children], fields=list(t),
                                          mask=array.is_null() if array.null_count else None)
    if pa.types.is_list(t) and _has_nested_struct(t.value_type, True):
        return pa.ListArray.from_arrays(array.offsets, _safe_array(array.values), type=t,
                                        mask=array.is_null() if array.null_count else None)
    if pa.types.is_map(t) and _has_nested_struct(t, True):
        return pa.MapArray.from_arrays(array.offsets, _safe_array(array.keys), _safe_array(array.items), type=t,
                                       mask=array.is_null() if array.null_count else None)
    return array


def orc_safe(table: pa.Table) -> pa.Table:
    """``table`` as pyarrow's ORC writer stores faithfully (unchanged, no copy, when it has no nested struct)."""
    if not any(_has_nested_struct(f.type) for f in table.schema):
        return table
    columns = [pa.chunked_array([_safe_array(chunk) for chunk in column.chunks], type=column.type)
               if _has_nested_struct(column.type) else column for column in table.columns]
    return pa.Table.from_arrays(columns, schema=table.schema)
