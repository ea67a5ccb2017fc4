"""Timestamps near 1970 read from ORC by pyarrow, corrected to what ORC's Java reader (Hive, Spark) gives.

ORC stores a timestamp as whole seconds truncated toward zero plus nanoseconds, relative to 2015-01-01 00:00:00 in
the writer's time zone (each stripe footer names it; where none is named, readers take their local zone). A reader takes
one second off a negative second whose nanoseconds are at least 1 ms. Java decides "negative" from the instant in
the writer's zone, before it shifts the value to the reader's wall clock; the ORC C++ library bundled in pyarrow
(before ORC-2151) decides it after the shift to its reader zone, GMT. For a writer zone west of GMT the values
between the epoch wall clock and the epoch instant (US/Pacific: those Java reads as 1969-12-31 16:00:00 to 23:59:59,
with a fraction of at least 1 ms) come out one second early; east of GMT, those from 1970-01-01 00:00:00 up to the
zone's offset come out one second late. Hive's own test tables (``alltypesorc``) are full of them.

:class:`TimestampCompensation` undoes that, vectorised, for the columns pyarrow read (nested ones too): given the
writer zone's UTC offset ``o`` at the epoch (seconds), a value ``v`` with a fraction of at least 1 ms gains a second
when ``o - 1 <= v < 0`` and loses one when ``0 <= v < o``. Nothing else changes; a batch with no value within
:data:`_WIDEST_OFFSET` of the epoch is returned untouched without reading a stripe footer. Whether pyarrow's reader
needs it at all is probed once (:func:`pyarrow_compensates_after_shift`), so an upgraded pyarrow is left alone.
Files pyorc reads (ORC C++ 2.3.1) already follow Java's rule and are not passed through here.

Left as pyarrow reads it: a pre-1970 value with a fraction in the last second before one of the writer zone's offset
changes (a DST switch), which pyarrow shifts by the new offset where Java takes the old; before a switch back, the
same reading also comes from a value an hour earlier that needs no correction, so pyarrow's output cannot tell them
apart.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import zoneinfo
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyorc

from airflow_acid.acid.errors import AcidFileError, OrcTailError
from airflow_acid.acid.orc_tail import _decompress, _fields, stripe_row_counts

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_WIDEST_OFFSET = 16 * 3600
"""Seconds: no time zone's UTC offset at the epoch is wider (the widest is 14 h)."""
_FILE_TAIL_POSTSCRIPT, _FILE_TAIL_FOOTER = 1, 2
_PS_COMPRESSION, _PS_BLOCK_SIZE = 2, 3
_FOOTER_STRIPES = 3
_STRIPE_OFFSET, _STRIPE_INDEX_LENGTH, _STRIPE_DATA_LENGTH, _STRIPE_FOOTER_LENGTH = 1, 2, 3, 4
_STRIPE_FOOTER_WRITER_TIMEZONE = 3

LOCAL_ZONE_FILE = "/etc/localtime"
_PROBE_ZONE = "Etc/GMT+8"
"""UTC-8 all year. The probe writes the instant 1970-01-01 00:00:01.5 UTC with this writer zone: Java reads the
wall clock 1969-12-31 16:00:01.5, a reader that compensates after the shift 16:00:00.5."""
_PROBE_RAW = (1, 500_000_000)
_PROBE_LATE_NS = (1 - 8 * 3600 - 1) * 1_000_000_000 + 500_000_000


class _RawTimestamp(pyorc.converters.ORCConverter):
    """pyorc timestamps as (seconds, nanoseconds) since the epoch, unconverted."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: zoneinfo.ZoneInfo) -> tuple[int, int]:
        return seconds, nanoseconds

    @staticmethod
    def to_orc(obj: tuple[int, int], timezone: zoneinfo.ZoneInfo) -> tuple[int, int]:
        return obj


@functools.cache
def pyarrow_compensates_after_shift() -> bool:
    """Whether pyarrow's ORC reader takes the pre-1970 second off after shifting to GMT (ORC C++ before ORC-2151).

    Decided once per process from a one-row file written with pyorc; False when the probe cannot run (no time zone
    database: pyarrow could then read no file with a writer zone other than GMT either)."""
    buf = io.BytesIO()
    try:
        with pyorc.Writer(buf, "struct<t:timestamp>", timezone=zoneinfo.ZoneInfo(_PROBE_ZONE),
                          converters={pyorc.TypeKind.TIMESTAMP: _RawTimestamp}) as writer:
            writer.write((_PROBE_RAW,))
        value = po.ORCFile(pa.BufferReader(buf.getvalue())).read().column(0).cast(pa.int64())[0].as_py()
    except (OSError, ValueError, pa.ArrowException, pyorc.ORCError, zoneinfo.ZoneInfoNotFoundError):
        return False
    return bool(value == _PROBE_LATE_NS)


def local_zone() -> zoneinfo.ZoneInfo | None:
    """The zone ORC's C++ reader takes for a stripe that names none: ``/etc/localtime`` (``$TZ`` plays no part);
    None (UTC) without one."""
    try:
        with open(LOCAL_ZONE_FILE, "rb") as handle:
            return zoneinfo.ZoneInfo.from_file(handle, key="localtime")
    except (OSError, ValueError):
        return None


def epoch_offset(zone: zoneinfo.ZoneInfo | None) -> int:
    """``zone``'s UTC offset at 1970-01-01T00:00:00Z in seconds (0 for none)."""
    if zone is None:
        return 0
    offset = dt.datetime.fromtimestamp(0, zone).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def _varint_fields(message: bytes) -> dict[int, int]:
    return {n: int(v) for n, _w, v, _r in _fields(message) if isinstance(v, int)}


def _zone_offset(name: str | None, path: str) -> int:
    """The epoch offset of writer zone ``name`` (the local zone for None)."""
    try:
        return epoch_offset(local_zone() if name is None else zoneinfo.ZoneInfo(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise AcidFileError(path, f"writer time zone {name!r} is unknown to Python's zoneinfo ({exc}); install "
                                  "the tzdata package") from None


@dataclass(frozen=True)
class _Stripe:
    first_row: int
    footer_start: int
    footer_length: int


def _stripes(orc: po.ORCFile) -> tuple[list[_Stripe], int, int]:
    """Each stripe's first row and footer location, and the file's compression kind and block size."""
    tail = {n: v for n, _w, v, _r in _fields(orc.reader.serialized_file_tail())}
    postscript, footer = tail.get(_FILE_TAIL_POSTSCRIPT, b""), tail.get(_FILE_TAIL_FOOTER, b"")
    if not isinstance(postscript, bytes) or not isinstance(footer, bytes):
        raise OrcTailError("malformed ORC file tail")
    ps = _varint_fields(postscript)
    infos = [v for n, _w, v, _r in _fields(footer) if n == _FOOTER_STRIPES and isinstance(v, bytes)]
    stripes, row = [], 0
    for info, rows in zip(infos, stripe_row_counts(infos)):
        f = _varint_fields(info)
        start = f.get(_STRIPE_OFFSET, 0) + f.get(_STRIPE_INDEX_LENGTH, 0) + f.get(_STRIPE_DATA_LENGTH, 0)
        stripes.append(_Stripe(row, start, f.get(_STRIPE_FOOTER_LENGTH, 0)))
        row += rows
    return stripes, ps.get(_PS_COMPRESSION, 0), ps.get(_PS_BLOCK_SIZE, 256 * 1024)


def stripe_writer_zone(source: pa.NativeFile, stripe: _Stripe, compression: int, block_size: int) -> str | None:
    """The writer time zone a stripe footer names, or None."""
    footer = _decompress(compression, source.read_at(stripe.footer_length, stripe.footer_start), block_size)
    names = [v for n, _w, v, _r in _fields(footer) if n == _STRIPE_FOOTER_WRITER_TIMEZONE and isinstance(v, bytes)]
    return bytes(names[-1]).decode() if names and names[-1] else None


def _timestamp_type(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) and t.tz is None


def _has_timestamps(t: pa.DataType) -> bool:
    if _timestamp_type(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_timestamps(f.type) for f in t)
    if pa.types.is_map(t):
        return _has_timestamps(t.key_type) or _has_timestamps(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_timestamps(t.value_type)
    return False


def _window(values: pa.Array, low: int, high: int) -> np.ndarray:
    """Per value: whether it lies in [``low``, ``high``) seconds and has a fraction of at least 1 ms (ORC's
    nanoseconds > 999_999)."""
    per_second = _PER_SECOND[values.type.unit]
    ints = values.view(pa.int64()).fill_null(0).to_numpy()
    hit: np.ndarray = ((np.mod(ints, per_second) >= per_second // 1000)
                       & (ints >= low * per_second) & (ints < high * per_second))
    return hit


def _corrected(array: pa.Array, offset: int) -> pa.Array:
    """``array`` with every naive timestamp in it (nested too) read as Java reads it, for a writer zone whose UTC
    offset at the epoch is ``offset`` seconds."""
    t = array.type
    if _timestamp_type(t):
        hit = _window(array, offset - 1, 0) if offset < 0 else _window(array, 0, offset)
        if not hit.any():
            return array
        step = _PER_SECOND[t.unit] * (1 if offset < 0 else -1)
        return pc.add(array.view(pa.int64()), pa.array(hit * step, pa.int64())).view(t)
    if not _has_timestamps(t):
        return array
    if pa.types.is_struct(t):
        children = [array.field(i) for i in range(t.num_fields)]
        fixed = [_corrected(c, offset) for c in children]
        if all(a is b for a, b in zip(fixed, children)):
            return array
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(fixed, fields=list(t), mask=mask)
    child = array.values  # list, large list, map: the whole child; the offsets index into it
    fixed_child = _corrected(child, offset)
    if fixed_child is child:
        return array
    return pa.Array.from_buffers(t, len(array), array.buffers()[:2], null_count=array.null_count,
                                 offset=array.offset, children=[fixed_child])


def _near_epoch(array: pa.Array) -> bool:
    """Whether a naive timestamp in ``array`` lies within :data:`_WIDEST_OFFSET` of the epoch with a fraction of
    at least 1 ms (only those can need a correction)."""
    t = array.type
    if _timestamp_type(t):
        per_second = _PER_SECOND[t.unit]
        bounds = pc.min_max(array.view(pa.int64()))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or high < -(_WIDEST_OFFSET + 1) * per_second or low >= _WIDEST_OFFSET * per_second:
            return False  # all null, or all far from the epoch (one pass, no copy)
        return bool(_window(array, -_WIDEST_OFFSET - 1, _WIDEST_OFFSET).any())
    if not _has_timestamps(t):
        return False
    if pa.types.is_struct(t):
        return any(_near_epoch(array.field(i)) for i in range(t.num_fields))
    return _near_epoch(array.values)


def _with_columns(batch: pa.RecordBatch, offset: int) -> pa.RecordBatch:
    if offset == 0:
        return batch
    columns = batch.columns
    fixed = [_corrected(c, offset) for c in columns]
    if all(a is b for a, b in zip(fixed, columns)):
        return batch
    return pa.RecordBatch.from_arrays(fixed, schema=batch.schema)


class TimestampCompensation:
    """Corrects the batches pyarrow reads from one ORC file (see the module docstring); stripe footers are read
    only for batches holding a timestamp near the epoch."""

    def __init__(self, path: str, orc: po.ORCFile, source: pa.NativeFile) -> None:
        self._path = path
        self._orc = orc
        self._source = source
        self._stripes: list[_Stripe] | None = None
        self._compression = self._block_size = 0
        self._offsets: dict[int, int] = {}

    @staticmethod
    def needed(schema: pa.Schema) -> bool:
        """Whether a file of ``schema`` read by this pyarrow can need corrections."""
        return any(_has_timestamps(f.type) for f in schema) and pyarrow_compensates_after_shift()

    def _layout(self) -> list[_Stripe]:
        if self._stripes is None:
            self._stripes, self._compression, self._block_size = _stripes(self._orc)
        return self._stripes

    def _offset(self, index: int) -> int:
        """Stripe ``index``'s writer zone's epoch offset (its footer read once)."""
        if index not in self._offsets:
            stripe = self._layout()[index]
            zone = stripe_writer_zone(self._source, stripe, self._compression, self._block_size)
            self._offsets[index] = _zone_offset(zone, self._path)
        return self._offsets[index]

    def stripe(self, batch: pa.RecordBatch, index: int) -> pa.RecordBatch:
        """Stripe ``index`` as pyarrow read it, corrected."""
        if not any(_near_epoch(c) for c in batch.columns):
            return batch
        return _with_columns(batch, self._offset(index))

    def rows(self, batch: pa.RecordBatch, first_row: int) -> pa.RecordBatch:
        """A batch pyarrow read from the file's row ``first_row`` on (it may span stripes), corrected."""
        if not any(_near_epoch(c) for c in batch.columns):
            return batch
        runs: list[tuple[int, int, int]] = []  # (first, end) rows of the batch and their stripes' epoch offset
        end = first_row + batch.num_rows
        stripes = self._layout()
        for i, stripe in enumerate(stripes):
            lo = max(stripe.first_row, first_row) - first_row
            hi = min(stripes[i + 1].first_row if i + 1 < len(stripes) else end, end) - first_row
            if hi > lo:
                offset = self._offset(i)
                if runs and runs[-1][2] == offset:
                    runs[-1] = (runs[-1][0], hi, offset)
                else:
                    runs.append((lo, hi, offset))
        if len(runs) == 1:
            return _with_columns(batch, runs[0][2])
        return pa.concat_batches([_with_columns(batch.slice(lo, hi - lo), offset) for lo, hi, offset in runs]) \
            if runs else batch
