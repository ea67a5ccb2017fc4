"""The type matrix of issue 29 ("every value exactly, in every engine"): a table with every Hive type, rows of edge
values, the form the client API takes them in, and what each value must read back as in our reader, ORC's Java
reader (``tests/spark/java/ReadOrcValues.java --cells``) and Spark.

A value is kept in one *canonical* form that every reader's output is turned into before comparing: timestamps as
exact ``Ts(seconds since epoch, nanos)`` pairs (Python's datetime stops at microseconds, Arrow's nanoseconds at
1677–2262), floats by their bits (NaN by isnan), decimals at their scale, maps as ordered pairs. :func:`cell`
renders a canonical value as ReadOrcValues prints it, so a mismatch reads the same whichever reader found it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa

from airflow_acid.client.table_schema import split_top_level

EPOCH = dt.datetime(1970, 1, 1)
NS_MIN, NS_MAX = -(2**63), 2**63 - 1
"""The span of Arrow's timestamp[ns] (int64 nanoseconds since the epoch): 1677-09-21 … 2262-04-11 23:47:16.854775807."""


@dataclass(frozen=True, order=True)
class Ts:
    """An exact timestamp: whole seconds since 1970-01-01 00:00:00 UTC (floor) and 0 <= nanos < 10**9."""

    seconds: int
    nanos: int

    @classmethod
    def parse(cls, text: str) -> Ts:
        """``YYYY-MM-DD HH:MM:SS[.fffffffff]`` (proleptic Gregorian, as Hive and Python's datetime count)."""
        whole, _, fraction = text.partition(".")
        delta = dt.datetime.strptime(whole, "%Y-%m-%d %H:%M:%S") - EPOCH
        return cls(delta.days * 86400 + delta.seconds, int(fraction.ljust(9, "0")) if fraction else 0)

    @property
    def epoch_nanos(self) -> int:
        return self.seconds * 10**9 + self.nanos

    def in_nanosecond_range(self) -> bool:
        return NS_MIN <= self.epoch_nanos <= NS_MAX

    def floor_micros(self) -> Ts:
        return Ts(self.seconds, self.nanos - self.nanos % 1000)

    def text(self) -> str:
        """Hive's literal text of the value (9 fraction digits when it has any)."""
        stamp = EPOCH + dt.timedelta(seconds=self.seconds)
        return stamp.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0") + (f".{self.nanos:09d}" if self.nanos else "")

    def java_late(self) -> bool:
        """Whether ORC's Java reader gives this value one second late: a timestamp in (-1 s, 0) with a fraction of a
        millisecond or more reads so even from a file of ORC's own Java writer (ORC's timestamp encoding, not our
        writers; see :data:`UNSTORABLE`). Java comparisons leave such values out; our reader's keep them."""
        return self.seconds == -1 and self.nanos >= 1_000_000


TIMESTAMPS = [Ts.parse(t) for t in (
    "0001-01-01 00:00:00", "1500-01-01 12:34:56.123456789", "1582-10-04 12:34:56.789", "1582-10-15 00:00:00.000000001",
    "1969-12-31 23:59:59.000999999", "1969-12-31 23:59:58.5", "1960-06-15 10:00:00.000000001", "1970-01-01 00:00:00",
    "2262-04-11 23:47:16.854775807", "2262-04-12 00:00:00", "9999-12-31 23:59:59.999999999")]
"""Every edge timestamp of the matrix (the exact values, nanoseconds included). The last second before 1970 only with
a fraction below a millisecond: ORC cannot store one of a millisecond or more there (see :data:`UNSTORABLE`)."""
UNSTORABLE = [Ts.parse(t) for t in ("1969-12-31 23:59:59.999999999", "1969-12-31 23:59:59.5", "1969-12-31 23:59:59.001")]
"""Timestamps in (-1 s, 0) with a fraction of a millisecond or more: ORC's encoding (seconds and nanoseconds, read
by Java as milliseconds) gives them back one second late in ORC's Java reader, Hive, Spark and Trino — even from
ORC's own Java writer — so writers refuse them (``UnstorableTimestampError``) rather than store a value others misread."""

COLUMNS: list[tuple[str, str]] = [
    ("k", "int"), ("b", "boolean"), ("ti", "tinyint"), ("si", "smallint"), ("i", "int"), ("bi", "bigint"),
    ("f", "float"), ("d", "double"), ("dec38", "decimal(38,18)"), ("dec10", "decimal(10,2)"), ("s", "string"),
    ("vc", "varchar(10)"), ("c", "char(5)"), ("bin", "binary"), ("dt", "date"), ("ts", "timestamp"),
    ("st", "struct<a:int,t:timestamp,s:string>"), ("ats", "array<timestamp>"), ("adec", "array<decimal(38,18)>"),
    ("m", "map<string,timestamp>")]
"""The matrix table: ``k`` is the row key (unique, the bucketing column), every other column one Hive type."""
NAMES = [n for n, _ in COLUMNS]
TYPES = dict(COLUMNS)
ROW_TYPE = "struct<" + ",".join(f"{n}:{t}" for n, t in COLUMNS) + ">"

F32_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
F32_MIN_NORMAL = struct.unpack("<f", struct.pack("<I", 0x00800000))[0]
F32_MIN_SUBNORMAL = struct.unpack("<f", struct.pack("<I", 0x00000001))[0]
DEC38, DEC38_NEG = Decimal("99999999999999999999.999999999999999999"), Decimal("-99999999999999999999.999999999999999999")
DEC10, DEC10_NEG = Decimal("99999999.99"), Decimal("-99999999.99")
WIDE = decimal.Context(prec=60)
"""Decimal arithmetic wide enough for decimal(38,·) (the default context rounds to 28 digits)."""
TEXT = ["", None, "plain", "naïve façade", "日本語テキスト", "emoji 😀🎉 ok", "x" * 40, "a,b}{=[]:;\"'\\"]
"""Strings (also cut/padded for varchar(10)/char(5), as Hive stores them)."""

EDGES: dict[str, list[Any]] = {
    "b": [True, False, None],
    "ti": [-128, 127, 0, None],
    "si": [-32768, 32767, 0, None],
    "i": [-(2**31), 2**31 - 1, 0, None],
    "bi": [-(2**63), 2**63 - 1, 0, None],
    "f": [0.0, -0.0, math.nan, math.inf, -math.inf, F32_MAX, -F32_MAX, F32_MIN_NORMAL, F32_MIN_SUBNORMAL, 1.5, None],
    "d": [0.0, -0.0, math.nan, math.inf, -math.inf, 1.7976931348623157e308, -1.7976931348623157e308,
          2.2250738585072014e-308, 5e-324, 0.1, None],
    "dec38": [DEC38, DEC38_NEG, Decimal("0.000000000000000001"), Decimal(0), Decimal("-1.5"), None],
    "dec10": [DEC10, DEC10_NEG, Decimal("0.01"), Decimal(0), None],
    "s": TEXT,
    "vc": ["", None, "abcdefghij", "abcdefghijKLMNOP", "日本語日本語日本語日本語", "😀😀😀😀😀😀😀😀😀😀😀😀", "short ",
           "ab"],
    "c": ["", None, "abcde", "abcdefgh", "日本", "😀😀😀😀😀😀😀", "a b", "x    yz"],
    "bin": [b"", None, b"\x00\xff\x00", bytes(range(256)), "😀".encode()],
    "dt": [dt.date(1, 1, 1), dt.date(1500, 1, 1), dt.date(1582, 10, 4), dt.date(1582, 10, 15), dt.date(1969, 12, 31),
           dt.date(1970, 1, 1), dt.date(9999, 12, 31), None],
    "ts": [*TIMESTAMPS, None],
    "st": [None, {"a": None, "t": None, "s": None}, *({"a": 2**31 - 1 - j, "t": t, "s": TEXT[j % len(TEXT)]}
                                                     for j, t in enumerate(TIMESTAMPS))],
    "ats": [None, [], [None], TIMESTAMPS[:4], TIMESTAMPS[4:8], TIMESTAMPS[8:], [TIMESTAMPS[0], None, TIMESTAMPS[-1]]],
    "adec": [None, [], [None], [DEC38, DEC38_NEG, Decimal("0.000000000000000001")], [Decimal(0), None]],
    "m": [None, {}, {"": None}, {"lo": TIMESTAMPS[0], "hi": TIMESTAMPS[-1]},
          {"日本": TIMESTAMPS[1], "😀": TIMESTAMPS[4], "n": TIMESTAMPS[6]}, {"mid": TIMESTAMPS[8], "x": TIMESTAMPS[9]}],
}
"""Per column, every edge value the matrix rows hold (as written; char/varchar before Hive's cut and padding)."""

ROWS_N = max(len(v) for v in EDGES.values())


def matrix_rows(start: int = 0, count: int = ROWS_N, *, shift: int = 0) -> list[dict[str, Any]]:
    """Rows ``k = start … start+count-1``; row k holds, per column, edge value ``(k + shift) mod len(edges)``, so
    ``ROWS_N`` consecutive rows hold every edge value of every column."""
    return [{"k": k, **{n: EDGES[n][(k + shift) % len(EDGES[n])] for n in NAMES[1:]}} for k in range(start, start + count)]


def microsecond_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with every timestamp at its microsecond floor (what the API can take in one column today)."""
    return [{n: _map_ts(v, Ts.floor_micros) for n, v in row.items()} for row in rows]


def clamp(ts: Ts) -> Ts:
    """``ts`` moved into the nanosecond span 1677-09-21 00:12:43.145224193 … 2262-04-11 23:47:16.854775807 (the
    lower end one above int64's minimum, which numpy and pandas take for NaT)."""
    nanos = min(max(ts.epoch_nanos, NS_MIN + 1), NS_MAX)
    return Ts(*divmod(nanos, 10**9))


def in_range_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with every timestamp clamped into 1677–2262 (exact nanoseconds, the span Arrow holds them in)."""
    return [{n: _map_ts(v, clamp) for n, v in row.items()} for row in rows]


VARIANTS = {"microseconds": microsecond_rows, "nanoseconds in 1677-2262": in_range_rows,
            "nanoseconds": lambda rows: rows}
"""The timestamps the matrix rows hold: every edge value at its microsecond floor (given as ``datetime``), every one
clamped into 1677–2262 at exact nanoseconds (``pandas.Timestamp``), and the exact values (the wide form's fields,
:func:`api_timestamp`)."""
WIDE_VARIANTS = {"nanoseconds"}
"""The variants whose timestamps are given in the wide form."""


def _map_ts(value: Any, fn: Any) -> Any:
    """``value`` (written or canonical) with ``fn`` applied to every timestamp inside it."""
    if isinstance(value, Ts):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_ts(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_ts(v, fn) for v in value]
    if isinstance(value, Pairs):
        return Pairs(tuple((k, _map_ts(v, fn)) for k, v in value.items))
    return value


def timestamps_of(value: Any) -> Iterator[Ts]:
    """Every timestamp inside a (written or canonical) value."""
    if isinstance(value, Ts):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from timestamps_of(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from timestamps_of(v)
    elif isinstance(value, Pairs):
        yield from timestamps_of(value.items)


# --- the form the client API takes --------------------------------------------------------------------------------


def api_timestamp(ts: Ts, *, wide: bool = False) -> Any:
    """A timestamp in the form the client API takes (``Transaction.insert`` rows, ``update(set=…)`` literals, MERGE
    sources): with ``wide``, the wide form's fields ``{"epoch_seconds": s, "nanos_of_second": n}`` (any year at
    nanoseconds; a column given so takes every value so); else a ``datetime`` when it is a whole microsecond (Python's
    own type, any year) and a ``pandas.Timestamp`` otherwise (nanoseconds, inside 1677–2262 only)."""
    if wide:
        return {"epoch_seconds": ts.seconds, "nanos_of_second": ts.nanos}
    if ts.nanos % 1000 == 0:
        return EPOCH + dt.timedelta(seconds=ts.seconds, microseconds=ts.nanos // 1000)
    return pd.Timestamp(ts.epoch_nanos, unit="ns")


def api_value(value: Any, *, wide: bool = False) -> Any:
    """A matrix value in the form the client API takes (timestamps by :func:`api_timestamp`)."""
    if isinstance(value, Ts):
        return api_timestamp(value, wide=wide)
    if isinstance(value, dict):
        return {k: api_value(v, wide=wide) for k, v in value.items()}
    if isinstance(value, list):
        return [api_value(v, wide=wide) for v in value]
    return value


def api_rows(rows: Sequence[dict[str, Any]], *, wide: bool = False) -> list[dict[str, Any]]:
    return [{n: api_value(v, wide=wide) for n, v in row.items()} for row in rows]


# --- what reads back ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plain:
    """A canonical value printed verbatim: a decimal at its scale, an ISO date, a float's bits."""

    text: str


@dataclass(frozen=True)
class Pairs:
    """A canonical map: its (key, value) pairs in order."""

    items: tuple[tuple[Any, Any], ...]


def expected(column: str, value: Any) -> Any:
    """The canonical value a written ``value`` of ``column`` must read back as: varchar(n) cut to n code points,
    char(n) cut and padded with spaces to n (as Hive stores them), floats at their type's precision."""
    typ = TYPES[column]
    if value is None:
        return None
    if typ.startswith(("varchar(", "char(")):
        n = int(typ[typ.index("(") + 1:-1])
        return value[:n].ljust(n) if typ.startswith("char(") else value[:n]
    return canonical(value, typ)


def canonical(value: Any, typ: str) -> Any:
    """A Python value (as written or as a reader gives it) in the canonical form of Hive type ``typ``; timestamps
    must already be :class:`Ts`."""
    if value is None:
        return None
    if typ in ("float", "double"):
        return Plain(float_bits(struct.unpack("<f", struct.pack("<f", value))[0] if typ == "float" else value))
    if typ.startswith("decimal"):
        scale = int(typ.rstrip(")").split(",")[1])
        return Plain(format(Decimal(value).quantize(Decimal(1).scaleb(-scale), context=WIDE), "f"))
    if typ == "date":
        return Plain(value.isoformat())
    if typ == "boolean":
        return Plain("1" if value else "0")
    if typ in ("tinyint", "smallint", "int", "bigint"):
        return Plain(str(int(value)))
    if typ.startswith("array<"):
        return [canonical(v, typ[6:-1]) for v in value]
    if typ.startswith("map<"):
        _k, vt = split_top_level(typ[4:-1])
        return Pairs(tuple((k, canonical(v, vt)) for k, v in (value.items() if isinstance(value, dict) else value)))
    if typ.startswith("struct<"):
        fields = dict(f.split(":", 1) for f in split_top_level(typ[7:-1]))
        return {name: canonical(value.get(name), t) for name, t in fields.items()}
    return value


def float_bits(value: float) -> str:
    """A double by its IEEE bits (``0x…``, 16 hex digits; every NaN is ``NaN``), as ReadOrcValues --cells prints it."""
    if math.isnan(value):
        return "NaN"
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016x}"


def expected_row(row: dict[str, Any]) -> dict[str, Any]:
    return {n: expected(n, row[n]) for n in NAMES}


def cell(value: Any) -> str:
    """A canonical value as ``ReadOrcValues --cells`` prints it: strings quoted and escaped, binary in hex,
    timestamps ``floorDiv(seconds).nanos``, structs ``{a=…}``, arrays ``[…]``, maps ``map(k:v,…)``."""
    if value is None:
        return "null"
    if isinstance(value, Plain):
        return value.text
    if isinstance(value, Ts):
        return f"{value.seconds}.{value.nanos:09d}"
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t").replace("\n", "\\n") + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={cell(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Pairs):
        return "map(" + ",".join(f"{cell(k)}:{cell(v)}" for k, v in value.items) + ")"
    if isinstance(value, list):
        return "[" + ",".join(cell(v) for v in value) + "]"
    raise TypeError(f"no canonical form for {value!r}")


# --- readers' output into canonical values ------------------------------------------------------------------------


def _is_wide(t: pa.DataType) -> bool:
    """Whether ``t`` is the wide timestamp form, ``struct<epoch_seconds: int64, nanos_of_second: int32>``."""
    return pa.types.is_struct(t) and [f.name for f in t] == ["epoch_seconds", "nanos_of_second"]


def _integer_timestamps(t: pa.DataType) -> pa.DataType:
    """``t`` with every timestamp replaced by int64 (its count of units), so no conversion rounds or overflows."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if _is_wide(t):
        return t
    if pa.types.is_list(t):
        return pa.list_(_integer_timestamps(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(t.key_type, _integer_timestamps(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_integer_timestamps(f.type)) for f in t])
    return t


def _from_python(value: Any, t: pa.DataType, typ: str) -> Any:
    """A value of Arrow type ``t`` (timestamps as unit counts) in the canonical form of Hive type ``typ``."""
    if value is None:
        return None
    if _is_wide(t):
        return Ts(value["epoch_seconds"], value["nanos_of_second"])
    if pa.types.is_timestamp(t):
        per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[t.unit]
        seconds, units = divmod(value, per_second)
        return Ts(seconds, units * (10**9 // per_second))
    if pa.types.is_list(t):
        return [_from_python(v, t.value_type, typ[6:-1]) for v in value]
    if pa.types.is_map(t):
        _k, vt = split_top_level(typ[4:-1])
        return Pairs(tuple((k, _from_python(v, t.item_type, vt)) for k, v in value))
    if pa.types.is_struct(t):
        fields = dict(f.split(":", 1) for f in split_top_level(typ[7:-1]))
        return {f.name: _from_python(value[f.name], f.type, fields[f.name]) for f in t}
    if typ.startswith(("array<", "map<", "struct<")) or pa.types.is_string(t) or pa.types.is_binary(t):
        return value
    return canonical(value, typ)


def arrow_rows(table: pa.Table, types: dict[str, str] = TYPES) -> list[dict[str, Any]]:
    """The rows of ``table`` (columns named as the matrix's, any subset, any order) as canonical values."""
    out: list[dict[str, Any]] = [{} for _ in range(table.num_rows)]
    for name in table.column_names:
        column = table.column(name)
        values = column.cast(_integer_timestamps(column.type)).to_pylist()
        for row, value in zip(out, values):
            row[name] = _from_python(value, column.type, types[name])
    return out
