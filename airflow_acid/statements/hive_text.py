"""Values as Hive's CLI prints them (Beeline's table and ``hive -e``): ``true``/``false``, FLOAT and DOUBLE as Java's
``Float/Double.toString`` (``3.14``, ``1.0E7``), timestamps without trailing zeros in the fraction (``… 09:44:23.23``,
none when whole), decimals at their scale, binary as its text."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal
from typing import Any


def hive_text(value: Any, null: str = "NULL") -> str:
    """One value as Hive prints it (``null`` for a missing one)."""
    if value is None:
        return null
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, dt.datetime):
        return timestamp_text(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def shortest_float32(value: float | None) -> float | None:
    """A FLOAT (32-bit) value as the double with the fewest digits that reads back as it (``3.14``, not
    ``3.1399998664855957``): what Java's Float.toString shows."""
    if value is None or not math.isfinite(value):
        return value
    single = _as_float32(value)
    for digits in range(1, 10):  # nine significant digits always read back as the same float32
        shortest = float(f"{single:.{digits}g}")
        if _as_float32(shortest) == single:
            return shortest
    return single


def _as_float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def java_double(value: float) -> str:
    """Java's Double.toString: plain digits with at least one after the point for 10^-3 <= |x| < 10^7, else
    ``d.dddE±n``; shortest digits that read back as the value."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(value)
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int), "a finite float has an integer exponent"
    places = len(digits) - 1 + exponent
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{places}"


def timestamp_text(value: dt.datetime) -> str:
    """Hive's Timestamp.toString: ``yyyy-MM-dd HH:mm:ss`` and the fraction's digits without trailing zeros."""
    nanos = value.microsecond * 1000 + int(getattr(value, "nanosecond", 0))
    text = (f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
            f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}")
    return f"{text}.{nanos:09d}".rstrip("0") if nanos else text
