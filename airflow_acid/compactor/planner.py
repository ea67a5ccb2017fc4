"""The planner: what one compaction would do and what it costs, for the Worker, the scheduler and the dry run alike.

:func:`compose_compaction` turns a directory's compactor-snapshot AcidState into the job's plan document
(:class:`~airflow_acid.job.plan.Compaction`, the job contract in ``airflow_acid.job``) without touching a filesystem
or the metastore; :func:`compose_for_directory` lists the directory once and composes from it. The table-derived
inputs (:func:`row_schema_of`, :func:`max_num_delta_for`) are read here so the Worker and the preview agree.
:func:`preview_compaction` composes from the current snapshot without opening a transaction and adds the cost
estimate (:mod:`airflow_acid.compactor.cost`): the scheduler and the dry run order and show queue rows with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec

from airflow_acid.acid import names
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.delete_settings import DEFAULT_EVENTS_MEM, EVENTS_MEM_KEY, events_mem_from
from airflow_acid.acid.names import LONG_MIN
from airflow_acid.acid.state import AcidState, BaseEntry, DeltaEntry
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidTxnList
from airflow_acid.compactor.cost import CompactionEstimate, estimate
from airflow_acid.compactor.errors import CompactionAttemptError
from airflow_acid.compactor.job_conf import MAX_NUM_DELTA_KEY, effective_properties, spark_job_conf
from airflow_acid.compactor.job_conf import job_queue as queue_of
from airflow_acid.compactor.listing import directory_state
from airflow_acid.errors import AcidInputError
from airflow_acid.job.errors import PlanError
from airflow_acid.job.plan import (
    EXECUTABLE_TYPES,
    Compaction,
    CompactionPlan,
    CompactionStep,
    OrcSettings,
    arrow_row_schema,
    compaction_type,
    not_enough_reason,
)
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.compactions import CompactionInfo
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.metastore.store import Metastore
from airflow_acid.metastore.table_properties import COMPACTOR_THRESHOLD_PREFIX

DEFAULT_MAX_NUM_DELTA = 500


@dataclass(frozen=True)
class NothingToCompact:
    """Hive's "nothing to do" outcome (docs/hive-acid.md#compacting-one-row step 8): mark compacted if the Cleaner has work,
    else refuse."""

    reason: str
    cleaner_has_work: bool
    """Obsolete or aborted directories exist: Hive marks the request compacted so the Cleaner runs."""


def _delta_sort_key(name: str) -> tuple[int, int, int, str]:
    d = names.parse_delta(name)
    return (d.min_write_id, -d.max_write_id, d.sort_statement_id, name)


def _data_files(state: AcidState, inputs: Sequence[str]) -> tuple[str, ...]:
    """The listed data files of the base/deltas named in ``inputs`` (outputs of earlier steps are not listed yet)."""
    wanted = set(inputs)
    dirs: list[BaseEntry | DeltaEntry] = []
    if state.base_directory is not None and state.base in wanted:
        dirs.append(state.base_directory)
    dirs += [d for d in state.deltas if d.name in wanted]
    return tuple(sorted(f.path for d in dirs for f in (*d.files, *d.original_files)))


def _minor_step(state: AcidState, deltas: Sequence[str], txn: int, optional: Sequence[str] = (), *,
                insert_only: bool = False) -> CompactionStep:
    parsed = [names.parse_delta(d) for d in deltas]
    lo, hi = min(d.min_write_id for d in parsed), max(d.max_write_id for d in parsed)
    outputs: tuple[str, ...] = (names.format_delta(lo, hi, None, txn),)
    if not insert_only:
        outputs += (names.format_delta(lo, hi, None, txn, delete=True),)
    return CompactionStep(CompactionType.MINOR, None, (), tuple(deltas), outputs,
                          tuple(o for o in optional if o in deltas), input_files=_data_files(state, deltas))


def partial_minor_slices(deltas: Sequence[str], max_num_delta: int) -> list[list[str]]:
    """Consecutive slices for partial minors when there are more than ``max_num_delta`` deltas
    (docs/hive-acid.md#minor-and-major).

    ⌊n / max⌋ slices of at most ``max`` deltas; a slice end moves back so deltas with identical (min, max) —
    statement siblings and delete/insert twins — stay together (HIVE-25441); a sibling group larger than the
    limit is kept whole.
    """
    if max_num_delta <= 0:
        raise PlanError(f"{MAX_NUM_DELTA_KEY} must be positive, got {max_num_delta}")
    n = len(deltas)
    if n <= max_num_delta:
        return []
    ranges = [(d.min_write_id, d.max_write_id) for d in [names.parse_delta(d) for d in deltas]]
    slices, start = [], 0
    for _ in range(n // max_num_delta):
        if start >= n:
            break
        end = min(start + max_num_delta, n)
        while start < end < n and ranges[end] == ranges[end - 1]:
            end -= 1
        if end == start:  # one sibling group exceeds the limit: never split it
            end = start + 1
            while end < n and ranges[end] == ranges[start]:
                end += 1
        slices.append(list(deltas[start:end]))
        start = end
    return slices


def compose_compaction(state: AcidState, write_ids: ValidCompactorWriteIdList, compactor_txn_id: int,
                    requested_type: CompactionType | str, *, location: str, compaction_id: str,
                    row_schema: str | None = None, table_properties: Mapping[str, str] = {},
                    request_properties: Mapping[str, str] = {}, max_num_delta: int | None = None,
                    insert_only: bool = False, number_of_buckets: int | None = None,
                    order_by: Sequence[tuple[str, bool]] = (), job_queue: str = "",
                    events_mem: int = DEFAULT_EVENTS_MEM) -> Compaction | NothingToCompact:
    """The plan of one compaction of one directory from its compactor-snapshot AcidState (pure;
    docs/hive-acid.md#compacting-one-row step 8, docs/hive-acid.md#minor-and-major).

    ``state`` must come from ``get_acid_state`` with ``write_ids`` (the compactor list, ignore_empty_files=True
    as Hive does). ``insert_only`` plans an MM table's compaction (plain files; a minor writes no delete delta).
    REBALANCE is one step over the same inputs as MAJOR (no partial minors), spreading the rows over
    ``number_of_buckets`` files ordered by ``order_by``; on an insert-only table it is a MAJOR, as in Hive.
    ``max_num_delta`` defaults to ``hive.compactor.max.num.delta`` from the job conf
    (``compactor.`` properties) or 500. MR-era job settings and the queue (``job_queue``: the global
    ``hive.compactor.job.queue``) become Spark settings (``compactor/job_conf.py``). ``events_mem`` is the global
    ``hive.transactional.events.mem``; a ``compactor.hive.transactional.events.mem`` property overrides it, and the
    job conf carries the value when it is not Hive's default.
    """
    ctype = compaction_type(requested_type)
    if ctype is CompactionType.REBALANCE and insert_only:
        ctype, number_of_buckets, order_by = CompactionType.MAJOR, None, ()  # Hive: REBALANCE on MM = MAJOR
    if not isinstance(write_ids, ValidCompactorWriteIdList):
        raise PlanError("compose_compaction needs the compactor write-id list (ValidCompactorWriteIdList.from_reader)")
    if compactor_txn_id <= 0:
        raise PlanError(f"compactor transaction id must be positive, got {compactor_txn_id}")
    job_conf, props = effective_properties(table_properties, request_properties)
    if max_num_delta is None:
        raw = job_conf.get(MAX_NUM_DELTA_KEY, str(DEFAULT_MAX_NUM_DELTA))
        try:
            max_num_delta = int(raw)
        except ValueError:
            raise PlanError(f"{MAX_NUM_DELTA_KEY}={raw!r} (compactor. property) is not an integer") from None
    try:
        events_mem = events_mem_from(job_conf, events_mem)
    except AcidInputError as exc:
        raise PlanError(f"{location}: {exc} (compactor. property)") from None
    if events_mem != DEFAULT_EVENTS_MEM:
        job_conf[EVENTS_MEM_KEY] = str(events_mem)
    job_conf = spark_job_conf(job_conf, queue=queue_of(table_properties, request_properties, job_queue),
                              where=location)
    orc = OrcSettings.from_properties(props)
    deltas = list(state.current_deltas)
    has_base = state.base is not None
    has_originals = bool(state.original_files)
    cleaner_has_work = bool(state.obsolete or state.aborted)

    reason = not_enough_reason(ctype, has_base=has_base, has_originals=has_originals, deltas=deltas)
    if reason is not None:
        return NothingToCompact(reason, cleaner_has_work)

    steps: list[CompactionStep] = []
    remaining = list(deltas)
    produced: list[str] = []
    slices = [] if ctype is CompactionType.REBALANCE else partial_minor_slices(deltas, max_num_delta)
    for piece in slices:
        if not_enough_reason(CompactionType.MINOR, has_base=False, has_originals=False, deltas=piece) is not None:
            continue  # such a slice stays as it is for the final step
        step = _minor_step(state, piece, compactor_txn_id, insert_only=insert_only)
        steps.append(step)
        remaining = [d for d in remaining if d not in piece]
        produced.extend(step.outputs)
    final_deltas = sorted(remaining + produced, key=_delta_sort_key)
    if ctype is CompactionType.MINOR:
        if steps and not_enough_reason(ctype, has_base=False, has_originals=False, deltas=final_deltas) is not None:
            final = None  # the partial minors already did all there is to do
        else:
            final = _minor_step(state, final_deltas, compactor_txn_id, produced, insert_only=insert_only)
    else:
        base_write_id = state.base_directory.dir.write_id if state.base_directory is not None else LONG_MIN
        top = max((names.parse_delta(d).max_write_id for d in final_deltas), default=base_write_id)
        compacted = state.base_directory.is_compacted if state.base_directory is not None else False
        final = CompactionStep(ctype, state.base, tuple(state.original_files), tuple(final_deltas),
                               (names.format_base(top, compactor_txn_id),), tuple(produced), compacted,
                               _data_files(state, [*final_deltas, *([state.base] if state.base else [])]))
    if final is not None:
        steps.append(final)
    compaction = Compaction(id=str(compaction_id), location=location, type=ctype, compactor_txn_id=compactor_txn_id,
                            write_ids=write_ids.to_string(), steps=tuple(steps), row_schema=row_schema, orc=orc,
                            job_conf=job_conf, table_properties=props, insert_only=insert_only,
                            number_of_buckets=number_of_buckets if ctype is CompactionType.REBALANCE else None,
                            order_by=tuple(order_by) if ctype is CompactionType.REBALANCE else ())
    CompactionPlan((compaction,)).validate(source=f"plan for {location}")
    return compaction


def compose_for_directory(location: str, write_ids: ValidCompactorWriteIdList, compactor_txn_id: int,
                          requested_type: CompactionType | str, *, compaction_id: str, txns: ValidTxnList | None = None,
                          row_schema: str | None = None, table_properties: Mapping[str, str] = {},
                          request_properties: Mapping[str, str] = {}, max_num_delta: int | None = None,
                          filesystem: fsspec.AbstractFileSystem | None = None, insert_only: bool = False,
                          number_of_buckets: int | None = None, order_by: Sequence[tuple[str, bool]] = (),
                          job_queue: str = "", events_mem: int = DEFAULT_EVENTS_MEM) -> Compaction | NothingToCompact:
    """List ``location`` once and compose its compaction's plan (docs/hive-acid.md#compacting-one-row step 8: empty files
    ignored, as Hive does)."""
    state = directory_state(location, write_ids, txns, filesystem=filesystem, ignore_empty_files=True)
    return compose_compaction(state, write_ids, compactor_txn_id, requested_type, location=location,
                              compaction_id=compaction_id, row_schema=row_schema, table_properties=table_properties,
                              request_properties=request_properties, max_num_delta=max_num_delta,
                              insert_only=insert_only, number_of_buckets=number_of_buckets, order_by=order_by,
                              job_queue=job_queue, events_mem=events_mem)


def row_schema_of(table: TableInfo) -> str | None:
    """The ORC ``struct<…>`` of the table's columns, or None when a type is not expressible (the job then infers
    the schema from the newest data file)."""
    text = "struct<" + ",".join(f"{c.name}:{c.type}" for c in table.columns) + ">"
    try:
        arrow_row_schema(text)
    except ValueError:
        return None
    return text


def max_num_delta_for(table_properties: dict[str, str], request_properties: dict[str, str],
                      conf: MetastoreConf) -> int:
    """hive.compactor.max.num.delta: request ``compactor.`` property, table ``compactor.`` property, table
    ``compactorthreshold.`` property, then the setting."""
    job_conf, _ = effective_properties(table_properties, request_properties)
    raw = job_conf.get(MAX_NUM_DELTA_KEY) or table_properties.get(COMPACTOR_THRESHOLD_PREFIX + MAX_NUM_DELTA_KEY)
    if raw is None:
        return conf.max_num_delta
    try:
        value = int(raw)
    except ValueError:
        raise CompactionAttemptError(f"{MAX_NUM_DELTA_KEY}={raw!r} (table or request property) is not an integer") \
            from None
    if value <= 0:
        raise CompactionAttemptError(f"{MAX_NUM_DELTA_KEY}={value} (table or request property) must be positive")
    return value


@dataclass
class CompactionPreview:
    """What the Worker would run for one compaction (a queued row, or one the Initiator would queue) and its
    estimate, composed from the current snapshot without opening a transaction."""

    database: str
    table: str
    partition: str | None
    type: CompactionType
    compaction_id: int | None = None
    """The queue row; None for a compaction the next Initiator cycle would queue."""
    reason: str | None = None
    pool: str | None = None
    enqueue_time: int | None = None
    location: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    """Per step: type, inputs (base/original files/deltas), outputs."""
    estimate: CompactionEstimate | None = None
    nothing_to_do: str | None = None
    """The Worker would find nothing to compact (and why)."""
    cleaner_has_work: bool = False
    """With ``nothing_to_do``: obsolete or aborted directories exist, so the Worker would hand the row to the
    Cleaner ('ready for cleaning') instead of refusing it."""
    error: str | None = None

    @property
    def worker_would_refuse(self) -> bool:
        """The Worker would mark this compaction 'refused' (nothing to compact and nothing for the Cleaner)."""
        return self.nothing_to_do is not None and not self.cleaner_has_work

    @property
    def name(self) -> str:
        return entity_name(self.database, self.table, self.partition)

    def as_dict(self) -> dict[str, Any]:
        return {"compaction_id": self.compaction_id, "table": f"{self.database}.{self.table}",
                "partition": self.partition, "type": self.type.display, "reason": self.reason, "pool": self.pool,
                "location": self.location, "steps": self.steps,
                "estimate": self.estimate.as_dict() if self.estimate else None,
                "nothing_to_do": self.nothing_to_do, "error": self.error}


def preview_compaction(metastore: Metastore, database: str, table: str, partition: str | None,
                       ctype: CompactionType, *, properties: Mapping[str, str] | None = None,
                       compaction_id: int | None = None, filesystem: fsspec.AbstractFileSystem | None = None,
                       bytes_per_core_second: float | None = None) -> CompactionPreview:
    """List the directory once and compose it as the Worker would (nothing opened, locked or written); output names
    carry the next transaction id as an estimate."""
    preview = CompactionPreview(database, table, partition, ctype, compaction_id)
    try:
        if ctype not in EXECUTABLE_TYPES:
            preview.nothing_to_do = f"{ctype.display} compactions are not run by the Spark compactor"
            return preview
        info = metastore.catalog.get_table(database, table)
        preview.location = (metastore.catalog.get_partition(database, table, partition).location
                            if partition is not None else info.location)
        txns = metastore.snapshots.valid_txn_list()
        write_ids = metastore.snapshots.compactor_write_ids(info.full_name, txns)
        state = directory_state(preview.location, write_ids, txns, filesystem=filesystem, ignore_empty_files=True,
                                missing_ok=True)
        request = dict(properties or {})
        plan = compose_compaction(state, write_ids, txns.high_watermark + 1, ctype, location=preview.location,
                                  compaction_id=str(compaction_id or 0), row_schema=row_schema_of(info),
                                  table_properties=info.properties, request_properties=request,
                                  max_num_delta=max_num_delta_for(info.properties, request, metastore.conf),
                                  insert_only=info.is_insert_only)
        if isinstance(plan, NothingToCompact):
            preview.nothing_to_do = plan.reason + ("; only the Cleaner has work" if plan.cleaner_has_work else "")
            preview.cleaner_has_work = plan.cleaner_has_work
            return preview
        preview.steps = [{"type": s.type.display, "inputs": [*([s.base] if s.base else []), *s.original_files,
                                                              *s.deltas], "outputs": list(s.outputs)}
                         for s in plan.steps]
        preview.estimate = estimate(state, ctype, bytes_per_core_second=bytes_per_core_second)
    except Exception as exc:  # noqa: BLE001 - a preview reports what it could not compose
        preview.error = f"{type(exc).__name__}: {exc}"
    return preview


def preview_queue(metastore: Metastore, rows: Sequence[CompactionInfo], *,
                  filesystem: fsspec.AbstractFileSystem | None = None,
                  bytes_per_core_second: float | None = None) -> list[CompactionPreview]:
    """:func:`preview_compaction` of queue rows (their requested type and properties)."""
    previews = []
    for row in rows:
        p = preview_compaction(metastore, row.database, row.table, row.partition, row.type, properties=row.properties,
                               compaction_id=row.id, filesystem=filesystem,
                               bytes_per_core_second=bytes_per_core_second)
        p.pool, p.enqueue_time = row.pool_name, row.enqueue_time
        previews.append(p)
    return previews


__all__ = ["DEFAULT_MAX_NUM_DELTA", "CompactionPreview", "NothingToCompact", "compose_compaction",
           "compose_for_directory", "max_num_delta_for", "partial_minor_slices", "preview_compaction",
           "preview_queue", "row_schema_of"]
