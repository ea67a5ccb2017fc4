"""Plain ORC output for insert-only (MM) compactions: the table's columns only, no ACID struct, no ``hive.acid.*``.

Hive's MM compactors write the rows of an insert-only table with its ordinary file format
(docs/hive-acid.md#compaction-output-rows), so the output is what an INSERT into the table would write. Like
:class:`~airflow_acid.acid.fast_event_writer.AcidOrcFileWriter` the file is built in memory
(:class:`~airflow_acid.acid.orc_file_builder.OrcFileBuilder`, same writer settings per base/delta) and stored only
once complete, in one sequential write: dropping an unclosed writer leaves no file.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from airflow_acid.acid.errors import AcidFileError
from airflow_acid.acid.event_writer import FileKind
from airflow_acid.acid.fast_event_writer import writer_options
from airflow_acid.acid.fs import Storage
from airflow_acid.acid.orc_file_builder import OrcFileBuilder
from airflow_acid.acid.orc_tail import finished_tail, read_tail
from airflow_acid.acid.timestamps import keep_timestamp_forms
from airflow_acid.job.plan import OrcSettings


@dataclass(frozen=True)
class PlainFile:
    """One plain ORC file written by :class:`PlainOrcFileWriter`."""

    path: str
    rows: int
    bytes: int
    stripes: int


class PlainOrcFileWriter:
    """Streams row batches with exactly ``schema``'s columns into one plain ORC file, stored on :meth:`close`."""

    def __init__(self, storage: Storage, relative: str, schema: pa.Schema, *, kind: FileKind,
                 orc: OrcSettings) -> None:
        self.storage = storage
        self.relative = relative
        self.schema = schema
        self.rows = 0
        self._builder = OrcFileBuilder(writer_options(orc, kind))

    def write(self, rows: pa.Table | pa.RecordBatch) -> None:
        if rows.num_rows == 0:
            return
        if rows.schema.names != self.schema.names:
            raise AcidFileError(self.storage.url(self.relative), f"rows with columns {rows.schema.names} do not "
                                                                 f"match the table columns {self.schema.names}")
        table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
        self._builder.write(table.cast(pa.schema([f.with_type(keep_timestamp_forms(f.type, got.type))
                                                  for f, got in zip(self.schema, table.schema)])))
        self.rows += rows.num_rows

    def close(self) -> PlainFile:
        """Finish the file (proleptic Gregorian calendar in the footer), check its row count and store it."""
        path = self.storage.url(self.relative)
        if self.rows == 0:
            raise AcidFileError(path, "refusing to write an empty compaction output file")
        data = self._builder.finish()
        assert isinstance(data, pa.Buffer), "built in memory"
        tail = read_tail(data)
        if int(sum(tail.stripe_rows)) != self.rows:
            raise AcidFileError(path, f"ORC footer lists {int(sum(tail.stripe_rows))} rows in stripes, "
                                      f"expected {self.rows}")
        start, new_tail = finished_tail(data)
        with self.storage.open_output(self.relative) as fh:
            fh.write(memoryview(data)[:start])
            fh.write(new_tail)
        return PlainFile(path, self.rows, start + len(new_tail), len(tail.stripe_rows))
