"""Arrow values to and from pyorc's Python values, exactly: the row writers' and the exact readers' conversions.

pyorc (ORC's C++ library) takes and gives one Python value per cell; these converters keep every value: timestamps
as int nanoseconds since the epoch (Python ints, so 0001-01-01 … 9999-12-31 at nanoseconds), dates as int days,
decimals as Python Decimals at the column's scale. ORC's C++ writer stores (floor seconds, nanoseconds) the way
ORC's Java writer does, so every engine reads the values back.
"""

from __future__ import annotations

import decimal
import zoneinfo
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyorc

from airflow_acid.acid.timestamps import NANOS_PER_SECOND, WIDE_TIMESTAMP

_EXACT = decimal.Context(prec=80)
"""Decimal arithmetic wide enough for any decimal(38, s) value, so no digit is rounded."""
_NANOS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


class NanosecondTimestamp(pyorc.converters.ORCConverter):
    """Timestamps as int nanoseconds since 1970-01-01 00:00:00 UTC (Python ints: any year 0001–9999)."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: zoneinfo.ZoneInfo) -> int:
        return seconds * NANOS_PER_SECOND + nanoseconds

    @staticmethod
    def to_orc(obj: int, timezone: zoneinfo.ZoneInfo) -> tuple[int, int]:
        seconds, nanos = divmod(int(obj), NANOS_PER_SECOND)
        return seconds, nanos


class DaysDate(pyorc.converters.ORCConverter):
    """Dates as int days since 1970-01-01."""

    @staticmethod
    def from_orc(days: int) -> int:
        return days

    @staticmethod
    def to_orc(obj: int) -> int:
        return int(obj)


class ExactDecimal(pyorc.converters.ORCConverter):
    """Decimals as Python Decimals at the column's scale (from Arrow, or from pyorc's reader)."""

    @staticmethod
    def from_orc(decimal: str) -> Decimal:
        return Decimal(decimal)

    @staticmethod
    def to_orc(precision: int, scale: int, obj: Decimal) -> int:
        return int(obj.scaleb(scale, context=_EXACT))  # the default context keeps 28 digits; decimal(38,s) has 38


CONVERTERS = {pyorc.TypeKind.TIMESTAMP: NanosecondTimestamp, pyorc.TypeKind.DATE: DaysDate,
              pyorc.TypeKind.DECIMAL: ExactDecimal}
"""The converters of every pyorc writer and exact reader of the project."""


def _plain_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type a column is cast to before ``to_pylist``: timestamps→int64 in their own unit (no overflow
    for years 0001–9999; :func:`_fixer` scales them to nanoseconds as Python ints), dates→int32."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    if t == WIDE_TIMESTAMP:
        return t
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_plain_type(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(_plain_type(t.key_type), _plain_type(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain_type(f.type)) for f in t])
    return t


def _wide_nanos(v: dict[str, int] | None) -> int | None:
    return None if v is None else v["epoch_seconds"] * NANOS_PER_SECOND + v["nanos_of_second"]


def _fixer(t: pa.DataType) -> Callable[[Any], Any] | None:
    """A function turning ``to_pylist`` values into what pyorc expects (structs→tuples, maps→dicts, timestamps→
    int nanoseconds), or None."""
    if pa.types.is_timestamp(t) and t.unit != "ns":
        factor = _NANOS_PER_UNIT[t.unit]
        return lambda v: None if v is None else v * factor
    if t == WIDE_TIMESTAMP:
        return _wide_nanos
    if pa.types.is_struct(t):
        subs = [_fixer(f.type) for f in t]
        keys = [f.name for f in t]

        def fix_struct(v: dict[str, Any] | None) -> tuple[Any, ...] | None:
            if v is None:
                return None
            return tuple(v[k] if s is None else s(v[k]) for k, s in zip(keys, subs))
        return fix_struct
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        sub = _fixer(t.value_type)
        if sub is None:
            return None
        return lambda v: None if v is None else [sub(x) for x in v]
    if pa.types.is_map(t):
        ks, vs = _fixer(t.key_type), _fixer(t.item_type)
        return lambda v: None if v is None else {
            (k if ks is None else ks(k)): (x if vs is None else vs(x)) for k, x in v}
    return None


def column_values(array: pa.Array) -> list[Any]:
    """One column as pyorc values (see the module docstring)."""
    plain = _plain_type(array.type)
    values = (array.cast(plain) if plain != array.type else array).to_pylist()
    fix = _fixer(array.type)
    return values if fix is None else [fix(v) for v in values]


def table_rows(table: pa.Table | pa.RecordBatch) -> list[tuple[Any, ...]]:
    """Rows of ``table`` as pyorc tuples (the top-level struct of a file)."""
    if table.num_columns == 0:
        return [()] * table.num_rows
    columns = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in table.columns]
    return list(zip(*(column_values(c) for c in columns)))
