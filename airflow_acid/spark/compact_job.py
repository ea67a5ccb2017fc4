"""The PySpark compaction application: ``spark-submit compact_job.py --plan PLAN.json --result RESULT.json``.

Also runnable as ``python -m airflow_acid.spark.compact_job --plan … --result …`` (starts its own local Spark).
One application executes every compaction of the plan, so the JVM start-up is paid once. Each wave's work units
(one per compaction step and bucket id) become one Spark job with one task per unit, biggest first; the executors
run :func:`airflow_acid.spark.units.execute_unit`, so they need the ``airflow_acid`` package: the same virtualenv
(local mode, or a standalone cluster on the same machine) or the zip that :mod:`airflow_acid.spark.submit` ships
with ``--py-files``.

The result document (:class:`airflow_acid.spark.driver.PlanResult`) is written atomically after every wave, so a
caller can see progress and a crash leaves the last complete picture. Exit codes: 0 — result written (individual
compactions may still have failed, see their ``status``); 2 — the plan cannot be read; 3 — the parent process
(spark-submit) died and the job stopped itself; 1 — anything else.

Orphan protection: in client mode spark-submit's JVM starts this Python driver as its child. If that JVM is killed
(Airflow's ``on_kill`` SIGKILLs it), a watchdog thread notices that the parent process is gone and exits the driver
at once instead of leaving it running without its gateway.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

EXIT_OK, EXIT_ERROR, EXIT_BAD_PLAN, EXIT_ORPHANED = 0, 1, 2, 3


def start_parent_watchdog(interval: float = 0.5) -> threading.Thread:
    """Exit this process (code 3) as soon as its parent process dies (reparenting changes ``getppid``)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                sys.stderr.write(f"airflow-acid compaction job: parent process {parent} is gone "
                                 "(spark-submit killed?); exiting\n")
                sys.stderr.flush()
                os._exit(EXIT_ORPHANED)

    thread = threading.Thread(target=watch, name="parent-watchdog", daemon=True)
    thread.start()
    return thread


def _write_text_atomic(path: str, text: str) -> None:
    from airflow_acid.acid.fs import storage_for

    parent, _, name = path.rstrip("/").rpartition("/")
    storage_for(parent or "/").write_bytes_atomic(name, text.encode())


def _read_text(path: str) -> str:
    import fsspec

    with fsspec.open(path, "rt") as fh:
        return fh.read()


def run_plan(plan, spark, on_progress=None):
    """Execute a :class:`~airflow_acid.job.plan.CompactionPlan` with an existing SparkSession."""
    from airflow_acid.spark.driver import execute_plan
    from airflow_acid.spark.units import execute_unit

    sc = spark.sparkContext

    def run_units(units):
        sc.setJobDescription(f"airflow-acid compaction: {len(units)} bucket unit(s) of "
                             f"{len({u.compaction for u in units})} compaction(s)")
        return sc.parallelize(units, len(units)).map(execute_unit).collect()

    app_id, task_cpus = sc.applicationId, int(sc.getConf().get("spark.task.cpus", "1"))

    def progress(result):
        result.set_app(app_id)
        if on_progress is not None:
            on_progress(result)

    result = execute_plan(plan, run_units, on_progress=progress, task_cpus=task_cpus)
    result.set_app(app_id)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compact_job", description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", required=True, help="path or URL of the compaction plan (JSON)")
    parser.add_argument("--result", required=True, help="path or URL where the result document is written")
    parser.add_argument("--app-name", default="airflow-acid-compaction")
    parser.add_argument("--app-id-file", help="write the Spark application id here once the application started "
                        "(a caller that outlives its worker finds the application by it)")
    parser.add_argument("--no-watchdog", action="store_true", help="do not exit when the parent process dies")
    args = parser.parse_args(argv)
    if not args.no_watchdog:
        start_parent_watchdog()

    from airflow_acid.job.errors import PlanError
    from airflow_acid.job.plan import CompactionPlan

    try:
        plan = CompactionPlan.from_json(_read_text(args.plan), source=args.plan)
    except (OSError, PlanError) as exc:
        sys.stderr.write(f"cannot read compaction plan {args.plan}: {exc}\n")
        return EXIT_BAD_PLAN

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(args.app_name).getOrCreate()
    try:
        if args.app_id_file:
            _write_text_atomic(args.app_id_file, spark.sparkContext.applicationId)
        result = run_plan(plan, spark, on_progress=lambda r: _write_text_atomic(args.result, r.to_json()))
        _write_text_atomic(args.result, result.to_json())
    finally:
        spark.stop()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
