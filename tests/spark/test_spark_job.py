"""The compaction job on Spark: in a shared SparkSession, through spark-submit (local[2] and a standalone
cluster), killed mid-write (only invisible temporary output, rerun succeeds) and without orphan drivers."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import psutil
import pytest

from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import get_acid_state
from airflow_acid.job.layout import tmp_dir_name
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.submit import (
    SparkSubmitOptions,
    run_plan_in_session,
    run_spark_submit,
    spark_submit_command,
    start_spark_submit,
    submit_arguments,
)
from airflow_acid.spark.units import FAULT_DELAY_ENV
from tests.spark.conftest import spark_env
from tests.spark.helpers import (
    acid_dirs,
    check_acid_output,
    compactor_snapshot,
    plan_one,
    rows_with_ids,
    snapshot,
    write_merge_example,
)

pytestmark = pytest.mark.slow


def _nation(interop: Path, loc: Path) -> None:
    src = interop / "trino-nation-25k-with-delete-deltas"
    (loc / "delta_0000002_0000002_0000").mkdir(parents=True)
    shutil.copy(src / "nationFile25kRowsSortedOnNationKey/bucket_00000", loc / "delta_0000002_0000002_0000")
    for d in ("delete_delta_0000003_0000003_0000", "delete_delta_0000004_0000004_0000"):
        shutil.copytree(src / "nation_delete_deltas" / d, loc / d)


def _two_partitions(tmp_path: Path, interop: Path, txn: int):
    p1, p2 = tmp_path / "t" / "p=1", tmp_path / "t" / "p=2"
    write_merge_example(str(p1))
    _nation(interop, p2)
    plan = CompactionPlan((plan_one(str(p1), "minor", txn, compactor_snapshot(2), cid="p1"),
                           plan_one(str(p2), "major", txn, compactor_snapshot(4), cid="p2")))
    return p1, p2, plan


def _check_two_partitions(p1: Path, p2: Path, txn: int, result, before1, before2) -> None:
    by_id = result.by_id()
    assert by_id["p1"].status == JobStatus.SUCCEEDED, by_id["p1"].error
    assert by_id["p2"].status == JobStatus.SUCCEEDED, by_id["p2"].error
    assert by_id["p1"].outputs == [f"delta_0000001_0000002_v{txn:07d}", f"delete_delta_0000001_0000002_v{txn:07d}"]
    assert by_id["p2"].outputs == [f"base_0000004_v{txn:07d}"] and by_id["p2"].rows_out == 23000
    for out in by_id["p1"].outputs:
        check_acid_output(str(p1), out)
    assert check_acid_output(str(p2), by_id["p2"].outputs[0]) == 23000
    assert rows_with_ids(str(p1), snapshot(2)) == before1
    assert rows_with_ids(str(p2), snapshot(4)) == before2
    # run figures: the Spark application and the executor core-seconds of each compaction's tasks
    assert result.app_id and {c.app_id for c in result.compactions} == {result.app_id}
    assert all(c.core_seconds > 0 and c.files_in > 0 and c.bytes_in > 0 for c in result.compactions)
    # proof before commit: each executor digested what it read and its files read back, and they agree
    for c in result.compactions:
        assert c.verify == "digest" and c.checks, c
        assert all(k.read_digest == k.written_digest and k.rows_read == k.rows_written for k in c.checks), c.checks
    assert sum(k.rows_written for k in by_id["p2"].checks) == 23000


def test_plan_in_a_shared_session(spark, interop, tmp_path):
    p1, p2, plan = _two_partitions(tmp_path, interop, 30)
    before1, before2 = rows_with_ids(str(p1), snapshot(2)), rows_with_ids(str(p2), snapshot(4))
    result = run_plan_in_session(plan, spark)
    _check_two_partitions(p1, p2, 30, result, before1, before2)


def test_submit_arguments_and_command_line(tmp_path, interop):
    _p1, _p2, plan = _two_partitions(tmp_path, interop, 31)
    opts = SparkSubmitOptions(master="spark://h:7077", conf={"spark.executor.memory": "1g"})
    args = submit_arguments(plan, "/x/plan.json", "/x/result.json", opts, py_files_dir=str(tmp_path / "zip"))
    assert args.application.endswith("airflow_acid/spark/compact_job.py")
    assert args.application_args == ("--plan", "/x/plan.json", "--result", "/x/result.json")
    assert args.conf["spark.speculation"] == "false" and args.conf["spark.executor.memory"] == "1g"
    import zipfile
    with zipfile.ZipFile(args.py_files[0]) as zf:
        assert "airflow_acid/spark/units.py" in zf.namelist()
    cmd = spark_submit_command(args, opts)
    assert cmd[:5] == ["spark-submit", "--master", "spark://h:7077", "--deploy-mode", "client"]
    assert cmd[-5:] == [args.application, *args.application_args]


def test_spark_submit_local(interop, tmp_path):
    p1, p2, plan = _two_partitions(tmp_path, interop, 32)
    before1, before2 = rows_with_ids(str(p1), snapshot(2)), rows_with_ids(str(p2), snapshot(4))
    result = run_spark_submit(plan, str(tmp_path / "job"), SparkSubmitOptions(master="local[2]"), timeout=240)
    _check_two_partitions(p1, p2, 32, result, before1, before2)


def test_spark_submit_standalone_cluster(standalone_master, interop, tmp_path):
    p1, p2, plan = _two_partitions(tmp_path, interop, 33)
    before1, before2 = rows_with_ids(str(p1), snapshot(2)), rows_with_ids(str(p2), snapshot(4))
    opts = SparkSubmitOptions(master=standalone_master, conf={"spark.executor.memory": "1g",
                                                              "spark.cores.max": "2"})
    result = run_spark_submit(plan, str(tmp_path / "job"), opts, timeout=300)
    _check_two_partitions(p1, p2, 33, result, before1, before2)
    log = Path(tmp_path / "job" / "spark-submit.log").read_text(errors="replace")
    assert standalone_master in log


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _cmdline(process: psutil.Process) -> list[str]:
    """A child's command line; children that exit (or turn zombie) while we look have none."""
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def test_killed_mid_write_leaves_only_invisible_output_and_no_orphan_driver(spark, interop, tmp_path):
    p1, p2, plan = _two_partitions(tmp_path, interop, 34)
    before1, before2 = rows_with_ids(str(p1), snapshot(2)), rows_with_ids(str(p2), snapshot(4))
    dirs_before = (acid_dirs(str(p1)), acid_dirs(str(p2)))
    job = start_spark_submit(plan, str(tmp_path / "job"), SparkSubmitOptions(master="local[2]"),
                             env={**spark_env(), FAULT_DELAY_ENV: "60"})
    try:
        tmp = p2 / tmp_dir_name(34)
        _wait_for(lambda: list(tmp.rglob("bucket_*")), 120, f"temporary output under {tmp}")
        jvm = psutil.Process(job.process.pid)
        drivers = [c for c in jvm.children(recursive=True) if "compact_job.py" in " ".join(_cmdline(c))]
        assert drivers, "the Python driver runs as a child of spark-submit's JVM"
        jvm.kill()  # what Airflow's on_kill does: SIGKILL spark-submit only
        job.process.wait(timeout=30)
        gone, alive = psutil.wait_procs(drivers, timeout=20)
        assert not alive, f"orphan Python driver(s) survived spark-submit: {[p.pid for p in alive]}"
    finally:
        job.kill()
    # Only hidden temporary output was left behind: readers and getAcidState see exactly what they saw before.
    assert (acid_dirs(str(p1)), acid_dirs(str(p2))) == dirs_before
    assert any(p.name.startswith("_tmp_compactor_v") for p in p2.iterdir())
    files = storage_for(str(p2)).list_files()
    assert not any("_v0000034" in n for n in get_acid_state(files, snapshot(4)).current_deltas)
    assert rows_with_ids(str(p1), snapshot(2)) == before1 and rows_with_ids(str(p2), snapshot(4)) == before2
    assert not os.path.exists(job.result_path) or "succeeded" not in Path(job.result_path).read_text()
    # The rerun of the same plan replaces the leftovers and succeeds.
    result = run_plan_in_session(plan, spark)
    _check_two_partitions(p1, p2, 34, result, before1, before2)
    assert not any(p.name.startswith("_tmp") for p in p2.iterdir())
