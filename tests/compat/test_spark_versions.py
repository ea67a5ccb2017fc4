"""The compaction job (MINOR, MAJOR, REBALANCE, insert-only) submitted with spark-submit of other Spark releases to a
standalone cluster started from the same pyspark wheel, in an environment holding only the executors' packages
(README "Spark clusters"): the job's code travels with ``--py-files``, as on a real cluster.

CI runs Spark 3.5 and 4.0 (the suite itself runs Spark 4.2, on a standalone cluster in tests/deployment);
``AIRFLOW_ACID_COMPAT_SPARK`` picks others (``4.1``, or ``3.5`` alone).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest

from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.submit import SparkSubmitOptions, run_spark_submit
from tests.compat.combos import spark_executors, spark_versions
from tests.compat.venvs import compat_venv
from tests.spark.helpers import check_acid_output, compactor_snapshot, plan_one, rows_with_ids, snapshot, write_merge_example

pytestmark = pytest.mark.slow

VERSIONS = spark_versions()
MM_SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_env(bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_", "VIRTUAL_ENV", "PYTHON"))}
    env.update({"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "SPARK_LOCAL_IP": "127.0.0.1",
                "PYSPARK_PYTHON": str(bin_dir / "python"), "PYSPARK_DRIVER_PYTHON": str(bin_dir / "python")})
    return env


def _standalone(bin_dir: Path, work: Path) -> Iterator[str]:
    """A master and one worker (2 cores) of the environment's Spark on 127.0.0.1; yields the master URL."""
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env, procs = _spark_env(bin_dir), []
    spark_class = str(bin_dir / "spark-class")
    url = f"spark://127.0.0.1:{port}"
    try:
        for name, args in (("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                       str(port), "--webui-port", str(ui)]),
                           ("worker", ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores",
                                       "2", "--memory", "2g", "--webui-port", str(worker_ui), "--work-dir",
                                       str(work / "w")])):
            with open(work / f"{name}.log", "wb") as log:
                procs.append(subprocess.Popen([spark_class, *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                                              start_new_session=True))
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as resp:
                    if any(w.get("state") == "ALIVE" for w in json.load(resp).get("workers", [])):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                logs = "\n".join((work / f"{n}.log").read_text(errors="replace")[-2000:] for n in ("master", "worker"))
                pytest.fail(f"standalone master/worker did not come up within 180 s:\n{logs}")
            time.sleep(1)
        yield url
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, 15)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, 9)
                    p.wait()


def _mm_table(loc: Path) -> None:
    """An insert-only table: write ids 1, 2 (two files) and 3 (aborted)."""
    for directory, name, ids in (("delta_0000001_0000001_0000", "000000_0", [1, 2]),
                                 ("delta_0000002_0000002_0000", "000000_0", [3, 4]),
                                 ("delta_0000002_0000002_0000", "000001_0", [5]),
                                 ("delta_0000003_0000003_0000", "000000_0", [666])):
        (loc / directory).mkdir(parents=True, exist_ok=True)
        po.write_table(pa.table({"id": pa.array(ids, pa.int32()), "name": [f"r{i}" for i in ids]},
                                schema=MM_SCHEMA), str(loc / directory / name))


@pytest.mark.parametrize("version", VERSIONS)
def test_job_on_a_standalone_cluster(version: str, tmp_path, record_property, monkeypatch):
    started = time.monotonic()
    venv = compat_venv(spark_executors(version))
    built = time.monotonic() - started
    txn = 50
    minor, major, rebalance, mm = (tmp_path / "t" / f"p={i}" for i in range(4))
    for loc in (minor, major, rebalance):
        write_merge_example(str(loc))
    _mm_table(mm)
    before = rows_with_ids(str(minor), snapshot(2))
    mm_before = sorted(po.read_table(str(mm / "delta_0000001_0000001_0000" / "000000_0")).column("id").to_pylist()
                       + [3, 4, 5])
    plan = CompactionPlan((
        plan_one(str(minor), "minor", txn, compactor_snapshot(2), cid="minor"),
        plan_one(str(major), "major", txn, compactor_snapshot(2), cid="major"),
        plan_one(str(rebalance), "rebalance", txn, compactor_snapshot(2), cid="rebalance", number_of_buckets=2,
                 order_by=[("name", True)]),
        plan_one(str(mm), "major", txn, compactor_snapshot(3, aborted=(3,)), cid="insert-only",
                 row_schema="struct<id:int,name:string>", insert_only=True),
    ))
    bin_dir = venv / "bin"
    # The suite's session SparkSession exports PYSPARK_PYTHON (this interpreter, another pyspark): spark-submit would
    # keep it, so the job's Python would not be the environment's own.
    monkeypatch.setenv("PYSPARK_PYTHON", str(bin_dir / "python"))
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    work = tmp_path / "standalone"
    work.mkdir()
    cluster = _standalone(bin_dir, work)
    master = next(cluster)
    try:
        opts = SparkSubmitOptions(master=master, spark_submit=str(bin_dir / "spark-submit"),
                                  python=str(bin_dir / "python"),
                                  conf={"spark.executor.memory": "1g", "spark.cores.max": "2"})
        submitted = time.monotonic()
        result = run_spark_submit(plan, str(tmp_path / "job"), opts, timeout=400)
        ran = time.monotonic() - submitted
    finally:
        cluster.close()
    log = (tmp_path / "job" / "spark-submit.log").read_text(errors="replace")
    assert master in log and f"version {version}." in log, log[-3000:]
    by_id = result.by_id()
    for cid in ("minor", "major", "rebalance", "insert-only"):
        assert by_id[cid].status == JobStatus.SUCCEEDED, (cid, by_id[cid].error, log[-3000:])
    assert by_id["minor"].outputs == [f"delta_0000001_0000002_v{txn:07d}", f"delete_delta_0000001_0000002_v{txn:07d}"]
    assert by_id["major"].outputs == by_id["rebalance"].outputs == [f"base_0000002_v{txn:07d}"]
    assert by_id["rebalance"].files == 2
    for loc, cid in ((minor, "minor"), (major, "major"), (rebalance, "rebalance")):
        for out in by_id[cid].outputs:
            check_acid_output(str(loc), out)
    assert rows_with_ids(str(minor), snapshot(2)) == before
    assert rows_with_ids(str(major), snapshot(2)) == before
    assert sorted(r[3:] for r in rows_with_ids(str(rebalance), snapshot(2))) == sorted(r[3:] for r in before)
    (mm_out,) = by_id["insert-only"].outputs
    assert mm_out == f"base_0000002_v{txn:07d}"  # the aborted write id 3 is not the highest valid one
    mm_ids = sorted(i for f in sorted((mm / mm_out).iterdir()) for i in po.read_table(str(f)).column("id").to_pylist())
    assert mm_ids == mm_before  # the aborted write id 3 left out
    record_property("timings", {"venv": round(built, 1), "job": round(ran, 1),
                                "total": round(time.monotonic() - started, 1)})
    print(f"Spark {version}: venv {built:.0f} s, job {ran:.0f} s, total {time.monotonic() - started:.0f} s")
