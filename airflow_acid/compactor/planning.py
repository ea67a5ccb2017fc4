"""Compaction planning: the pure function that turns a directory's compactor-snapshot AcidState into a plan.

The plan document itself (:class:`~airflow_acid.job.plan.Compaction`) is the job contract in ``airflow_acid.job``.
Nothing here touches a filesystem or the metastore: the worker lists the directory, calls ``get_acid_state`` with
the compactor write-id list and hands the result to :func:`plan_compaction`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from airflow_acid.acid import names
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.names import LONG_MIN
from airflow_acid.acid.state import AcidState, BaseEntry, DeltaEntry
from airflow_acid.acid.writeids import ValidCompactorWriteIdList
from airflow_acid.compactor.job_conf import COMPACTOR_PREFIX as COMPACTOR_PREFIX
from airflow_acid.compactor.job_conf import MAX_NUM_DELTA_KEY as MAX_NUM_DELTA_KEY
from airflow_acid.compactor.job_conf import job_queue as queue_of
from airflow_acid.compactor.job_conf import spark_job_conf
from airflow_acid.job.errors import PlanError
from airflow_acid.job.plan import Compaction, CompactionPlan, CompactionStep, OrcSettings, compaction_type, not_enough_reason

DEFAULT_MAX_NUM_DELTA = 500
TBLPROPS_PREFIX = "tblprops."


@dataclass(frozen=True)
class NothingToCompact:
    """Hive's "nothing to do" outcome (§5.2 step 8): mark compacted if the Cleaner has work, else refuse."""

    reason: str
    cleaner_has_work: bool
    """Obsolete or aborted directories exist: Hive marks the request compacted so the Cleaner runs."""


def effective_properties(table_properties: Mapping[str, str], request_properties: Mapping[str, str] = {}
                         ) -> tuple[dict[str, str], dict[str, str]]:
    """(job conf, table properties) as Hive's MR compactor applies them (§5.3).

    ``compactor.<key>`` table properties become job conf ``<key>``; request properties (WITH OVERWRITE
    TBLPROPERTIES) ``compactor.<key>`` override those and ``tblprops.<key>`` override table property ``<key>``.
    """
    job_conf: dict[str, str] = {}
    props = {k: v for k, v in table_properties.items()}
    for k, v in table_properties.items():
        if k.startswith(COMPACTOR_PREFIX):
            job_conf[k[len(COMPACTOR_PREFIX):]] = v
    for k, v in request_properties.items():
        if k.startswith(COMPACTOR_PREFIX):
            job_conf[k[len(COMPACTOR_PREFIX):]] = v
        elif k.startswith(TBLPROPS_PREFIX):
            props[k[len(TBLPROPS_PREFIX):]] = v
    return job_conf, props


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
    """Consecutive slices for partial minors when there are more than ``max_num_delta`` deltas (§5.3).

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


def plan_compaction(state: AcidState, write_ids: ValidCompactorWriteIdList, compactor_txn_id: int,
                    requested_type: CompactionType | str, *, location: str, compaction_id: str,
                    row_schema: str | None = None, table_properties: Mapping[str, str] = {},
                    request_properties: Mapping[str, str] = {}, max_num_delta: int | None = None,
                    insert_only: bool = False, number_of_buckets: int | None = None,
                    order_by: Sequence[tuple[str, bool]] = (), job_queue: str = "") -> Compaction | NothingToCompact:
    """Plan one compaction of one directory from its compactor-snapshot AcidState (pure; §5.2 step 8, §5.3).

    ``state`` must come from ``get_acid_state`` with ``write_ids`` (the compactor list, ignore_empty_files=True
    as Hive does). ``insert_only`` plans an MM table's compaction (plain files; a minor writes no delete delta).
    REBALANCE is one step over the same inputs as MAJOR (no partial minors), spreading the rows over
    ``number_of_buckets`` files ordered by ``order_by``; on an insert-only table it is a MAJOR, as in Hive.
    ``max_num_delta`` defaults to ``hive.compactor.max.num.delta`` from the job conf
    (``compactor.`` properties) or 500. MR-era job settings and the queue (``job_queue``: the global
    ``hive.compactor.job.queue``) become Spark settings (``compactor/job_conf.py``).
    """
    ctype = compaction_type(requested_type)
    if ctype is CompactionType.REBALANCE and insert_only:
        ctype, number_of_buckets, order_by = CompactionType.MAJOR, None, ()  # Hive: REBALANCE on MM = MAJOR
    if not isinstance(write_ids, ValidCompactorWriteIdList):
        raise PlanError("plan_compaction needs the compactor write-id list (ValidCompactorWriteIdList.from_reader)")
    if compactor_txn_id <= 0:
        raise PlanError(f"compactor transaction id must be positive, got {compactor_txn_id}")
    job_conf, props = effective_properties(table_properties, request_properties)
    if max_num_delta is None:
        raw = job_conf.get(MAX_NUM_DELTA_KEY, str(DEFAULT_MAX_NUM_DELTA))
        try:
            max_num_delta = int(raw)
        except ValueError:
            raise PlanError(f"{MAX_NUM_DELTA_KEY}={raw!r} (compactor. property) is not an integer") from None
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
