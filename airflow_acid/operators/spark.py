"""A compaction :class:`Runner` that launches Spark through the Spark provider's ``SparkSubmitHook``.

The master, deploy mode and binary come from the Spark connection (default ``spark_default``); when that
connection is not configured the job runs on ``local[*]`` (the hook itself would silently fall back to YARN).
spark-submit's output streams into the task log through the hook; spark-submit starts in its own process group,
which is killed as a whole on timeout or when the task is killed (a client-mode PySpark driver would otherwise
outlive the JVM).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseHook

from airflow_acid.airflow_compat import AirflowNotFoundException
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import PlanResult
from airflow_acid.job.runner import job_key
from airflow_acid.spark.errors import SparkSubmitError
from airflow_acid.spark.installation import pyspark_installation
from airflow_acid.spark.job_dirs import (
    DEFAULT_MASTER_UI_PORT,
    JobDir,
    create_job_dir,
    job_dir_for,
    standalone_application_running,
)
from airflow_acid.spark.submit import SparkSubmitOptions, SubmitArguments, storage_env_of, submit_arguments

LOCAL_MASTER = "local[*]"
WATCH_INTERVAL_S = 0.25
REATTACH_POLL_S = 2.0
log = logging.getLogger(__name__)


def _unsafe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name)[:100]


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
    job's process group when it runs longer. One sub-directory of ``workdir`` (default ``airflow-acid-jobs`` in the
    temporary directory) per job holds plan, result and application id, named after its compactions' job keys
    (:mod:`airflow_acid.spark.job_dirs`), so a retry on a worker that sees the same ``workdir`` can
    :meth:`reattach` to the job instead of submitting another.
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
        return self.run_tracked(plan, job_name=job_name, spark_conf=spark_conf, on_application=None)

    @property
    def job_base(self) -> str:
        """The directory holding one sub-directory per job (``workdir``, else one under the temporary directory)."""
        return self.workdir or os.path.join(tempfile.gettempdir(), "airflow-acid-jobs")

    def run_tracked(self, plan: CompactionPlan, *, job_name: str, spark_conf: Mapping[str, str],
                    on_application: Callable[[str], None] | None) -> PlanResult:
        """Run the plan; ``on_application(application_id)`` is called once its Spark application started. The job's
        directory is named after its compactions' job keys, so :meth:`reattach` finds it from the queue row."""
        check_pyspark_installation()
        self.jobs.append(job_name)
        job_dir = create_job_dir(self.job_base, [job_key(c) for c in plan.compactions] or [_unsafe(job_name)])
        Path(job_dir.plan_path).write_text(plan.to_json())
        options = dataclasses.replace(self.options, app_name=job_name,
                                      conf={**dict(spark_conf), **dict(self.options.conf)})
        args = submit_arguments(plan, job_dir.plan_path, job_dir.result_path, options, py_files_dir=job_dir.path)
        args = dataclasses.replace(args, application_args=(*args.application_args, "--app-id-file",
                                                           job_dir.application_id_path))
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
        done = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(hook, job_dir, on_application, done), daemon=True,
                                   name=f"watch-{job_name}"[:60])
        watcher.start()
        try:
            hook.submit(args.application, env=env, start_new_session=True)
        except Exception as exc:  # noqa: BLE001 - becomes the compaction's error message
            if self._killed:
                raise SparkSubmitError(f"Spark job {job_name} was killed after {self.timeout_s} s (timeout) or by "
                                       "the task being stopped") from None
            result = self._outlive_the_hook(hook, job_dir)
            if result is not None:
                return result
            raise SparkSubmitError(f"Spark job {job_name} failed: {exc}") from None
        finally:
            if timer:
                timer.cancel()
            done.set()
            watcher.join(5)
        if not os.path.exists(job_dir.result_path):
            raise SparkSubmitError(f"Spark job {job_name} exited without writing its result {job_dir.result_path}")
        return PlanResult.from_json(Path(job_dir.result_path).read_text())

    @staticmethod
    def _outlive_the_hook(hook: AcidSparkSubmitHook, job_dir: JobDir) -> PlanResult | None:
        """The hook stopped following a spark-submit that still runs (streaming its output into the task log failed,
        e.g. a broken pipe once the task's supervisor died): keep draining its output, wait for it and return the
        job's result — failing the row now would discard an application that is still working."""
        process = hook.process
        if process is None or process.poll() is not None:
            return None
        try:
            process.communicate()
        except Exception:  # noqa: BLE001 - the result decides
            process.wait()
        return job_dir.complete_result()

    def _watch(self, hook: AcidSparkSubmitHook, job_dir: JobDir, on_application: Callable[[str], None] | None,
               done: threading.Event) -> None:
        """Record spark-submit's pid in the job directory, and report the application id once the job wrote it."""
        recorded = reported = False
        while not (recorded and reported):
            stop = done.wait(WATCH_INTERVAL_S)
            if not recorded and hook.process is not None:
                job_dir.record_submit(hook.process.pid)
                recorded = True
            if not reported and (app_id := job_dir.application_id()) is not None:
                reported = True
                if on_application is not None:
                    try:
                        on_application(app_id)
                    except Exception:  # the job runs on; only its id is not on the row
                        log.exception("could not record Spark application %s", app_id)
            if stop:
                return

    def reattach(self, key: str, application_id: str | None) -> tuple[CompactionPlan, PlanResult]:
        """Find the job of compaction attempt ``key`` (started by a worker that died), wait while its application
        runs (up to ``timeout_s``), and return its plan and complete result; never submits anything."""
        job_dir = job_dir_for(self.job_base, key)
        if not job_dir.exists():
            raise SparkSubmitError(f"no job directory {job_dir.path} for compaction attempt {key}: the job never "
                                   "started, or it ran on a worker whose work directory this worker cannot see")
        plan = job_dir.plan()
        application_id = application_id or job_dir.application_id()
        started = time.monotonic()
        while True:
            result = job_dir.complete_result()
            if result is not None:
                return plan, result
            running = self._application_running(job_dir, application_id)
            if not running:
                result = job_dir.complete_result()  # it may have finished between the two looks
                if result is not None:
                    return plan, result
                state = "ended" if running is False else "cannot be found from this worker"
                raise SparkSubmitError(f"Spark application {application_id or '(no id recorded)'} of compaction "
                                       f"attempt {key} {state} without a complete result ({job_dir.path})")
            if self.timeout_s and time.monotonic() - started > self.timeout_s:
                raise SparkSubmitError(f"Spark application {application_id} of compaction attempt {key} still runs "
                                       f"after {self.timeout_s} s")
            log.info("waiting for Spark application %s of compaction attempt %s", application_id, key)
            time.sleep(REATTACH_POLL_S)

    def _application_running(self, job_dir: JobDir, application_id: str | None) -> bool | None:
        """Whether the job's application still runs: its spark-submit process on this host, else the standalone
        master's list of active applications; None when neither can tell."""
        alive = job_dir.submit_process_alive()
        if alive is not None:
            return alive
        if application_id is None:
            return None
        master = AcidSparkSubmitHook(conn_id=self.conn_id)._connection.get("master") or ""
        extra = BaseHook.get_connection(self.conn_id).extra_dejson if connection_exists(self.conn_id) else {}
        ui_port = int(extra.get("master-ui-port") or DEFAULT_MASTER_UI_PORT)
        return standalone_application_running(master, application_id, ui_port=ui_port)

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


def check_pyspark_installation() -> None:
    """Refuse to submit with pyspark's Python files and jars of different feature releases (pyspark-client
    overwrote them, :mod:`airflow_acid.spark.installation`); a patch-level difference is only logged."""
    installation = pyspark_installation()
    if installation is None or installation.consistent:
        return
    if not installation.same_minor:
        raise SparkSubmitError(installation.problem())
    log.warning("%s", installation.problem())


def default_spark_options() -> SparkSubmitOptions:
    """Spark options of the operators: this interpreter for the driver and executors, the package shipped."""
    return SparkSubmitOptions(python=sys.executable)
