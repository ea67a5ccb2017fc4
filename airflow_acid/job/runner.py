"""The Runner protocol: how the compactor hands a plan to whatever executes it (in-process, Spark, spark-submit).

Concrete runners live with the Spark job (``airflow_acid.spark.runners``); the Worker receives one and never looks
inside.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from airflow_acid.errors import AcidInputError
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


def job_key(compaction: Compaction) -> str:
    """The key of one compaction attempt (:func:`attempt_key` of its row, compactor transaction and location)."""
    return attempt_key(compaction.id, compaction.compactor_txn_id, compaction.location)


def attempt_key(cq_id: object, txn_id: object, location: str) -> str:
    """``cq<row id>-txn<C>-<location hash>``: known to whoever later finds the row 'working' (CQ_ID, CQ_TXN_ID, the
    table's location), so a retried task can find the job the attempt started. Row and transaction ids are unique
    within one metastore only; the location's hash keeps the jobs of two metastores on one host apart."""
    place = hashlib.sha256(location.rstrip("/").encode()).hexdigest()[:12]
    return f"cq{cq_id}-txn{txn_id}-{place}"


@runtime_checkable
class ResumableRunner(Runner, Protocol):
    """A runner whose jobs outlive the process that started them and can be found again by :func:`job_key`.

    ``run_tracked`` is ``run`` that calls ``on_application(application_id)`` once the job's Spark application
    started (the Worker records it in CQ_HADOOP_JOB_ID). ``reattach`` finds the job of a compaction attempt whose
    worker died, waits while its application runs, and returns the plan it ran with its result — it never starts a
    job, and raises when the job cannot be found or ended without a complete result.
    """

    def run_tracked(self, plan: CompactionPlan, *, job_name: str, spark_conf: Mapping[str, str],
                    on_application: Callable[[str], None]) -> PlanResult:
        ...

    def reattach(self, key: str, application_id: str | None) -> tuple[CompactionPlan, PlanResult]:
        ...


def bind_filesystem(runner: Runner, filesystem: Any) -> Runner:
    """``runner`` reading and writing through ``filesystem`` (an fsspec filesystem object the Worker was given for
    plain-path locations), or a clear refusal — never silently ignored.

    A runner that can take the object says so with ``on_filesystem(filesystem) -> Runner`` (the in-process one);
    a job in other processes cannot share an object (its credentials would have to travel with the plan), so such a
    runner is accepted only when it carries storage options of its own (``storage_options``)."""
    if filesystem is None:
        return runner
    on_filesystem = getattr(runner, "on_filesystem", None)
    if callable(on_filesystem):
        bound: Runner = on_filesystem(filesystem)
        return bound
    if getattr(runner, "storage_options", None) is not None:
        return runner  # the caller configured how the job reaches the store
    raise AcidInputError(
        f"Worker(filesystem={type(filesystem).__name__}(...)) cannot be used by {type(runner).__name__}: the "
        "compaction job runs in other processes, which cannot share a filesystem object. Give the runner storage "
        "options instead (SparkSubmitOptions(storage_options=StorageOptions(endpoint_url=..., region=...)), the "
        "[acid] storage_options setting or the acid_metastore connection's storage_options extra) and put "
        "credentials into the environment, or use LocalRunner")
