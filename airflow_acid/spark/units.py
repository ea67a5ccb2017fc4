"""Work units of a compaction job: one (compaction step, bucket id) each, executed where Spark puts it.

Nothing here imports PySpark, so the same functions run in-process in tests. A unit reads its bucket's files with
the table-format layer and writes the bucket's output files under the compaction's hidden temporary directory
(``tmp_dir``; empty on object stores, where output goes straight into ``<output>``, see spark/driver.py):

* MINOR (docs/hive-acid.md#compaction-output-rows, docs/hive-acid.md#minor-and-major): insert events of the step's insert
deltas → ``<tmp>/delta_a_b_vC/bucket_N``, delete events
  of its delete deltas → ``<tmp>/delete_delta_a_b_vC/bucket_N``; events whose own write id is aborted or above the
  compactor high watermark are dropped; deletes are not applied; rows are sorted by (originalTransaction, bucket,
  rowId) and keep their bucket property, statement bits included.
* MAJOR: merge-on-read at the compactor snapshot → ``<tmp>/base_N_vC/bucket_N`` with operation 0, the ROW__ID
  triple preserved and currentTransaction = originalTransaction (original files keep their synthetic ROW__IDs).
* REBALANCE: one unit for the whole step (every bucket): the rows of a MAJOR, ordered and spread evenly over N
  bucket files with new ROW__IDs (see ``spark/rebalance.py``) → ``<tmp>/base_N_vC/bucket_0000b``.
* Insert-only (MM) tables, MINOR or MAJOR: the union of the bucket's plain files in plan order (base, then deltas in
  getAcidState order, files by name) → ``<tmp>/<output>/00000N_0``, a plain ORC file with the table's columns
  (no ACID columns, no ``hive.acid.*`` metadata), as Hive's MM compactors write (docs/hive-acid.md#compaction-output-rows).

Unless the compaction's ``verify`` is ``off``, a unit also proves its output (``spark/output_check.py``): it digests
the rows it hands each writer and, once the writers closed, the files read back from storage; the pairs travel in
:attr:`UnitResult.checks` to the Worker, which commits only when they agree.

A unit never raises: failures come back as :class:`UnitResult` with ``error`` set, so one bad partition does not
fail the other compactions of the application.
"""

from __future__ import annotations

import os
import posixpath
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid import names
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.delete_events import DeleteEvents, valid_write_id_mask
from airflow_acid.acid.delete_merge import MergedDeleteEvents
from airflow_acid.acid.delete_settings import DEFAULT_EVENTS_MEM
from airflow_acid.acid.errors import AcidFileError, TimestampRangeError, UnsortedEventsError
from airflow_acid.acid.event_reader import FileFormat, OrcDataFile, open_data_file, read_flush_length
from airflow_acid.acid.event_schema import (
    BUCKET,
    CURRENT_TRANSACTION,
    KEY_FIELDS,
    OPERATION,
    ORIGINAL_TRANSACTION,
    ROW,
    ROW_ID,
    Operation,
    event_arrow_schema,
)
from airflow_acid.acid.event_writer import FileKind
from airflow_acid.acid.fast_event_writer import AcidOrcFileWriter, sort_keys_order, write_acid_orc
from airflow_acid.acid.fs import Storage, storage_for
from airflow_acid.acid.merge import (
    BucketPlan,
    DataSource,
    MergePlan,
    SourceKind,
    iter_plan_batches,
)
from airflow_acid.acid.timestamps import wide_schema
from airflow_acid.acid.writeids import ValidCompactorWriteIdList
from airflow_acid.job.plan import OrcSettings
from airflow_acid.job.result import OutputCheck
from airflow_acid.spark.output_check import Content, Expected
from airflow_acid.spark.plain_orc_writer import PlainOrcFileWriter
from airflow_acid.spark.rebalance import Rebalance, write_rebalanced

FAULT_DELAY_ENV = "AIRFLOW_ACID_COMPACTOR_FAULT_DELAY"
"""Test seam: seconds a unit sleeps after writing its output into the temporary directory (crash tests)."""


@dataclass(frozen=True)
class WorkUnit:
    """One bucket of one compaction step; picklable, shipped to an executor."""

    compaction: int
    """Index of the compaction in the plan."""
    step: int
    bucket: BucketPlan
    type: CompactionType
    location: str
    write_ids: str
    row_schema: pa.Schema
    orc: OrcSettings
    tmp_dir: str
    """Relative to ``location``."""
    outputs: tuple[str, ...]
    insert_only: bool = False
    """An insert-only (MM) table: the unit writes the union of its plain files (see the module docstring)."""
    filesystem: Any = None
    """The fsspec filesystem of ``location`` for in-process runs; None = from the URL and fsspec's config (the
    ``FSSPEC_<PROTOCOL>`` environment a Spark executor gets, see ``acid/storage_options.py``)."""
    rebalance: Rebalance | None = None
    """A REBALANCE unit: every bucket of the step (``bucket`` is the first), spread over N files."""
    verify: str = "digest"
    """The proof of the output (``Compaction.verify``): ``digest``, ``count`` or ``off`` (see ``output_check``)."""
    events_mem: int = DEFAULT_EVENTS_MEM
    """``hive.transactional.events.mem``: above this many delete events the bucket's deletes are streamed."""

    @property
    def label(self) -> str:
        """The compaction unit as messages name it: ``bucket N``, or ``buckets a..b`` for a rebalance."""
        if self.rebalance is None:
            return f"bucket {self.bucket.bucket_id}"
        ids = sorted(b.bucket_id for b in self.rebalance.buckets)
        return f"buckets {ids[0]}..{ids[-1]}" if len(ids) > 1 else f"bucket {ids[0]}"

    @property
    def estimated_bytes(self) -> int:
        buckets = self.rebalance.buckets if self.rebalance is not None else (self.bucket,)
        return sum(max(s.size, 0) for b in buckets for s in b.data + b.deletes)


@dataclass(frozen=True)
class OutputFile:
    """A file a unit wrote: output directory name, file name, rows, bytes."""

    directory: str
    name: str
    rows: int
    bytes: int


@dataclass(frozen=True)
class UnitResult:
    """What a unit did (or why it failed)."""

    compaction: int
    step: int
    bucket_id: int
    rows_in: int
    rows_out: int
    files: tuple[OutputFile, ...]
    seconds: float
    error: str | None = None
    checks: tuple[OutputCheck, ...] = ()
    """Per output directory: rows (and digests) read against the files read back (``output_check``)."""


AfterWrite = Callable[[Storage, "WorkUnit", tuple[str, ...]], None]
"""Test seam: called with the paths a unit wrote, after its writers closed and before they are read back."""


def _rows_in(storage, sources: tuple[DataSource, ...]) -> int:
    total = 0
    for src in sources:
        if src.size == 0:
            continue
        length = read_flush_length(storage, src.side_file) if src.side_file else None
        total += open_data_file(storage, src.path, src.size if src.size >= 0 else None, logical_length=length,
                                where=src.directory).num_rows
    return total


def _events_from_merged(table: pa.Table | pa.RecordBatch, row_schema: pa.Schema) -> pa.Table:
    """Insert events (operation 0, currentTransaction = originalTransaction) from merged rows with ROW__IDs."""
    if isinstance(table, pa.RecordBatch):
        column = table.column
    else:
        def column(name: str) -> pa.Array:
            return table.column(name).combine_chunks()
    n = table.num_rows
    otxn = column(ORIGINAL_TRANSACTION)
    cols = [column(f.name) for f in row_schema]
    row = pa.StructArray.from_arrays(cols, fields=list(row_schema)) if n else pa.array([], pa.struct(list(row_schema)))
    return pa.Table.from_arrays(
        [pa.array(np.zeros(n, dtype=np.int32)), otxn, column(BUCKET), column(ROW_ID), otxn, row],
        schema=event_arrow_schema(row_schema))


def _sorted(events: pa.Table) -> pa.Table:
    order = sort_keys_order(events)
    return events if order is None else events.take(pa.array(order))


def _merge_plan(bucket: BucketPlan, apply_deletes: bool) -> MergePlan:
    return MergePlan((bucket if apply_deletes else BucketPlan(bucket.bucket_id, bucket.data, ()),))


def merged_events(storage, bucket: BucketPlan, write_ids: ValidCompactorWriteIdList, row_schema: pa.Schema,
                  *, apply_deletes: bool, events_mem: int = DEFAULT_EVENTS_MEM) -> pa.Table:
    """Rows of the bucket's data files visible to the compactor snapshot, as sorted insert events."""
    plan = _merge_plan(bucket, apply_deletes)
    batches = list(iter_plan_batches(storage, plan, write_ids, schema=row_schema, include_row_ids=True,
                                     events_mem=events_mem))
    table = pa.Table.from_batches(batches) if batches else pa.schema(
        [pa.field(c, t) for c, t in zip(KEY_FIELDS, (pa.int64(), pa.int32(), pa.int64()))] + list(row_schema)
    ).empty_table()
    return _sorted(_events_from_merged(table, row_schema))


def write_merged_events(storage, unit: WorkUnit, directory: str, kind: FileKind, write_ids: ValidCompactorWriteIdList,
                        *, apply_deletes: bool, expected: Expected | None = None) -> OutputFile | None:
    """Stream the merged rows of the unit's bucket into its output file, batch by batch (no whole-bucket copy).

    The merge yields rows in key order for every layout Hive produces; if it ever does not, the streamed writer is
    dropped (it stores nothing before ``close``) and the bucket is read again, sorted in memory and written.
    """
    name = names.format_bucket_file(unit.bucket.bucket_id)
    relative = posixpath.join(unit.tmp_dir, directory, name)
    plan = _merge_plan(unit.bucket, apply_deletes)
    writer: AcidOrcFileWriter | None = None
    try:
        for batch in iter_plan_batches(storage, plan, write_ids, schema=unit.row_schema, include_row_ids=True,
                                       events_mem=unit.events_mem):
            if writer is None:
                writer = AcidOrcFileWriter(storage, relative, kind=kind, orc=unit.orc, spool=True)
            if expected is not None:
                expected.add_merged(batch, unit.row_schema)
            writer.write(_events_from_merged(batch, unit.row_schema))
    except UnsortedEventsError:
        writer = None  # free its buffers before the bucket is read again
        events = merged_events(storage, unit.bucket, write_ids, unit.row_schema, apply_deletes=apply_deletes,
                               events_mem=unit.events_mem)
        if expected is not None:
            expected.builder.reset()
        return _write(storage, unit, directory, events, kind, expected)
    if writer is None or writer.rows == 0:
        return None
    written = writer.close()
    return OutputFile(directory, name, written.rows, written.bytes)


def _delete_files(storage, bucket: BucketPlan) -> tuple[OrcDataFile, ...]:
    """The bucket's delete-delta files, opened (footers read: their row counts choose in-memory or streamed)."""
    return tuple(open_data_file(storage, src.path, src.size if src.size >= 0 else None, expect=FileFormat.ACID,
                                where=src.directory) for src in bucket.deletes if src.size != 0)


def delete_events_of(storage, bucket: BucketPlan, write_ids: ValidCompactorWriteIdList,
                     row_schema: pa.Schema, files: tuple[OrcDataFile, ...] | None = None) -> pa.Table:
    """Delete events of the bucket's delete-delta files whose own write id the compactor snapshot accepts, sorted
    (stably: equal keys stay in file order), in memory."""
    schema = event_arrow_schema(row_schema)
    parts = []
    for f in files if files is not None else _delete_files(storage, bucket):
        for batch in f.iter_batches(row_columns=[], keys=True):
            keep = pc.equal(batch.column(OPERATION), int(Operation.DELETE))
            valid = valid_write_id_mask(batch.column(CURRENT_TRANSACTION), write_ids)
            if valid is not None:
                keep = pc.and_(keep, valid)
            batch = batch.filter(keep)
            if batch.num_rows:
                parts.append(pa.Table.from_arrays(
                    [batch.column(c).cast(schema.field(c).type) for c in schema.names[:5]]
                    + [pa.nulls(batch.num_rows, schema.field(ROW).type)], schema=schema))
    if not parts:
        return schema.empty_table()
    return _sorted(pa.concat_tables(parts).combine_chunks())


def write_delete_events(storage, unit: WorkUnit, directory: str, write_ids: ValidCompactorWriteIdList,
                        expected: Expected | None = None) -> OutputFile | None:
    """A MINOR unit's ``delete_delta`` file: the bucket's valid delete events, sorted, each keeping its operation and
    currentTransaction.

    Up to ``hive.transactional.events.mem`` events (counted from the footers, as a merge decides,
    :class:`~airflow_acid.acid.delete_events.DeleteEvents`) they are sorted in memory; above, k-way merged from the
    sorted delete deltas and written window by window (``acid/delete_merge.py``): the same events in the same order,
    memory bounded by a few batches per file. A delete delta that is not sorted makes the bucket go the in-memory way
    (the streamed writer stores nothing before ``close``)."""
    files = _delete_files(storage, unit.bucket)
    if DeleteEvents(files, write_ids, unit.events_mem).streamed:
        name = names.format_bucket_file(unit.bucket.bucket_id)
        writer = AcidOrcFileWriter(storage, posixpath.join(unit.tmp_dir, directory, name), kind=FileKind.DELTA,
                                   orc=unit.orc, spool=True)
        try:
            for events in MergedDeleteEvents(files, write_ids).tables(unit.row_schema):
                if expected is not None:
                    expected.add_events(events)
                writer.write(events)
        except UnsortedEventsError:
            del writer  # free its buffers before the bucket is read again
            if expected is not None:
                expected.builder.reset()
        else:
            if writer.rows == 0:
                return None
            written = writer.close()
            return OutputFile(directory, name, written.rows, written.bytes)
    deletes = delete_events_of(storage, unit.bucket, write_ids, unit.row_schema, files)
    return _write(storage, unit, directory, deletes, FileKind.DELTA, expected)


def _write(storage, unit: WorkUnit, directory: str, events: pa.Table, kind: FileKind,
           expected: Expected | None = None) -> OutputFile | None:
    if expected is not None:
        expected.add_events(events)
    if events.num_rows == 0:
        return None
    name = names.format_bucket_file(unit.bucket.bucket_id)
    written = write_acid_orc(storage, posixpath.join(unit.tmp_dir, directory, name), events, kind=kind, orc=unit.orc)
    return OutputFile(directory, name, written.rows, written.bytes)


def write_plain_union(storage, unit: WorkUnit, directory: str, kind: FileKind,
                      write_ids: ValidCompactorWriteIdList, expected: Expected | None = None) -> OutputFile | None:
    """An insert-only bucket: its plain files' rows in plan order, as one plain ORC file ``<directory>/00000N_0``."""
    acid = [s.path for s in unit.bucket.data if s.kind is SourceKind.EVENTS] + [s.path for s in unit.bucket.deletes]
    if acid:
        raise AcidFileError(storage.url(acid[0]), "an insert-only table holds plain files only, but this is an ACID "
                                                  "event file (bucket_N); was the table converted from full ACID? "
                                                  "Compact it as transactional_properties=default instead")
    name = names.format_original_file(unit.bucket.bucket_id)
    writer = PlainOrcFileWriter(storage, posixpath.join(unit.tmp_dir, directory, name), unit.row_schema, kind=kind,
                                orc=unit.orc)
    for batch in iter_plan_batches(storage, MergePlan((unit.bucket,)), write_ids, schema=unit.row_schema):
        if expected is not None:
            expected.add_plain(batch)
        writer.write(batch)
    if writer.rows == 0:
        return None
    written = writer.close()
    return OutputFile(directory, name, written.rows, written.bytes)


def run_unit(unit: WorkUnit, after_write: AfterWrite | None = None) -> UnitResult:
    """Execute one unit (raises on failure; see :func:`execute_unit`); once more with timestamps in the wide form
    when the bucket holds one outside 1677–2262 (``acid/timestamps.py``: every value kept to the nanosecond;
    nothing is stored before a writer closes)."""
    start = time.monotonic()
    try:
        return _run_unit(unit, start, after_write)
    except TimestampRangeError:
        if unit.row_schema == wide_schema(unit.row_schema):
            raise
        return _run_unit(replace(unit, row_schema=wide_schema(unit.row_schema)), start, after_write)


def _expect(unit: WorkUnit, directory: str, content: Content) -> Expected | None:
    if unit.verify == "off":
        return None
    staged = posixpath.join(unit.tmp_dir, directory) if unit.tmp_dir else directory
    return Expected(unit.label, unit.step, directory, staged, content, hashing=unit.verify == "digest")


def _run_unit(unit: WorkUnit, start: float, after_write: AfterWrite | None = None) -> UnitResult:
    storage = storage_for(unit.location, unit.filesystem).reading_once()  # row counts, then the merge: one GET each
    write_ids = ValidCompactorWriteIdList.from_string(unit.write_ids)
    buckets = unit.rebalance.buckets if unit.rebalance is not None else (unit.bucket,)
    rows_in = sum(_rows_in(storage, b.data) + _rows_in(storage, b.deletes) for b in buckets)
    files: list[OutputFile | None] = []  # None: a writer with no rows wrote no file
    expected: list[Expected | None] = []
    if unit.rebalance is not None:
        (base,) = unit.outputs
        expected.append(_expect(unit, base, Content.ROWS))
        files.extend(OutputFile(base, f.name, f.rows, f.bytes) for f in write_rebalanced(
            storage, unit.rebalance, posixpath.join(unit.tmp_dir, base), write_ids, unit.row_schema, unit.orc,
            expected[-1]))
    elif unit.insert_only:
        kind = FileKind.DELTA if unit.type is CompactionType.MINOR else FileKind.BASE
        expected.append(_expect(unit, unit.outputs[0], Content.PLAIN))
        files.append(write_plain_union(storage, unit, unit.outputs[0], kind, write_ids, expected[-1]))
    elif unit.type is CompactionType.MINOR:
        delta, delete_delta = unit.outputs
        expected += [_expect(unit, delta, Content.INSERTS), _expect(unit, delete_delta, Content.DELETES)]
        files.append(write_merged_events(storage, unit, delta, FileKind.DELTA, write_ids, apply_deletes=False,
                                         expected=expected[0]))
        files.append(write_delete_events(storage, unit, delete_delta, write_ids, expected[1]))
    else:
        (base,) = unit.outputs
        expected.append(_expect(unit, base, Content.INSERTS))
        files.append(write_merged_events(storage, unit, base, FileKind.BASE, write_ids, apply_deletes=True,
                                         expected=expected[0]))
    written = tuple(f for f in files if f is not None)
    checks = _check_outputs(unit, written, [e for e in expected if e is not None], after_write)
    delay = float(os.environ.get(FAULT_DELAY_ENV, "0") or 0)
    if delay > 0 and written:
        time.sleep(delay)
    return UnitResult(unit.compaction, unit.step, unit.bucket.bucket_id, rows_in, sum(f.rows for f in written),
                      written, time.monotonic() - start, checks=checks)


def _check_outputs(unit: WorkUnit, written: tuple[OutputFile, ...], expected: list[Expected],
                   after_write: AfterWrite | None) -> tuple[OutputCheck, ...]:
    """Read the unit's files back through a fresh handle on the store and pair them with what the unit read."""
    if after_write is not None:
        after_write(storage_for(unit.location, unit.filesystem), unit,
                    tuple(posixpath.join(unit.tmp_dir, f.directory, f.name) for f in written))
    if not expected:
        return ()
    by_dir = {e.directory: e for e in expected}
    for f in written:
        by_dir[f.directory].names.append(f.name)
    fresh = storage_for(unit.location, unit.filesystem)
    return tuple(e.check(fresh) for e in expected if e.names or e.builder.digest.count)


def execute_unit(unit: WorkUnit, after_write: AfterWrite | None = None) -> UnitResult:
    """Execute one unit; any error is returned in the result (message names the file when the format layer did)."""
    start = time.monotonic()
    try:
        return run_unit(unit, after_write)
    except AcidFileError as exc:
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - reported per compaction, never lost
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
    return UnitResult(unit.compaction, unit.step, unit.bucket.bucket_id, 0, 0, (), time.monotonic() - start,
                      f"bucket {unit.bucket.bucket_id} of {unit.location}: {error}")
