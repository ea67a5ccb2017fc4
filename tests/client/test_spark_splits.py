"""How Spark reads of an ACID table are cut into tasks (client/pyspark_reader.py): Spark's own split rule, and
stripe-range splits that cover every stripe of a bucket exactly once (no Spark needed: planning only)."""

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
