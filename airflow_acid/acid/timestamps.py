"""Hive timestamps over their full range (0001-01-01 … 9999-12-31) in Arrow.

Hive ``timestamp`` maps to Arrow ``timestamp[ns]``, which keeps Hive's nanoseconds but only spans 1677–2262
(int64 nanoseconds). Values outside that span are carried as ``timestamp[us]`` instead (microseconds, as Spark
reads Hive timestamps): both are the same ORC ``timestamp`` column, so writers accept either unit, readers fall
back to microseconds for a file that holds such values, and a read or compaction that meets one redoes its work
with the microsecond schema (:class:`TimestampRangeError`). Data inside 1677–2262 keeps nanosecond precision.
"""

from __future__ import annotations

import pyarrow as pa

NANOSECOND_RANGE_NOTE = "timestamp[ns] spans only 1677-09-21 … 2262-04-11"



def microsecond_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every ``timestamp[ns]`` (nested too) replaced by ``timestamp[us]``."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz) if t.unit == "ns" else t
    if pa.types.is_list(t):
        return pa.list_(microsecond_type(t.value_type))
    if pa.types.is_large_list(t):
        return pa.large_list(microsecond_type(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(microsecond_type(t.key_type), microsecond_type(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(microsecond_type(f.type)) for f in t])
    return t


def microsecond_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every ``timestamp[ns]`` replaced by ``timestamp[us]`` (metadata kept)."""
    return pa.schema([f.with_type(microsecond_type(f.type)) for f in schema], metadata=schema.metadata)


def has_nanosecond_timestamps(t: pa.DataType | pa.Schema) -> bool:
    """Whether ``t`` holds a ``timestamp[ns]`` anywhere (so widening to microseconds changes it)."""
    if isinstance(t, pa.Schema):
        return bool(microsecond_schema(t) != t)
    return bool(microsecond_type(t) != t)


def is_out_of_nanosecond_range(exc: BaseException) -> bool:
    """Whether an Arrow error says a timestamp does not fit nanoseconds (cast or ORC read)."""
    text = str(exc).lower()
    return "out of bounds timestamp" in text or ("nanosecond" in text and ("out of range" in text or
                                                                           "out of bounds" in text))
