"""Run a compaction plan: in-process with a SparkSession (tests), or through ``spark-submit`` (production).

:func:`submit_arguments` is the one place that decides how the job is submitted (application file, application
arguments, ``--conf`` values, ``--py-files``, name). :func:`spark_submit_command` turns it into a command line for
:func:`run_spark_submit`; the Airflow operator feeds the same :class:`SubmitArguments` to Airflow's
``SparkSubmitHook`` (``application``, ``application_args``, ``conf``, ``py_files``, ``name``).

Shipping the code: executors import ``airflow_acid``. With ``ship_package=True`` (default) the installed package
is zipped once per process (:func:`build_package_zip`) and passed with ``--py-files``; its third-party
dependencies (pyarrow, pyorc, fsspec, numpy) must be installed where executors run — on one machine that is the
same virtualenv, selected with ``spark.pyspark.python`` (set to this interpreter by default).

Reaching the store: :attr:`SparkSubmitOptions.storage_options` (endpoint, region, anonymous, profile — never
secrets) become fsspec's ``FSSPEC_<PROTOCOL>`` variables in spark-submit's environment (the driver) and in
``spark.executorEnv.*`` / ``spark.yarn.appMasterEnv.*`` (executors, a YARN application master). Only those
variables are forwarded. Credentials travel as the environment of spark-submit (``AWS_ACCESS_KEY_ID`` …, inherited
by the driver and local executors); a cluster's executors take them from their own deployment (worker environment,
instance roles, Kubernetes secrets) — never from the plan or the command line.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from airflow_acid.acid.storage_options import StorageOptions, storage_environment
from airflow_acid.job.errors import PlanError
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import PlanResult
from airflow_acid.job.runner import SPARK_CONF_PREFIX
from airflow_acid.spark.errors import SparkSubmitError

ENV_CONF_PREFIXES = ("spark.executorEnv.", "spark.yarn.appMasterEnv.")
"""Where the storage environment goes in the Spark conf (executors; the application master on YARN)."""



@dataclass(frozen=True)
class SparkSubmitOptions:
    """How to submit: master, extra Spark conf, code shipping, binary and interpreter."""

    master: str = "local[2]"
    deploy_mode: str = "client"
    conf: Mapping[str, str] = field(default_factory=dict)
    py_files: Sequence[str] = ()
    ship_package: bool = True
    app_name: str = "airflow-acid-compaction"
    spark_submit: str = "spark-submit"
    python: str = sys.executable
    extra_args: Sequence[str] = ()
    storage_options: StorageOptions | None = None
    """How the job reaches object stores (module docstring); None = the environment's own fsspec config."""


@dataclass(frozen=True)
class SubmitArguments:
    """Everything spark-submit needs, in the shape of SparkSubmitHook's arguments."""

    application: str
    application_args: tuple[str, ...]
    conf: dict[str, str]
    py_files: tuple[str, ...]
    name: str
    master: str
    deploy_mode: str


def application_path() -> str:
    """The job's main file (spark-submit runs it as a script)."""
    return str(Path(__file__).with_name("compact_job.py"))


_ZIP_CACHE: dict[str, str] = {}


def build_package_zip(dest_dir: str | None = None) -> str:
    """Zip the installed ``airflow_acid`` package (``.py`` files) for ``--py-files``; cached per directory."""
    key = dest_dir or ""
    cached = _ZIP_CACHE.get(key)
    if cached and os.path.exists(cached):
        return cached
    root = Path(__file__).resolve().parents[1]  # the airflow_acid package this module belongs to
    dest = Path(dest_dir or tempfile.mkdtemp(prefix="airflow-acid-pyfiles-"))
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "airflow_acid.zip"
    tmp = dest / ".airflow_acid.zip.tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" not in path.parts:
                zf.write(path, Path("airflow_acid") / path.relative_to(root))
    os.replace(tmp, target)
    _ZIP_CACHE[key] = str(target)
    return str(target)


def spark_conf_of(plan: CompactionPlan) -> dict[str, str]:
    """``spark.*`` entries of the compactions' job conf (``compactor.spark.*`` table properties).

    One application has one Spark conf: compactions that disagree on a value cannot share an application.
    """
    conf: dict[str, str] = {}
    owner: dict[str, str] = {}
    for c in plan.compactions:
        for k, v in c.job_conf.items():
            if not k.startswith(SPARK_CONF_PREFIX):
                continue
            if k in conf and conf[k] != v:
                raise PlanError(f"compactions {owner[k]!r} and {c.id!r} need different values of {k} "
                                f"({conf[k]!r} vs {v!r}); submit them in separate applications")
            conf[k], owner[k] = v, c.id
    return conf


def storage_env_of(plan: CompactionPlan, options: SparkSubmitOptions) -> dict[str, str]:
    """The ``FSSPEC_*`` variables the job needs for the plan's locations (no secrets: see StorageOptions)."""
    return storage_environment(options.storage_options, (c.location for c in plan.compactions))


def submit_arguments(plan: CompactionPlan, plan_path: str, result_path: str,
                     options: SparkSubmitOptions = SparkSubmitOptions(), *, py_files_dir: str | None = None
                     ) -> SubmitArguments:
    """The spark-submit arguments for running ``plan`` (already written to ``plan_path``)."""
    conf = {"spark.pyspark.python": options.python, "spark.pyspark.driver.python": options.python,
            "spark.speculation": "false"}  # a speculative copy would race on the same output file (HIVE-23354)
    conf.update(spark_conf_of(plan))
    for name, value in storage_env_of(plan, options).items():
        for prefix in ENV_CONF_PREFIXES:
            conf[prefix + name] = value
    conf.update(options.conf)
    py_files = list(options.py_files)
    if options.ship_package:
        py_files.append(build_package_zip(py_files_dir))
    return SubmitArguments(application_path(), ("--plan", plan_path, "--result", result_path), conf,
                           tuple(py_files), options.app_name, options.master, options.deploy_mode)


def spark_submit_command(args: SubmitArguments, options: SparkSubmitOptions = SparkSubmitOptions()) -> list[str]:
    """The command line for ``args``."""
    cmd = [options.spark_submit, "--master", args.master, "--deploy-mode", args.deploy_mode, "--name", args.name]
    for k, v in sorted(args.conf.items()):
        cmd += ["--conf", f"{k}={v}"]
    if args.py_files:
        cmd += ["--py-files", ",".join(args.py_files)]
    cmd += list(options.extra_args)
    return cmd + [args.application, *args.application_args]


def _spark_env(options: SparkSubmitOptions) -> dict[str, str]:
    env = dict(os.environ)
    bindir = os.path.dirname(options.python)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")  # the wheel's spark-submit lives beside python
    env.setdefault("PYSPARK_PYTHON", options.python)
    return env


@dataclass(frozen=True)
class SubmittedJob:
    """A running spark-submit: its process (leader of a new process group) and where plan, result and log live."""

    process: subprocess.Popen
    plan_path: str
    result_path: str
    log_path: str
    command: tuple[str, ...]

    def kill(self) -> None:
        """SIGKILL the whole process group (spark-submit's JVM, the Python driver, local executors)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def wait(self, timeout: float | None = None) -> PlanResult:
        """Wait for the job and return its result; kill the process group on timeout."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise SparkSubmitError(f"spark-submit did not finish within {timeout} s and was killed; "
                                   f"log: {self.log_path}") from None
        if code != 0 or not os.path.exists(self.result_path):
            tail = Path(self.log_path).read_text(errors="replace")[-3000:]
            raise SparkSubmitError(f"spark-submit exited with code {code} without a complete result "
                                   f"(log {self.log_path}):\n{tail}")
        return PlanResult.from_json(Path(self.result_path).read_text())


def start_spark_submit(plan: CompactionPlan, workdir: str, options: SparkSubmitOptions = SparkSubmitOptions(), *,
                       env: Mapping[str, str] | None = None) -> SubmittedJob:
    """Write the plan into ``workdir`` and start spark-submit in its own process group (output to a log file)."""
    os.makedirs(workdir, exist_ok=True)
    plan_path = os.path.join(workdir, "plan.json")
    result_path = os.path.join(workdir, "result.json")
    if os.path.exists(result_path):
        os.remove(result_path)
    Path(plan_path).write_text(plan.to_json())
    args = submit_arguments(plan, plan_path, result_path, options, py_files_dir=workdir)
    cmd = spark_submit_command(args, options)
    full_env = _spark_env(options)
    full_env.update(storage_env_of(plan, options))
    full_env.update(env or {})
    if shutil.which(options.spark_submit, path=full_env["PATH"]) is None:
        raise SparkSubmitError(f"{options.spark_submit!r} not found on PATH; install pyspark into the environment "
                               f"of {options.python} or set SparkSubmitOptions.spark_submit")
    log_path = os.path.join(workdir, "spark-submit.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=full_env, start_new_session=True)
    return SubmittedJob(proc, plan_path, result_path, log_path, tuple(cmd))


def run_spark_submit(plan: CompactionPlan, workdir: str, options: SparkSubmitOptions = SparkSubmitOptions(), *,
                     timeout: float | None = None) -> PlanResult:
    """Write the plan into ``workdir``, run spark-submit, and return the job's result document.

    On timeout the whole process group (spark-submit, its JVM and the Python driver) is killed.
    """
    return start_spark_submit(plan, workdir, options).wait(timeout)


def run_plan_in_session(plan: CompactionPlan, spark) -> PlanResult:
    """Run ``plan`` with an existing SparkSession (tests, notebooks, a long-running driver)."""
    from airflow_acid.spark.compact_job import run_plan

    return run_plan(plan, spark)
