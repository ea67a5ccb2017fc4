"""Compacted delete events, streamed: a bucket's delete deltas k-way merged into one sorted run of whole events.

A MINOR compaction rewrites every valid delete event of a bucket into one ``delete_delta`` file, sorted by
(originalTransaction, bucket, rowId), each event keeping its own operation and currentTransaction
(``spark/units.py``). Up to ``hive.transactional.events.mem`` events it concatenates them in memory and sorts; above,
:class:`MergedDeleteEvents` gives the same events in the same order with bounded memory, the way
:class:`~airflow_acid.acid.delete_cursor.DeleteCursor` streams them for reads:

- every delete delta file is sorted by key, so the files are read side by side, batch by batch (only DELETE events
  whose own write id the snapshot accepts are kept, as in memory);
- the *frontier* F is the smallest last key held among the files not read to their end; every event < F of every
  file is in hand (a file's unread events are ≥ its last key ≥ F), so those events are taken, stable-sorted by key
  in file order (ties: earlier file first, then file position — exactly what a stable sort of the concatenated files
  gives) and handed out; events equal to F wait, since a file may hold more of them in its next batch;
- files holding less than half a batch, and those whose last key is F, read one batch more.

A file holds at most ``batch_rows + max((batch_rows - 1) // 2, d)`` events, d the most events sharing one key in
that file (1 in any delete delta Hive writes); :attr:`MergedDeleteEvents.peak_events` records the most held at
once. More than :data:`MAX_OPEN_FILES` files are first merged in consecutive groups into sorted run files in a local
scratch directory (an external merge sort's first pass), which are merged in group order: ties keep file order.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from airflow_acid.acid import delete_cursor
from airflow_acid.acid.delete_cursor import _BEYOND, _bound, _key
from airflow_acid.acid.delete_events import Key, valid_delete_keys
from airflow_acid.acid.errors import UnsortedEventsError
from airflow_acid.acid.event_reader import FileFormat, OrcDataFile, open_data_file
from airflow_acid.acid.event_schema import ACID_FIELDS, ROW, event_arrow_schema, key_values
from airflow_acid.acid.event_writer import FileKind, first_unsorted
from airflow_acid.acid.fast_event_writer import AcidOrcFileWriter
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.writeids import ValidWriteIdList

_RUN_ROW = pa.schema([("x", pa.int8())])
"""Run files carry no row: a one-byte struct column, always NULL in delete events."""
_COLUMNS = ACID_FIELDS[:5]
"""operation, originalTransaction, bucket, rowId, currentTransaction: what a delete event is made of."""
_TYPES = tuple(np.dtype(f"int{t.bit_width}") for t in event_arrow_schema(_RUN_ROW).types[:5])
"""Their numpy dtypes (all integers; spelled out, as ``to_pandas_dtype`` imports pandas, which executors lack)."""


def _empty() -> list[np.ndarray]:
    return [np.empty(0, t) for t in _TYPES]


class _EventStream:
    """One delete delta (or run file) read forward: its valid delete events, five numpy columns, in batches."""

    def __init__(self, f: OrcDataFile, write_ids: ValidWriteIdList | None, batch_rows: int) -> None:
        self.file = f
        self.write_ids = write_ids
        self.batch_rows = batch_rows
        self.cols = _empty()
        self.exhausted = False
        """Every event of the file has been read: what it holds is all it has left."""
        self._batches: Iterator[pa.RecordBatch] | None = None
        self._read = 0
        self._last: Key | None = None

    @property
    def held(self) -> int:
        return len(self.cols[0])

    @property
    def last(self) -> Key:
        return _key(self.cols[1], self.cols[2], self.cols[3], self.held - 1)

    def refill(self) -> int:
        """Append the next batch holding a valid delete event; how many events it added (0 at the end of the file)."""
        if self._batches is None:
            self._batches = self.file.key_batches(self.batch_rows)
        for batch in self._batches:
            self._read += batch.num_rows
            self.exhausted = self._read >= self.file.num_rows  # the footer's count: no read past the end needed
            if self.write_ids is not None:  # None: a run file, valid events only
                batch = valid_delete_keys(batch, self.write_ids)
            if not batch.num_rows:
                continue
            new = [key_values(batch.column(c)).astype(t, copy=False) for c, t in zip(_COLUMNS, _TYPES)]
            o, b, r = new[1], new[2], new[3]
            bad = first_unsorted(o, b, r)
            if bad < 0 and self._last is not None and _key(o, b, r, 0) < self._last:
                bad = 0
            if bad >= 0:
                raise UnsortedEventsError(self.file.path, "delete events are not sorted by (originalTransaction, "
                                                          "bucket, rowId), so they cannot be merged as streams")
            self.cols = [np.concatenate((old, part)) for old, part in zip(self.cols, new)] if self.held else new
            self._last = self.last
            return int(batch.num_rows)
        self.exhausted = True
        return 0

    def take_below(self, upto: Key) -> list[np.ndarray]:
        """Remove and return the held events < ``upto`` (all of them for the key above every key)."""
        end = self.held if upto == _BEYOND else _bound(self.cols[1], self.cols[2], self.cols[3], upto,
                                                      inclusive=False)
        taken = [c[:end] for c in self.cols]
        self.cols = [c[end:] for c in self.cols]
        return taken


class MergedDeleteEvents:
    """The valid delete events of a bucket's delete deltas, in the order a stable in-memory sort gives, streamed."""

    def __init__(self, files: Sequence[OrcDataFile], write_ids: ValidWriteIdList, *,
                 window_events: int | None = None, max_open_files: int | None = None) -> None:
        self.window_events = window_events or delete_cursor.WINDOW_EVENTS
        self.max_open = max(2, max_open_files or delete_cursor.MAX_OPEN_FILES)
        self.files = list(files)
        self.write_ids = write_ids
        self.peak_events = 0
        """The most delete events held at once by any merge pass (what tests check, not timing or RSS)."""
        self.run_files = 0
        """Sorted run files the delete deltas were first merged into (0: merged directly)."""
        self.batch_rows = 0
        """Events a file is read in per batch by the final pass."""

    def tables(self, row_schema: pa.Schema) -> Iterator[pa.Table]:
        """The events as tables of ``event_arrow_schema(row_schema)`` (row NULL), in key order, window by window."""
        return _tables(self._windows(), row_schema)

    def _windows(self) -> Iterator[list[np.ndarray]]:
        with tempfile.TemporaryDirectory(prefix="acid-delete-merge-") as scratch:
            files: list[OrcDataFile] = self.files
            valid: ValidWriteIdList | None = self.write_ids
            level = 0
            while len(files) > self.max_open:
                files, valid = self._merged_runs(files, valid, f"{scratch}/{level}"), None
                self.run_files = len(files)
                level += 1
            yield from self._merge(files, valid)

    def _merged_runs(self, files: Sequence[OrcDataFile], write_ids: ValidWriteIdList | None,
                     scratch: str) -> list[OrcDataFile]:
        """Consecutive groups of ``max_open`` files merged into one sorted run file each (group order kept)."""
        storage = storage_for(scratch)
        runs: list[OrcDataFile] = []
        for start in range(0, len(files), self.max_open):
            relative = f"run_{start // self.max_open:05d}/bucket_00000"
            writer = AcidOrcFileWriter(storage, relative, kind=FileKind.DELTA, orc=delete_cursor._RUN_ORC, spool=True)
            for events in _tables(self._merge(files[start:start + self.max_open], write_ids), _RUN_ROW):
                writer.write(events)
            if writer.rows:
                written = writer.close()
                runs.append(open_data_file(storage, relative, written.bytes, expect=FileFormat.ACID))
        return runs

    def _merge(self, files: Sequence[OrcDataFile], write_ids: ValidWriteIdList | None) -> Iterator[list[np.ndarray]]:
        """One k-way merge pass over at most ``max_open`` files (see the module docstring)."""
        batch_rows = max(delete_cursor.MIN_BATCH_ROWS,
                         min(delete_cursor.MAX_BATCH_ROWS, self.window_events // max(1, len(files))))
        self.batch_rows = batch_rows
        streams = [_EventStream(f, write_ids, batch_rows) for f in files]
        refill = list(streams)
        while True:
            for s in refill:
                if not s.exhausted:
                    s.refill()
            self.peak_events = max(self.peak_events, sum(s.held for s in streams))
            open_lasts = [s.last for s in streams if s.held and not s.exhausted]
            upto = min(open_lasts) if open_lasts else _BEYOND
            parts = [s.take_below(upto) for s in streams if s.held]
            parts = [p for p in parts if len(p[0])]
            if len(parts) == 1:
                yield parts[0]
            elif parts:
                cols = [np.concatenate(column) for column in zip(*parts)]
                order = np.lexsort((cols[3], cols[2], cols[1]))  # stable: equal keys stay in file order
                yield [c[order] for c in cols]
            if upto == _BEYOND:
                return
            refill = [s for s in streams if not s.exhausted and (2 * s.held < batch_rows or s.last == upto)]


def _tables(windows: Iterator[list[np.ndarray]], row_schema: pa.Schema) -> Iterator[pa.Table]:
    schema = event_arrow_schema(row_schema)
    row_type = schema.field(ROW).type
    for cols in windows:
        yield pa.Table.from_arrays([pa.array(c) for c in cols] + [pa.nulls(len(cols[0]), row_type)], schema=schema)
