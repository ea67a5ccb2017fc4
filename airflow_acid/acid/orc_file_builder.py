"""Build one ORC file from Arrow tables with pyarrow's writer when it stores every value as ORC's Java writer does,
with pyorc's otherwise.

pyarrow's ORC writer (~5× faster than a row writer) hands ORC a timestamp before 1970 with a fraction of a second
as (seconds toward zero, negative nanoseconds); ORC's Java reader — Hive, Spark, Trino — then sees negative
nanoseconds and fails. It also cannot write the wide timestamp form (``acid/timestamps.py``). The first table
holding such a value moves the file to pyorc's writer (ORC's C++ writer given floor seconds and positive
nanoseconds, which it stores as Java does); rows already written are copied over exactly, so a file is written
by one writer whatever arrives. The file is built in memory or in a local scratch file and handed to the caller
complete (:meth:`OrcFileBuilder.finish`); nothing is stored by this module.
"""

from __future__ import annotations

import os
import tempfile
import zoneinfo
from typing import Any, BinaryIO, cast

import pyarrow as pa
import pyarrow.orc as po
import pyorc

from airflow_acid.acid.errors import TimestampFormError
from airflow_acid.acid.event_schema import orc_type_of_schema
from airflow_acid.acid.orc_nulls import orc_safe
from airflow_acid.acid.orc_values import CONVERTERS, table_rows
from airflow_acid.acid.timestamps import (
    check_storable,
    convert,
    has_negative_fractions,
    narrowest_table,
    same_but_timestamps,
)

_PYORC_COMPRESSION = {"uncompressed": "NONE", "zlib": "ZLIB", "snappy": "SNAPPY", "zstd": "ZSTD", "lz4": "LZ4"}
_MEMORY_BLOCK = 64 * 1024
_REPLAY_ROWS = 8192


def needs_row_writer(table: pa.Table) -> bool:
    """Whether pyarrow's ORC writer would store a value of ``table`` in a way ORC's Java reader cannot read."""
    return any(has_negative_fractions(column) for column in table.columns)


class OrcFileBuilder:
    """One ORC file built from Arrow tables with pyarrow's writer options (``writer_options``), in memory or —
    ``spool=True`` — in a local scratch file; the writer is chosen per file as the module docstring says."""

    def __init__(self, options: dict[str, Any], *, spool: bool = False) -> None:
        self.options = options
        self.spool = spool
        self.rows = 0
        self.row_writer = False
        """Whether the file is (now) written with pyorc's row writer."""
        self._path: str | None = None
        self._sink = self._new_sink()
        self._arrow: po.ORCWriter | None = None
        self._pyorc: pyorc.Writer | None = None
        self._schema: pa.Schema | None = None

    def _new_sink(self) -> pa.NativeFile:
        if not self.spool:
            return pa.BufferOutputStream()
        fd, self._path = tempfile.mkstemp(prefix="acid-orc-", suffix=".orc")
        os.close(fd)
        return pa.OSFile(self._path, "wb")

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        """Append rows (every table with the same column names and ORC types)."""
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if table.num_rows == 0:
            return
        for name, column in zip(table.column_names, table.columns):
            check_storable(column, name)
        if self._pyorc is None:
            table = self._for_arrow_writer(table)
        if self._pyorc is None and needs_row_writer(table):
            self._to_row_writer()
        if self._pyorc is not None:
            self._pyorc.writerows(table_rows(table))
        else:
            if self._arrow is None:
                self._arrow = po.ORCWriter(self._sink, **self.options)
            self._arrow.write(orc_safe(table))
        self.rows += table.num_rows

    def _for_arrow_writer(self, table: pa.Table) -> pa.Table:
        """``table`` with its timestamps in the forms of the first table written (pyarrow's writer takes one Arrow
        schema per file), the narrowest exact ones first; moves to the row writer when a value does not fit."""
        table = narrowest_table(table)
        if self._schema is None:
            self._schema = table.schema
            return table
        if table.schema == self._schema:
            return table
        try:
            columns = [convert(c, f.type) if same_but_timestamps(c.type, f.type) else c
                       for c, f in zip(table.columns, self._schema)]
        except TimestampFormError:
            self._to_row_writer()
            return table
        return pa.Table.from_arrays(columns, schema=self._schema)

    def _start_row_writer(self, sink: pa.NativeFile) -> pyorc.Writer:
        assert self._schema is not None, "a schema is known once rows arrived"
        block = int(self.options.get("compression_block_size", 256 * 1024))
        return pyorc.Writer(
            cast(BinaryIO, sink), orc_type_of_schema(self._schema),
            stripe_size=int(self.options.get("stripe_size", 64 << 20)),
            row_index_stride=int(self.options.get("row_index_stride", 10_000)),
            compression=pyorc.CompressionKind[_PYORC_COMPRESSION[str(self.options.get("compression", "zlib"))]],
            compression_block_size=block, memory_block_size=_MEMORY_BLOCK if block % _MEMORY_BLOCK == 0 else block,
            dict_key_size_threshold=float(self.options.get("dictionary_key_size_threshold", 0.0)),
            converters=CONVERTERS, timezone=zoneinfo.ZoneInfo("UTC"))

    def _to_row_writer(self) -> None:
        """Move the file to pyorc's writer, copying the rows pyarrow already wrote (read back exactly)."""
        self.row_writer = True
        if self._arrow is None:  # nothing written yet: start over in the same (empty) sink
            self._pyorc = self._start_row_writer(self._sink)
            return
        self._arrow.close()
        old_path = self._path
        if self.spool:
            self._sink.close()
            source: Any = pa.memory_map(old_path) if old_path else None
        else:
            source = pa.BufferReader(self._sink.getvalue())
        self._sink = self._new_sink()
        self._arrow = None
        self._pyorc = self._start_row_writer(self._sink)
        try:
            source.seek(0)
            reader = pyorc.Reader(cast(BinaryIO, source), converters=CONVERTERS, timezone=zoneinfo.ZoneInfo("UTC"))
            batch: list[Any] = []
            for row in reader:
                batch.append(row)
                if len(batch) == _REPLAY_ROWS:
                    self._pyorc.writerows(batch)
                    batch = []
            self._pyorc.writerows(batch)
        finally:
            source.close()
            if old_path:
                os.unlink(old_path)

    def finish(self) -> pa.Buffer | str:
        """Close the writer; the file's bytes (memory) or the scratch file's path (``spool=True``, the caller reads
        it and then calls :meth:`discard`)."""
        if self._pyorc is not None:
            self._pyorc.close()
        elif self._arrow is not None:
            self._arrow.close()
        if not self.spool:
            return self._sink.getvalue()
        self._sink.close()
        assert self._path is not None
        return self._path

    def discard(self) -> None:
        """Remove the scratch file, if any (after :meth:`finish`, or to drop an unfinished file)."""
        if self._path is not None:
            try:
                os.unlink(self._path)
            except OSError:
                pass
            self._path = None

    def __del__(self) -> None:  # a builder dropped unfinished leaves no scratch file
        self.discard()


def write_orc_bytes(table: pa.Table, options: dict[str, Any]) -> pa.Buffer:
    """``table`` as the bytes of one ORC file (in memory), written as :class:`OrcFileBuilder` chooses."""
    builder = OrcFileBuilder(options)
    builder.write(table)
    data = builder.finish()
    assert isinstance(data, pa.Buffer)
    return data
