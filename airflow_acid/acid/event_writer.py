"""Write ACID event files (``bucket_N``) with pyorc exactly as Hive's OrcRecordUpdater does (docs/hive-acid.md#event-files).

The writer cuts stripes itself (``write_intermediate_footer``) so it knows the last key of every stripe: the
``hive.acid.key.index`` entry count always equals the file's stripe count, which is checked after closing. Every
footer, intermediate or final, carries the ``hive.acid.*`` metadata of the stripes before it, as Hive's footer
callback writes it, so a streaming file cut at any flush length is a complete event file.
Events must arrive sorted by (originalTransaction, bucket, rowId) and all belong to the file's bucket.
"""

from __future__ import annotations

import contextlib
import enum
import math
import struct
import zoneinfo
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import IO, Any, BinaryIO, cast

import fsspec
import numpy as np
import pyarrow as pa
import pyorc

from airflow_acid.acid import names
from airflow_acid.acid.errors import AcidFileError, AcidSchemaError
from airflow_acid.acid.event_schema import (
    ACID_FIELDS,
    KEY_FIELDS,
    OPERATION,
    AcidKey,
    event_arrow_schema,
    event_orc_type,
    key_values,
    row_schema_of,
)
from airflow_acid.acid.fs import Storage, storage_for
from airflow_acid.acid.hive_chars import with_hive_chars
from airflow_acid.acid.orc_settings import (  # the ORC defaults live with the settings (no pyarrow there)
    BASE_DELTA_RATIO,
    DEFAULT_BUFFER_SIZE,
    DEFAULT_ROW_INDEX_STRIDE,
    DEFAULT_STRIPE_SIZE,
    KiB,
)
from airflow_acid.acid.orc_tail import TailFinishingStream
from airflow_acid.acid.orc_values import CONVERTERS, column_values
from airflow_acid.acid.timestamps import check_storable, keep_timestamp_forms

ACID_VERSION_KEY = "hive.acid.version"
KEY_INDEX_KEY = "hive.acid.key.index"
STATS_KEY = "hive.acid.stats"
ORC_ACID_VERSION = str(names.ORC_ACID_VERSION)

_UNBOUNDED_STRIPE = 1 << 62  # pyorc never cuts a stripe on its own; this writer decides


class FileKind(enum.Enum):
    """Which ORC settings apply (docs/hive-acid.md#orc-writer-settings): bases use the defaults, deltas and delete deltas the
    reduced ones."""

    BASE = "base"
    DELTA = "delta"


@dataclass(frozen=True)
class OrcWriteOptions:
    """ORC settings of one event file."""

    stripe_size: int = DEFAULT_STRIPE_SIZE
    buffer_size: int = DEFAULT_BUFFER_SIZE
    compression: str = "ZLIB"
    row_index_stride: int = DEFAULT_ROW_INDEX_STRIDE
    batch_size: int = 1024

    @classmethod
    def base(cls, **overrides: Any) -> OrcWriteOptions:
        return replace(cls(), **overrides)

    @classmethod
    def delta(cls, ratio: int = BASE_DELTA_RATIO, **overrides: Any) -> OrcWriteOptions:
        return replace(cls(stripe_size=DEFAULT_STRIPE_SIZE // ratio, buffer_size=DEFAULT_BUFFER_SIZE // ratio),
                       **overrides)

    @classmethod
    def for_kind(cls, kind: FileKind, **overrides: Any) -> OrcWriteOptions:
        return cls.base(**overrides) if kind is FileKind.BASE else cls.delta(**overrides)

    def __post_init__(self) -> None:
        if self.stripe_size <= 0 or self.buffer_size <= 0 or self.batch_size <= 0:
            raise ValueError("stripe_size, buffer_size and batch_size must be positive")
        if self.compression.upper() not in pyorc.CompressionKind.__members__:
            raise ValueError(f"unknown ORC compression {self.compression!r}; "
                             f"choose one of {sorted(pyorc.CompressionKind.__members__)}")


@dataclass(frozen=True)
class AcidStats:
    """``hive.acid.stats``: event counts of a file."""

    inserts: int = 0
    updates: int = 0
    deletes: int = 0

    def to_string(self) -> str:
        return f"{self.inserts},{self.updates},{self.deletes}"

    @classmethod
    def parse(cls, text: str) -> AcidStats:
        parts = text.split(",")
        if len(parts) != 3:
            raise ValueError(f"hive.acid.stats {text!r} is not 'inserts,updates,deletes'")
        return cls(*(int(p) for p in parts))


def format_key_index(keys: Iterable[AcidKey]) -> str:
    """``otxn,bucket,rowId;`` per stripe, concatenated (trailing ``;``)."""
    return "".join(f"{k[0]},{k[1]},{k[2]};" for k in keys)


def parse_key_index(text: str) -> list[AcidKey]:
    """Inverse of :func:`format_key_index` (split on ``;`` then ``,``)."""
    keys = []
    for entry in text.split(";"):
        if entry.strip():
            parts = entry.split(",")
            if len(parts) != 3:
                raise ValueError(f"hive.acid.key.index entry {entry!r} is not 'otxn,bucket,rowId'")
            keys.append(AcidKey(int(parts[0]), int(parts[1]), int(parts[2])))
    return keys


@dataclass(frozen=True)
class EventFileInfo:
    """What a closed writer produced."""

    path: str
    rows: int
    stripes: int
    key_index: tuple[AcidKey, ...]
    stats: AcidStats
    flush_lengths: tuple[int, ...] = field(default=())


def _orc_rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    """Event rows as pyorc tuples (top-level struct as a tuple, ``row`` as a tuple or None)."""
    n = batch.num_rows
    keys = [batch.column(i).to_pylist() for i in range(5)]
    row = batch.column(5)
    if row.null_count == n:
        rows: Sequence[tuple[Any, ...] | None] = [None] * n
    else:
        children = row.flatten()
        rows = list(zip(*(column_values(c) for c in children))) if children else [()] * n
        if row.null_count:
            valid = row.is_valid().to_numpy(zero_copy_only=False)
            rows = [r if v else None for r, v in zip(rows, valid)]
    return list(zip(*keys, rows))


def _keys_numpy(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(batch.column(name).to_numpy(zero_copy_only=False) for name in KEY_FIELDS)


def conform_events(events: pa.Table | pa.RecordBatch, row_schema: pa.Schema, path: str) -> pa.Table:
    """``events`` cast to the event schema of ``row_schema``, each timestamp column kept in the form it arrives in
    (``acid/timestamps.py``: writers take all three); :class:`AcidSchemaError` naming ``path`` if they do not fit."""
    table = events if isinstance(events, pa.Table) else pa.Table.from_batches([events])
    if table.schema.names != list(ACID_FIELDS):
        raise AcidSchemaError(f"{path}: events must have the columns {list(ACID_FIELDS)}, got {table.schema.names}")
    schema = event_arrow_schema(row_schema)
    table = with_hive_chars(table, schema)
    if not table.schema.equals(schema):
        schema = pa.schema([f.with_type(keep_timestamp_forms(f.type, got.type)) for f, got in
                            zip(schema, table.schema)])
        try:
            table = table.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
            raise AcidSchemaError(f"{path}: events do not fit the table schema {row_schema}: {exc}") from None
    row = table.column(ACID_FIELDS[5])
    for i, f in enumerate(row.type):
        check_storable(pa.chunked_array([c.field(i) for c in row.chunks], type=f.type), f.name)
    return table


def first_unsorted(o: np.ndarray, b: np.ndarray, r: np.ndarray) -> int:
    """Index of the first key smaller than its predecessor, or -1 if keys are non-decreasing."""
    if len(o) < 2:
        return -1
    ok = (o[1:] > o[:-1]) | ((o[1:] == o[:-1]) & ((b[1:] > b[:-1]) | ((b[1:] == b[:-1]) & (r[1:] >= r[:-1]))))
    bad = np.flatnonzero(~ok)
    return int(bad[0]) + 1 if len(bad) else -1


def decoded_bucket_ids(bucket: np.ndarray) -> np.ndarray:
    """Bucket (writer) ids of encoded bucket properties, V0 or V1 (vectorised BucketCodec.decode)."""
    raw = bucket.astype(np.int64) & 0xFFFFFFFF
    version = raw >> 29
    return np.where(version == 1, (raw >> 16) & 0xFFF, raw)


def operation_counts(batch: pa.RecordBatch) -> np.ndarray:
    """How many inserts, updates and deletes ``batch`` holds (operations already checked)."""
    counts: np.ndarray = np.bincount(batch.column(OPERATION).to_numpy(zero_copy_only=False), minlength=3)[:3]
    return counts


def check_event_batch(batch: pa.RecordBatch, bucket_id: int, last_key: AcidKey | None, path: str) -> np.ndarray:
    """The operation counts (insert, update, delete) of ``batch``, after checking that its events follow ``last_key``
    in (originalTransaction, bucket, rowId) order, belong to bucket file ``bucket_id`` and have valid operations;
    :class:`AcidFileError` naming ``path`` if not."""
    o, b, r = _keys_numpy(batch)
    bad = first_unsorted(o, b, r)
    if bad < 0 and last_key is not None and AcidKey(int(o[0]), int(b[0]), int(r[0])) < last_key:
        bad = 0
    if bad >= 0:
        raise AcidFileError(path, f"events are not sorted by (originalTransaction, bucket, rowId): "
                                  f"({o[bad]},{b[bad]},{r[bad]}) follows a larger key")
    ids = decoded_bucket_ids(b)
    wrong = np.flatnonzero(ids != bucket_id)
    if len(wrong):
        raise AcidFileError(path, f"event with bucket property {b[wrong[0]]} (bucket {ids[wrong[0]]}) "
                                  f"does not belong in bucket file {names.format_bucket_file(bucket_id)}")
    ops = batch.column(OPERATION).to_numpy(zero_copy_only=False)
    if ((ops < 0) | (ops > 2)).any():
        raise AcidFileError(path, "operation must be 0 (insert), 1 (update) or 2 (delete)")
    counts: np.ndarray = np.bincount(ops, minlength=3)[:3]
    return counts


def _memory_block(buffer_size: int) -> int:
    """pyorc needs the compression block to be a multiple of its memory block (default 64 KiB)."""
    return 64 * KiB if buffer_size % (64 * KiB) == 0 else buffer_size


def acid_metadata(key_index: Iterable[AcidKey] | str, stats: AcidStats) -> dict[str, bytes]:
    """The three ``hive.acid.*`` user metadata entries of an event file (docs/hive-acid.md#orc-user-metadata); ``key_index``
    the last key of each stripe, or those keys already formatted (a streaming writer grows the text one stripe at a time)."""
    text = key_index if isinstance(key_index, str) else format_key_index(key_index)
    return {KEY_INDEX_KEY: text.encode(), STATS_KEY: stats.to_string().encode(),
            ACID_VERSION_KEY: ORC_ACID_VERSION.encode()}


def storage_error(path: str, exc: OSError) -> AcidFileError:
    """The filesystem refused a write (disk full, quota, permissions): name the file, keep the OSError as cause."""
    return AcidFileError(path, f"cannot be written: {exc.strerror or exc}")


class FlushLengthFile:
    """The ``_flush_length`` side file of a streaming bucket file (docs/hive-acid.md#flush-length), kept open as Hive's
    OrcRecordUpdater keeps it: every flush appends one 8-byte big-endian length and flushes it. The file only grows, so a
    reader never sees it shorter than its last flush (rewriting it per flush cost a truncate, and showed readers an empty
    file in between)."""

    def __init__(self, storage: Storage, file_name: str) -> None:
        self._storage = storage
        self.relative = names.flush_length_file(file_name)
        self._handle: IO[bytes] | None = None

    def record(self, length: int) -> None:
        if self._handle is None:
            self._handle = self._storage.fs.open(self._storage.full_path(self.relative), "wb")
        self._handle.write(struct.pack(">q", length))
        self._handle.flush()

    def remove(self) -> None:
        """Close and delete the side file (the data file is finished or dropped)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            try:
                handle.close()
            except Exception:  # noqa: BLE001 - the file goes anyway; a failed close must not hide the caller's error
                pass
        self._storage.remove(self.relative)


@contextlib.contextmanager
def aborting_on_error(path: str, abort: Callable[[], None]) -> Iterator[None]:
    """Finishing a file: any error calls ``abort`` (no partial file stays); an OSError becomes
    :func:`storage_error`."""
    try:
        yield
    except OSError as exc:
        abort()
        raise storage_error(path, exc) from exc
    except BaseException:
        abort()
        raise


class EventFileWriter:
    """Writes one ``bucket_N`` event file into a base/delta/delete_delta directory (final name, no rename).

    Use as a context manager or call :meth:`close`; on error call :meth:`abort` (the context manager does), which
    removes the partial file. ``streaming=True`` enables :meth:`flush` with a ``_flush_length`` side file
    (docs/hive-acid.md#flush-length).
    """

    def __init__(self, directory: str | Storage, bucket_id: int, row_schema: pa.Schema, *,
                 kind: FileKind = FileKind.DELTA, options: OrcWriteOptions | None = None,
                 filesystem: fsspec.AbstractFileSystem | None = None, attempt_id: int | None = None,
                 streaming: bool = False) -> None:
        self._dir = directory if isinstance(directory, Storage) else storage_for(directory, filesystem)
        self.bucket_id = bucket_id
        self.file_name = names.format_bucket_file(bucket_id, attempt_id)
        self.path = self._dir.url(self.file_name)
        self.row_schema = row_schema
        self.schema = event_arrow_schema(row_schema)
        self.options = options or OrcWriteOptions.for_kind(kind)
        self.streaming = streaming
        orc_schema = event_orc_type(row_schema)
        self._batch_size = 1 if streaming else self.options.batch_size
        self._key_index: list[AcidKey] = []
        self._key_index_text = ""
        """:attr:`_key_index` formatted for ``hive.acid.key.index``, grown with it (every footer writes it whole)."""
        self._stripe_rows_done: list[int] = []
        self._flush_lengths: list[int] = []
        self._side = FlushLengthFile(self._dir, self.file_name)
        self._counts = np.zeros(3, dtype=np.int64)
        """Operations (insert, update, delete) of the events handed to pyorc so far: the ``hive.acid.stats`` of
        the next footer."""
        self._rows = 0
        self._stripe_rows = 0
        self._stripe_bytes = 0.0
        self._last_key: AcidKey | None = None
        self._closed = False
        self.info: EventFileInfo | None = None
        self._dir.makedirs("")  # nothing on object stores
        self._handle = self._dir.fs.open(self._dir.full_path(self.file_name), "wb")
        self._stream = TailFinishingStream(self._handle)  # pyorc cannot set the footers' calendar
        try:
            self._writer = pyorc.Writer(
                cast(BinaryIO, self._stream), orc_schema, batch_size=self._batch_size, stripe_size=_UNBOUNDED_STRIPE,
                row_index_stride=self.options.row_index_stride,
                compression=pyorc.CompressionKind[self.options.compression.upper()],
                compression_block_size=self.options.buffer_size, memory_block_size=_memory_block(self.options.buffer_size),
                converters=CONVERTERS,
                timezone=zoneinfo.ZoneInfo("UTC"))
        except Exception as exc:
            self._handle.close()
            self._dir.remove(self.file_name)
            raise AcidFileError(self.path, f"cannot start an ORC writer: {exc}") from exc

    @property
    def rows(self) -> int:
        """Events written so far."""
        return self._rows

    def __enter__(self) -> EventFileWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def write(self, events: pa.Table | pa.RecordBatch) -> None:
        """Append events (event schema of :func:`event_arrow_schema`), sorted and of this file's bucket."""
        if self._closed:
            raise ValueError(f"{self.path}: writer is closed")
        for batch in conform_events(events, self.row_schema, self.path).to_batches():
            if batch.num_rows:
                try:
                    self._write_batch(batch)
                except OSError as exc:
                    raise storage_error(self.path, exc) from exc

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        self._write_rows(batch, check_event_batch(batch, self.bucket_id, self._last_key, self.path))

    def _write_rows(self, batch: pa.RecordBatch, counts: np.ndarray) -> None:
        """Hand ``batch`` (whose operations are ``counts``) to pyorc, ending a stripe wherever it is full."""
        n = batch.num_rows
        per_row = max(1.0, batch.nbytes / n)
        start = 0
        while start < n:
            want = max(1, math.ceil((self.options.stripe_size - self._stripe_bytes) / per_row))
            target = math.ceil((self._stripe_rows + want) / self._batch_size) * self._batch_size
            take = min(target - self._stripe_rows, n - start)
            piece = batch.slice(start, take)
            try:
                self._writer.writerows(_orc_rows(piece))
            except (TypeError, ValueError, OverflowError, pyorc.ORCError) as exc:
                raise AcidFileError(self.path, f"pyorc rejected a row: {exc}") from exc
            last = start + take - 1
            self._last_key = AcidKey(*(batch.column(k)[last].as_py() for k in KEY_FIELDS))
            self._counts += counts if take == n else operation_counts(piece)
            self._rows += take
            self._stripe_rows += take
            self._stripe_bytes += take * per_row
            start += take
            if self._stripe_rows == target:
                self._end_stripe()

    def _metadata(self) -> dict[str, bytes]:
        """The ``hive.acid.*`` metadata of the stripes ended so far."""
        return acid_metadata(self._key_index_text, AcidStats(*(int(c) for c in self._counts)))

    def _intermediate_footer(self) -> int:
        """pyorc's ``write_intermediate_footer`` with the footer finished like the last one (``hive.acid.*``
        metadata, calendar); the file's physical length after it."""
        self._stream.hold_tail()
        length = self._writer.write_intermediate_footer()
        self._stream.finish(self._metadata())
        return self._stream.physical(length)

    def _stripe_ended(self) -> None:
        """Record the stripe being written as ended: its last key joins the key index."""
        assert self._last_key is not None, "a stripe ends only after rows were written"
        self._key_index.append(self._last_key)
        self._key_index_text += format_key_index((self._last_key,))
        self._stripe_rows_done.append(self._stripe_rows)
        self._stripe_rows = 0
        self._stripe_bytes = 0.0

    def _end_stripe(self) -> int:
        self._stripe_ended()
        return self._intermediate_footer()

    def flush(self) -> int:
        """Streaming only: end the stripe, write an intermediate footer and record its length in the side file."""
        if not self.streaming:
            raise ValueError(f"{self.path}: flush() needs a writer opened with streaming=True")
        length = self._end_stripe() if self._stripe_rows else self._intermediate_footer()
        self._handle.flush()
        self._flush_lengths.append(length)
        self._side.record(length)
        return length

    def close(self) -> EventFileInfo:
        """Finish the file with the three ``hive.acid.*`` metadata keys and check the stripe count."""
        if self._closed:
            raise ValueError(f"{self.path}: writer is already closed")
        with aborting_on_error(self.path, self.abort):
            if self._stripe_rows:
                self._stripe_ended()
            stats = AcidStats(*(int(c) for c in self._counts))
            self._stream.hold_tail()
            self._writer.close()
            self._stream.finish(self._metadata())
            size = self._handle.tell()
            self._handle.close()
            self._closed = True
            self._verify_stripes(size)
            if self.streaming:
                self._side.remove()
            write_acid_version_file(self._dir)
        self.info = EventFileInfo(self.path, self._rows, len(self._key_index), tuple(self._key_index), stats,
                                  tuple(self._flush_lengths))
        return self.info

    def _verify_stripes(self, size: int | None = None) -> None:
        with self._dir.open_input(self.file_name, size) as src:
            reader = pyorc.Reader(src)
            actual = [len(s) for s in reader.iter_stripes()]
        if actual != self._stripe_rows_done:
            raise AcidFileError(self.path, f"stripe layout {actual} differs from the planned {self._stripe_rows_done}; "
                                           "the key index would be wrong")

    def abort(self) -> None:
        """Drop the partial file (and side file); the directory is left as it was."""
        if not self._closed:
            self._closed = True
            try:
                self._handle.close()
            except Exception:  # noqa: BLE001 - closing a writer that already failed; the first error wins
                pass
        self._dir.remove(self.file_name)
        self._side.remove()


def write_acid_version_file(directory: str | Storage, filesystem: fsspec.AbstractFileSystem | None = None) -> None:
    """``_orc_acid_version`` containing ``2`` (no newline), written atomically beside the data files
    (docs/hive-acid.md#acid-version-file)."""
    storage = directory if isinstance(directory, Storage) else storage_for(directory, filesystem)
    storage.write_bytes_atomic(names.ORC_ACID_VERSION_FILE, ORC_ACID_VERSION.encode())


def sort_events(events: pa.Table) -> pa.Table:
    """Events in file order (originalTransaction, bucket, rowId); returned unchanged when already sorted."""
    if events.num_rows < 2:
        return events
    cols = [key_values(events.column(k)) for k in KEY_FIELDS]
    if first_unsorted(*cols) < 0:
        return events
    return events.sort_by([(k, "ascending") for k in KEY_FIELDS])


def write_event_file(directory: str | Storage, bucket_id: int, events: pa.Table, *,
                     row_schema: pa.Schema | None = None, kind: FileKind = FileKind.DELTA,
                     options: OrcWriteOptions | None = None, filesystem: fsspec.AbstractFileSystem | None = None,
                     attempt_id: int | None = None) -> EventFileInfo:
    """Sort ``events`` if needed and write them as ``directory/bucket_N`` plus ``_orc_acid_version``."""
    row_schema = row_schema if row_schema is not None else row_schema_of(events.schema)
    with EventFileWriter(directory, bucket_id, row_schema, kind=kind, options=options, filesystem=filesystem,
                         attempt_id=attempt_id) as writer:
        writer.write(sort_events(events))
    assert writer.info is not None, "set by close() when the with block ends"
    return writer.info
