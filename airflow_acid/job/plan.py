"""Compaction plans: the versioned JSON document a compaction job executes (the job contract's input).

The compactor writes a plan (``airflow_acid.compactor.planner``), the Spark job executes it
(``airflow_acid.spark``); this module is the contract both import and neither owns.

A plan names one or more compactions. Each compaction is one partition (or unpartitioned table) directory, compacted
MINOR or MAJOR inside the compactor transaction C with the compactor write-id list of that table
(docs/hive-acid.md#compacting-one-row, docs/hive-acid.md#minor-and-major). Its ``steps`` run in order: zero or more partial
MINOR steps over consecutive slices of the current deltas (``hive.compactor.max.num.delta``, statement siblings never split —
HIVE-25441), then the requested compaction. A step lists its inputs by name (base, original files, deltas in getAcidState
order) and the directories it may create (MR names, docs/hive-acid.md#who-writes-what): MINOR ``delta_min_max_vC`` +
``delete_delta_min_max_vC`` (each only if it receives rows), MAJOR ``base_max_vC``. REBALANCE (one step, inputs as MAJOR,
output ``base_max_vC``) reads every row visible to the compactor snapshot, orders it (``order_by``, else by ROW__ID), gives
it a new ROW__ID and spreads the rows evenly over ``number_of_buckets`` bucket files (None: as many as the directory has
bucket ids) — Hive's RebalanceQueryCompactor. Insert-only (MM) tables (``insert_only``) hold plain files with no ACID columns
and no deletes: their steps are a union of the inputs' rows — MINOR writes only ``delta_min_max_vC``, MAJOR
``base_max_vC``, both of plain ORC files named like Hive's ``000000_0`` (docs/hive-acid.md#compaction-output-rows). Inputs
produced by an earlier step are *optional*: the job drops those that were not created (a partial minor without delete events
writes no delete delta). ``input_files`` are the data files of the other inputs as the planning listing saw them: the job
refuses to run when one has vanished.

JSON form (``version`` 2; version 1 documents, which predate ``insert_only``, are still read)::

    {"version": 2,
     "compactions": [{
        "id": "42", "location": "/warehouse/db/t/p=1", "type": "major", "compactor_txn_id": 17,
        "insert_only": false,                                   # true: an MM table (plain files, union only)
        "write_ids": "db.t:9:9223372036854775807::4",          # ValidCompactorWriteIdList string
        "row_schema": "struct<id:int,name:string>",            # ORC type of the table columns, or null
        "orc": {"compression": "ZLIB", "stripe_size": 67108864, "buffer_size": 262144,
                "row_index_stride": 10000, "base_delta_ratio": 8},
        "number_of_buckets": null, "order_by": [],              # REBALANCE only: [["col", true (= DESC)], …]
        "job_conf": {"spark.executor.memory": "2g"},            # compactor.* properties, prefix stripped
        "table_properties": {"orc.compress": "ZLIB"},           # table properties after tblprops.* overrides
        "steps": [{"type": "major", "base": "base_0000005_v0000011", "original_files": [],
                   "deltas": ["delta_0000006_0000009_v0000015", "delete_delta_0000006_0000009_v0000015"],
                   "optional_inputs": [], "outputs": ["base_0000009_v0000017"],
                   "input_files": ["base_0000005_v0000011/bucket_00000",
                                   "delta_0000006_0000009_v0000015/bucket_00000"]}]}]}
"""

from __future__ import annotations

import enum
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_acid.acid import names, orc_settings
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.errors import AcidNameError, SnapshotFormatError
from airflow_acid.acid.names import LONG_MIN, DeltaDir
from airflow_acid.acid.writeids import ValidCompactorWriteIdList
from airflow_acid.job.errors import PlanError
from airflow_acid.job.verify import VERIFY_MODES

if TYPE_CHECKING:  # pyarrow is imported where a schema is built: reading the config or a plan needs none of it
    import pyarrow as pa

PLAN_VERSION = 2
"""Version of the JSON document written by :meth:`CompactionPlan.to_json` (2 added ``insert_only``)."""
READABLE_PLAN_VERSIONS = (1, 2)
"""Versions :meth:`CompactionPlan.from_json` reads; a version 1 document has no insert-only compactions."""
EXECUTABLE_TYPES = (CompactionType.MAJOR, CompactionType.MINOR, CompactionType.REBALANCE)
"""The compaction types a plan may name (ABORT_TXN_CLEANUP is the Cleaner's, never a job's)."""
BASE_WRITING_TYPES = (CompactionType.MAJOR, CompactionType.REBALANCE)
"""Types whose step reads base (or originals) + deltas and writes ``base_max_vC``."""


def format_order_by(order_by: Sequence[tuple[str, bool]]) -> str | None:
    """CQ_ORDER_BY text of (column, descending) pairs: ``ORDER BY a DESC, b ASC``; None when empty."""
    if not order_by:
        return None
    return "ORDER BY " + ", ".join(f"{c} {'DESC' if desc else 'ASC'}" for c, desc in order_by)


def parse_order_by(text: str | None) -> tuple[tuple[str, bool], ...]:
    """The (column, descending) pairs of a CQ_ORDER_BY text written by :func:`format_order_by` (or by Hive, when it
    names plain columns); PlanError for anything else."""
    if not text or not text.strip():
        return ()
    words = text.strip()
    if words[:8].upper() == "ORDER BY":
        words = words[8:]
    result = []
    for item in words.split(","):
        parts = item.split()
        direction = parts[1].upper() if len(parts) == 2 else "ASC"
        if len(parts) not in (1, 2) or direction not in ("ASC", "DESC") or not parts[0].strip("`"):
            raise PlanError(f"ORDER BY clause {text!r} of a rebalance request is not a list of column names with "
                            "optional ASC/DESC")
        result.append((parts[0].strip("`"), direction == "DESC"))
    return tuple(result)



def compaction_type(value: str | CompactionType) -> CompactionType:
    """The executable :class:`CompactionType` named by ``value`` ('major'/'minor', any case); PlanError otherwise."""
    try:
        parsed = CompactionType.parse(value)
    except ValueError:
        parsed = None
    if parsed not in EXECUTABLE_TYPES:
        raise PlanError(f"compaction type {value!r} is not one of {[t.keyword for t in EXECUTABLE_TYPES]}")
    return parsed


# ---------------------------------------------------------------------------------------------------
# Plan documents


class OrcSettings(orc_settings.OrcSettings):
    """The plan's ORC settings of the output (docs/hive-acid.md#orc-writer-settings):
    :class:`airflow_acid.acid.orc_settings.OrcSettings`, with invalid values (plan JSON, table properties) reported as
    :class:`PlanError`."""

    error = PlanError


@dataclass(frozen=True)
class CompactionStep:
    """One compaction pass over one directory: inputs by name, the output directories it may create."""

    type: CompactionType
    base: str | None
    original_files: tuple[str, ...]
    deltas: tuple[str, ...]
    """Insert and delete deltas in getAcidState (rule 9) order."""
    outputs: tuple[str, ...]
    """MINOR: (delta, delete_delta); MAJOR: (base,)."""
    optional_inputs: tuple[str, ...] = ()
    """Inputs that an earlier step of the same compaction may not have created."""
    compacted_base: bool = False
    """The base was written by a compaction (never holds raw LOAD DATA files)."""
    input_files: tuple[str, ...] = ()
    """Data files of the base and the non-optional deltas as listed at planning (relative paths). One missing when
    the job lists the directory was deleted behind the system's back: compacting without it would silently drop
    its rows, so the job fails naming it."""

    @property
    def output_range(self) -> tuple[int, int] | None:
        """(min, max) write id of the output; None for a major compaction of original files only."""
        parsed = [names.parse_delta(d) for d in self.deltas]
        if not parsed:
            return None
        return min(d.min_write_id for d in parsed), max(d.max_write_id for d in parsed)


@dataclass(frozen=True)
class Compaction:
    """One partition's compaction request as the job executes it."""

    id: str
    location: str
    type: CompactionType
    compactor_txn_id: int
    write_ids: str
    steps: tuple[CompactionStep, ...]
    row_schema: str | None = None
    orc: OrcSettings = field(default_factory=OrcSettings)
    job_conf: Mapping[str, str] = field(default_factory=dict)
    table_properties: Mapping[str, str] = field(default_factory=dict)
    insert_only: bool = False
    """An insert-only (MM) table: inputs and outputs are plain ORC files, a step is the union of its inputs."""
    number_of_buckets: int | None = None
    """REBALANCE: bucket files to spread the rows over (None: the number of bucket ids in the directory)."""
    order_by: tuple[tuple[str, bool], ...] = ()
    """REBALANCE: (column, descending) pairs the rows are ordered by before new ROW__IDs are given."""
    verify: str = "digest"
    """How each unit proves its output (``[acid] compaction_verify``): ``digest`` — row counts and content digests
    of what it read and of its files read back from storage; ``count`` — row counts only; ``off`` — nothing."""

    @property
    def write_id_list(self) -> ValidCompactorWriteIdList:
        return ValidCompactorWriteIdList.from_string(self.write_ids)

    @property
    def final_outputs(self) -> tuple[str, ...]:
        """Output directories of the requested (last) step."""
        return self.steps[-1].outputs

    @property
    def all_outputs(self) -> tuple[str, ...]:
        return tuple(o for s in self.steps for o in s.outputs)


@dataclass(frozen=True)
class CompactionPlan:
    """The document a compaction job executes: many compactions, one Spark application."""

    compactions: tuple[Compaction, ...]
    version: int = PLAN_VERSION

    def to_dict(self) -> dict[str, Any]:
        def enc(value: Any) -> Any:
            if isinstance(value, CompactionType):
                return value.keyword
            if isinstance(value, enum.Enum):
                return value.value
            if isinstance(value, dict):
                return {k: enc(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [enc(v) for v in value]
            return value
        return {"version": self.version, "compactions": [enc(asdict(c)) for c in self.compactions]}

    def to_json(self, *, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "plan") -> CompactionPlan:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise PlanError(f"{source}: not valid JSON ({exc})") from None
        return cls.from_dict(doc, source=source)

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "plan") -> CompactionPlan:
        r = _Reader(source)
        obj = r.obj(doc, "")
        version = r.get(obj, "version", int, "")
        if version not in READABLE_PLAN_VERSIONS:
            raise PlanError(f"{source}: plan version {version} is not supported (this job reads versions "
                            f"{list(READABLE_PLAN_VERSIONS)}); use a compaction job from the same airflow-acid "
                            "release as the worker")
        items = r.get(obj, "compactions", list, "")
        plan = cls(tuple(_compaction_from(r, c, f"compactions[{i}]", version) for i, c in enumerate(items)),
                   PLAN_VERSION)
        plan.validate(source=source)
        return plan

    def validate(self, *, source: str = "plan") -> None:
        """Check names, ids and step chaining; raise :class:`PlanError` naming the offending field."""
        seen_ids: set[str] = set()
        seen_outputs: dict[tuple[str, str], str] = {}
        for i, c in enumerate(self.compactions):
            where = f"{source}: compactions[{i}] (id {c.id!r}, {c.location})"
            if c.id in seen_ids:
                raise PlanError(f"{where}: duplicate compaction id")
            seen_ids.add(c.id)
            if c.compactor_txn_id <= 0:
                raise PlanError(f"{where}: compactor_txn_id must be a positive transaction id")
            try:
                ValidCompactorWriteIdList.from_string(c.write_ids)
            except (SnapshotFormatError, ValueError) as exc:
                raise PlanError(f"{where}: write_ids: {exc}") from None
            if not c.steps:
                raise PlanError(f"{where}: no steps")
            if c.steps[-1].type is not c.type:
                raise PlanError(f"{where}: the last step must be the requested {c.type.keyword} compaction")
            if c.type is CompactionType.REBALANCE and (len(c.steps) != 1 or c.insert_only):
                raise PlanError(f"{where}: a rebalance compaction is one step on a full-ACID table")
            if (c.number_of_buckets is not None or c.order_by) and c.type is not CompactionType.REBALANCE:
                raise PlanError(f"{where}: number_of_buckets and order_by are only for a rebalance compaction")
            if c.verify not in VERIFY_MODES:
                raise PlanError(f"{where}: verify must be one of {', '.join(VERIFY_MODES)}, got {c.verify!r}")
            if c.number_of_buckets is not None and c.number_of_buckets <= 0:
                raise PlanError(f"{where}: number_of_buckets must be positive, got {c.number_of_buckets}")
            produced: set[str] = set()
            for j, s in enumerate(c.steps):
                _validate_step(s, c.compactor_txn_id, f"{where}.steps[{j}]", insert_only=c.insert_only)
                unknown = set(s.optional_inputs) - produced
                if unknown:
                    raise PlanError(f"{where}.steps[{j}]: optional inputs {sorted(unknown)} are not outputs of "
                                    "an earlier step")
                produced.update(s.outputs)
            for out in c.all_outputs:
                key = (c.location.rstrip("/"), out)
                if key in seen_outputs:
                    raise PlanError(f"{where}: output {out} is also written by compaction {seen_outputs[key]!r}")
                seen_outputs[key] = c.id


def _validate_step(s: CompactionStep, txn: int, where: str, *, insert_only: bool = False) -> None:
    try:
        parsed_deltas = [names.parse_delta(d) for d in s.deltas]
        base = names.parse_base(s.base) if s.base is not None else None
        outputs = [names.parse_dir(o) for o in s.outputs]
    except AcidNameError as exc:
        raise PlanError(f"{where}: {exc}") from None
    if base is not None and s.original_files:
        raise PlanError(f"{where}: a step reads either a base or original files, not both")
    if insert_only and any(d.is_delete for d in parsed_deltas):
        raise PlanError(f"{where}: an insert-only table has no delete deltas, got {list(s.deltas)}")
    if s.type is CompactionType.MINOR:
        if s.base is not None or s.original_files:
            raise PlanError(f"{where}: a minor compaction reads deltas only")
        if insert_only:
            if len(s.outputs) != 1 or not isinstance(outputs[0], DeltaDir) or outputs[0].is_delete:
                raise PlanError(f"{where}: an insert-only minor compaction's output is [delta_a_b_vC], got "
                                f"{list(s.outputs)}")
        elif [o.is_delete if isinstance(o, DeltaDir) else None for o in outputs] != [False, True]:
            raise PlanError(f"{where}: a minor compaction's outputs are [delta_a_b_vC, delete_delta_a_b_vC], "
                            f"got {list(s.outputs)}")
    elif len(s.outputs) != 1 or not isinstance(outputs[0], names.BaseDir):
        raise PlanError(f"{where}: a {s.type.keyword} compaction's output is [base_N_vC], got {list(s.outputs)}")
    named = [o for o in outputs if o is not None]  # all of them: the checks above admit base/delta names only
    for name, out in zip(s.outputs, named):
        if out.visibility_txn_id != txn:
            raise PlanError(f"{where}: output {name} must carry the compactor transaction's visibility suffix "
                            f"_v{txn:07d}")
        if isinstance(out, DeltaDir):
            if out.statement_id is not None:
                raise PlanError(f"{where}: output {name} must not carry a statement id")
            if parsed_deltas and (out.min_write_id, out.max_write_id) != s.output_range:
                raise PlanError(f"{where}: output {name} does not span the input range {s.output_range}")
    if not parsed_deltas and s.type is CompactionType.MINOR:
        raise PlanError(f"{where}: a minor compaction needs input deltas")
    if s.type in BASE_WRITING_TYPES:
        base_out = outputs[0]
        assert isinstance(base_out, names.BaseDir), "checked above"
        if s.output_range:
            expected, what = s.output_range[1], "the highest input write id"
        elif s.type is CompactionType.REBALANCE and base is not None:
            expected, what = base.write_id, "the input base's write id: a rebalance of a base alone"
        else:
            expected, what = LONG_MIN, "original files only"
        if base_out.write_id != expected:
            raise PlanError(f"{where}: output {s.outputs[0]} must be base_{expected} ({what})")


class _Reader:
    """Typed field access with errors naming the JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise PlanError(f"{self.source}: {where or 'document'} must be a JSON object, got {type(value).__name__}")
        return value

    def get(self, obj: dict[str, Any], key: str, typ: type | tuple[type, ...], where: str, *, optional: bool = False,
            default: Any = None) -> Any:
        """``obj[key]`` checked against ``typ`` (JSON values: the caller knows the type it asked for)."""
        path = f"{where}.{key}" if where else key
        if key not in obj:
            if optional:
                return default
            raise PlanError(f"{self.source}: missing field {path}")
        value = obj[key]
        if value is None and optional:
            return default
        if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            want = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
            raise PlanError(f"{self.source}: field {path} must be {want}, got {value!r}")
        return value

    def strings(self, obj: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        items = self.get(obj, key, list, where, optional=True, default=[])
        if not all(isinstance(x, str) for x in items):
            raise PlanError(f"{self.source}: field {where}.{key} must be a list of strings")
        return tuple(items)

    def mapping(self, obj: dict[str, Any], key: str, where: str) -> dict[str, str]:
        items = self.get(obj, key, dict, where, optional=True, default={})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
            raise PlanError(f"{self.source}: field {where}.{key} must map strings to strings")
        return dict(items)


def _compaction_from(r: _Reader, doc: Any, where: str, version: int = PLAN_VERSION) -> Compaction:
    obj = r.obj(doc, where)
    orc_doc = r.obj(r.get(obj, "orc", dict, where, optional=True, default={}), f"{where}.orc")
    try:
        orc = OrcSettings(**orc_doc)
    except TypeError as exc:
        raise PlanError(f"{r.source}: {where}.orc: {exc}") from None
    except PlanError as exc:
        raise PlanError(f"{r.source}: {where}.orc: {exc}") from None
    steps = []
    for j, s in enumerate(r.get(obj, "steps", list, where)):
        sw = f"{where}.steps[{j}]"
        sobj = r.obj(s, sw)
        try:
            stype = compaction_type(r.get(sobj, "type", str, sw))
        except PlanError as exc:
            raise PlanError(f"{r.source}: {sw}.type: {exc}") from None
        steps.append(CompactionStep(
            type=stype, base=r.get(sobj, "base", str, sw, optional=True),
            original_files=r.strings(sobj, "original_files", sw), deltas=r.strings(sobj, "deltas", sw),
            outputs=r.strings(sobj, "outputs", sw), optional_inputs=r.strings(sobj, "optional_inputs", sw),
            compacted_base=r.get(sobj, "compacted_base", bool, sw, optional=True, default=False),
            input_files=r.strings(sobj, "input_files", sw)))
    try:
        ctype = compaction_type(r.get(obj, "type", str, where))
    except PlanError as exc:
        raise PlanError(f"{r.source}: {where}.type: {exc}") from None
    return Compaction(
        id=r.get(obj, "id", str, where), location=r.get(obj, "location", str, where), type=ctype,
        compactor_txn_id=r.get(obj, "compactor_txn_id", int, where), write_ids=r.get(obj, "write_ids", str, where),
        steps=tuple(steps), row_schema=r.get(obj, "row_schema", str, where, optional=True), orc=orc,
        job_conf=r.mapping(obj, "job_conf", where), table_properties=r.mapping(obj, "table_properties", where),
        insert_only=version >= 2 and r.get(obj, "insert_only", bool, where, optional=True, default=False),
        number_of_buckets=r.get(obj, "number_of_buckets", int, where, optional=True),
        order_by=_order_by_from(r, obj, where),
        verify=r.get(obj, "verify", str, where, optional=True, default="digest"))


def _order_by_from(r: _Reader, obj: dict[str, Any], where: str) -> tuple[tuple[str, bool], ...]:
    items = r.get(obj, "order_by", list, where, optional=True, default=[])
    if not all(isinstance(i, list) and len(i) == 2 and isinstance(i[0], str) and isinstance(i[1], bool)
               for i in items):
        raise PlanError(f"{r.source}: field {where}.order_by must be a list of [column, descending] pairs")
    return tuple((i[0], i[1]) for i in items)


def _parsed(delta_names: Sequence[str]) -> list[DeltaDir]:
    return [names.parse_delta(d) for d in delta_names]


def not_enough_reason(ctype: CompactionType, *, has_base: bool, has_originals: bool,
                      deltas: Sequence[str]) -> str | None:
    """Hive's isEnoughToCompact (docs/hive-acid.md#compacting-one-row step 8), plus the guard that no output may repeat a
    single input's range.

    Returns None when there is enough to compact, else the reason.
    """
    parsed = _parsed(deltas)
    # REBALANCE always proceeds (docs/hive-acid.md#compacting-one-row step 8) — unless there are no rows at all
    if ctype is CompactionType.REBALANCE:
        if has_base or has_originals or parsed:
            return None
        return "rebalance compaction found no base, original files or current deltas: there are no rows to spread"
    if ctype is CompactionType.MAJOR:
        if has_originals or len(parsed) + (1 if has_base else 0) > 1:
            return None
        return (f"major compaction needs original files or more than one of base + current deltas; found "
                f"{'a base' if has_base else 'no base'} and {len(parsed)} current delta(s)")
    inserts = [d for d in parsed if not d.is_delete]
    if len(parsed) <= 1:
        return f"minor compaction needs more than one current delta; found {len(parsed)}"
    if len(parsed) == 2 and len(inserts) == 1:
        return "minor compaction of exactly one insert delta and one delete delta is not enough"
    lo, hi = min(d.min_write_id for d in parsed), max(d.max_write_id for d in parsed)
    for name, d in zip(deltas, parsed):
        if (d.min_write_id, d.max_write_id) == (lo, hi) and d.statement_id is None:
            # Two directories with one range and no statement id would both be read (rule 10c): duplicates.
            return (f"the output range {lo}-{hi} equals that of input {name}, which already holds it without a "
                    "statement id; compacting would create a second directory for the same range")
    return None


def arrow_row_schema(orc_type: str) -> pa.Schema:
    """Arrow schema of the table columns from an ORC ``struct<...>`` type (as the merge reader sees them), with
    char/varchar columns marked (``acid/hive_chars.py``) so compaction output keeps them."""
    import pyarrow as pa
    import pyarrow.orc as po
    import pyorc

    from airflow_acid.acid.hive_chars import annotated
    from airflow_acid.acid.orc_tail import column_char_types, read_tail

    try:
        buf = io.BytesIO()
        with pyorc.Writer(buf, orc_type):
            pass
        schema = po.ORCFile(pa.BufferReader(buf.getvalue())).schema
        chars = column_char_types(read_tail(buf.getvalue()).footer)
    except Exception as exc:  # noqa: BLE001 - pyorc raises several types for a bad type string
        raise PlanError(f"row_schema {orc_type!r} is not a valid ORC struct type: {exc}") from None
    return annotated(pa.schema([f.remove_metadata() for f in schema]), chars)
