"""Write one statement of one transaction as Hive does: ``delta_W_W_S`` for inserted rows and
``delete_delta_W_W_S`` for delete events, one ``bucket_N`` file per bucket id (docs/hive-acid.md#who-writes-what,
docs/hive-acid.md#event-schema).

An UPDATE under split-update is one call with both ``inserts`` (the new row versions) and ``deletes`` (the
ROW__IDs of the old ones). Empty sides write nothing, as Hive removes empty delta files. Files are written with the
pyarrow-based :mod:`~airflow_acid.acid.fast_event_writer` using the delta ORC settings
(docs/hive-acid.md#orc-writer-settings).
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.errors import AcidFileError
from airflow_acid.acid.event_schema import BUCKET, delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, conform_events, sort_events, write_acid_version_file
from airflow_acid.acid.fast_event_writer import pyarrow_compression, write_acid_orc
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.orc_file_builder import write_orc_bytes
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.orc_tail import finished_tail
from airflow_acid.errors import AcidInputError

BucketAssigner = Callable[[pa.Table], np.ndarray]
"""Maps rows to bucket ids (one int per row); None means every row goes to bucket 0 (unbucketed)."""

STATEMENT_ORC = OrcSettings()
"""Hive's defaults; statement files are deltas, so stripe and buffer sizes are divided by the base/delta ratio."""

WRITER_MIN_BYTES = 8 * 1024 * 1024
"""Arrow bytes each parallel writer of an unbucketed insert gets at least (smaller inserts stay one file)."""

MAX_WRITERS = 8
"""Most writer threads one statement runs, whatever the cores: beyond this the files get small and storage, not
the ORC encoder, sets the pace."""


WRITER_THREADS_ENV = "AIRFLOW_ACID_WRITER_THREADS"


def writer_threads() -> int:
    """Writers a statement may run at once: ``$AIRFLOW_ACID_WRITER_THREADS`` if set (1 = one file per bucket, no
    threads), else this machine's usable cores, at most :data:`MAX_WRITERS`."""
    configured = os.environ.get(WRITER_THREADS_ENV, "").strip()
    if configured:
        if not configured.isdigit() or int(configured) < 1:
            raise AcidInputError(f"{WRITER_THREADS_ENV}={configured!r} is not a positive integer; set it to the "
                                 "number of files a statement may write at once (1 disables parallel writers)")
        return int(configured)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WRITERS, cores))


@dataclass(frozen=True)
class StatementFiles:
    """Directories and files written for one statement (relative to the partition location)."""

    delta: str | None
    delete_delta: str | None
    files: tuple[str, ...]
    inserted: int
    deleted: int


def write_statement(location: str, write_id: int, statement_id: int, row_schema: pa.Schema, *,
                    inserts: pa.Table | None = None, deletes: pa.Table | None = None,
                    bucket_of: BucketAssigner | None = None,
                    filesystem: fsspec.AbstractFileSystem | None = None, max_writers: int = 1,
                    orc: OrcSettings = STATEMENT_ORC) -> StatementFiles:
    """Write the events of one statement under ``location``; ``deletes`` holds ROW__ID columns
    (originalTransaction, bucket, rowId) of the rows to delete; ``orc`` the table's ORC settings (orc.compress …).

    ``max_writers`` > 1 writes the bucket files on that many threads (the ORC writer runs without the GIL); an
    unbucketed insert of more than :data:`WRITER_MIN_BYTES` per writer is then split into contiguous slices written
    as ``bucket_0``, ``bucket_1`` … — writer ids, as Hive's parallel tasks write an unbucketed table."""
    delta = delete_delta = None
    n_ins = inserts.num_rows if inserts is not None else 0
    n_del = deletes.num_rows if deletes is not None else 0
    jobs: list[Callable[[], str]] = []
    if inserts is not None and n_ins:
        delta = names.format_delta(write_id, write_id, statement_id)
        for bucket_id, rows in _insert_buckets(inserts, bucket_of, max_writers):
            prop = bucket_codec.encode(bucket_id, statement_id)
            jobs.append(functools.partial(_write_insert_bucket, posixpath.join(location, delta), bucket_id, rows,
                                          write_id, prop, row_schema, filesystem, FileKind.DELTA, orc))
    if deletes is not None and n_del:
        delete_delta = names.format_delta(write_id, write_id, statement_id, delete=True)
        bucket_ids = bucket_codec.bucket_ids_of(deletes.column(BUCKET).to_numpy())
        for bucket_id in np.unique(bucket_ids):
            keys = deletes.filter(pa.array(bucket_ids == bucket_id))
            jobs.append(functools.partial(_write_delete_bucket, posixpath.join(location, delete_delta),
                                          int(bucket_id), keys, write_id, row_schema, filesystem, orc))
    return StatementFiles(delta, delete_delta, tuple(_run(jobs, max_writers)), n_ins, n_del)


def write_base(location: str, write_id: int, row_schema: pa.Schema, rows: pa.Table, *,
               bucket_of: BucketAssigner | None = None, statement_id: int = 0,
               filesystem: fsspec.AbstractFileSystem | None = None, max_writers: int = 1,
               orc: OrcSettings = STATEMENT_ORC) -> StatementFiles:
    """INSERT OVERWRITE: ``base_W`` (no visibility suffix, no ``_metadata_acid``: not a compacted base) holding
    ``rows`` as insert events of write id W, one ``bucket_N`` file per bucket (docs/hive-acid.md#who-writes-what);
    ``statement_id`` goes into the bucket property (distinct writers of one bucket keep distinct ROW__IDs). With no rows the
    base is a truncated one (:func:`write_truncated_base`): readers must still stop at it. ``max_writers`` as in
    :func:`write_statement`."""
    if not rows.num_rows:
        return write_truncated_base(location, write_id, filesystem=filesystem)
    base = names.format_base(write_id)
    jobs: list[Callable[[], str]] = [
        functools.partial(_write_insert_bucket, posixpath.join(location, base), bucket_id, part, write_id,
                          bucket_codec.encode(bucket_id, statement_id), row_schema, filesystem, FileKind.BASE, orc)
        for bucket_id, part in _insert_buckets(rows, bucket_of, max_writers)]
    return StatementFiles(base, None, tuple(_run(jobs, max_writers)), rows.num_rows, 0)


def _insert_buckets(rows: pa.Table, bucket_of: BucketAssigner | None,
                    max_writers: int) -> list[tuple[int, Callable[[], pa.Table]]]:
    """(bucket id, its rows) per file: the assigner's buckets, or — unbucketed — one contiguous slice per writer.
    A bucket's rows are taken when its writer starts, so a bucketed insert holds one filtered copy per running
    writer rather than a second copy of the whole input."""
    if bucket_of is not None:
        buckets = np.asarray(bucket_of(rows))
        return [(int(b), functools.partial(_rows_of_bucket, rows, buckets, b)) for b in np.unique(buckets)]
    writers = max(1, min(max_writers, rows.nbytes // WRITER_MIN_BYTES))
    step = -(-rows.num_rows // writers)
    return [(i, functools.partial(rows.slice, i * step, step)) for i in range(writers) if i * step < rows.num_rows]


def _rows_of_bucket(rows: pa.Table, buckets: np.ndarray, bucket: Any) -> pa.Table:
    return rows.filter(pa.array(buckets == bucket))


def _run(jobs: list[Callable[[], str]], max_writers: int) -> list[str]:
    """Run the file writers, on up to ``max_writers`` threads; results in job order, the first error raised."""
    if max_writers <= 1 or len(jobs) <= 1:
        return [job() for job in jobs]
    with ThreadPoolExecutor(max_workers=min(max_writers, len(jobs)), thread_name_prefix="acid-writer") as pool:
        futures = [pool.submit(job) for job in jobs]
        return [f.result() for f in futures]


def _write_insert_bucket(directory: str, bucket_id: int, rows: Callable[[], pa.Table], write_id: int, prop: int,
                         row_schema: pa.Schema, filesystem: fsspec.AbstractFileSystem | None, kind: FileKind,
                         orc: OrcSettings = STATEMENT_ORC) -> str:
    return _write_bucket(directory, bucket_id, insert_events(rows().select(row_schema.names), write_id, prop),
                         row_schema, filesystem, kind=kind, orc=orc)


def _write_delete_bucket(directory: str, bucket_id: int, keys: pa.Table, write_id: int, row_schema: pa.Schema,
                         filesystem: fsspec.AbstractFileSystem | None, orc: OrcSettings = STATEMENT_ORC) -> str:
    return _write_bucket(directory, bucket_id, delete_events(keys, write_id, row_schema), row_schema, filesystem,
                         orc=orc)


def write_truncated_base(location: str, write_id: int, *,
                         filesystem: fsspec.AbstractFileSystem | None = None) -> StatementFiles:
    """TRUNCATE (Hive 4, ``hive.acid.truncate.usebase``): ``base_W`` holding only ``_metadata_acid`` with
    ``dataFormat`` ``truncated`` (docs/hive-acid.md#metadata-file); snapshots from W on see no rows below it."""
    base = names.format_base(write_id)
    storage = storage_for(posixpath.join(location, base), filesystem)
    try:
        storage.write_bytes_atomic(names.METADATA_ACID_FILE, TRUNCATED_METADATA)
    except OSError as exc:
        raise AcidFileError(storage.url(names.METADATA_ACID_FILE), f"cannot be written: {exc.strerror or exc}") \
            from exc
    return StatementFiles(base, None, (), 0, 0)


def write_insert_only(directory: str, rows: pa.Table, *, bucket_of: BucketAssigner | None = None,
                      writer_id: int = 0, filesystem: fsspec.AbstractFileSystem | None = None,
                      orc: OrcSettings = STATEMENT_ORC) -> list[str]:
    """Insert-only (MM) tables: plain ORC files (no ACID columns) named like Hive's ``00000N_0`` in ``directory``
    (a ``delta_W_W_S`` or ``base_W``), one per bucket — or, unbucketed, one named by ``writer_id`` (Hive's writer
    task id); footers mark the proleptic Gregorian calendar. Returns the files' URLs."""
    storage = storage_for(directory, filesystem)
    buckets = np.full(rows.num_rows, writer_id, dtype=np.int64) if bucket_of is None else np.asarray(bucket_of(rows))
    written = []
    for bucket in np.unique(buckets):
        part = rows.filter(pa.array(buckets == bucket))
        data = write_orc_bytes(part, {"compression": pyarrow_compression(orc)})
        start, tail = finished_tail(data)  # the footer marks the proleptic Gregorian calendar
        relative = names.format_original_file(int(bucket))
        storage.write_bytes_atomic(relative, bytes(memoryview(data)[:start]) + tail)
        written.append(storage.url(relative))
    return written


TRUNCATED_METADATA = b'{"thisFileVersion":"0","dataFormat":"truncated"}'
"""The ``_metadata_acid`` of a truncated base, as Hive 4 writes it."""


def _write_bucket(directory: str, bucket_id: int, events: pa.Table, row_schema: pa.Schema,
                  filesystem: fsspec.AbstractFileSystem | None, *, kind: FileKind = FileKind.DELTA,
                  orc: OrcSettings = STATEMENT_ORC) -> str:
    """One ``bucket_N`` file of sorted events plus the directory's ``_orc_acid_version``; returns its URL."""
    storage = storage_for(directory, filesystem)
    relative = names.format_bucket_file(bucket_id)
    path = storage.url(relative)
    events = sort_events(conform_events(events, row_schema, path))
    try:
        write_acid_orc(storage, relative, events, kind=kind, orc=orc)
        write_acid_version_file(storage)
    except OSError as exc:  # disk full, quota, permissions: name the file, keep the OSError as cause
        storage.remove(relative)
        raise AcidFileError(path, f"cannot be written: {exc.strerror or exc}") from exc
    return path
