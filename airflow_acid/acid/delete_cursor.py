"""Streamed delete events: a bucket's delete deltas read in key order and merged with the rows as they are read.

Hive's SortMergedDeleteEventRegistry, used above ``hive.transactional.events.mem`` delete events in a bucket (see
:mod:`airflow_acid.acid.delete_events`). Each delete delta file is sorted by (originalTransaction, bucket, rowId)
(Hive writes them so; airflow-acid's writers refuse unsorted events), so the files are read side by side, in batches
of at most :attr:`DeleteCursor.batch_rows` events each, and k-way merged window by window:

- the *frontier* F is the smallest last key among the batches held of the files not read to their end: every
  event ≤ F of every file is in hand (a file's later events are ≥ its last key ≥ F);
- the events ≤ F are taken from the files (a heap of the files' first keys finds the ones holding any) into a
  *window*, an in-memory :class:`~airflow_acid.acid.delete_events._DeleteSet` over the key range [first row asked, F];
- rows up to F are answered from the window; a row beyond F moves the window on (the file(s) that defined F are
  empty now, and every file holding less than half a batch reads one more, appended to what it holds).

Memory holds at most 1.5 batches per file (:attr:`DeleteCursor.peak_events` records the most held) and one window
made of some of them. Rows asked in key order — each data file's rows are — pass every delete event once. A row below
the window (a later data file starting at a smaller key) starts the files over: correct, at the cost of a re-read.

A split of a large file (a stripe range) asks only for keys in its :class:`~airflow_acid.acid.event_reader.KeyInterval`
(from the data file's key index): each delete delta is then read from the first stripe whose last key is above the
interval's lower bound to the first whose last key reaches its upper bound (from the delta's own key index; every
stripe without one), as Hive's OrcRawRecordMerger does, and events outside the interval are dropped as read.
"""

from __future__ import annotations

import heapq
import tempfile
from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
import pyarrow as pa

from airflow_acid.acid.delete_events import Key, KeyInterval, _DeleteSet, _KeyRuns, _np, valid_delete_keys
from airflow_acid.acid.errors import UnsortedEventsError
from airflow_acid.acid.event_reader import FileFormat, OrcDataFile, open_data_file
from airflow_acid.acid.event_schema import BUCKET, KEY_FIELDS, ORIGINAL_TRANSACTION, ROW_ID, delete_events
from airflow_acid.acid.event_writer import FileKind, first_unsorted
from airflow_acid.acid.fast_event_writer import AcidOrcFileWriter
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.writeids import ValidWriteIdList

WINDOW_EVENTS = 4_000_000
"""Delete events the cursor reads ahead across all files (~80 MB as key arrays): each file reads batches of this
divided by the number of files, within [:data:`MIN_BATCH_ROWS`, :data:`MAX_BATCH_ROWS`]."""
MIN_BATCH_ROWS = 1024
"""Hive's VectorizedRowBatch size: the smallest batch a file is read in, however many files there are."""
MAX_BATCH_ROWS = 65_536
MAX_OPEN_FILES = 64
"""Delete deltas read side by side at most: an open ORC reader holds ~1 MB of stream buffers (1,000 delete deltas of
100,000 events: 1 GB). With more, groups of this many are first merged into sorted run files in a local scratch
directory (an external merge sort's first pass; only valid delete keys, distinct) and the cursor reads those."""
_RUN_ORC = OrcSettings(compression="LZ4")
_RUN_ROW = pa.schema([("x", pa.int8())])

_BEYOND = (1 << 63, 1 << 31, 1 << 63)
"""A key above every key (the frontier once every file is read)."""


def _bound(o: np.ndarray, b: np.ndarray, r: np.ndarray, key: Key, *, inclusive: bool) -> int:
    """How many keys of the sorted (o, b, r) are < ``key`` (≤ with ``inclusive``): three binary searches."""
    side: Literal["left", "right"] = "right" if inclusive else "left"
    lo, hi = int(np.searchsorted(o, key[0], "left")), int(np.searchsorted(o, key[0], "right"))
    if lo == hi:
        return lo
    bs = b[lo:hi]
    blo, bhi = lo + int(np.searchsorted(bs, key[1], "left")), lo + int(np.searchsorted(bs, key[1], "right"))
    if blo == bhi:
        return blo
    return blo + int(np.searchsorted(r[blo:bhi], key[2], side))


def _key(o: np.ndarray, b: np.ndarray, r: np.ndarray, i: int) -> Key:
    return int(o[i]), int(b[i]), int(r[i])


class _DeltaStream:
    """One delete delta file read forward: its valid delete keys in sorted batches."""

    def __init__(self, f: OrcDataFile, write_ids: ValidWriteIdList | None, batch_rows: int,
                 bounds: KeyInterval = KeyInterval()) -> None:
        self.file = f
        self.write_ids = write_ids
        self.batch_rows = batch_rows
        self.bounds = bounds
        self.stripes = bounds.stripes(f)
        """The stripes read (None: all)."""
        self.rows = f.stripe_range_rows(self.stripes)
        """Events in those stripes (valid or not)."""
        self.generation = 0
        self.restart()

    def restart(self) -> None:
        self._batches: Iterator[pa.RecordBatch] | None = None
        self.o = np.empty(0, np.int64)
        self.b = np.empty(0, np.int32)
        self.r = np.empty(0, np.int64)
        self.exhausted = False
        """Every event of the file has been read: what it holds is all it has left (it no longer bounds the
        frontier)."""
        self._read = 0
        self._last: Key | None = None
        self.generation += 1

    @property
    def held(self) -> int:
        return len(self.o)

    @property
    def first(self) -> Key:
        return _key(self.o, self.b, self.r, 0)

    @property
    def last(self) -> Key:
        return _key(self.o, self.b, self.r, len(self.o) - 1)

    def refill(self) -> int:
        """Append the next batch holding a valid delete event to the events held; how many it added (0 at the end
        of the file)."""
        if self._batches is None:
            self._batches = self.file.key_batches(self.batch_rows, self.stripes)
        for batch in self._batches:
            self._read += batch.num_rows
            self.exhausted = self._read >= self.rows  # the footer's count: no read past the end needed
            if self.write_ids is not None:  # None: a run file of valid keys only
                batch = valid_delete_keys(batch, self.write_ids)
            if not batch.num_rows:
                continue
            o, b, r = (_np(batch.column(k)) for k in KEY_FIELDS)
            inside = self.bounds.inside(o, b, r) if self.bounds.bounded else None
            if inside is not None:  # the first and last stripes read hold keys outside the split's interval
                o, b, r = o[inside], b[inside], r[inside]
                if not len(o):
                    continue
            bad = first_unsorted(o, b, r)
            if bad < 0 and self._last is not None and _key(o, b, r, 0) < self._last:
                bad = 0
            if bad >= 0:
                raise UnsortedEventsError(self.file.path, "delete events are not sorted by (originalTransaction, "
                                                          "bucket, rowId), so they cannot be streamed; raise "
                                                          "hive.transactional.events.mem above the bucket's delete "
                                                          "events to read them in memory, or compact the table")
            o, b, r = o.astype(np.int64, copy=False), b.astype(np.int32, copy=False), r.astype(np.int64, copy=False)
            added = len(o)
            if self.held:  # what is left of the last batch comes first
                o, b, r = (np.concatenate((old, new)) for old, new in ((self.o, o), (self.b, b), (self.r, r)))
            self.o, self.b, self.r = o, b, r
            self._last = self.last
            self.generation += 1
            return added
        self.exhausted = True
        self.generation += 1
        return 0

    def take(self, upto: Key, floor: Key | None, runs: _KeyRuns) -> int:
        """Move the held events ≤ ``upto`` into ``runs`` (dropping those < ``floor``: no row asks for them); how many
        left the batch."""
        end = _bound(self.o, self.b, self.r, upto, inclusive=True)
        start = min(end, _bound(self.o, self.b, self.r, floor, inclusive=False)) if floor is not None else 0
        if end > start:
            runs.add(self.o[start:end], self.b[start:end], self.r[start:end])
        self.o, self.b, self.r = self.o[end:], self.b[end:], self.r[end:]
        return end


class DeleteCursor:
    """A :class:`~airflow_acid.acid.delete_events.DeleteFilter` over delete deltas streamed in key order."""

    def __init__(self, files: Sequence[OrcDataFile], write_ids: ValidWriteIdList, *,
                 window_events: int = WINDOW_EVENTS, max_open_files: int | None = None,
                 bounds: KeyInterval = KeyInterval()) -> None:
        max_open = max(2, max_open_files or MAX_OPEN_FILES)
        self._scratch: list[tempfile.TemporaryDirectory[str]] = []
        self.run_files = 0
        """Sorted run files the delete deltas were first merged into (0: read directly)."""
        valid: ValidWriteIdList | None = write_ids
        while len(files) > max_open:  # run files hold DELETE events of write id 0: valid in any snapshot
            files, valid = self._merged_runs(files, write_ids, window_events, max_open, bounds), None
            self.run_files = len(files)
        self.batch_rows = max(MIN_BATCH_ROWS, min(MAX_BATCH_ROWS, window_events // max(1, len(files))))
        self._streams = [_DeltaStream(f, valid, self.batch_rows, bounds) for f in files]
        self.stripes_read = 0
        """Delete-delta stripes started reading (each file's stripe range, every time the files start over)."""
        self.peak_events = 0
        """The most delete events read and not yet passed at once (what every file holds; a window is made of some of
        them): at most ``len(files) * (batch_rows + (batch_rows - 1) // 2)`` — what tests check, not timing or RSS."""
        self.restarts = 0
        """How often rows below the window made the files start over."""
        self.windows = 0
        self._restart()

    def _merged_runs(self, files: Sequence[OrcDataFile], write_ids: ValidWriteIdList, window_events: int,
                     max_open: int, bounds: KeyInterval) -> list[OrcDataFile]:
        """Groups of ``max_open`` delete deltas merged into one sorted run file each."""
        scratch = tempfile.TemporaryDirectory(prefix="acid-delete-runs-")  # removed with the cursor
        self._scratch.append(scratch)
        storage = storage_for(scratch.name)
        runs: list[OrcDataFile] = []
        for start in range(0, len(files), max_open):
            group = DeleteCursor(files[start:start + max_open], write_ids, window_events=window_events,
                                 max_open_files=max_open, bounds=bounds)
            relative = f"run_{start // max_open:05d}/bucket_00000"
            writer = AcidOrcFileWriter(storage, relative, kind=FileKind.DELTA, orc=_RUN_ORC, spool=True)
            for o, b, r in group.sorted_keys():
                keys = pa.table({ORIGINAL_TRANSACTION: o, BUCKET: b, ROW_ID: r})
                writer.write(delete_events(keys, 0, _RUN_ROW))
            if writer.rows:
                written = writer.close()
                runs.append(open_data_file(storage, relative, written.bytes, expect=FileFormat.ACID))
        return runs

    def sorted_keys(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Every valid delete key once, in key order, window by window (what a run file holds)."""
        self._restart()
        while self._high != _BEYOND:
            self._advance(None)
            if self._window is None:
                continue
            for (o, b), rows in sorted(self._window.row_ids.items()):
                yield np.full(len(rows), o, np.int64), np.full(len(rows), b, np.int32), rows

    # -- the window --------------------------------------------------------------------------------
    def _restart(self) -> None:
        for s in self._streams:
            s.restart()
            first, end = s.stripes if s.stripes is not None else (0, s.file.num_stripes)
            self.stripes_read += max(0, min(end, s.file.num_stripes) - first)
        self._start: Key | None = None    # events < start are gone: a row < start starts the files over
        self._high: Key | None = None     # the window holds the events in [start, high]; None: no window yet
        self._window: _DeleteSet | None = None
        self._low = list(range(len(self._streams)))     # streams holding less than half a batch: read one more
        self._held = 0
        self._by_first: list[tuple[Key, int, int]] = []  # (first held key, stream, generation)
        self._by_last: list[tuple[Key, int, int]] = []   # (last held key, stream, generation)

    def _frontier(self) -> Key:
        while self._by_last:
            key, i, generation = self._by_last[0]
            s = self._streams[i]
            if generation == s.generation and s.held and not s.exhausted:
                return key
            heapq.heappop(self._by_last)  # stale: that batch was used up
        return _BEYOND

    def _advance(self, floor: Key | None) -> None:
        """The next window: read a batch more into every file holding less than half a batch, then take every event
        ≤ the new frontier. (Topping up before a file runs dry keeps the files' last keys apart, so a window holds
        about half a batch of every file, not the few events between two files' last keys.)"""
        for i in self._low:
            s = self._streams[i]
            if not s.exhausted:
                self._held += s.refill()
                if s.held:
                    heapq.heappush(self._by_first, (s.first, i, s.generation))
                    heapq.heappush(self._by_last, (s.last, i, s.generation))
        self._low = []
        self.peak_events = max(self.peak_events, self._held)
        upto = self._frontier()
        runs = _KeyRuns()
        while self._by_first and self._by_first[0][0] <= upto:
            _, i, generation = heapq.heappop(self._by_first)
            s = self._streams[i]
            if generation != s.generation or not s.held:
                continue
            self._held -= s.take(upto, floor, runs)
            if s.held:
                heapq.heappush(self._by_first, (s.first, i, s.generation))
            else:
                s.generation += 1  # its entry among the last keys is stale now
            if 2 * s.held < self.batch_rows:
                self._low.append(i)
        self._window = _DeleteSet.from_runs(runs)
        self._start, self._high = floor, upto
        self.windows += 1

    # -- DeleteFilter ------------------------------------------------------------------------------
    def survivors(self, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> pa.Array | None:
        """Boolean mask of the rows NOT deleted, or None when no row is deleted."""
        n = len(o)
        if n == 0:
            return None
        if first_unsorted(o, b, r) >= 0:  # not in key order: answer in key order, then put back
            order = np.lexsort((r, b, o))
            keep = self.survivors(o[order], b[order], r[order])
            if keep is None:
                return None
            unsorted = np.empty(n, dtype=bool)
            unsorted[order] = _np(keep)
            return pa.array(unsorted)
        if self._start is not None and _key(o, b, r, 0) < self._start:
            self.restarts += 1
            self._restart()
        hit: np.ndarray | None = None
        pos = 0
        while pos < n:
            if self._high is None or _key(o, b, r, pos) > self._high:
                self._advance(_key(o, b, r, pos))
                continue
            end = n if self._high == _BEYOND else _bound(o, b, r, self._high, inclusive=True)
            if self._window is not None:
                keep = self._window.survivors(o[pos:end], b[pos:end], r[pos:end])
                if keep is not None:
                    if hit is None:
                        hit = np.zeros(n, dtype=bool)
                    hit[pos:end] = ~_np(keep)
            pos = end
        return None if hit is None else pa.array(~hit)

    def may_touch(self, first: Key, last: Key) -> bool:
        """Always True: a streamed cursor knows the events of its window only."""
        return True
