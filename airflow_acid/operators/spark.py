"""A compaction :class:`Runner` that launches Spark through the Spark provider's ``SparkSubmitHook``.

The master, deploy mode and binary come from the Spark connection (default ``spark_default``); when that
connection is not configured the job runs on ``local[*]`` (the hook itself would silently fall back to YARN).
spark-submit's output streams into the task log through the hook; spark-submit starts in its own process group,
which is killed as a whole on timeout or when the task is killed (a client-mode PySpark driver would otherwise
outlive the JVM).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import PlanResult
from airflow_acid.spark.errors import SparkSubmitError
from airflow_acid.spark.submit import SparkSubmitOptions, SubmitArguments, storage_env_of, submit_arguments

LOCAL_MASTER = "local[*]"


def connection_exists(conn_id: str) -> bool:
    """True when Airflow knows the connection (env var, secrets backend or database)."""
    try:
        BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return False
    return True


class AcidSparkSubmitHook(SparkSubmitHook):
    """SparkSubmitHook whose master is ``fallback_master`` when the connection does not exist (not YARN)."""

    def __init__(self, *, fallback_master: str = LOCAL_MASTER, **kwargs: Any) -> None:
        self._fallback_master = fallback_master
        super().__init__(**kwargs)

    def _resolve_connection(self) -> dict[str, Any]:
        data = super()._resolve_connection()
        if not connection_exists(self._conn_id):
            self.log.info("Spark connection %s is not configured: running on %s", self._conn_id,
                          self._fallback_master)
            data["master"] = self._fallback_master
            data["deploy_mode"] = data["deploy_mode"] or "client"
        return data

    @property
    def process(self) -> Any | None:
        """The running spark-submit process (None before :meth:`submit`)."""
        return self._submit_sp


def hook_for(args: SubmitArguments, conn_id: str, **hook_kwargs: Any) -> AcidSparkSubmitHook:
    """The hook that submits ``args`` (application args, conf, py-files, name) on connection ``conn_id``."""
    return AcidSparkSubmitHook(conn_id=conn_id, conf=dict(args.conf), py_files=",".join(args.py_files) or None,
                               name=args.name, application_args=list(args.application_args), **hook_kwargs)


@dataclass
class SparkSubmitHookRunner:
    """Runs each plan as one Spark application through :class:`AcidSparkSubmitHook`.

    ``options`` supplies the Spark conf, code shipping and interpreter (its master is not used: the connection
    decides); ``hook_kwargs`` go to the hook (``executor_memory``, ``num_executors`` …); ``timeout_s`` kills the
    job's process group when it runs longer. One sub-directory of ``workdir`` per job holds plan and result.
    """

    conn_id: str = "spark_default"
    options: SparkSubmitOptions = field(default_factory=SparkSubmitOptions)
    workdir: str | None = None
    timeout_s: float | None = None
    hook_kwargs: Mapping[str, Any] = field(default_factory=dict)
    jobs: list[str] = field(default_factory=list)
    _hook: AcidSparkSubmitHook | None = field(default=None, init=False, repr=False)
    _killed: bool = field(default=False, init=False, repr=False)

    @property
    def storage_options(self):
        """The storage options the job's environment carries (``SparkSubmitOptions.storage_options``)."""
        return self.options.storage_options

    def run(self, plan: CompactionPlan, *, job_name: str, spark_conf: Mapping[str, str]) -> PlanResult:
        self.jobs.append(job_name)
        base = self.workdir or tempfile.gettempdir()
        os.makedirs(base, exist_ok=True)
        job_dir = tempfile.mkdtemp(prefix="acid-compaction-", dir=base)
        plan_path, result_path = os.path.join(job_dir, "plan.json"), os.path.join(job_dir, "result.json")
        Path(plan_path).write_text(plan.to_json())
        options = dataclasses.replace(self.options, app_name=job_name,
                                      conf={**dict(spark_conf), **dict(self.options.conf)})
        args = submit_arguments(plan, plan_path, result_path, options, py_files_dir=job_dir)
        self._hook = hook = hook_for(args, self.conn_id, **dict(self.hook_kwargs))
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(options.python) + os.pathsep + env.get("PATH", "")  # the wheel's spark-submit
        env.setdefault("PYSPARK_PYTHON", options.python)
        env.update(storage_env_of(plan, options))
        self._killed = False
        timer = threading.Timer(self.timeout_s, self.kill) if self.timeout_s else None
        if timer:
            timer.daemon = True
            timer.start()
        try:
            hook.submit(args.application, env=env, start_new_session=True)
        except Exception as exc:  # noqa: BLE001 - becomes the compaction's error message
            if self._killed:
                raise SparkSubmitError(f"Spark job {job_name} was killed after {self.timeout_s} s (timeout) or by "
                                       "the task being stopped") from None
            raise SparkSubmitError(f"Spark job {job_name} failed: {exc}") from None
        finally:
            if timer:
                timer.cancel()
        if not os.path.exists(result_path):
            raise SparkSubmitError(f"Spark job {job_name} exited without writing its result {result_path}")
        return PlanResult.from_json(Path(result_path).read_text())

    def kill(self) -> None:
        """SIGKILL the running job's whole process group (spark-submit JVM, Python driver, local executors)."""
        process = self._hook.process if self._hook is not None else None
        if process is None or process.poll() is not None:
            return
        self._killed = True
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def default_spark_options() -> SparkSubmitOptions:
    """Spark options of the operators: this interpreter for the driver and executors, the package shipped."""
    return SparkSubmitOptions(python=sys.executable)
