"""The ``hive_acid`` PySpark data source on a local SparkSession: reads equal the Python client's at one snapshot
(ROW__ID, partition pruning, columns option), appends and overwrites are ONE transaction whose rows equal the Python
client's, a failed and retried task leaves one copy of each row, a failed job leaves nothing visible, and the
HouseKeeper aborts the transaction of a job that never came back."""

from __future__ import annotations

import pathlib
import time

import pyarrow as pa
import pytest

from airflow_acid.acid.codes import TxnState, TxnType
from airflow_acid.client.spark_source import STAGING_PREFIX, read_snapshot, register
from airflow_acid.compactor.housekeeper import HouseKeeper
from airflow_acid.metastore.conf import MetastoreConf

pytestmark = pytest.mark.slow

COLUMNS = [("id", "int"), ("name", "string"), ("amount", "decimal(10,2)"), ("ts", "timestamp"),
           ("tags", "map<string,int>")]


def _rows(n: int, start: int = 0, ds: str | None = None) -> list[dict]:
    import datetime
    import decimal

    out = []
    for i in range(start, start + n):
        row = {"id": i, "name": f"n{i}", "amount": decimal.Decimal(i) / 4,
               "ts": datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i), "tags": {"k": i}}
        if ds is not None:
            row["ds"] = ds
        out.append(row)
    return out


def _key(r: dict) -> tuple:
    tags = r["tags"]
    tags = tuple(sorted(tags.items())) if isinstance(tags, dict) else tuple(sorted(tags or []))
    return (r["id"], r["name"], r["amount"], r["ts"].replace(tzinfo=None) if r["ts"] else None, tags,
            r.get("ds"))


def _spark_rows(df) -> list[tuple]:
    return sorted(_key(r.asDict(recursive=True)) for r in df.collect())


def _client_rows(wh, table) -> list[tuple]:
    return sorted(_key(r) for r in wh.read(table).to_pylist())


def _opts(warehouse) -> dict[str, str]:
    return {"metastore_url": warehouse.metastore.db.engine.url.render_as_string(hide_password=False)}


def test_reads_equal_the_python_client_with_pruning_row_ids_and_columns(spark, warehouse):
    register(spark)
    warehouse.create_table("sales", COLUMNS, partition_by=[("ds", "string")])
    with warehouse.transaction() as txn:
        txn.insert("sales", _rows(5, ds="d1") + _rows(3, 10, ds="d2"))
    with warehouse.transaction() as txn:
        txn.delete("sales", "id = 2")
        txn.update("sales", {"name": "u"}, "id = 10")
    reader = spark.read.format("hive_acid").options(**_opts(warehouse))
    df = reader.load("default.sales")
    assert _spark_rows(df) == _client_rows(warehouse, "sales")
    # planning left its one READ_ONLY txn open for the executors (their first heartbeat waits until it is 30 s
    # old: tests/client/test_spark_read_planning.py)
    reads = [t for t in warehouse.metastore.txns.show_transactions()
             if t.state is TxnState.OPEN and "read default.sales" in (t.agent_info or "")]
    assert len(reads) == 1 and reads[0].txn_type is TxnType.READ_ONLY, reads
    pruned = df.filter("ds = 'd2'")
    assert sorted(r.id for r in pruned.collect()) == [10, 11, 12]
    assert pruned.rdd.getNumPartitions() == 1  # only d2's bucket was planned
    with_ids = reader.option("row_id", "true").option("columns", "id").load("default.sales")
    assert with_ids.columns == ["ROW__ID", "id"]
    ids = {r.id: r.ROW__ID for r in with_ids.collect()}
    assert ids[10].writeid == 2 and ids[0].writeid == 1 and ids[0].bucketid == 536870912


def test_append_and_overwrite_are_one_transaction_each_equal_to_the_client(spark, warehouse):
    register(spark)
    warehouse.create_table("t_spark", COLUMNS, partition_by=[("ds", "string")])
    warehouse.create_table("t_client", COLUMNS, partition_by=[("ds", "string")])
    rows = _rows(40, ds="a") + _rows(20, 100, ds="b")
    full = warehouse.io.full_schema(warehouse.table("t_spark"))
    df = spark.createDataFrame(pa.Table.from_pylist(rows, schema=full))
    before = {t.txnid for t in warehouse.metastore.txns.show_transactions()}
    df.repartition(3).write.format("hive_acid").options(**_opts(warehouse)).mode("append").save("default.t_spark")
    with warehouse.transaction() as txn:
        txn.insert("t_client", rows)
    assert _client_rows(warehouse, "t_spark") == _client_rows(warehouse, "t_client")
    location = pathlib.Path(warehouse.table("t_spark").location.removeprefix("file://"))
    deltas = {d.name for d in location.glob("ds=*/delta_*")}
    assert deltas and {d.rsplit("_", 1)[0] for d in deltas} == {"delta_0000001_0000001"}  # ONE write id: one txn
    assert not [t for t in warehouse.metastore.txns.show_transactions() if t.txnid not in before]  # none left open
    assert sorted(p.name for p in warehouse.list_partitions("t_spark")) == ["ds=a", "ds=b"]
    assert not list(location.glob(f"{STAGING_PREFIX}*"))  # staging removed

    # overwrite: only the partitions that receive rows are replaced (Hive's dynamic INSERT OVERWRITE)
    new_a = _rows(5, 500, ds="a")
    df2 = spark.createDataFrame(pa.Table.from_pylist(new_a, schema=full))
    df2.write.format("hive_acid").options(**_opts(warehouse)).mode("overwrite").save("default.t_spark")
    with warehouse.transaction() as txn:
        txn.insert_overwrite("t_client", new_a)
    assert _client_rows(warehouse, "t_spark") == _client_rows(warehouse, "t_client")
    assert {r[5] for r in _client_rows(warehouse, "t_spark")} == {"a", "b"}


def test_a_failed_job_leaves_nothing_and_its_transaction_aborted(spark, warehouse):
    """local[2] does not retry tasks: a task that dies fails the job; abort() removes every staged file and aborts
    the transaction (retries are checked through spark-submit below)."""
    register(spark)
    warehouse.create_table("f", [("id", "int"), ("name", "string")])

    def dies(it):
        for batch in it:
            if batch.num_rows and batch.column(0)[0].as_py() >= 50:
                raise RuntimeError("executor lost")
            yield batch

    df = spark.range(0, 100, numPartitions=2).selectExpr("cast(id as int) as id", "concat('n', id) as name")
    with pytest.raises(Exception, match="executor lost"):
        df.mapInArrow(dies, df.schema).write.format("hive_acid").options(**_opts(warehouse)).mode(
            "append").save("default.f")
    assert warehouse.read("f").num_rows == 0
    spark_txns = [t for t in warehouse.metastore.txns.show_transactions() if "spark write" in (t.agent_info or "")]
    assert spark_txns and all(t.state is TxnState.ABORTED for t in spark_txns)
    location = pathlib.Path(warehouse.table("f").location.removeprefix("file://"))
    assert not [p for p in location.rglob("*") if p.is_file()]  # nothing staged is left


def test_a_job_killed_before_commit_is_invisible_and_aborted_by_the_housekeeper(warehouse):
    """The driver died after its tasks staged their files: nothing is visible, and the HouseKeeper aborts the
    transaction once it stopped heartbeating (hive.txn.timeout)."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    from airflow_acid.client.spark_source import AcidWriter

    warehouse.create_table("k", [("id", "int"), ("name", "string")])
    schema = StructType([StructField("id", IntegerType()), StructField("name", StringType())])
    writer = AcidWriter({**_opts(warehouse), "path": "default.k"}, {}, schema, overwrite=False)
    message = writer.write(iter([pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["a", "b"])],
                                                 names=["id", "name"])]))
    assert message.entries and warehouse.read("k").num_rows == 0  # staged, not committed: invisible
    time.sleep(0.05)
    report = HouseKeeper(warehouse.metastore.with_conf(MetastoreConf(txn_timeout_s=0.01))).run_once()
    assert report is not None
    states = {t.txnid: t.state for t in warehouse.metastore.txns.show_transactions()}
    assert states.get(writer.txn_id, TxnState.ABORTED) is TxnState.ABORTED
    assert warehouse.read("k").num_rows == 0


def test_read_snapshot_holds_one_snapshot_for_every_action(spark, warehouse):
    warehouse.create_table("snap", [("id", "int"), ("name", "string")])
    with warehouse.transaction() as txn:
        txn.insert("snap", [{"id": 1, "name": "a"}])
    with read_snapshot(spark, "default.snap", **_opts(warehouse)) as df:
        assert df.count() == 1
        with warehouse.transaction() as txn:
            txn.insert("snap", [{"id": 2, "name": "b"}])
        assert df.count() == 1  # a later commit is not in this snapshot
    assert warehouse.read("snap").num_rows == 2


def test_a_large_bucket_is_read_by_several_tasks_split_by_stripes(spark, warehouse):
    """A bucket over split_bytes: its multi-stripe event file is cut into stripe ranges and small files grouped;
    every split applies all of the bucket's delete events, so the rows equal the Python client's."""
    import numpy as np

    from airflow_acid.acid import bucket_codec
    from airflow_acid.acid.event_schema import insert_events
    from airflow_acid.acid.event_writer import OrcWriteOptions, write_event_file

    register(spark)
    warehouse.create_table("big", [("id", "int"), ("name", "string")])
    n = 50_000
    with warehouse.transaction() as txn:
        txn.insert("big", [{"id": 0, "name": "placeholder"}])  # write id 1, rewritten below with many stripes
    location = pathlib.Path(warehouse.table("big").location.removeprefix("file://"))
    delta = location / "delta_0000001_0000001_0000"
    rows = pa.table({"id": pa.array(np.arange(n, dtype=np.int32)), "name": pa.array([f"n{i}" for i in range(n)])})
    (delta / "bucket_00000").unlink()
    info = write_event_file(str(delta), 0, insert_events(rows, 1, bucket_codec.encode(0)),
                            options=OrcWriteOptions(stripe_size=65536, buffer_size=8192))
    assert info.stripes > 4
    for start in (10, 20):  # two small deltas
        with warehouse.transaction() as txn:
            txn.insert("big", [{"id": n + start + i, "name": "d"} for i in range(3)])
    with warehouse.transaction() as txn:  # delete events that land in several stripes
        txn.delete("big", "id % 1000 = 7")
    reader = spark.read.format("hive_acid").options(**_opts(warehouse))
    whole = reader.load("default.big")
    split = reader.option("split_bytes", str((delta / "bucket_00000").stat().st_size // 4)).load("default.big")
    assert whole.rdd.getNumPartitions() == 1 and split.rdd.getNumPartitions() >= 4
    expected = sorted((r["id"], r["name"]) for r in warehouse.read("big").to_pylist())
    assert len(expected) == n + 6 - n // 1000
    assert sorted((r.id, r.name) for r in split.collect()) == expected
    assert sorted((r.id, r.name) for r in whole.collect()) == expected
    # Spark's own split rule (the table's bytes over the default parallelism, at least openCostInBytes), and a
    # pruned read of one column of those splits: the same rows
    spread = spark.read.format("hive_acid").options(**_opts(warehouse), parallelism="4",
                                                    open_cost_bytes="1").load("default.big")
    assert spread.rdd.getNumPartitions() >= 4
    assert sorted((r.id, r.name) for r in spread.collect()) == expected
    pruned = spark.read.format("hive_acid").options(**_opts(warehouse), parallelism="4", open_cost_bytes="1",
                                                    columns="name").load("default.big")
    assert pruned.columns == ["name"] and sorted(r.name for r in pruned.collect()) == sorted(e[1] for e in expected)


def test_insert_only_tables_take_appends_and_overwrites_as_plain_orc(spark, warehouse):
    register(spark)
    warehouse.create_table("mm", [("id", "int"), ("name", "string")], transactional_properties="insert_only")
    df = spark.range(0, 50, numPartitions=2).selectExpr("cast(id as int) as id", "concat('n', id) as name")
    df.write.format("hive_acid").options(**_opts(warehouse)).mode("append").save("default.mm")
    assert sorted(warehouse.read("mm").column("id").to_pylist()) == list(range(50))
    location = pathlib.Path(warehouse.table("mm").location.removeprefix("file://"))
    files = sorted(p.relative_to(location).as_posix() for p in location.rglob("0*"))
    assert files == ["delta_0000001_0000001_0000/000000_0", "delta_0000001_0000001_0001/000001_0"]  # plain ORC
    df.limit(5).write.format("hive_acid").options(**_opts(warehouse)).mode("overwrite").save("default.mm")
    assert sorted(warehouse.read("mm").column("id").to_pylist()) == list(range(5))
    assert (spark.read.format("hive_acid").options(**_opts(warehouse)).load("default.mm").count()) == 5


def test_overwrite_of_a_bucketed_table_merges_the_tasks_files_of_each_bucket(spark, warehouse):
    """Every task writes rows of every bucket; the commit joins each bucket's files into ONE base bucket file (events
    keep distinct ROW__IDs through the tasks' statement ids), read back by the client and by Spark."""
    register(spark)
    for name in ("bk", "bk_client"):
        warehouse.create_table(name, [("id", "int"), ("name", "string")], bucket_by=["id"], num_buckets=2)
    df = spark.range(0, 300, numPartitions=3).selectExpr("cast(id as int) as id", "concat('n', id) as name")
    df.write.format("hive_acid").options(**_opts(warehouse)).mode("append").save("default.bk")
    small = spark.range(0, 100, numPartitions=3).selectExpr("cast(id as int) as id", "concat('n', id) as name")
    small.write.format("hive_acid").options(**_opts(warehouse)).mode("overwrite").save("default.bk")
    with warehouse.transaction() as txn:
        txn.insert_overwrite("bk_client", [{"id": i, "name": f"n{i}"} for i in range(100)])
    assert sorted(warehouse.read("bk").column("id").to_pylist()) == list(range(100))
    location = pathlib.Path(warehouse.table("bk").location.removeprefix("file://"))
    client = pathlib.Path(warehouse.table("bk_client").location.removeprefix("file://"))
    base = sorted(p.name for p in (location / "base_0000002").iterdir() if p.name.startswith("bucket_"))
    assert base == sorted(p.name for p in (client / "base_0000001").iterdir() if p.name.startswith("bucket_"))
    ids = spark.read.format("hive_acid").options(**_opts(warehouse)).option("row_id", "true").load("default.bk")
    keys = [(r.ROW__ID.bucketid, r.ROW__ID.rowid) for r in ids.collect()]
    assert len(set(keys)) == 100  # distinct ROW__IDs
    assert len({bucket for bucket, _ in keys}) == 6  # 2 buckets x 3 tasks' statement ids: each file joins 3 tasks


def test_merged_staged_bucket_files_keep_char_and_varchar(tmp_path):
    """An overwrite of a bucketed table concatenates the tasks' staged files of a bucket: the result keeps the
    varchar(4)/char(3) types the staged files recorded (issue 29 item 5)."""
    import fsspec
    import pyarrow.orc as po

    from airflow_acid.acid import bucket_codec
    from airflow_acid.acid.event_schema import insert_events
    from airflow_acid.acid.event_writer import write_event_file
    from airflow_acid.acid.hive_chars import CharType, with_char_type
    from airflow_acid.acid.orc_tail import column_char_types, read_tail
    from airflow_acid.client.spark_source import _merge_event_files

    schema = pa.schema([pa.field("id", pa.int32()),
                        with_char_type(pa.field("v", pa.string()), CharType("varchar", 4)),
                        with_char_type(pa.field("c", pa.string()), CharType("char", 3))])
    staged = []
    for task in range(2):
        directory = tmp_path / f"{STAGING_PREFIX}{task:05d}" / "base_0000001"
        rows = pa.table({"id": [task], "v": ["abcdef"], "c": ["x"]}, schema=schema)
        write_event_file(str(directory), 0, insert_events(rows, 1, bucket_codec.encode(0, task)), row_schema=schema)
        staged.append(str(directory / "bucket_00000"))
    final = tmp_path / "base_0000001" / "bucket_00000"
    final.parent.mkdir()
    _merge_event_files(fsspec.filesystem("file"), staged, str(final), {})
    data = final.read_bytes()
    assert set(column_char_types(read_tail(data).footer).values()) == {CharType("varchar", 4), CharType("char", 3)}
    assert po.ORCFile(pa.BufferReader(data)).read().column("row").to_pylist() == [
        {"id": 0, "v": "abcd", "c": "x  "}, {"id": 1, "v": "abcd", "c": "x  "}]
