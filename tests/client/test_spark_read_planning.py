"""How Spark reads of an ACID table are planned (client/pyspark_reader.py, client/spark_source.py): Spark's own split rule,
stripe-range splits that cover every stripe of a bucket exactly once, the executors' first heartbeat (no Spark session)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pyarrow as pa
import pytest

from airflow_acid.client.pyspark_reader import partition_units, plan_partition, split_target

MIB = 1 << 20


@pytest.mark.parametrize(("total", "parallelism", "expected"), [
    (1000 * MIB, 2, 128 * MIB),   # large table: maxPartitionBytes caps a task
    (100 * MIB, 2, 50 * MIB),     # mid-size: the bytes spread over the cores
    (2 * MIB, 2, 4 * MIB),        # small: never below openCostInBytes
    (100 * MIB, None, 128 * MIB),  # parallelism unknown (Spark Connect): maxPartitionBytes
])
def test_split_target_is_sparks_max_split_bytes(total, parallelism, expected):
    assert split_target(total, parallelism=parallelism, max_partition_bytes=128 * MIB,
                        open_cost_bytes=4 * MIB) == expected


def test_stripe_splits_cover_every_stripe_once_and_keep_every_delete_file(warehouse):
    from airflow_acid.acid import bucket_codec
    from airflow_acid.acid.event_schema import insert_events
    from airflow_acid.acid.event_writer import OrcWriteOptions, write_event_file

    warehouse.create_table("big", [("id", "int"), ("name", "string")])
    with warehouse.transaction() as txn:
        txn.insert("big", [{"id": 0, "name": "placeholder"}])  # write id 1, rewritten below with many stripes
    location = pathlib.Path(warehouse.table("big").location.removeprefix("file://"))
    delta = location / "delta_0000001_0000001_0000"
    n = 30_000
    rows = pa.table({"id": pa.array(np.arange(n, dtype=np.int32)), "name": pa.array([f"n{i}" for i in range(n)])})
    (delta / "bucket_00000").unlink()
    info = write_event_file(str(delta), 0, insert_events(rows, 1, bucket_codec.encode(0)),
                            options=OrcWriteOptions(stripe_size=65536, buffer_size=8192))
    with warehouse.transaction() as txn:
        txn.delete("big", "id % 1000 = 7")
    with warehouse.read_snapshot(warehouse.table("big")) as snap:
        (target,) = snap.targets
        part = plan_partition(target.location, snap.write_ids, snap.txns, {})
    assert part is not None
    whole = [json.loads(u) for u in partition_units(part, None)]
    assert len(whole) == 1
    size = (delta / "bucket_00000").stat().st_size
    split = [json.loads(u) for u in partition_units(part, size // 3)]
    assert len(split) >= 3
    covered = sorted(tuple(d["stripes"]) for u in split for d in u["data"] if d["stripes"] is not None)
    flat = [s for first, end in covered for s in range(first, end)]
    assert flat == list(range(info.stripes))  # each stripe in exactly one task
    assert all(u["deletes"] == whole[0]["deletes"] and u["deletes"] for u in split)  # every task applies every delete


def test_executors_first_heartbeat_waits_until_the_planners_transaction_is_due(tmp_path):
    """A task starting right after planning opens no metastore connection (the transaction was just opened); one
    starting later than the heartbeat interval, or without the planning time, beats at once."""
    import time

    pytest.importorskip("pyspark.sql.datasource")
    from airflow_acid.client.spark_source import HEARTBEAT_EVERY_S, _Heartbeat

    unreachable = f"sqlite:///{tmp_path / 'missing' / 'metastore.db'}"  # a beat would fail: the directory is absent
    fresh = _Heartbeat(unreachable, 7, since=time.time())
    assert not fresh.failed and fresh.last > 0
    for since in (time.time() - HEARTBEAT_EVERY_S - 1, None):
        due = _Heartbeat(unreachable, 7, since=since)
        assert due.failed  # it tried at once


@pytest.mark.parametrize(("text", "expected"), [("134217728b", 128 * MIB), ("128MB", 128 * MIB), ("4m", 4 * MIB),
                                                ("1g", 1024 * MIB), ("4194304", 4 * MIB)])
def test_spark_byte_sizes_are_read_as_spark_writes_them(text, expected):
    pytest.importorskip("pyspark.sql.datasource")
    from airflow_acid.client.spark_source import _conf_bytes

    assert _conf_bytes(text) == expected
