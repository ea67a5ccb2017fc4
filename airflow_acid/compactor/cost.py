"""Cost and benefit of one compaction, estimated from one listing of its directory (the plan dry run and the
cost-aware scheduler both use it).

Cost: the bytes and files the job would read (base or original files for MAJOR, plus every current delta and
delete delta) and the executor core-seconds that takes — bytes divided by the throughput the recorded runs
achieved (ACID_COMPACTION_RUNS), or :data:`DEFAULT_BYTES_PER_CORE_SECOND` before any run was recorded.
Benefit: data files removed, delta directories removed, and read amplification saved — the directories every
reader of the partition merges today less those it merges afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_acid.acid import names
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.state import AcidFile, AcidState

DEFAULT_BYTES_PER_CORE_SECOND = 32 * 1024 * 1024
"""Throughput assumed before any compaction recorded its figures (ORC read + merge + write, one core)."""
MIN_CORE_SECONDS = 1.0
"""Every job costs at least this (task start-up); keeps the benefit per cost of tiny partitions finite."""
FILE_OVERHEAD_CORE_SECONDS = 0.05
"""Per input file (open, footer read), added to the byte-proportional part."""


@dataclass(frozen=True)
class CompactionEstimate:
    """What compacting one directory would read, write and save."""

    type: CompactionType
    bytes_in: int
    files_in: int
    deltas_before: int
    deltas_after: int
    files_out: int
    dirs_before: int
    """Directories a reader merges today (base or original files, plus current deltas)."""
    dirs_after: int
    core_seconds: float

    @property
    def files_removed(self) -> int:
        return max(0, self.files_in - self.files_out)

    @property
    def deltas_removed(self) -> int:
        return max(0, self.deltas_before - self.deltas_after)

    @property
    def read_amplification_saved(self) -> int:
        """Directories every reader stops merging."""
        return max(0, self.dirs_before - self.dirs_after)

    @property
    def benefit(self) -> float:
        """One number: files removed + deltas removed + read amplification saved."""
        return float(self.files_removed + self.deltas_removed + self.read_amplification_saved)

    @property
    def benefit_per_cost(self) -> float:
        """Benefit per estimated core-second (the scheduler's order)."""
        return self.benefit / max(self.core_seconds, MIN_CORE_SECONDS)

    def as_dict(self) -> dict[str, object]:
        return {"type": self.type.display, "bytes_in": self.bytes_in, "files_in": self.files_in,
                "deltas_before": self.deltas_before, "deltas_after": self.deltas_after, "files_out": self.files_out,
                "files_removed": self.files_removed, "deltas_removed": self.deltas_removed,
                "read_amplification_saved": self.read_amplification_saved,
                "estimated_core_seconds": round(self.core_seconds, 3), "benefit": self.benefit,
                "benefit_per_cost": round(self.benefit_per_cost, 6)}


def core_seconds_for(bytes_in: int, files_in: int, bytes_per_core_second: float | None = None) -> float:
    """Estimated executor core-seconds to compact ``bytes_in`` in ``files_in`` files."""
    rate = bytes_per_core_second if bytes_per_core_second and bytes_per_core_second > 0 \
        else DEFAULT_BYTES_PER_CORE_SECOND
    return max(MIN_CORE_SECONDS, bytes_in / rate + files_in * FILE_OVERHEAD_CORE_SECONDS)


def _bucket(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if names.is_bucket_file(name):
        return str(names.parse_bucket_file(name).bucket_id)
    original = names.parse_original_file(name)
    return str(original.bucket_id) if original is not None else name


def estimate(state: AcidState, ctype: CompactionType, *, bytes_per_core_second: float | None = None
             ) -> CompactionEstimate:
    """The estimate for compacting ``state`` (a compactor-snapshot listing) with ``ctype`` (MAJOR or MINOR)."""
    deltas = list(state.deltas)
    delta_files: list[AcidFile] = [f for d in deltas for f in (*d.files, *d.original_files)]
    has_base_data = state.base_directory is not None or bool(state.originals)
    if ctype is CompactionType.MAJOR:
        base = state.base_directory
        base_files = list(base.files) + list(base.original_files) if base is not None else list(state.originals)
        read = base_files + delta_files
        buckets = {_bucket(f.path) for f in read if f.size != 0}
        deltas_after, files_out, dirs_after = 0, len(buckets), 1
    else:
        read = delta_files
        inserts = {_bucket(f.path) for d in deltas if not d.is_delete for f in (*d.files, *d.original_files)}
        deletes = {_bucket(f.path) for d in deltas if d.is_delete for f in d.files}
        deltas_after = (1 if inserts or not deletes else 0) + (1 if deletes else 0)
        files_out = len(inserts) + len(deletes)
        dirs_after = (1 if has_base_data else 0) + deltas_after
    bytes_in = sum(max(f.size, 0) for f in read)
    return CompactionEstimate(
        type=ctype, bytes_in=bytes_in, files_in=len(read), deltas_before=len(deltas), deltas_after=deltas_after,
        files_out=files_out, dirs_before=(1 if has_base_data else 0) + len(deltas), dirs_after=dirs_after,
        core_seconds=core_seconds_for(bytes_in, len(read), bytes_per_core_second))
