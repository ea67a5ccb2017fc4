"""Hive timestamps over their whole range (0001-01-01 … 9999-12-31 23:59:59.999999999) in Arrow, exactly.

A Hive ``timestamp`` (an ORC ``timestamp`` column: seconds and nanoseconds) has one of three Arrow forms here:

* ``timestamp[ns]`` — the default: every nanosecond, but only 1677-09-21 … 2262-04-11 (int64 nanoseconds);
* ``timestamp[us]`` — any year, exact when no value has digits below the microsecond (what Spark holds);
* :data:`WIDE_TIMESTAMP`, ``struct<epoch_seconds: int64, nanos_of_second: int32>`` — any year at nanoseconds:
  seconds since 1970-01-01 00:00:00 (floor, so negative before 1970) and the nanoseconds of that second,
  0 … 999,999,999. Writers store this exact struct type as an ORC ``timestamp``.

A read starts at nanoseconds; a table that holds a value outside their range is read again in the wide form
and each column is then given the narrowest form that holds all of its values exactly (:func:`narrowest`).
Conversions between the forms (:func:`convert`) never round: a value a form cannot hold raises
:class:`TimestampFormError`. Writers take any of the three forms (docs/hive-acid.md#timestamps).
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid.errors import TimestampFormError, UnstorableTimestampError

NANOSECOND_RANGE_NOTE = "timestamp[ns] spans only 1677-09-21 … 2262-04-11"
NANOS_PER_SECOND = 1_000_000_000

WIDE_TIMESTAMP = pa.struct([pa.field("epoch_seconds", pa.int64()), pa.field("nanos_of_second", pa.int32())])
"""A timestamp as seconds since the epoch (floor) and the nanoseconds of that second: any year at nanoseconds."""

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class TimestampForm(enum.Enum):
    """The Arrow form of a Hive timestamp column (see the module docstring)."""

    NANOSECONDS = "ns"
    MICROSECONDS = "us"
    WIDE = "wide"

    @property
    def arrow_type(self) -> pa.DataType:
        return WIDE_TIMESTAMP if self is TimestampForm.WIDE else pa.timestamp(self.value)


def is_timestamp_type(t: pa.DataType) -> bool:
    """Whether ``t`` is one of the forms of a Hive timestamp (an Arrow timestamp, or :data:`WIDE_TIMESTAMP`)."""
    return bool(pa.types.is_timestamp(t) or t == WIDE_TIMESTAMP)


def map_timestamp_types(t: pa.DataType, fn: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``fn`` applied to every timestamp inside it (nested in structs, lists and maps too)."""
    if is_timestamp_type(t):
        return fn(t)
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(map_timestamp_types(t.value_type, fn)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(map_timestamp_types(t.value_type, fn)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(map_timestamp_types(t.key_type, fn)),
                       t.item_field.with_type(map_timestamp_types(t.item_type, fn)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(map_timestamp_types(f.type, fn)) for f in t])
    return t


def in_form(t: pa.DataType, form: TimestampForm) -> pa.DataType:
    """``t`` with every timestamp (nested too) in ``form``."""
    return map_timestamp_types(t, lambda _: form.arrow_type)


def schema_in_form(schema: pa.Schema, form: TimestampForm) -> pa.Schema:
    """``schema`` with every timestamp in ``form`` (field metadata and schema metadata kept)."""
    return pa.schema([f.with_type(in_form(f.type, form)) for f in schema], metadata=schema.metadata)


def microsecond_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every timestamp (nested too) at microseconds."""
    return in_form(t, TimestampForm.MICROSECONDS)


def microsecond_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every timestamp at microseconds (metadata kept)."""
    return schema_in_form(schema, TimestampForm.MICROSECONDS)


def wide_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every timestamp in the wide form, which holds any Hive timestamp exactly."""
    return schema_in_form(schema, TimestampForm.WIDE)


def _timestamp_types(t: pa.DataType) -> list[pa.DataType]:
    found: list[pa.DataType] = []

    def note(x: pa.DataType) -> pa.DataType:
        found.append(x)
        return x
    map_timestamp_types(t, note)
    return found


def has_timestamps(t: pa.DataType | pa.Schema) -> bool:
    """Whether ``t`` holds a timestamp anywhere."""
    if isinstance(t, pa.Schema):
        return any(has_timestamps(f.type) for f in t)
    return bool(_timestamp_types(t))


def has_nanosecond_timestamps(t: pa.DataType | pa.Schema) -> bool:
    """Whether ``t`` holds a ``timestamp[ns]`` anywhere (so a value outside 1677–2262 does not fit it)."""
    if isinstance(t, pa.Schema):
        return any(has_nanosecond_timestamps(f.type) for f in t)
    return any(leaf == pa.timestamp("ns") for leaf in _timestamp_types(t))


def same_but_timestamps(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether ``a`` and ``b`` differ at most in the form of their timestamps."""
    return bool(in_form(a, TimestampForm.WIDE) == in_form(b, TimestampForm.WIDE))


def is_out_of_nanosecond_range(exc: BaseException) -> bool:
    """Whether an Arrow error says a timestamp does not fit nanoseconds (cast or ORC read)."""
    if isinstance(exc, TimestampFormError):
        return True
    text = str(exc).lower()
    return "out of bounds timestamp" in text or ("nanosecond" in text and ("out of range" in text or
                                                                           "out of bounds" in text))


# --- values ---------------------------------------------------------------------------------------------------

def _seconds_nanos(leaf: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(floor seconds int64, nanos int64) of a timestamp leaf in any form; nulls give (0, 0)."""
    if leaf.type == WIDE_TIMESTAMP:
        s = leaf.field("epoch_seconds").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        n = leaf.field("nanos_of_second").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return s, n
    per = _PER_SECOND[leaf.type.unit]
    v = leaf.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    s, rest = np.divmod(v, per)
    return s, rest * (NANOS_PER_SECOND // per)


def _leaf_to(leaf: pa.Array, target: pa.DataType, what: str, exact: bool = True) -> pa.Array:
    if leaf.type == target:
        return leaf
    mask = leaf.is_null() if leaf.null_count else None
    s, n = _seconds_nanos(leaf)
    if target == WIDE_TIMESTAMP:
        return pa.StructArray.from_arrays([pa.array(s, pa.int64()), pa.array(n.astype(np.int32), pa.int32())],
                                          fields=list(WIDE_TIMESTAMP), mask=mask)
    per = _PER_SECOND[target.unit]
    step = NANOS_PER_SECOND // per
    valid = None if mask is None else ~mask.to_numpy(zero_copy_only=False)
    vs, vn = (s, n) if valid is None else (s[valid], n[valid])
    if exact and len(vn) and bool(np.any(vn % step)):
        bad = int(np.flatnonzero(vn % step)[0])
        raise TimestampFormError(f"{what}: {format_timestamp(int(vs[bad]), int(vn[bad]))} has digits below what "
                                 f"{target} holds")
    lo, hi = _INT64_MIN // per, _INT64_MAX // per
    for i in np.flatnonzero((vs <= lo) | (vs >= hi)):  # few or none: checked exactly
        if not _INT64_MIN <= int(vs[i]) * per + int(vn[i]) // step <= _INT64_MAX:
            raise TimestampFormError(f"{what}: {format_timestamp(int(vs[i]), int(vn[i]))} is out of range for "
                                     f"{target} ({NANOSECOND_RANGE_NOTE})")
    with np.errstate(over="ignore"):
        values = s * per + n // step
    return pa.array(values, pa.int64(), mask=None if valid is None else ~valid).cast(target)


def format_timestamp(seconds: int, nanos: int) -> str:
    """``YYYY-MM-DD HH:MM:SS[.fffffffff]`` (proleptic Gregorian, UTC) of an exact timestamp, for messages."""
    import datetime as dt

    days, rest = divmod(seconds, 86_400)
    try:
        day = dt.date(1970, 1, 1) + dt.timedelta(days=days)
    except OverflowError:
        return f"{seconds}s{nanos:+d}ns since 1970"
    text = f"{day.isoformat()} {rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    return text + (f".{nanos:09d}".rstrip("0") if nanos else "")


def convert(array: pa.Array | pa.ChunkedArray, target: pa.DataType, *,
            what: str = "timestamp", exact: bool = True) -> pa.Array | pa.ChunkedArray:
    """``array`` with its timestamps (nested too) in the forms ``target`` names; ``target`` must equal the array's
    type up to timestamp forms. Exact: :class:`TimestampFormError` when a value does not fit — unless
    ``exact=False``, which floors digits the target cannot hold (for evaluating conditions, never for storing)."""
    if array.type == target:
        return array
    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([_convert(c, target, what, exact) for c in array.chunks], type=target)
    return _convert(array, target, what, exact)


def _convert(array: pa.Array, target: pa.DataType, what: str, exact: bool = True) -> pa.Array:
    if array.type == target:
        return array
    if is_timestamp_type(array.type) and is_timestamp_type(target):
        return _leaf_to(array, target, what, exact)
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(array.type) and pa.types.is_struct(target):
        children = [_convert(array.field(i), f.type, what, exact) for i, f in enumerate(target)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(array.type) and pa.types.is_map(target):  # offsets index the whole keys/items arrays
        keys = _convert(array.keys, target.key_type, what, exact)
        items = _convert(array.items, target.item_type, what, exact)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=mask)
    if (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)) and (
            pa.types.is_list(target) or pa.types.is_large_list(target)):
        values = _convert(array.values, target.value_type, what, exact)
        cls = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
        return cls.from_arrays(array.offsets, values, type=target, mask=mask)
    raise TypeError(f"{what}: cannot convert {array.type} to {target}")  # pragma: no cover - callers compare first


def narrowest(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``array`` with all its timestamps in the narrowest form that holds every value exactly: nanoseconds, else
    microseconds, else wide."""
    if not has_timestamps(array.type):
        return array
    for form in (TimestampForm.NANOSECONDS, TimestampForm.MICROSECONDS):
        try:
            return convert(array, in_form(array.type, form))
        except TimestampFormError:
            continue
    return convert(array, in_form(array.type, TimestampForm.WIDE))


def narrowest_table(table: pa.Table) -> pa.Table:
    """:func:`narrowest` for every column holding timestamps in a form other than nanoseconds."""
    def widened(t: pa.DataType) -> bool:
        return has_timestamps(t) and t != in_form(t, TimestampForm.NANOSECONDS)

    if not any(widened(f.type) for f in table.schema):
        return table
    columns = [narrowest(c) if widened(f.type) else c for f, c in zip(table.schema, table.columns)]
    return pa.Table.from_arrays(columns, schema=pa.schema(
        [f.with_type(c.type) for f, c in zip(table.schema, columns)], metadata=table.schema.metadata))


def timestamp_leaves(array: pa.Array) -> list[pa.Array]:
    """Every timestamp array inside ``array`` (itself, struct fields, list values, map keys and items)."""
    t = array.type
    if is_timestamp_type(t):
        return [array]
    if pa.types.is_struct(t):
        return [leaf for i in range(t.num_fields) for leaf in timestamp_leaves(array.field(i))]
    if pa.types.is_map(t):  # keys/items are the whole child arrays: take this (maybe sliced) array's part
        start, end = (array.offsets[0].as_py(), array.offsets[-1].as_py()) if len(array) else (0, 0)
        return timestamp_leaves(array.keys.slice(start, end - start)) + \
            timestamp_leaves(array.items.slice(start, end - start))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return timestamp_leaves(array.flatten())
    return []


def _none_before_1970(leaf: pa.Array) -> bool:
    """Whether a non-wide timestamp leaf holds no value before 1970 (one vectorised min; the common case)."""
    if leaf.type == WIDE_TIMESTAMP:
        return False
    low = pc.min(leaf.view(pa.int64())).as_py()
    return low is None or low >= 0


def check_storable(array: pa.Array | pa.ChunkedArray, column: str) -> None:
    """Refuse a timestamp ORC cannot store: in (1969-12-31 23:59:59, 1970-01-01 00:00:00) with a millisecond or
    more of fraction. ORC keeps seconds rounded toward zero and positive nanoseconds, and its readers (Java's and
    C++'s alike) take 0 seconds for a value after 1970: such a value would read one second late in every engine."""
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    for chunk in chunks:
        for leaf in timestamp_leaves(chunk):
            if _none_before_1970(leaf):
                continue
            if leaf.type == WIDE_TIMESTAMP:
                s, n = _seconds_nanos(leaf.drop_null())
                bad = np.flatnonzero((s == -1) & (n > 999_999))
                nanos = n[bad]
            else:
                per = _PER_SECOND[leaf.type.unit]
                v = leaf.cast(pa.int64()).drop_null().to_numpy(zero_copy_only=False)
                near = v[(v > -per) & (v < 0)]
                nanos = (near + per) * (NANOS_PER_SECOND // per)
                nanos = nanos[nanos > 999_999]
            if len(nanos):
                raise UnstorableTimestampError(
                    f"column {column}: timestamp {format_timestamp(-1, int(nanos[0]))} cannot be stored in ORC: "
                    "between 1969-12-31 23:59:59 and 1970-01-01 00:00:00 only fractions below a millisecond are "
                    "kept (ORC's encoding; Hive, Spark and Trino would read it one second late); store "
                    "1969-12-31 23:59:59 or 1970-01-01 00:00:00, or keep the value in a string or decimal column")


def has_negative_fractions(array: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a timestamp before 1970 with a fraction of a second is in ``array``: pyarrow's ORC writer stores
    those with negative nanoseconds, which ORC's Java reader (Hive, Spark, Trino) cannot read."""
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    for chunk in chunks:
        for leaf in timestamp_leaves(chunk):
            if leaf.type == WIDE_TIMESTAMP:
                return True  # pyarrow cannot write this form at all
            if _none_before_1970(leaf):
                continue
            per = _PER_SECOND[leaf.type.unit]
            v = leaf.cast(pa.int64()).drop_null().to_numpy(zero_copy_only=False)
            if len(v) and bool(np.any((v < 0) & (v % per != 0))):
                return True
    return False


def keep_timestamp_forms(declared: pa.DataType, got: pa.DataType) -> pa.DataType:
    """``declared`` with each timestamp in the form ``got`` holds at the same place (when ``got`` has one there):
    the type to cast data of type ``got`` to so that everything but the timestamps' forms follows ``declared``."""
    if is_timestamp_type(declared):
        return got if is_timestamp_type(got) and getattr(got, "tz", None) is None else declared
    if pa.types.is_struct(declared) and pa.types.is_struct(got):
        by_name = {f.name: f.type for f in got}
        return pa.struct([f.with_type(keep_timestamp_forms(f.type, by_name[f.name])) if f.name in by_name else f
                          for f in declared])
    if pa.types.is_map(declared) and pa.types.is_map(got):
        return pa.map_(declared.key_field.with_type(keep_timestamp_forms(declared.key_type, got.key_type)),
                       declared.item_field.with_type(keep_timestamp_forms(declared.item_type, got.item_type)))
    if pa.types.is_list(declared) and (pa.types.is_list(got) or pa.types.is_large_list(got)):
        return pa.list_(declared.value_field.with_type(keep_timestamp_forms(declared.value_type, got.value_type)))
    if pa.types.is_large_list(declared) and (pa.types.is_list(got) or pa.types.is_large_list(got)):
        return pa.large_list(declared.value_field.with_type(keep_timestamp_forms(declared.value_type,
                                                                                 got.value_type)))
    return declared
