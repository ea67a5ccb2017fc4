"""Write one statement of one transaction as Hive does: ``delta_W_W_S`` for inserted rows and
``delete_delta_W_W_S`` for delete events, one ``bucket_N`` file per bucket id (HIVE_ACID_SPEC.md §1.3, §2.1).

An UPDATE under split-update is one call with both ``inserts`` (the new row versions) and ``deletes`` (the
ROW__IDs of the old ones). Empty sides write nothing, as Hive removes empty delta files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.event_schema import BUCKET, delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, write_event_file

BucketAssigner = Callable[[pa.Table], np.ndarray]
"""Maps rows to bucket ids (one int per row); None means every row goes to bucket 0 (unbucketed)."""


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
                    filesystem: fsspec.AbstractFileSystem | None = None) -> StatementFiles:
    """Write the events of one statement under ``location``; ``deletes`` holds ROW__ID columns
    (originalTransaction, bucket, rowId) of the rows to delete."""
    written: list[str] = []
    delta = delete_delta = None
    n_ins = inserts.num_rows if inserts is not None else 0
    n_del = deletes.num_rows if deletes is not None else 0
    if n_ins:
        delta = names.format_delta(write_id, write_id, statement_id)
        buckets = np.zeros(n_ins, dtype=np.int64) if bucket_of is None else np.asarray(bucket_of(inserts))
        for bucket_id in np.unique(buckets):
            rows = inserts.filter(pa.array(buckets == bucket_id))
            prop = bucket_codec.encode(int(bucket_id), statement_id)
            info = write_event_file(posixpath.join(location, delta), int(bucket_id),
                                    insert_events(rows.select(row_schema.names), write_id, prop),
                                    row_schema=row_schema, kind=FileKind.DELTA, filesystem=filesystem)
            written.append(info.path)
    if n_del:
        delete_delta = names.format_delta(write_id, write_id, statement_id, delete=True)
        bucket_ids = np.array([bucket_codec.bucket_id_of(int(v)) for v in deletes.column(BUCKET).to_pylist()])
        for bucket_id in np.unique(bucket_ids):
            keys = deletes.filter(pa.array(bucket_ids == bucket_id))
            info = write_event_file(posixpath.join(location, delete_delta), int(bucket_id),
                                    delete_events(keys, write_id, row_schema),
                                    row_schema=row_schema, kind=FileKind.DELTA, filesystem=filesystem)
            written.append(info.path)
    return StatementFiles(delta, delete_delta, tuple(written), n_ins, n_del)
