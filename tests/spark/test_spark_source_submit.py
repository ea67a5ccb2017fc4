"""The ``hive_acid`` data source through spark-submit — locally with task retries and on the standalone master +
worker: a task that dies mid-write is retried and every row is committed exactly once, in one transaction."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

from airflow_acid.client.spark_source import STAGING_PREFIX
from tests.spark.conftest import BIN, spark_env

pytestmark = pytest.mark.slow


JOB = """
import json, os, sys
from pyspark.sql import SparkSession
from airflow_acid.client.spark_source import register

url, marker, out = sys.argv[1:4]
spark = SparkSession.builder.appName("hive_acid write").getOrCreate()
register(spark)

def flaky(it):
    from pyspark import TaskContext
    ctx = TaskContext.get()
    for batch in it:
        yield batch
        if ctx.partitionId() == 1 and not os.path.exists(marker):  # dies mid-way, after staging part of its rows
            open(marker, "w").close()
            raise RuntimeError("executor lost mid-write")

df = spark.range(0, 1000, numPartitions=4).selectExpr("cast(id as int) as id", "concat('n', id) as name")
df = df.mapInArrow(flaky, df.schema)
df.write.format("hive_acid").option("metastore_url", url).mode("append").save("default.sub")
back = spark.read.format("hive_acid").option("metastore_url", url).load("default.sub")
json.dump({"count": back.count(), "distinct": back.select("id").distinct().count()}, open(out, "w"))
spark.stop()
"""


@pytest.mark.parametrize("where", ["local[2,4]", "standalone"])
def test_spark_submit_write_with_a_retried_task_leaves_one_copy(warehouse, tmp_path, where, request):
    """Through spark-submit (local with task retries, and the standalone master + worker): the first attempt of one
    task dies after writing part of its output; the retry's rows are the only ones committed, exactly once."""
    master = request.getfixturevalue("standalone_master") if where == "standalone" else where
    warehouse.create_table("sub", [("id", "int"), ("name", "string")])
    script = tmp_path / "job.py"
    script.write_text(JOB)
    out = tmp_path / "out.json"
    url = warehouse.metastore.db.engine.url.render_as_string(hide_password=False)
    proc = subprocess.run([str(BIN / "spark-submit"), "--master", master, "--conf", "spark.task.maxFailures=4",
                           "--conf", "spark.ui.enabled=false", str(script), url, str(tmp_path / "marker"), str(out)],
                          env=spark_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "marker").exists()  # the failure happened
    assert json.loads(out.read_text()) == {"count": 1000, "distinct": 1000}
    assert sorted(warehouse.read("sub").column("id").to_pylist()) == list(range(1000))
    location = pathlib.Path(warehouse.table("sub").location.removeprefix("file://"))
    assert not list(location.glob(f"{STAGING_PREFIX}*"))
    deltas = sorted(p.name for p in location.iterdir())
    assert deltas == [f"delta_0000001_0000001_{i:04d}" for i in range(4)]  # one statement id per task


KILLED_JOB = """
import sys, time
from pyspark.sql import SparkSession
from airflow_acid.client.spark_source import register

url = sys.argv[1]
spark = SparkSession.builder.appName("hive_acid killed").getOrCreate()
register(spark)

def slow(it):
    from pyspark import TaskContext
    for batch in it:
        yield batch
    if TaskContext.get().partitionId() == 1:
        time.sleep(600)  # task 0 has staged its files; the driver is killed while this one waits

df = spark.range(0, 1000, numPartitions=2).selectExpr("cast(id as int) as id", "concat('n', id) as name")
df.mapInArrow(slow, df.schema).write.format("hive_acid").option("metastore_url", url).mode("append").save("default.kill")
"""


def test_a_driver_killed_before_commit_leaves_nothing_visible_and_the_housekeeper_aborts_it(warehouse, tmp_path):
    import os
    import signal
    import time

    from airflow_acid.acid.codes import TxnState
    from airflow_acid.compactor.cleaner import Cleaner
    from airflow_acid.compactor.housekeeper import HouseKeeper
    from airflow_acid.metastore.conf import MetastoreConf

    warehouse.create_table("kill", [("id", "int"), ("name", "string")])
    script = tmp_path / "job.py"
    script.write_text(KILLED_JOB)
    url = warehouse.metastore.db.engine.url.render_as_string(hide_password=False)
    location = pathlib.Path(warehouse.table("kill").location.removeprefix("file://"))
    proc = subprocess.Popen([str(BIN / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                             str(script), url], env=spark_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not list(location.glob(f"{STAGING_PREFIX}*/*/*/delta_*/bucket_*")):
            assert proc.poll() is None and time.monotonic() < deadline, "no staged output appeared"
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert warehouse.read("kill").num_rows == 0  # staged files are hidden: nothing visible
    [txn] = [t for t in warehouse.metastore.txns.show_transactions() if "default.kill" in (t.agent_info or "")]
    assert txn.state is TxnState.OPEN
    time.sleep(0.1)
    HouseKeeper(warehouse.metastore.with_conf(MetastoreConf(txn_timeout_s=0.05))).run_once()
    after = {t.txnid: t.state for t in warehouse.metastore.txns.show_transactions()}
    assert after.get(txn.txnid, TxnState.ABORTED) is TxnState.ABORTED
    assert warehouse.read("kill").num_rows == 0
    # the Cleaner removes the dead write's hidden staging directory once its txn is aborted
    report = Cleaner(warehouse.metastore, MetastoreConf(abortedtxn_threshold=0)).run_cycle()
    assert report.staging_removed and not list(location.glob(f"{STAGING_PREFIX}*"))
