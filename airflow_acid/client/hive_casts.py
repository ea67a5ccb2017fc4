"""Hive's implicit conversion of strings into typed columns on write (``INSERT INTO t VALUES ('7', '2014-09-01
09:44:23.23')``): Hive casts each value as its ``CAST(… AS type)`` does and a string that is not a value of the type
becomes NULL, never an error. Numbers: surrounding blanks ignored, an integer type keeps the integer part of
``7.9`` and gives NULL outside its range; decimals round half-up to the scale, NULL beyond the precision; dates take
``yyyy-MM-dd`` (a time after it ignored); timestamps ``yyyy-MM-dd[( |T)HH:mm[:ss[.fffffffff]]]``, any year, every
digit."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

_TIMESTAMP = re.compile(r"^\s*(\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?\s*$")
_INTEGER = re.compile(r"^\s*([+-]?\d+)(?:\.\d*)?\s*$")
_INT_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}


def exact_timestamp(text: str) -> dict[str, int] | None:
    """A Hive timestamp's text as the wide form's fields (any year, every digit), or None if not one."""
    match = _TIMESTAMP.match(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    if int(hour or 0) > 23 or int(minute or 0) > 59 or int(second or 0) > 59:
        return None
    try:
        days = (dt.date(int(year), int(month), int(day)) - dt.date(1970, 1, 1)).days
    except ValueError:
        return None
    seconds = days * 86_400 + int(hour or 0) * 3600 + int(minute or 0) * 60 + int(second or 0)
    return {"epoch_seconds": seconds, "nanos_of_second": int((fraction or "0").ljust(9, "0"))}


def converts_strings(typ: pa.DataType) -> bool:
    """Whether a string column written into a column of ``typ`` goes through :func:`string_values`."""
    return typ in _INT_BITS or pa.types.is_floating(typ) or pa.types.is_decimal(typ) or pa.types.is_date32(typ) \
        or pa.types.is_timestamp(typ)


def string_values(values: list[str | None], typ: pa.DataType) -> list[Any]:
    """Each string as Hive casts it to ``typ`` (None where Hive gives NULL): Python values for
    :func:`~airflow_acid.client.table_schema.python_column` (timestamps as the wide form's fields)."""
    parse = _parser(typ)
    return [None if v is None else parse(v) for v in values]


def _parser(typ: pa.DataType) -> Callable[[str], Any]:
    if typ in _INT_BITS:
        return lambda text: _integer(text, _INT_BITS[typ])
    if pa.types.is_floating(typ):
        return _floating
    if pa.types.is_decimal(typ):
        return lambda text: _decimal(text, typ.precision, typ.scale)
    if pa.types.is_date32(typ):
        return _date
    return exact_timestamp


def _integer(text: str, bits: int) -> int | None:
    match = _INTEGER.match(text)
    if match is None:
        return None
    value = int(match.group(1))
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


def _floating(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) or text.strip().lstrip("+-").lower() in ("nan", "infinity") else None


def _decimal(text: str, precision: int, scale: int) -> Decimal | None:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    rounded = value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    return rounded if len(rounded.as_tuple().digits) <= precision or rounded == 0 else None


def _date(text: str) -> dt.date | None:
    value = exact_timestamp(text)
    return None if value is None else dt.date(1970, 1, 1) + dt.timedelta(days=value["epoch_seconds"] // 86_400)
