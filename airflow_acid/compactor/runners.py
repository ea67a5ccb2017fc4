"""Pluggable runners of compaction plans: in-process (tests, small tables), an existing SparkSession, spark-submit.

A runner takes a :class:`CompactionPlan`, the job name (``<host>-compactor-<db>.<table>[.<partition>]``) and the
Spark conf of the plan (``compactor.spark.*`` properties) and returns the job's :class:`PlanResult`. The Worker
never looks inside: the Airflow operator can plug in its own runner (e.g. one built on ``SparkSubmitHook``).
A runner raises when the job as a whole failed (no result); per-compaction failures are in the result.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from airflow_acid.compactor.plan import CompactionPlan
from airflow_acid.spark.driver import PlanResult, RunUnits, execute_plan, run_locally
from airflow_acid.spark.submit import SparkSubmitOptions, run_plan_in_session, run_spark_submit


@runtime_checkable
class Runner(Protocol):
    """Runs one compaction plan as one job (one Spark application) and returns its result document."""

    def run(self, plan: CompactionPlan, *, job_name: str, spark_conf: Mapping[str, str]) -> PlanResult:
        ...


@dataclass
class LocalRunner:
    """Runs the plan in this process with the engine's driver (``execute_plan``); no Spark needed.

    ``run_units`` executes the work units (default: one after another). ``jobs`` records the job names run.
    ``filesystem``: the fsspec filesystem of the plan's locations (the Worker's ``filesystem`` when not set).
    """

    run_units: RunUnits = run_locally
    jobs: list[str] = field(default_factory=list)
    filesystem: Any = None

    def run(self, plan: CompactionPlan, *, job_name: str, spark_conf: Mapping[str, str]) -> PlanResult:
        self.jobs.append(job_name)
        return execute_plan(plan, self.run_units, filesystem=self.filesystem)


@dataclass
class SessionRunner:
    """Runs the plan on an existing SparkSession; the job name becomes the Spark job group (visible in the UI).

    Spark conf of an already running application cannot change: per-table ``compactor.spark.*`` values are only
    honoured by :class:`SparkSubmitRunner`.
    """

    spark: Any
    jobs: list[str] = field(default_factory=list)

    def run(self, plan: CompactionPlan, *, job_name: str, spark_conf: Mapping[str, str]) -> PlanResult:
        self.jobs.append(job_name)
        context = self.spark.sparkContext
        context.setJobGroup(job_name, f"airflow-acid compaction {job_name}", interruptOnCancel=True)
        try:
            return run_plan_in_session(plan, self.spark)
        finally:
            context.setJobGroup(None, None)


_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


@dataclass
class SparkSubmitRunner:
    """Submits the plan with ``spark-submit`` (production): one application per plan named after the job.

    ``workdir`` holds one sub-directory per job (plan.json, result.json, spark-submit.log); default a temporary
    directory. ``timeout_s`` kills the whole process group of a job that runs too long.
    """

    options: SparkSubmitOptions = field(default_factory=SparkSubmitOptions)
    workdir: str | None = None
    timeout_s: float | None = None

    @property
    def storage_options(self):
        """The storage options the job's environment carries (see ``SparkSubmitOptions.storage_options``)."""
        return self.options.storage_options

    def run(self, plan: CompactionPlan, *, job_name: str, spark_conf: Mapping[str, str]) -> PlanResult:
        conf = {**dict(spark_conf), **dict(self.options.conf)}  # the operator's explicit conf wins
        options = dataclasses.replace(self.options, app_name=job_name, conf=conf)
        base = self.workdir or tempfile.gettempdir()
        os.makedirs(base, exist_ok=True)
        job_dir = tempfile.mkdtemp(prefix=_UNSAFE.sub("_", job_name)[:100] + "-", dir=base)
        return run_spark_submit(plan, job_dir, options, timeout=self.timeout_s)


def with_filesystem(runner: Runner, filesystem: Any) -> Runner:
    """``runner`` running on ``filesystem``, or a clear refusal: an fsspec filesystem object cannot reach a job in
    another process (its credentials would have to travel with the plan); such runners reach the store through
    their storage options (``SparkSubmitOptions.storage_options``) and credentials in the environment."""
    if filesystem is None:
        return runner
    if isinstance(runner, LocalRunner):
        return runner if runner.filesystem is not None else dataclasses.replace(runner, filesystem=filesystem)
    if getattr(runner, "storage_options", None) is not None:
        return runner  # the caller configured how the job reaches the store
    raise ValueError(
        f"Worker(filesystem={type(filesystem).__name__}(...)) cannot be used by {type(runner).__name__}: the "
        "compaction job runs in other processes, which cannot share a filesystem object. Give the runner storage "
        "options instead (SparkSubmitOptions(storage_options=StorageOptions(endpoint_url=..., region=...)), the "
        "[acid] storage_options setting or the acid_metastore connection's storage_options extra) and put "
        "credentials into the environment, or use LocalRunner")


__all__ = ["LocalRunner", "Runner", "SessionRunner", "SparkSubmitRunner", "with_filesystem"]
