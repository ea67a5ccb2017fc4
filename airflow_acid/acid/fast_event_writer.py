"""Fast ACID ORC event files: pyarrow's ORC writer plus the three ``hive.acid.*`` metadata keys.

The pyorc :class:`~airflow_acid.acid.event_writer.EventFileWriter` needs one Python tuple per row; this writer hands
Arrow data to ``pyarrow.orc`` (~5× faster, bench/bench_event_write.py) into memory, reads the stripe row counts from
the finished Footer and the last key of every stripe from its key columns to build ``hive.acid.key.index``
(docs/hive-acid.md#orc-user-metadata), and appends the user metadata by rewriting the file tail
(:mod:`airflow_acid.acid.orc_tail`). Client statement files and compaction output use it. :class:`AcidOrcFileWriter` takes
the events batch by batch, so a caller never holds a whole bucket's rows; compaction output is built in a local scratch file
(``spool=True``) and stored only once complete, in one sequential write (which also suits object stores). Streaming ingest
keeps the pyorc writer (intermediate footers).
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as po

from airflow_acid.acid.errors import AcidFileError, UnsortedEventsError
from airflow_acid.acid.event_schema import KEY_FIELDS, OPERATION, AcidKey, key_values
from airflow_acid.acid.event_writer import AcidStats, FileKind, acid_metadata, first_unsorted
from airflow_acid.acid.fs import Storage
from airflow_acid.acid.orc_file_builder import OrcFileBuilder
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.orc_tail import finished_tail, read_tail

_MEMORY_BLOCK = 64 * 1024
"""The ORC C++ writer needs the compression block to be a multiple of this."""
_PYARROW_COMPRESSION = {"NONE": "uncompressed", "ZLIB": "zlib", "SNAPPY": "snappy", "LZ4": "lz4", "ZSTD": "zstd"}
_COPY_CHUNK = 8 << 20


@dataclass(frozen=True)
class WrittenFile:
    """One ACID ORC file written by :class:`AcidOrcFileWriter`."""

    path: str
    rows: int
    bytes: int
    stripes: int
    stats: AcidStats


def writer_options(orc: OrcSettings, kind: FileKind) -> dict[str, Any]:
    """pyarrow ORCWriter arguments for a base or delta file (docs/hive-acid.md#orc-writer-settings: deltas divide stripe and
    buffer by the ratio).

    The compression block is rounded up to a multiple of 64 KiB, the ORC C++ writer's memory block, which pyarrow
    does not let callers change (pyorc's writer can, so its delta files keep a 32 KiB block)."""
    ratio = orc.base_delta_ratio if kind is FileKind.DELTA else 1
    buffer = max(_MEMORY_BLOCK, -(-(orc.buffer_size // ratio) // _MEMORY_BLOCK) * _MEMORY_BLOCK)
    return {"compression": _PYARROW_COMPRESSION[orc.compression], "stripe_size": max(1, orc.stripe_size // ratio),
            "compression_block_size": buffer, "row_index_stride": orc.row_index_stride,
            "dictionary_key_size_threshold": 0.0 if kind is FileKind.DELTA else 0.8}


def pyarrow_compression(orc: OrcSettings) -> str:
    """pyarrow's name of the settings' ORC compression."""
    return _PYARROW_COMPRESSION[orc.compression]


def sort_keys_order(events: pa.Table) -> np.ndarray | None:
    """Permutation that sorts events by (originalTransaction, bucket, rowId), or None if already sorted."""
    o, b, r = (key_values(events.column(k)) for k in KEY_FIELDS)
    if first_unsorted(o, b, r) < 0:
        return None
    return np.lexsort((r, b, o))



class AcidOrcFileWriter:
    """Streams sorted ACID event batches into one ORC file with key index, stats and version; nothing is stored
    until :meth:`close`, so dropping an unclosed writer leaves no file.

    The file is built in memory, or — ``spool=True``, for compaction output of any size — in a local scratch file,
    so memory stays at the batches in flight whatever the file's size. Either way only the last key of each batch is
    kept: the key index (last key of every stripe) is read back from the finished stripes' key columns at close."""

    def __init__(self, storage: Storage, relative: str, *, kind: FileKind, orc: OrcSettings,
                 spool: bool = False) -> None:
        self.storage = storage
        self.relative = relative
        self.rows = 0
        self._last: tuple[int, int, int] | None = None
        self._ops = np.zeros(3, dtype=np.int64)
        self._builder = OrcFileBuilder(writer_options(orc, kind), spool=spool)

    def write(self, events: pa.Table | pa.RecordBatch) -> None:
        """Append events; raises :class:`UnsortedEventsError` (nothing written for them) if the keys go backwards."""
        if events.num_rows == 0:
            return
        o, b, r = (key_values(events.column(k)) for k in KEY_FIELDS)
        bad = first_unsorted(o, b, r)
        if bad < 0 and self._last is not None and (int(o[0]), int(b[0]), int(r[0])) < self._last:
            bad = 0
        if bad >= 0:
            raise UnsortedEventsError(self.storage.url(self.relative), "events are not sorted by (originalTransaction, "
                                                                       f"bucket, rowId) at row {self.rows + bad}")
        self._ops += np.bincount(key_values(events.column(OPERATION)), minlength=3)[:3]
        self._builder.write(events)
        self._last = (int(o[-1]), int(b[-1]), int(r[-1]))
        self.rows += events.num_rows

    def close(self) -> WrittenFile:
        """Finish the ORC file, add the ``hive.acid.*`` metadata and store it."""
        path = self.storage.url(self.relative)
        try:
            if self.rows == 0:
                raise AcidFileError(path, "refusing to write an empty ACID event file")
            data = self._builder.finish()
            if isinstance(data, pa.Buffer):
                return self._store(path, data, pa.BufferReader(data))
            with open(data, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                view = memoryview(mapped)  # only the tail is touched through it; the stripes are copied by reads
                try:
                    return self._store(path, view, pa.OSFile(data), copy_from=fh)
                finally:
                    view.release()
        finally:
            self._builder.discard()

    def _store(self, path: str, data: memoryview | pa.Buffer, source: Any, copy_from: Any = None) -> WrittenFile:
        tail = read_tail(data)
        ends = np.cumsum(tail.stripe_rows) - 1
        if not len(ends) or ends[-1] != self.rows - 1:
            raise AcidFileError(path, f"ORC footer lists {int(sum(tail.stripe_rows))} rows in stripes, "
                                      f"expected {self.rows}")
        key_index = _stripe_last_keys(source, len(ends))
        stats = AcidStats(int(self._ops[0]), int(self._ops[1]), int(self._ops[2]))
        start, new_tail = finished_tail(data, acid_metadata(key_index, stats))
        with self.storage.open_output(self.relative) as fh:
            if copy_from is None:
                fh.write(memoryview(data)[:start])
            else:
                copy_from.seek(0)
                left = start
                while left:
                    chunk = copy_from.read(min(_COPY_CHUNK, left))
                    fh.write(chunk)
                    left -= len(chunk)
            fh.write(new_tail)
        return WrittenFile(path, self.rows, start + len(new_tail), len(key_index), stats)

def _stripe_last_keys(source: Any, stripes: int) -> list[AcidKey]:
    """The last event key of every stripe, read back from the finished file's key columns
    (docs/hive-acid.md#orc-user-metadata key index)."""
    orc = po.ORCFile(source)
    keys = []
    for i in range(stripes):
        batch = orc.read_stripe(i, columns=list(KEY_FIELDS))
        last = batch.num_rows - 1
        keys.append(AcidKey(*(int(batch.column(k)[last].as_py()) for k in KEY_FIELDS)))
    return keys


def write_acid_orc(storage: Storage, relative: str, events: pa.Table, *, kind: FileKind,
                   orc: OrcSettings) -> WrittenFile:
    """Write sorted ACID events as one ORC file at ``storage/relative`` with key index, stats and version."""
    if events.num_rows == 0:
        raise AcidFileError(storage.url(relative), "refusing to write an empty ACID event file")
    writer = AcidOrcFileWriter(storage, relative, kind=kind, orc=orc)
    writer.write(events)
    return writer.close()
