"""Merging ORC ``ColumnStatistics`` messages, as an ORC writer does when it rolls stripe statistics into file ones.

:mod:`airflow_acid.acid.orc_append` builds one file from the stripes of several pyarrow-written pieces; the file's
Footer must then hold, per column, the statistics of all pieces together (ORC spec, "Column Statistics"). The
messages are merged field by field on their protobuf encoding: counts and sums add, minimum/maximum keep the
smaller/larger value, ``hasNull`` ORs; a sum either side left out (overflow) stays out.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from airflow_acid.acid.errors import OrcTailError
from airflow_acid.acid.orc_tail import _FIXED64, _LENGTH, _VARINT, _encode_varint, _length_field, _varint, _varint_field

# ColumnStatistics field numbers (orc_proto.proto)
_VALUES, _INT, _DOUBLE, _STRING, _BUCKET, _DECIMAL, _DATE, _BINARY, _TIMESTAMP, _HAS_NULL, _BYTES, _COLLECTION = (
    range(1, 13))
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

T = TypeVar("T")
Message = dict[int, list[int | bytes]]
"""A decoded protobuf message: field number -> its values in order (varints as ints, fixed64 as ints, bytes)."""


def _decode(data: bytes) -> Message:
    """The fields of a statistics message (varint, fixed64 and length-delimited only). A loop of its own rather than
    :func:`~airflow_acid.acid.orc_tail._fields`: a streaming flush decodes ~20 of these, and the generator and the
    raw slices it yields cost a fifth of the merge."""
    message: Message = {}
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        wire = key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LENGTH:
            length, pos = _varint(data, pos)
            if pos + length > end:
                raise OrcTailError("truncated length-delimited field in ORC column statistics")
            value, pos = data[pos:pos + length], pos + length
        elif wire == _FIXED64:
            if pos + 8 > end:
                raise OrcTailError("truncated fixed64 field in ORC column statistics")
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        else:
            raise OrcTailError(f"unexpected protobuf wire type {wire} in ORC column statistics")
        message.setdefault(key >> 3, []).append(value)
    return message


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _unzigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def _double(value: int) -> float:
    return float(struct.unpack("<d", value.to_bytes(8, "little"))[0])


def _double_field(number: int, value: float) -> bytes:
    return _encode_varint(number << 3 | _FIXED64) + struct.pack("<d", value)


def _int(message: Message, number: int) -> int | None:
    values = message.get(number)
    return int(values[-1]) if values and isinstance(values[-1], int) else None


def _sint(message: Message, number: int) -> int | None:
    value = _int(message, number)
    return None if value is None else _zigzag(value)


def _bytes(message: Message, number: int) -> bytes | None:
    values = message.get(number)
    return bytes(values[-1]) if values and isinstance(values[-1], bytes) else None


def _extreme(a: T | None, b: T | None, key: Callable[[T], Any], *, largest: bool) -> T | None:
    """The smaller (or larger) of two optional values; a missing one (no non-null values) does not count."""
    if a is None or b is None:
        return b if a is None else a
    if largest:
        return a if key(a) >= key(b) else b
    return a if key(a) <= key(b) else b


def _sum(a: int | None, b: int | None, *, bounded: bool = False) -> int | None:
    """Both sums added; None when either is missing (an overflowed sum) or, ``bounded``, when the result is not a
    64-bit integer."""
    if a is None or b is None:
        return None
    total = a + b
    return None if bounded and not _INT64_MIN <= total <= _INT64_MAX else total


def _min_max_sint(a: Message, b: Message) -> bytes:
    """Fields 1 (minimum) and 2 (maximum) as sint64/sint32 (IntegerStatistics, DateStatistics)."""
    out = b""
    for number, largest in ((1, False), (2, True)):
        value = _extreme(_sint(a, number), _sint(b, number), _identity, largest=largest)
        if value is not None:
            out += _varint_field(number, _unzigzag(value))
    return out


def _identity(value: Any) -> Any:
    return value


def _integers(a: Message, b: Message) -> bytes:
    """IntegerStatistics {1 minimum, 2 maximum, 3 sum: sint64}."""
    total = _sum(_sint(a, 3), _sint(b, 3), bounded=True)
    return _min_max_sint(a, b) + (b"" if total is None else _varint_field(3, _unzigzag(total)))


def _dates(a: Message, b: Message) -> bytes:
    """DateStatistics {1 minimum, 2 maximum: sint32 days}."""
    return _min_max_sint(a, b)


def _doubles(a: Message, b: Message) -> bytes:
    """DoubleStatistics {1 minimum, 2 maximum, 3 sum: double}."""
    def value(message: Message, number: int) -> float | None:
        bits = _int(message, number)
        return None if bits is None else _double(bits)
    out = b""
    for number, largest in ((1, False), (2, True)):
        found = _extreme(value(a, number), value(b, number), _identity, largest=largest)
        if found is not None:
            out += _double_field(number, found)
    sa, sb = value(a, 3), value(b, 3)
    return out + (_double_field(3, sa + sb) if sa is not None and sb is not None else b"")


def _bound(message: Message, exact: int, bound: int) -> tuple[bytes, int] | None:
    """A string minimum (or maximum) and the field it came from: the exact value, else the truncated bound."""
    value = _bytes(message, exact)
    if value is not None:
        return value, exact
    value = _bytes(message, bound)
    return None if value is None else (value, bound)


def _first(pair: tuple[bytes, int]) -> bytes:
    return pair[0]


def _strings(a: Message, b: Message) -> bytes:
    """StringStatistics {1 minimum, 2 maximum, 4 lowerBound, 5 upperBound: string (UTF-8 byte order); 3 sum: sint64
    (total length)}: a truncated bound stays a bound."""
    out = b""
    for exact, bound, largest in ((1, 4, False), (2, 5, True)):
        found = _extreme(_bound(a, exact, bound), _bound(b, exact, bound), _first, largest=largest)
        if found is not None:
            out += _length_field(found[1], found[0])
    total = _sum(_sint(a, 3), _sint(b, 3), bounded=True)
    return out + (b"" if total is None else _varint_field(3, _unzigzag(total)))


def _bucket_counts(message: Message) -> list[int]:
    found: list[int] = []
    for value in message.get(1, []):
        if isinstance(value, int):  # unpacked encoding
            found.append(value)
            continue
        pos = 0
        while pos < len(value):
            item, pos = _varint(value, pos)
            found.append(item)
    return found


def _buckets(a: Message, b: Message) -> bytes:
    """BucketStatistics {1 count: packed uint64} (booleans: the number of true values)."""
    ca, cb = _bucket_counts(a), _bucket_counts(b)
    width = max(len(ca), len(cb))
    ca, cb = ca + [0] * (width - len(ca)), cb + [0] * (width - len(cb))
    return _length_field(1, b"".join(_encode_varint(x + y) for x, y in zip(ca, cb))) if width else b""


def _decimal(message: Message, number: int) -> tuple[Decimal, bytes] | None:
    text = _bytes(message, number)
    if text is None:
        return None
    try:
        return Decimal(text.decode()), text
    except (InvalidOperation, UnicodeDecodeError) as exc:
        raise OrcTailError(f"malformed ORC decimal statistic {text!r}") from exc


def _decimal_value(pair: tuple[Decimal, bytes]) -> Decimal:
    return pair[0]


def _decimals(a: Message, b: Message) -> bytes:
    """DecimalStatistics {1 minimum, 2 maximum, 3 sum: decimals as strings}: extremes keep the writer's text."""
    out = b""
    for number, largest in ((1, False), (2, True)):
        found = _extreme(_decimal(a, number), _decimal(b, number), _decimal_value, largest=largest)
        if found is not None:
            out += _length_field(number, found[1])
    sa, sb = _decimal(a, 3), _decimal(b, 3)
    return out + (_length_field(3, str(sa[0] + sb[0]).encode()) if sa is not None and sb is not None else b"")


def _binaries(a: Message, b: Message) -> bytes:
    """BinaryStatistics {1 sum: sint64 (total length)}."""
    total = _sum(_sint(a, 1), _sint(b, 1), bounded=True)
    return b"" if total is None else _varint_field(1, _unzigzag(total))


_TIMESTAMP_FIELDS = ((1, 3, 5, False), (2, 4, 6, True))
"""(local ms, UTC ms, nanos, largest) of TimestampStatistics' minimum and maximum."""


def _timestamp(message: Message, local: int, utc: int, nanos: int) -> tuple[tuple[int, int], dict[int, int]] | None:
    """An extreme as ((UTC or local ms, nanos), its fields by number)."""
    ms = _sint(message, utc)
    if ms is None:
        ms = _sint(message, local)
    if ms is None:
        return None
    fields = {n: v for n in (local, utc, nanos) if (v := _int(message, n)) is not None}
    return (ms, fields.get(nanos, 0)), fields


def _timestamp_order(found: tuple[tuple[int, int], dict[int, int]]) -> tuple[int, int]:
    return found[0]


def _timestamps(a: Message, b: Message) -> bytes:
    """TimestampStatistics {1 minimum, 2 maximum, 3 minimumUtc, 4 maximumUtc: sint64 ms; 5 minimumNanos,
    6 maximumNanos: sub-millisecond nanoseconds + 1}: each extreme keeps its own fields together."""
    fields: dict[int, int] = {}
    for local, utc, nanos, largest in _TIMESTAMP_FIELDS:
        found = _extreme(_timestamp(a, local, utc, nanos), _timestamp(b, local, utc, nanos), _timestamp_order,
                         largest=largest)
        if found is not None:
            fields.update(found[1])
    return b"".join(_varint_field(number, fields[number]) for number in sorted(fields))


def _collections(a: Message, b: Message) -> bytes:
    """CollectionStatistics {1 minChildren, 2 maxChildren, 3 totalChildren: uint64}."""
    out = b""
    for number, largest in ((1, False), (2, True)):
        value = _extreme(_int(a, number), _int(b, number), _identity, largest=largest)
        if value is not None:
            out += _varint_field(number, value)
    total = _sum(_int(a, 3), _int(b, 3))
    return out + (b"" if total is None else _varint_field(3, total))


_TYPED: dict[int, Callable[[Message, Message], bytes]] = {
    _INT: _integers, _DOUBLE: _doubles, _STRING: _strings, _BUCKET: _buckets, _DECIMAL: _decimals, _DATE: _dates,
    _BINARY: _binaries, _TIMESTAMP: _timestamps, _COLLECTION: _collections}


def merge_column_statistics(a: bytes, b: bytes) -> bytes:
    """The ``ColumnStatistics`` of one column over the values of both messages (same column, same type)."""
    ma, mb = _decode(a), _decode(b)
    out = _varint_field(_VALUES, (_int(ma, _VALUES) or 0) + (_int(mb, _VALUES) or 0))
    for number in sorted(_TYPED):
        if number in ma or number in mb:
            sub_a = _decode(_bytes(ma, number) or b"")
            sub_b = _decode(_bytes(mb, number) or b"")
            out += _length_field(number, _TYPED[number](sub_a, sub_b))
    if _HAS_NULL in ma or _HAS_NULL in mb:
        out += _varint_field(_HAS_NULL, int(bool(_int(ma, _HAS_NULL)) or bool(_int(mb, _HAS_NULL))))
    if _BYTES in ma or _BYTES in mb:
        out += _varint_field(_BYTES, (_int(ma, _BYTES) or 0) + (_int(mb, _BYTES) or 0))
    return out
