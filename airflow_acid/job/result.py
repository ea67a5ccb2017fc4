"""Compaction results: the versioned JSON document a compaction job writes and the Worker verifies.

Part of the job contract (``airflow_acid.job``): the Spark job produces it, the compactor reads it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from airflow_acid.pycompat import StrEnum

RESULT_VERSION = 1


class JobStatus(StrEnum):
    """``status`` of one compaction in a result document."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RUNNING = "running"


@dataclass
class StepResult:
    """One step of one compaction."""

    type: str
    inputs: list[str]
    outputs: list[str]
    rows_in: int = 0
    rows_out: int = 0
    files: int = 0
    bytes: int = 0
    skipped: str | None = None


@dataclass
class OutputCheck:
    """What one work unit read for one output file and what that file holds when read back from storage: row
    counts and, under ``compaction_verify = digest``, the content digests (``acid/digest.py``; text form)."""

    unit: str
    """The compaction unit: ``bucket N`` (``buckets a..b`` for a rebalance, which spreads every bucket)."""
    step: int
    output: str
    """The output directory (``base_N_vC``, ``delta_…``, ``delete_delta_…``)."""
    rows_read: int
    rows_written: int
    read_digest: str | None = None
    written_digest: str | None = None


@dataclass
class CompactionResult:
    """Per compaction: rows in/out, files and bytes written and read, seconds, executor core-seconds, the Spark
    application, status, error, and the directories created."""

    id: str
    location: str
    type: str
    status: JobStatus = JobStatus.RUNNING
    rows_in: int = 0
    rows_out: int = 0
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    error: str | None = None
    outputs: list[str] = field(default_factory=list)
    steps: list[StepResult] = field(default_factory=list)
    files_in: int = 0
    """Data files read from the directory (base, original files, deltas; not a step's own earlier output)."""
    bytes_in: int = 0
    core_seconds: float = 0.0
    """Executor core-seconds of this compaction's tasks (task run time × ``spark.task.cpus``)."""
    app_id: str | None = None
    """The Spark application that ran it (None outside Spark)."""
    verify: str | None = None
    """The output check the job made (``digest``, ``count``, ``off``; None: a job that makes none)."""
    checks: list[OutputCheck] = field(default_factory=list)
    """One per output file a unit meant to write (see :class:`OutputCheck`)."""


@dataclass
class PlanResult:
    """The result document the job writes (``--result``) and the caller reads."""

    compactions: list[CompactionResult]
    seconds: float = 0.0
    version: int = RESULT_VERSION
    app_id: str | None = None
    """The Spark application id (``SparkContext.applicationId``), None outside Spark."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str | bytes) -> PlanResult:
        doc = json.loads(text)
        if doc.get("version") != RESULT_VERSION:
            raise ValueError(f"compaction result version {doc.get('version')!r} is not {RESULT_VERSION}")
        comps = []
        for c in doc["compactions"]:
            steps = [StepResult(**s) for s in c.pop("steps", [])]
            status = JobStatus(c.pop("status", JobStatus.RUNNING))
            checks = [OutputCheck(**k) for k in c.pop("checks", [])]
            comps.append(CompactionResult(**c, status=status, steps=steps, checks=checks))
        return cls(comps, doc.get("seconds", 0.0), app_id=doc.get("app_id"))

    def set_app(self, app_id: str | None) -> None:
        """Stamp the Spark application on the document and every compaction."""
        self.app_id = app_id
        for c in self.compactions:
            c.app_id = app_id

    def by_id(self) -> dict[str, CompactionResult]:
        return {c.id: c for c in self.compactions}
