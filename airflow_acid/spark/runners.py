"""The concrete runners of compaction plans: in-process (tests, small tables), an existing SparkSession,
spark-submit. Each implements :class:`airflow_acid.job.runner.Runner`; the Worker receives one and never looks
inside (the Airflow operator plugs in its own, built on ``SparkSubmitHook``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import PlanResult
from airflow_acid.spark.driver import RunUnits, execute_plan, run_locally
from airflow_acid.spark.submit import SparkSubmitOptions, run_plan_in_session, run_spark_submit


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

    def on_filesystem(self, filesystem: Any) -> LocalRunner:
        """This runner on ``filesystem`` unless it was given one of its own."""
        return self if self.filesystem is not None else dataclasses.replace(self, filesystem=filesystem)


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


__all__ = ["LocalRunner", "SessionRunner", "SparkSubmitRunner"]
