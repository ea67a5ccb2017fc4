"""The Runner protocol: how the compactor hands a plan to whatever executes it (in-process, Spark, spark-submit).

Concrete runners live with the Spark job (``airflow_acid.spark.runners``); the Worker receives one and never looks
inside.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from airflow_acid.job.plan import Compaction, CompactionPlan
from airflow_acid.job.result import PlanResult

SPARK_CONF_PREFIX = "spark."
"""Job conf keys (``compactor.spark.*`` table properties, prefix stripped) that are Spark conf of the job."""


def spark_conf_of(compaction: Compaction) -> dict[str, str]:
    """The Spark conf a compaction asks for (its ``spark.*`` job conf)."""
    return {k: v for k, v in compaction.job_conf.items() if k.startswith(SPARK_CONF_PREFIX)}


@runtime_checkable
class Runner(Protocol):
    """Runs one compaction plan as one job (one Spark application) and returns its result document.

    ``job_name`` is Hive's ``<host>-compactor-<db>.<table>[.<partition>]``; ``spark_conf`` the plan's Spark conf.
    A runner raises when the job as a whole failed (no result); per-compaction failures are in the result.
    """

    def run(self, plan: CompactionPlan, *, job_name: str, spark_conf: Mapping[str, str]) -> PlanResult:
        ...
