"""Read ORC data files of ACID tables into pyarrow: ACID event files and original (pre-ACID) files.

Files are told apart by schema, not metadata (Hive 3 compaction output may lack ``hive.acid.*`` metadata and use
lower-case ACID field names, interop set 7). Reads go stripe by stripe. A file with a ``_flush_length`` side file
is read only up to the last length recorded there (docs/hive-acid.md#flush-length). Every failure is an
:class:`AcidFileError` naming the file.
"""

from __future__ import annotations

import bisect
import enum
import struct
import zoneinfo
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyorc

from airflow_acid.acid.errors import AcidFileError, OrcTailError
from airflow_acid.acid.event_schema import ACID_FIELDS, AcidKey, is_acid_schema
from airflow_acid.acid.event_writer import (
    ACID_VERSION_KEY,
    KEY_INDEX_KEY,
    ORC_ACID_VERSION,
    STATS_KEY,
    AcidStats,
    parse_key_index,
)
from airflow_acid.acid.fs import Storage, storage_for
from airflow_acid.acid.orc_tail import OrcTail, footer_offset, read_file_tail, stripe_range_tail
from airflow_acid.acid.orc_timestamp_compensation import TimestampCompensation
from airflow_acid.acid.timestamps import (
    NANOS_PER_SECOND,
    convert,
    is_out_of_nanosecond_range,
    narrowest_table,
    wide_schema,
)

ORC_MAGIC = b"ORC"
_ARROW_ERRORS = (OSError, pa.ArrowException, ValueError)

SCAN_BATCH_ROWS = 65_536
"""Rows per batch when a whole file is read: ORC's row reader decodes that many rows at a time, so memory holds the
stripe's compressed streams and one batch, not a decoded stripe (a 64 MiB ZLIB stripe decodes to ~400 MB-1 GB)."""
SCAN_READAHEAD = 2
"""Decoded batches the scanner may hold ahead of the consumer."""
SCAN_MIN_STRIPE_BYTES = 8 << 20
"""Stored bytes per stripe (on average) from which a whole-file read streams through the row reader. Smaller
stripes decode to a few tens of MB, and reading them whole is faster: the scanner costs ~0.3 ms more per file,
which dominates merge-on-read over many small deltas."""


Key = tuple[int, int, int]
"""A ROW__ID (originalTransaction, bucket, rowId), compared as Hive orders events."""


def _above(o: np.ndarray, b: np.ndarray, r: np.ndarray, key: Key) -> np.ndarray:
    """Mask of the keys (o, b, r) greater than ``key``."""
    mask: np.ndarray = (o > key[0]) | ((o == key[0]) & ((b > key[1]) | ((b == key[1]) & (r > key[2]))))
    return mask


@dataclass(frozen=True)
class KeyInterval:
    """The ROW__IDs a split of an event file can hold: keys > :attr:`after` and ≤ :attr:`upto` (Hive's
    OrcRawRecordMerger bounds a split's delete events so); None is no bound on that side."""

    after: Key | None = None
    upto: Key | None = None

    @property
    def bounded(self) -> bool:
        return self.after is not None or self.upto is not None

    def covers(self, first: Key, last: Key) -> bool:
        """Whether every key of [first, last] lies in the interval (a key equal to :attr:`after` counts: a split's
        range as merge-on-read states it, from its lower bound)."""
        return (self.after is None or first >= self.after) and (self.upto is None or last <= self.upto)

    def inside(self, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray | None:
        """Mask of the keys in the interval; None when all are (or nothing bounds it)."""
        mask = _above(o, b, r, self.after) if self.after is not None else None
        if self.upto is not None:
            below = ~_above(o, b, r, self.upto)
            mask = below if mask is None else mask & below
        if mask is None or bool(mask.all()):
            return None
        return mask

    def stripes(self, f: OrcDataFile) -> tuple[int, int] | None:
        """The stripes of a sorted event file (a delete delta) that may hold keys of the interval, from its key index:
        the first whose last key is > :attr:`after` up to the first whose last key is ≥ :attr:`upto`; None: every
        stripe (no bound, or no usable key index)."""
        index = f.stripe_keys if self.bounded else None
        if index is None:
            return None
        first = bisect.bisect_right(index, self.after) if self.after is not None else 0
        end = min(len(index), bisect.bisect_left(index, self.upto) + 1) if self.upto is not None else len(index)
        return first, max(first, end)


class FileFormat(enum.Enum):
    """What an ORC file in an ACID table holds."""

    ACID = "acid"
    ORIGINAL = "original"


def parse_flush_length(data: bytes, path: str) -> int:
    """The last 8-byte big-endian long of a ``_flush_length`` side file; an error if it yields nothing."""
    count = len(data) // 8
    if count == 0:
        raise AcidFileError(path, f"side file holds {len(data)} bytes, no complete 8-byte length; "
                                  "the streaming writer died before its first flush")
    length: int = struct.unpack(">q", data[(count - 1) * 8:count * 8])[0]
    if length < 0:
        raise AcidFileError(path, f"side file records a negative length {length}")
    return length


def read_flush_length(storage: Storage, relative: str) -> int:
    """Logical length recorded in the side file ``relative`` (``…/bucket_N_flush_length``)."""
    try:
        data = storage.read_bytes(relative)
    except FileNotFoundError:
        raise AcidFileError(storage.url(relative), "side file listed but gone") from None
    return parse_flush_length(data, storage.url(relative))


@dataclass
class OrcDataFile:
    """One open ORC data file of an ACID table, its kind and metadata; reads stripe by stripe."""

    path: str
    format: FileFormat
    file_schema: pa.Schema
    row_schema: pa.Schema
    num_rows: int
    num_stripes: int
    user_metadata: dict[str, str] = field(repr=False)
    _orc: po.ORCFile = field(repr=False)
    _source: pa.NativeFile | None = field(default=None, repr=False)
    stripe_bytes: int = 0
    """Stored bytes per stripe, on average (the file's content length over its stripes)."""
    _timestamps: TimestampCompensation | None = field(default=None, repr=False)
    """Corrects pyarrow's reading of timestamps near 1970 to Java's (None: the file needs none)."""
    _tail: OrcTail | None = field(default=None, repr=False)
    """The file's parsed Footer and PostScript, read on first use (stripe-range reads): once per file."""

    @property
    def key_index(self) -> list[AcidKey] | None:
        """``hive.acid.key.index`` (last key per stripe) or None when absent."""
        text = self.user_metadata.get(KEY_INDEX_KEY)
        if text is None:
            return None
        try:
            return parse_key_index(text)
        except ValueError as exc:
            raise AcidFileError(self.path, str(exc)) from None

    @property
    def stripe_keys(self) -> list[Key] | None:
        """The last key of every stripe from ``hive.acid.key.index`` when it can be trusted to bound keys: one entry
        per stripe, in key order; None otherwise (missing, malformed, a streaming file's index of fewer stripes)."""
        try:
            index = self.key_index
        except AcidFileError:
            return None
        if index is None or len(index) != self.num_stripes:
            return None
        keys = [(int(k[0]), int(k[1]), int(k[2])) for k in index]
        if any(later < earlier for earlier, later in zip(keys, keys[1:])):
            return None
        return keys

    def key_interval(self, stripes: tuple[int, int] | None) -> KeyInterval:
        """The keys stripes [a, b) of this event file hold: > the last key of stripe a-1, ≤ the last key of stripe b-1
        (from the key index; no bound where it tells none, or when it cannot be trusted)."""
        index = self.stripe_keys
        if stripes is None or index is None:
            return KeyInterval()
        first, end = max(0, stripes[0]), min(stripes[1], self.num_stripes)
        return KeyInterval(index[first - 1] if 0 < first <= len(index) else None,
                           index[end - 1] if 0 < end < len(index) else None)

    @property
    def stats(self) -> AcidStats | None:
        text = self.user_metadata.get(STATS_KEY)
        if text is None:
            return None
        try:
            return AcidStats.parse(text)
        except ValueError as exc:
            raise AcidFileError(self.path, str(exc)) from None

    @property
    def acid_version(self) -> int | None:
        text = self.user_metadata.get(ACID_VERSION_KEY)
        return int(text) if text is not None and text.strip().isdigit() else None

    def _selection(self, row_columns: Sequence[int] | None, keys: bool | Sequence[str]) -> list[str] | None:
        if self.format is FileFormat.ORIGINAL:
            if row_columns is None:
                return None
            return [self.file_schema.field(i).name for i in row_columns]
        names = [f.name for f in self.file_schema]
        if isinstance(keys, bool):
            selected = names[:5] if keys else []
        else:  # some key columns, by canonical name (the file's may differ in case)
            wanted = {k.lower() for k in keys}
            selected = [n for n in names[:5] if n.lower() in wanted]
        if row_columns is None:
            return selected + [names[5]]
        children = [self.row_schema.field(i).name for i in row_columns]
        if any("." in c for c in children) or list(row_columns) == list(range(len(self.row_schema))):
            return selected + [names[5]]  # every field in file order: the whole struct
        return selected + [f"{names[5]}.{c}" for c in children] if children else selected

    def _read_stripe(self, i: int, selection: list[str] | None) -> pa.RecordBatch:
        """Stripe ``i`` through pyarrow; through pyorc with wide timestamps when it holds a timestamp outside
        pyarrow's nanosecond range (see ``acid/timestamps.py``)."""
        try:
            batch = self._orc.read_stripe(i, columns=selection)
            return self._timestamps.stripe(batch, i) if self._timestamps is not None else batch
        except pa.ArrowInvalid as exc:
            if self._source is None or not is_out_of_nanosecond_range(exc):
                raise
        return _wide_stripe(self._source, i, self.file_schema, selection)

    def iter_batches(self, row_columns: Sequence[int] | None = None, *, keys: bool | Sequence[str] = True,
                     stripes: tuple[int, int] | None = None) -> Iterator[pa.RecordBatch]:
        """Stripes as record batches (all, or those in the half-open range ``stripes``).

        ACID files give the event columns under their canonical names (``keys=False`` drops the five key columns,
        a sequence of their names keeps those only;
        ``row`` holds the selected user fields, or all). Original files give the user columns. ``row_columns``
        are positions in :attr:`row_schema`.
        """
        selection = self._selection(row_columns, keys)
        skip = 0
        if self._streams(selection, stripes):
            try:
                for batch in self._scan(selection):
                    skip += batch.num_rows
                    yield _canonical(batch, keys) if self.format is FileFormat.ACID else batch
                return
            except _ARROW_ERRORS as exc:
                if not is_out_of_nanosecond_range(exc):
                    raise AcidFileError(self.path, f"cannot be decoded from row {skip} on (corrupt or truncated "
                                                   f"file): {exc}") from None
            # a timestamp beyond nanoseconds: go on stripe by stripe (pyorc) after the rows already given
        first, end = stripes if stripes is not None else (0, self.num_stripes)
        for i in range(max(0, first), min(end, self.num_stripes)):
            try:
                batch = self._read_stripe(i, selection)
            except _ARROW_ERRORS + (pyorc.ORCError,) as exc:
                raise AcidFileError(self.path, f"stripe {i} cannot be decoded (corrupt or truncated file): "
                                               f"{exc}") from None
            if skip:
                dropped = min(skip, batch.num_rows)
                batch, skip = batch.slice(dropped), skip - dropped
                if not batch.num_rows:
                    continue
            if self.format is FileFormat.ACID:
                batch = _canonical(batch, keys)
            yield batch

    def _streams(self, selection: list[str] | None, stripes: tuple[int, int] | None) -> bool:
        """Whether to read through ORC's row reader in :data:`SCAN_BATCH_ROWS` batches: the whole file of large
        stripes (:data:`SCAN_MIN_STRIPE_BYTES`), whole top-level columns (a pruned ``row`` struct reads stripe by
        stripe: the scanner would decode all of it)."""
        whole_file = stripes is None or (max(0, stripes[0]) == 0 and stripes[1] >= self.num_stripes)
        return (whole_file and self._source is not None and self.num_stripes > 0
                and self.stripe_bytes >= SCAN_MIN_STRIPE_BYTES
                and (selection is None or not any("." in name for name in selection)))

    def _scan(self, selection: list[str] | None) -> Iterator[pa.RecordBatch]:
        assert self._source is not None, "checked by _streams"
        import pyarrow.dataset as ds  # loads pandas: only when a file is scanned

        fragment = ds.OrcFileFormat().make_fragment(self._source)
        batches = fragment.to_batches(columns=selection, batch_size=SCAN_BATCH_ROWS, batch_readahead=SCAN_READAHEAD,
                                      fragment_readahead=1, use_threads=False)
        if self._timestamps is None:
            yield from batches
            return
        row = 0
        for batch in batches:
            yield self._timestamps.rows(batch, row)
            row += batch.num_rows

    def stripe_range_rows(self, stripes: tuple[int, int] | None) -> int:
        """Rows in the stripes [a, b) (all rows for None)."""
        if stripes is None:
            return self.num_rows
        return int(sum(self._orc_tail.stripe_rows[max(0, stripes[0]):stripes[1]]))

    @property
    def _orc_tail(self) -> OrcTail:
        if self._tail is None:
            assert self._source is not None
            self._tail = read_file_tail(self._source)
        return self._tail

    def key_batches(self, batch_rows: int, stripes: tuple[int, int] | None = None) -> Iterator[pa.RecordBatch]:
        """The five ACID key columns of an event file (canonical names) in batches of at most ``batch_rows`` rows,
        read through ORC's row reader whatever the stripe size: memory holds a stripe's compressed streams and one
        batch (the streamed delete cursor reads many delete deltas side by side this way). ``stripes``: only the
        stripes of that half-open range (the file read through a tail listing only them; the others are never
        read)."""
        if self.format is not FileFormat.ACID or self._source is None:
            raise AcidFileError(self.path, "not an ACID event file: it holds no delete events")
        import pyarrow.dataset as ds  # loads pandas: only when a file is scanned

        selection = self._selection([], True)
        source: Any = self._source
        if stripes is not None and (stripes[0] > 0 or stripes[1] < self.num_stripes):
            if stripes[0] >= min(stripes[1], self.num_stripes):
                return
            try:
                tail = self._orc_tail
                end_tail, _rows = stripe_range_tail(tail, stripes[0], stripes[1])
                source = pa.PythonFile(_StripeRange(self._source, footer_offset(self._source, tail), end_tail),
                                       mode="r")
            except OrcTailError as exc:
                raise AcidFileError(self.path, f"cannot read stripes {stripes[0]}..{stripes[1] - 1}: {exc}") from None
        fragment = ds.OrcFileFormat().make_fragment(source)
        try:
            for batch in fragment.to_batches(columns=selection, batch_size=batch_rows, batch_readahead=0,
                                             fragment_readahead=1, use_threads=False):
                for start in range(0, batch.num_rows, batch_rows):
                    yield _canonical(batch.slice(start, batch_rows), True)
        except _ARROW_ERRORS as exc:
            raise AcidFileError(self.path, f"cannot be decoded (corrupt or truncated file): {exc}") from None

    def read(self, row_columns: Sequence[int] | None = None, *, keys: bool = True) -> pa.Table:
        batches = list(self.iter_batches(row_columns, keys=keys))
        if batches:  # stripes read at nanoseconds and in the wide form: one exact form per column
            return narrowest_table(pa.Table.from_batches(_in_one_form(batches)))
        try:
            empty = self._orc.read(columns=self._selection(row_columns, keys))
        except _ARROW_ERRORS as exc:
            raise AcidFileError(self.path, f"cannot be decoded: {exc}") from None
        return _canonical(empty, keys) if self.format is FileFormat.ACID else empty


class _StripeRange:
    """A read-only file: ``source``'s bytes up to its Footer, then ``tail`` (see
    :func:`~airflow_acid.acid.orc_tail.stripe_range_tail`); reads of stripes go straight to ``source``."""

    def __init__(self, source: pa.NativeFile, footer_start: int, tail: bytes) -> None:
        self._source, self._start, self._tail = source, footer_start, tail
        self._size = footer_start + len(tail)
        self._pos = 0
        self.closed = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def seek(self, pos: int, whence: int = 0) -> int:
        self._pos = pos if whence == 0 else self._pos + pos if whence == 1 else self._size + pos
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> Any:
        if n is None or n < 0:
            n = self._size - self._pos
        n = max(0, min(n, self._size - self._pos))
        pos, self._pos = self._pos, self._pos + n
        if pos + n <= self._start:
            return self._source.read_at(n, pos)
        head = bytes(self._source.read_at(self._start - pos, pos)) if pos < self._start else b""
        start = max(0, pos - self._start)
        return head + self._tail[start:start + n - len(head)]

    def close(self) -> None:
        self.closed = True


class _WideTimestamp(pyorc.converters.ORCConverter):
    """ORC timestamps as the wide form's fields (``acid/timestamps.py``): any year 0001–9999 at nanoseconds."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: zoneinfo.ZoneInfo) -> dict[str, int]:
        whole, nanos = divmod(seconds * NANOS_PER_SECOND + nanoseconds, NANOS_PER_SECOND)
        return {"epoch_seconds": whole, "nanos_of_second": nanos}

    @staticmethod
    def to_orc(obj: dict[str, int], timezone: zoneinfo.ZoneInfo) -> tuple[int, int]:  # pragma: no cover - reads
        return obj["epoch_seconds"], obj["nanos_of_second"]


def _selected(schema: pa.Schema, selection: Sequence[str]) -> list[tuple[str, list[str] | None]]:
    """pyarrow's column selection: top-level fields in file order, ``a.b`` keeping only the named children."""
    chosen: list[tuple[str, list[str] | None]] = []
    for f in schema:
        children = [n.split(".", 1)[1] for n in selection if n.startswith(f.name + ".")]
        if f.name in selection:
            chosen.append((f.name, None))
        elif children:
            chosen.append((f.name, [c.name for c in f.type if c.name in children]))
    return chosen


def _wide_stripe(source: pa.NativeFile, i: int, file_schema: pa.Schema,
                 selection: Sequence[str] | None) -> pa.RecordBatch:
    """Stripe ``i`` read with pyorc (slow, rare): timestamps in the wide form, so years 0001–9999 keep their
    nanoseconds (``acid/timestamps.py``)."""
    source.seek(0)
    reader = pyorc.Reader(source, struct_repr=pyorc.StructRepr.DICT, timezone=zoneinfo.ZoneInfo("UTC"),
                          converters={pyorc.TypeKind.TIMESTAMP: _WideTimestamp})
    table = pa.Table.from_pylist(list(reader.read_stripe(i)), schema=wide_schema(file_schema))
    if selection is None:
        return table.combine_chunks().to_batches()[0] if table.num_rows else _empty_batch(table.schema)
    columns, fields = [], []
    for name, children in _selected(file_schema, selection):
        column = table.column(name).combine_chunks()
        if children is not None:
            parts = [column.field(c) for c in children]
            column = pa.StructArray.from_arrays(parts, names=children, mask=column.is_null())
        columns.append(column)
        fields.append(pa.field(name, column.type))
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def _in_one_form(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """Batches whose timestamps differ in form (some stripes read wide) all in the wide form."""
    if all(b.schema == batches[0].schema for b in batches):
        return batches
    schema = wide_schema(batches[0].schema)
    return [pa.RecordBatch.from_arrays([convert(c, f.type) for c, f in zip(b.columns, schema)], schema=schema)
            for b in batches]


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def _canonical(batch: pa.RecordBatch | pa.Table, keys: bool | Sequence[str]) -> pa.RecordBatch | pa.Table:
    """Rename ACID columns (any case) to the canonical names."""
    canonical = {n.lower(): n for n in ACID_FIELDS}
    names = [canonical.get(n.lower(), n) for n in batch.schema.names]
    return batch.rename_columns(names) if names != batch.schema.names else batch


def _open_source(storage: Storage, relative: str, size: int | None, logical_length: int | None) -> pa.NativeFile:
    path = storage.url(relative)
    if logical_length is not None:
        if size is not None and logical_length > size:
            raise AcidFileError(path, f"side file records length {logical_length} but the file has only {size} bytes")
        try:
            return pa.BufferReader(storage.read_bytes(relative, logical_length))
        except FileNotFoundError:
            raise AcidFileError(path, "file listed but gone (removed by a cleaner while reading?)") from None
    try:
        return storage.open_input(relative, size)
    except FileNotFoundError:
        raise AcidFileError(path, "file listed but gone (removed by a cleaner while reading?)") from None
    except _ARROW_ERRORS as exc:
        raise AcidFileError(path, f"cannot open: {exc}") from None


def open_data_file(storage: Storage, relative: str, size: int | None = None, *,
                   logical_length: int | None = None, expect: FileFormat | None = None,
                   where: str | None = None) -> OrcDataFile:
    """Open an ORC data file under ``storage``; ``expect`` makes a file of the other kind an error.

    ``where`` names the directory for messages (e.g. ``delta_0000005_0000005_0000``).
    """
    path = storage.url(relative)
    source = _open_source(storage, relative, size, logical_length)
    try:
        head = source.read_at(3, 0) if source.size() >= 3 else b""
        if head != ORC_MAGIC:
            raise AcidFileError(path, f"not an ORC file: starts with {head!r}, expected {ORC_MAGIC!r}")
        orc = po.ORCFile(source)
        schema = orc.schema
        metadata = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in (orc.metadata or {}).items()}
        num_rows, num_stripes = orc.nrows, orc.nstripes
        stripe_bytes = orc.content_length // num_stripes if num_stripes else 0
    except AcidFileError:
        raise
    except _ARROW_ERRORS as exc:
        raise AcidFileError(path, f"not a readable ORC file (truncated or corrupt): {exc}") from None
    if is_acid_schema(schema):
        fmt = FileFormat.ACID
        row_schema = pa.schema(list(schema.field(5).type))
        version = metadata.get(ACID_VERSION_KEY)
        if version is not None and version.strip() != ORC_ACID_VERSION:
            raise AcidFileError(path, f"ORC ACID version {version!r} is not supported (expected "
                                      f"{ORC_ACID_VERSION}, Hive 3+); run a major compaction with Hive first")
    else:
        fmt = FileFormat.ORIGINAL
        row_schema = pa.schema([f.remove_metadata() for f in schema]).remove_metadata()
    if expect is FileFormat.ACID and fmt is FileFormat.ORIGINAL:
        place = f" in {where}" if where else ""
        raise AcidFileError(path, f"expected a Hive ACID event file{place} (struct<operation, originalTransaction, "
                                  f"bucket, rowId, currentTransaction, row>) but found plain rows {_short(schema)} "
                                  "without the ACID columns; original files belong directly in the table directory")
    if expect is FileFormat.ORIGINAL and fmt is FileFormat.ACID:
        raise AcidFileError(path, "expected an original (non-ACID) file but found an ACID event file")
    timestamps = TimestampCompensation(path, orc, source) if TimestampCompensation.needed(schema) else None
    return OrcDataFile(path, fmt, schema, row_schema, num_rows, num_stripes, metadata, orc, source, stripe_bytes,
                       timestamps)


def _short(schema: pa.Schema) -> str:
    return "struct<" + ",".join(f"{f.name}:{f.type}" for f in schema) + ">"


def open_orc_file(path: str, *, filesystem: fsspec.AbstractFileSystem | None = None,
                  expect: FileFormat | None = None, logical_length: int | None = None) -> OrcDataFile:
    """Open one file by path or URL (tests, tools, the compactor)."""
    parent, _, name = path.rstrip("/").rpartition("/")
    return open_data_file(storage_for(parent or "/", filesystem), name, logical_length=logical_length,
                          expect=expect)


def read_event_file(path: str, *, filesystem: fsspec.AbstractFileSystem | None = None) -> pa.Table:
    """All events of an ACID event file with canonical column names."""
    return open_orc_file(path, filesystem=filesystem, expect=FileFormat.ACID).read()


__all__ = ["FileFormat", "OrcDataFile", "open_data_file", "open_orc_file", "parse_flush_length",
           "read_event_file", "read_flush_length"]
