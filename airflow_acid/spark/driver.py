"""The driver side of a compaction job: plan → work units → output directories → result document.

The driver lists each partition once per step, turns the step's inputs into one work unit per bucket id, hands all
units of all compactions of a wave to ``run_units`` (Spark in production, a plain loop in tests), and then publishes
each step's output: ``_orc_acid_version`` is written into the hidden temporary directory
``<location>/_tmp_compactor_vC/<output>`` (not for insert-only tables: Hive writes that marker only beside
ACID-format files) and the directory is renamed to ``<location>/<output>``. On object stores (no atomic rename:
:attr:`Storage.atomic_rename`) units write straight into ``<location>/<output>`` and nothing is renamed — the
``_vC`` suffix hides the output until C commits, which is all the rename bought. An insert-only base left empty gets
a ``_metadata_acid`` (dataFormat ``compacted``, docs/hive-acid.md#metadata-file) so listings still see it (object stores have
no empty directories). Before a compaction starts, leftovers of an earlier attempt of the same compactor transaction
(its temporary directory and any of its output names) are removed: they carry ``_vC`` of a transaction that never
committed, so no reader can see them. On failure the compaction's temporary and output directories are removed and
its result says why.

Steps of one compaction run in order (partial minors first); wave k runs step k of every compaction at once.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Sequence

import fsspec
import pyarrow as pa

from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.delete_settings import events_mem_from
from airflow_acid.acid.event_reader import FileFormat, open_data_file, read_flush_length
from airflow_acid.acid.event_schema import row_schema_of
from airflow_acid.acid.event_writer import write_acid_version_file
from airflow_acid.acid.fs import ListedFile, Storage, storage_for
from airflow_acid.acid.hive_chars import annotated
from airflow_acid.acid.merge import MergePlan, plan_merge
from airflow_acid.acid.names import METADATA_ACID_FILE
from airflow_acid.acid.orc_tail import column_char_types, read_file_tail
from airflow_acid.job.errors import PlanError
from airflow_acid.job.layout import tmp_dir_name
from airflow_acid.job.plan import (
    BASE_WRITING_TYPES,
    Compaction,
    CompactionPlan,
    CompactionStep,
    arrow_row_schema,
    not_enough_reason,
)
from airflow_acid.job.result import CompactionResult, JobStatus, PlanResult, StepResult
from airflow_acid.spark.rebalance import Rebalance
from airflow_acid.spark.units import UnitResult, WorkUnit, execute_unit

RunUnits = Callable[[list[WorkUnit]], list[UnitResult]]


def run_locally(units: list[WorkUnit]) -> list[UnitResult]:
    """Execute units one after another in this process (tests, tiny jobs)."""
    return [execute_unit(u) for u in units]


def _infer_row_schema(storage: Storage, merge: MergePlan, step: CompactionStep) -> pa.Schema | None:
    """The newest data file's columns (char/varchar as its footer records them): last delta first, then the base /
    original files."""
    order = {name: i for i, name in enumerate(step.deltas)}
    sources = sorted((s for s in merge.data_files if s.size != 0),
                     key=lambda s: -order.get(s.directory or "", -1))
    for src in sources:
        length = read_flush_length(storage, src.side_file) if src.side_file else None
        size = src.size if src.size >= 0 else None
        f = open_data_file(storage, src.path, size, logical_length=length, where=src.directory)
        tail_source = storage.open_input(src.path, size) if length is None else \
            pa.BufferReader(storage.read_bytes(src.path, length))
        plain = pa.schema([fl.remove_metadata() for fl in f.file_schema])
        schema = annotated(plain, column_char_types(read_file_tail(tail_source).footer))
        return row_schema_of(schema) if f.format is FileFormat.ACID else schema
    return None


def _present_dirs(files: Sequence[ListedFile]) -> set[str]:
    return {f.path.split("/", 1)[0] for f in files if "/" in f.path}


COMPACTED_METADATA = b'{"thisFileVersion":"0","dataFormat":"compacted"}'
"""``_metadata_acid`` of a compacted base (docs/hive-acid.md#metadata-file): keeps an empty insert-only base listable."""


class _Run:
    """Mutable state of one compaction while the job runs."""

    def __init__(self, index: int, compaction: Compaction,
                 filesystem: fsspec.AbstractFileSystem | None = None, task_cpus: int = 1) -> None:
        self.index = index
        self.task_cpus = task_cpus
        self.c = compaction
        self.result = CompactionResult(compaction.id, compaction.location, compaction.type.keyword,
                                       verify=compaction.verify)
        self.storage = storage_for(compaction.location, filesystem)
        self.filesystem = filesystem
        self.tmp = tmp_dir_name(compaction.compactor_txn_id)
        self.in_place = not self.storage.atomic_rename
        """Object store: units write into the final ``<output>`` directories (no rename)."""
        self.schema: pa.Schema | None = arrow_row_schema(compaction.row_schema) if compaction.row_schema else None
        self.started = time.monotonic()
        self.pending: dict[int, tuple[CompactionStep, StepResult]] = {}
        self.listing: list[ListedFile] | None = None
        """The directory as listed by :meth:`remove_leftovers`; used once, by the first step."""

    @property
    def active(self) -> bool:
        return self.result.status == JobStatus.RUNNING

    def remove_leftovers(self) -> None:
        """One listing, one (batched) delete of the temporary directory and every output name of C; the listing,
        less what was deleted, serves the first step (no second LIST)."""
        files = self.storage.list_files()
        doomed = [self.tmp, *self.c.all_outputs]
        self.storage.delete_paths(doomed, files)
        self.listing = [f for f in files if f.path.split("/", 1)[0] not in doomed]

    def fail(self, error: str) -> None:
        self.result.status = JobStatus.FAILED
        self.result.error = error
        self.result.outputs = []
        try:
            self.remove_leftovers()
        except Exception as exc:  # noqa: BLE001 - the compaction already failed; report both
            self.result.error += f" (and removing its partial output failed: {exc}; the directories carry _v" \
                                 f"{self.c.compactor_txn_id:07d} of an uncommitted transaction, so readers ignore them)"
        self.finish()

    def finish(self) -> None:
        self.result.seconds = round(time.monotonic() - self.started, 3)
        if self.result.status == JobStatus.RUNNING:
            self.result.status = JobStatus.SUCCEEDED
            if not self.in_place:
                self.storage.delete_paths([self.tmp])

    def units_for(self, number: int) -> list[WorkUnit]:
        """List the directory, resolve the step's inputs, and make one unit per bucket id."""
        step = self.c.steps[number]
        files, self.listing = (self.listing if self.listing is not None else self.storage.list_files()), None
        present = _present_dirs(files)
        missing_optional = [d for d in step.optional_inputs if d not in present]
        deltas = tuple(d for d in step.deltas if d not in missing_optional)
        missing = [d for d in deltas + ((step.base,) if step.base else ()) if d not in present]
        if missing:
            raise PlanError(f"input directories {missing} are not in {self.c.location}; the plan is stale "
                            "(cleaned since planning?) — plan the compaction again")
        listed = {f.path for f in files}
        gone = [p for p in step.original_files if p not in listed]
        if gone:
            raise PlanError(f"original files {gone} are not in {self.c.location}; plan the compaction again")
        vanished = [p for p in step.input_files if p not in listed]
        if vanished:
            raise PlanError(f"data files {vanished} of {self.c.location} were listed when the compaction was planned "
                            "and are gone now (deleted outside airflow-acid?); compacting without them would drop "
                            "their rows — restore them, or plan the compaction again to go on without them")
        sr = StepResult(step.type.keyword, list((step.base,) if step.base else ()) + list(step.original_files)
                        + list(deltas), list(step.outputs))
        self.result.steps.append(sr)
        if number > 0:
            reason = not_enough_reason(step.type, has_base=step.base is not None,
                                       has_originals=bool(step.original_files), deltas=deltas)
            if reason is not None:
                sr.skipped = reason
                return []
        merge = plan_merge(files, base=step.base, original_files=step.original_files, deltas=deltas,
                           compacted_base=step.compacted_base)
        read = {s.path: s for b in merge.buckets for s in (*b.data, *b.deletes)
                if s.directory not in step.optional_inputs}.values()  # not a step's own earlier output
        self.result.files_in += len(read)
        self.result.bytes_in += sum(max(s.size, 0) for s in read)
        if self.schema is None:
            self.schema = _infer_row_schema(self.storage, merge, step)
            if self.schema is None:
                self.schema = pa.schema([])
        self.pending[number] = (step, sr)
        if step.type is CompactionType.REBALANCE:
            return self._rebalance_units(number, step, merge)
        units = []
        for bucket in merge.buckets:
            if step.type in BASE_WRITING_TYPES and not bucket.data:
                continue
            units.append(WorkUnit(self.index, number, bucket, step.type, self.c.location, self.c.write_ids,
                                  self.schema, self.c.orc, "" if self.in_place else self.tmp, step.outputs,
                                  self.c.insert_only, filesystem=self.filesystem, verify=self.c.verify,
                                  events_mem=events_mem_from(self.c.job_conf)))
        return units

    def _rebalance_units(self, number: int, step: CompactionStep, merge: MergePlan) -> list[WorkUnit]:
        """One unit over every bucket: N = the request's CLUSTERED INTO, else the directory's bucket ids (as Hive
        counts the bucket files it finds), at least 1."""
        assert self.schema is not None, "set by units_for"
        count = self.c.number_of_buckets or max(1, len({b.bucket_id for b in merge.buckets}))
        buckets = tuple(b for b in merge.buckets if b.data)
        if not buckets:
            return []
        spec = Rebalance(buckets, count, self.c.order_by)
        return [WorkUnit(self.index, number, buckets[0], step.type, self.c.location, self.c.write_ids, self.schema,
                         self.c.orc, "" if self.in_place else self.tmp, step.outputs, False,
                         filesystem=self.filesystem, rebalance=spec, verify=self.c.verify)]

    def publish(self, number: int, results: list[UnitResult]) -> None:
        """Account for the step's unit results, mark its complete outputs and (where renames are atomic) rename
        them into place."""
        step, sr = self.pending.pop(number)
        errors = [r.error for r in results if r.error]
        if errors:
            raise RuntimeError("; ".join(errors[:3]) + (f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""))
        written = {f.directory for r in results for f in r.files}
        if step.type in BASE_WRITING_TYPES:
            written.add(step.outputs[0])  # an empty base still hides what it replaces (Hive's commitJob)
        for r in results:
            self.result.core_seconds += r.seconds * self.task_cpus
            sr.rows_in += r.rows_in
            sr.rows_out += r.rows_out
            sr.files += len(r.files)
            sr.bytes += sum(f.bytes for f in r.files)
            self.result.checks.extend(r.checks)
        has_files = {f.directory for r in results for f in r.files}
        for out in step.outputs:
            if out not in written:
                continue
            staged = out if self.in_place else posixpath.join(self.tmp, out)
            if self.c.insert_only:
                self.storage.makedirs(staged)
                if out not in has_files:  # an empty base: listed only through its marker
                    self.storage.child(staged).write_bytes_atomic(METADATA_ACID_FILE, COMPACTED_METADATA)
            else:
                write_acid_version_file(self.storage.child(staged))
            if not self.in_place:
                self.storage.delete_paths([out])
                self.storage.fs.mv(self.storage.full_path(staged), self.storage.full_path(out), recursive=True)
            self.result.outputs.append(out)
        self.result.rows_in += sr.rows_in
        self.result.rows_out += sr.rows_out
        self.result.files += sr.files
        self.result.bytes += sr.bytes


def execute_plan(plan: CompactionPlan, run_units: RunUnits = run_locally, *,
                 on_progress: Callable[[PlanResult], None] | None = None,
                 filesystem: fsspec.AbstractFileSystem | None = None, task_cpus: int = 1) -> PlanResult:
    """Run every compaction of ``plan``; returns the result document (also passed to ``on_progress`` per wave).

    ``filesystem``: the fsspec filesystem of the plan's locations (in-process runs only; a Spark job in another
    process reaches its store through storage options in its environment, see ``acid/storage_options.py``).
    ``task_cpus``: cores each task holds (``spark.task.cpus``), for the results' executor core-seconds."""
    started = time.monotonic()
    runs = [_Run(i, c, filesystem, task_cpus) for i, c in enumerate(plan.compactions)]
    result = PlanResult([r.result for r in runs])
    for run in runs:
        try:
            run.remove_leftovers()
        except Exception as exc:  # noqa: BLE001
            run.fail(f"cannot remove leftovers of an earlier attempt in {run.c.location}: {exc}")
    waves = max((len(c.steps) for c in plan.compactions), default=0)
    for number in range(waves):
        units: list[WorkUnit] = []
        for run in runs:
            if run.active and number < len(run.c.steps):
                try:
                    units.extend(run.units_for(number))
                except Exception as exc:  # noqa: BLE001
                    run.fail(_message(exc))
        units.sort(key=lambda u: -u.estimated_bytes)  # biggest first: better packing of tasks
        by_run: dict[int, list[UnitResult]] = {}
        for r in run_units(units) if units else []:
            by_run.setdefault(r.compaction, []).append(r)
        for run in runs:
            if run.active and number in run.pending:
                try:
                    run.publish(number, by_run.get(run.index, []))
                except Exception as exc:  # noqa: BLE001
                    run.fail(_message(exc))
            if run.active and number == len(run.c.steps) - 1:
                run.finish()
        result.seconds = round(time.monotonic() - started, 3)
        if on_progress is not None:
            on_progress(result)
    for run in runs:
        if run.active:
            run.finish()
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _message(exc: BaseException) -> str:
    if isinstance(exc, (PlanError, OSError, ValueError)) and not isinstance(exc, RuntimeError):
        return f"{type(exc).__name__}: {exc}"
    return str(exc) if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {exc}"
