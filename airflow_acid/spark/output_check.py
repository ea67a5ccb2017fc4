"""Proof before commit, on the executor: what a work unit read for an output file against what that file holds.

A unit feeds each batch it hands to a writer into an :class:`Expected` (the merged rows at the compaction's
snapshot, with their ROW__IDs where the compaction keeps them: MINOR and MAJOR; without for REBALANCE, which gives
new ones; the plain rows of an insert-only table). After the files are closed they are opened again from storage
(a fresh handle, nothing from the writer's memory) and digested the same way; the pair goes into the result as an
:class:`~airflow_acid.job.result.OutputCheck`, which the Worker compares before it commits
(``compactor/proof.py``). Under ``verify = count`` only rows are counted (the written count from the files'
footers); under ``off`` nothing is checked.
"""

from __future__ import annotations

import enum
import posixpath
from dataclasses import dataclass, field

import pyarrow as pa

from airflow_acid.acid.digest import DigestBuilder, RowDigest
from airflow_acid.acid.event_reader import FileFormat, open_data_file
from airflow_acid.acid.event_schema import CURRENT_TRANSACTION, KEY_FIELDS, ROW
from airflow_acid.acid.fs import Storage
from airflow_acid.job.result import OutputCheck


class Content(enum.Enum):
    """Which columns of an output file make its content."""

    INSERTS = "inserts"
    """ACID insert events: ROW__ID (originalTransaction, bucket, rowId) and every column (MINOR, MAJOR)."""
    DELETES = "deletes"
    """ACID delete events: ROW__ID and currentTransaction (the row is empty)."""
    ROWS = "rows"
    """ACID events whose ROW__IDs are new (REBALANCE): every column, no ROW__ID."""
    PLAIN = "plain"
    """Plain ORC rows (insert-only tables): every column."""


@dataclass
class Expected:
    """What one unit hands its writer for one output directory, and the files it wrote there."""

    unit: str
    step: int
    directory: str
    """The output directory (``base_N_vC`` …) as the result names it."""
    staged: str
    """Where its files are while the job runs (``<tmp>/<directory>``, or ``<directory>`` on object stores)."""
    content: Content
    hashing: bool
    names: list[str] = field(default_factory=list)
    builder: DigestBuilder = field(default_factory=DigestBuilder)

    def add_merged(self, batch: pa.RecordBatch | pa.Table, row_schema: pa.Schema) -> None:
        """Rows as the merge gives them (key columns, then the table's columns by name)."""
        keys = list(KEY_FIELDS) if self.content is Content.INSERTS else []
        self._add([batch.column(k) for k in keys] + [batch.column(f.name) for f in row_schema], batch.num_rows)

    def add_events(self, events: pa.RecordBatch | pa.Table) -> None:
        """Rows as event columns (``operation … row``), as written and as read back."""
        self._add(event_columns(events, self.content), events.num_rows)

    def add_plain(self, batch: pa.RecordBatch | pa.Table) -> None:
        self._add(list(batch.columns), batch.num_rows)

    def _add(self, columns: list, num_rows: int) -> None:
        if self.hashing:
            self.builder.add(columns, num_rows)
        else:
            self.builder.digest = self.builder.digest.combine(RowDigest(num_rows))

    def check(self, storage: Storage) -> OutputCheck:
        """Read the written files back from ``storage`` and compare-ready figures of both sides."""
        written = RowDigest()
        for name in self.names:
            written = written.combine(file_digest(storage, posixpath.join(self.staged, name), self.content,
                                                  hashing=self.hashing))
        read = self.builder.digest
        return OutputCheck(self.unit, self.step, self.directory, read.count, written.count,
                           read.to_text() if self.hashing else None, written.to_text() if self.hashing else None)


def event_columns(events: pa.RecordBatch | pa.Table, content: Content) -> list:
    """The columns of ACID events that make ``content`` (see :class:`Content`)."""
    if content is Content.DELETES:
        return [events.column(k) for k in KEY_FIELDS] + [events.column(CURRENT_TRANSACTION)]
    row = events.column(ROW)
    if isinstance(row, pa.ChunkedArray):
        row = row.combine_chunks()
    children = row.flatten() if row.type.num_fields else []
    keys = [events.column(k) for k in KEY_FIELDS] if content is Content.INSERTS else []
    return keys + list(children)


def file_digest(storage: Storage, path: str, content: Content, *, hashing: bool) -> RowDigest:
    """The digest (or, without ``hashing``, the footer's row count) of one written file, read from storage."""
    plain = content is Content.PLAIN
    f = open_data_file(storage, path, expect=FileFormat.ORIGINAL if plain else FileFormat.ACID)
    if not hashing:
        return RowDigest(f.num_rows)
    builder = DigestBuilder()
    keys, row_columns = _read_back(content)
    for batch in f.iter_batches(row_columns, keys=keys):
        builder.add(list(batch.columns) if plain else event_columns(batch, content), batch.num_rows)
    return builder.digest


def _read_back(content: Content) -> tuple[bool | tuple[str, ...], list[int] | None]:
    """The key columns and row fields (None: all) a written file is read back with: those its digest covers
    (decoding the others, such as the operation and currentTransaction of insert events, would only cost time)."""
    if content is Content.INSERTS:
        return tuple(KEY_FIELDS), None
    if content is Content.DELETES:
        return (*KEY_FIELDS, CURRENT_TRANSACTION), []
    return False, None  # ROWS: the row only; PLAIN: every column


__all__ = ["Content", "Expected", "event_columns", "file_digest"]
