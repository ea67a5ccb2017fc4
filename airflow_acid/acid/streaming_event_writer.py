"""One ``bucket_N`` file of a Hive Streaming transaction batch (docs/hive-acid.md#flush-length).

Events of the open transaction are held as Arrow data; :meth:`StreamingEventFileWriter.flush` (a commit) adds them to
the file as a stripe followed by an intermediate footer and records the file's length in the ``_flush_length`` side
file; :meth:`discard` drops an aborted transaction's events before they reach the file; :meth:`close` writes the
final footer, removes the side file and writes ``_orc_acid_version``.

Two ways to add a stripe, chosen by the size of the file's first flush (transactions of one stream are alike):
large ones are written by pyarrow's ORC writer as a small complete file whose stripes are appended
(:mod:`airflow_acid.acid.orc_append`, with the ``hive.acid.*`` metadata in every intermediate footer as Hive's
OrcRecordUpdater writes it) — ~10× less per row, but a new ORC C++ writer costs a few milliseconds (one compressor per
stream, its buffers page-faulted in again unless :mod:`~airflow_acid.acid.malloc_tuning` keeps freed memory); small
ones go row by row through one long-lived pyorc writer
(:class:`~airflow_acid.acid.event_writer.EventFileWriter` with ``streaming=True``), which has no per-flush setup.
"""

from __future__ import annotations

from typing import IO

import fsspec
import numpy as np
import pyarrow as pa

from airflow_acid.acid import names
from airflow_acid.acid.bucket_codec import bucket_id_of
from airflow_acid.acid.errors import AcidFileError
from airflow_acid.acid.event_schema import KEY_FIELDS, AcidKey, insert_events
from airflow_acid.acid.event_writer import (
    AcidStats,
    EventFileInfo,
    EventFileWriter,
    FileKind,
    FlushLengthFile,
    OrcWriteOptions,
    aborting_on_error,
    acid_metadata,
    check_event_batch,
    conform_events,
    format_key_index,
    storage_error,
    write_acid_version_file,
)
from airflow_acid.acid.fast_event_writer import writer_options
from airflow_acid.acid.fs import Storage, storage_for
from airflow_acid.acid.hive_chars import schema_has_char_types
from airflow_acid.acid.malloc_tuning import keep_freed_memory_for_small_files
from airflow_acid.acid.orc_append import AppendingOrcFile
from airflow_acid.acid.orc_file_builder import write_orc_bytes
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.timestamps import has_timestamps

PIECE_MIN_ROWS = 3000
"""A file whose first flush holds at least this many events gets pyarrow-written stripes; below, pyorc's row writer.
Measured on the 2-core bench machine (3-column rows, ZLIB): a pyarrow flush costs ~6.5 ms whatever its size up to
10,000 events (the new ORC writer dominates), a pyorc flush ~2 µs per event (1,000: 3.6 ms; 4,000: 9.6 ms)."""
PIECE_MIN_ROWS_TUNED = 1000
""":data:`PIECE_MIN_ROWS` once :mod:`~airflow_acid.acid.malloc_tuning` applies: a new ORC writer then costs ~0.4 ms, and
pyarrow stripes win from ~1,000 events per flush (100 and 300 events still go faster row by row)."""



def piece_min_rows() -> int:
    """Events a file's first flush needs to get pyarrow stripes: :data:`PIECE_MIN_ROWS_TUNED` in a process whose
    malloc keeps freed memory (applied here, see :mod:`~airflow_acid.acid.malloc_tuning`), else :data:`PIECE_MIN_ROWS`."""
    return PIECE_MIN_ROWS_TUNED if keep_freed_memory_for_small_files() else PIECE_MIN_ROWS


class StreamingEventFileWriter:
    """Appends transactions' events to one delta bucket file, each flush a readable prefix (see the module)."""

    def __init__(self, directory: str | Storage, bucket_id: int, row_schema: pa.Schema, *,
                 orc: OrcSettings | None = None, filesystem: fsspec.AbstractFileSystem | None = None) -> None:
        self._dir = directory if isinstance(directory, Storage) else storage_for(directory, filesystem)
        self.bucket_id = bucket_id
        self.file_name = names.format_bucket_file(bucket_id)
        self.path = self._dir.url(self.file_name)
        self.row_schema = row_schema
        self._plain_rows = not schema_has_char_types(row_schema) and not has_timestamps(row_schema)
        """No char/varchar and no timestamp column: insert events built from rows of :attr:`row_schema`'s types
        need no conforming (:func:`conform_events` would cast nothing, enforce no length, find no timestamp)."""
        self._orc = orc or OrcSettings()
        self._options = writer_options(self._orc, FileKind.DELTA)
        self._stripe_bytes = self._options["stripe_size"]
        self._piece_min_rows = piece_min_rows()
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._pending_counts = np.zeros(3, dtype=np.int64)
        self._pending_last: AcidKey | None = None
        self._counts = np.zeros(3, dtype=np.int64)
        self._last_key: AcidKey | None = None
        """The last key appended to the file (events must continue after it)."""
        self._key_index: list[AcidKey] = []
        self._key_index_text = ""
        """:attr:`_key_index` formatted for ``hive.acid.key.index``, grown with it (each flush writes it whole)."""
        self._flush_lengths: list[int] = []
        self._side = FlushLengthFile(self._dir, self.file_name)
        self._handle: IO[bytes] | None = None
        self._file: AppendingOrcFile | None = None
        self._row_writer: EventFileWriter | None = None
        """Set instead of ``_file`` when the first flush was small (see the module docstring)."""
        self._closed = False
        self.info: EventFileInfo | None = None

    @property
    def rows(self) -> int:
        """Events in the file (flushed or appended), not counting the pending ones."""
        if self._row_writer is not None:
            return self._row_writer.rows
        return 0 if self._file is None else self._file.rows

    @property
    def _started(self) -> bool:
        return self._file is not None or self._row_writer is not None

    def write(self, events: pa.Table | pa.RecordBatch) -> None:
        """Hold events (sorted, this file's bucket) until the next flush; a stripe's worth is appended at once."""
        if self._closed:
            raise ValueError(f"{self.path}: writer is closed")
        table = conform_events(events, self.row_schema, self.path)
        if not table.num_rows:
            return
        for batch in table.to_batches():
            if batch.num_rows:
                self._pending_counts += check_event_batch(batch, self.bucket_id,
                                                          self._pending_last or self._last_key, self.path)
                self._pending_last = AcidKey(*(int(batch.column(k)[-1].as_py()) for k in KEY_FIELDS))
        self._hold(table)

    def write_inserts(self, rows: pa.Table, write_id: int, bucket_property: int, first_row_id: int) -> None:
        """Hold insert events for ``rows`` by ``write_id`` (Hive's OrcRecordUpdater.insert), rowIds counting from
        ``first_row_id``. Their keys are known without looking at them — ascending, one bucket property — so only
        the first and last are checked: the first must follow every event already written to the file."""
        if self._closed:
            raise ValueError(f"{self.path}: writer is closed")
        n = rows.num_rows
        if not n:
            return
        if bucket_id_of(bucket_property) != self.bucket_id:
            raise AcidFileError(self.path, f"bucket property {bucket_property} (bucket {bucket_id_of(bucket_property)})"
                                           f" does not belong in bucket file {self.file_name}")
        first = AcidKey(write_id, bucket_property, first_row_id)
        previous = self._pending_last or self._last_key
        if first_row_id < 0 or (previous is not None and first <= previous):
            raise AcidFileError(self.path, f"events are not sorted by (originalTransaction, bucket, rowId): "
                                           f"{first} follows {previous}")
        events = insert_events(rows, write_id, bucket_property, first_row_id)
        if not (self._plain_rows and rows.schema.equals(self.row_schema)):
            events = conform_events(events, self.row_schema, self.path)
        self._pending_counts[0] += n
        self._pending_last = AcidKey(write_id, bucket_property, first_row_id + n - 1)
        self._hold(events)

    def _hold(self, table: pa.Table) -> None:
        self._pending.append(table)
        self._pending_bytes += table.nbytes
        if self._pending_bytes >= self._stripe_bytes:
            self._append_pending()

    def discard(self) -> None:
        """Drop the events held since the last flush (their transaction aborted); events already appended when they
        filled a stripe stay, and readers skip them by their aborted write id, as with Hive's writer."""
        self._pending, self._pending_bytes, self._pending_last = [], 0, None
        self._pending_counts[:] = 0

    def flush(self) -> int:
        """Append the pending events, write an intermediate footer, record the file's length in the side file."""
        if self._closed:
            raise ValueError(f"{self.path}: writer is closed")
        self._append_pending()
        if self._row_writer is not None:
            length = self._row_writer.flush()
            self._flush_lengths.append(length)
            return length
        if self._file is None:
            return 0  # nothing ever written: no file, no side file
        try:
            length = self._file.tail(self._metadata())
            self._flush_lengths.append(length)
            self._side.record(length)
        except OSError as exc:
            raise storage_error(self.path, exc) from exc
        return length

    def _row_writer_options(self) -> OrcWriteOptions:
        """The table's ORC settings for pyorc's delta writer, as for pyarrow-written stripes: its compression and
        row index always, stripe and buffer sizes where the table sets them (else the writer's delta defaults)."""
        orc, default, ratio = self._orc, OrcSettings(), self._orc.base_delta_ratio
        sizes = {name: max(1, getattr(orc, name) // ratio) for name in ("stripe_size", "buffer_size")
                 if getattr(orc, name) != getattr(default, name)}
        return OrcWriteOptions.delta(ratio, compression=orc.compression, row_index_stride=orc.row_index_stride,
                                     **sizes)

    def _append_pending(self) -> None:
        if not self._pending:
            return
        events = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        if not self._started and events.num_rows < self._piece_min_rows:
            options = self._row_writer_options()
            self._row_writer = EventFileWriter(self._dir, self.bucket_id, self.row_schema, kind=FileKind.DELTA,
                                               options=options, streaming=True)
        if self._row_writer is not None:
            self._row_writer.write(events)
            self._last_key = self._pending_last
            self.discard()
            return
        piece = write_orc_bytes(events, self._options)
        try:
            if self._file is None:
                self._dir.makedirs("")
                self._handle = self._dir.fs.open(self._dir.full_path(self.file_name), "wb")
                self._file = AppendingOrcFile(self._handle)
            before = len(self._file.stripe_rows)
            self._file.append(piece)
        except OSError as exc:
            raise storage_error(self.path, exc) from exc
        ends = np.cumsum(self._file.stripe_rows[before:]) - 1
        keys = [events.column(k).take(pa.array(ends)).to_pylist() for k in KEY_FIELDS]
        added = [AcidKey(*key) for key in zip(*keys)]
        self._key_index += added
        self._key_index_text += format_key_index(added)
        self._counts += self._pending_counts
        self._last_key = self._pending_last
        self.discard()

    def _metadata(self) -> dict[str, bytes]:
        return acid_metadata(self._key_index_text, AcidStats(*(int(c) for c in self._counts)))

    def close(self) -> EventFileInfo | None:
        """Finish the file (final footer, side file removed, ``_orc_acid_version``); None when it never got an
        event (nothing was created)."""
        if self._closed:
            raise ValueError(f"{self.path}: writer is already closed")
        with aborting_on_error(self.path, self.abort):
            self._append_pending()
            if self._row_writer is not None:
                self._closed = True
                self.info = self._row_writer.close()
                return self.info
            if self._file is None:
                self._closed = True
                return None
            assert self._handle is not None, "opened with the file"
            self._file.tail(self._metadata(), final=True)
            self._handle.close()
            self._closed = True
            if self._flush_lengths:
                self._side.remove()
            write_acid_version_file(self._dir)
        stats = AcidStats(*(int(c) for c in self._counts))
        self.info = EventFileInfo(self.path, self._file.rows, len(self._key_index), tuple(self._key_index), stats,
                                  tuple(self._flush_lengths))
        return self.info

    def abort(self) -> None:
        """Drop the file and its side file (the directory is left as it was)."""
        self.discard()
        if self._row_writer is not None:
            self._closed = True
            self._row_writer.abort()
            return
        if not self._closed:
            self._closed = True
            if self._handle is not None:
                try:
                    self._handle.close()
                except Exception:  # noqa: BLE001 - closing a writer that already failed; the first error wins
                    pass
        if self._file is not None:
            self._dir.remove(self.file_name)
            self._side.remove()


__all__ = ["StreamingEventFileWriter"]
