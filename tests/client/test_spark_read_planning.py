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


def _source_options(warehouse, **extra: str) -> dict[str, str]:
    return {"metastore_url": warehouse.metastore.db.engine.url.render_as_string(hide_password=False),
            "warehouse": warehouse.location, "path": "default.sliced", "heartbeat": "false", **extra}


def _read_all(options: dict[str, str]) -> list[pa.RecordBatch]:
    """What the executors hand Spark for every planned partition (the data source's calls, without Spark)."""
    from airflow_acid.client.spark_source import AcidDataSource

    source = AcidDataSource(options)
    reader = source.reader(source.schema())
    return [b for p in reader.partitions() for b in reader.read(p)]


def test_read_hands_spark_batches_of_at_most_batch_rows_and_the_same_rows(warehouse):
    """Batches are cut to ``batch_rows`` (slices: the rows, their order and types unchanged); 0 keeps the merge's
    own batches."""
    pytest.importorskip("pyspark.sql.datasource")
    warehouse.create_table("sliced", [("id", "int"), ("name", "string")])
    n = 5000
    with warehouse.transaction() as txn:
        txn.insert("sliced", pa.table({"id": pa.array(np.arange(n, dtype=np.int32)),
                                       "name": pa.array([f"n{i}" for i in range(n)])}))
    with warehouse.transaction() as txn:
        txn.delete("sliced", "id % 7 = 0")
    whole = _read_all(_source_options(warehouse, batch_rows="0"))
    cut = _read_all(_source_options(warehouse, batch_rows="700"))
    assert max(b.num_rows for b in whole) > 700  # the merge's own batch is larger: there is something to cut
    assert all(0 < b.num_rows <= 700 for b in cut)
    assert pa.Table.from_batches(cut).equals(pa.Table.from_batches(whole))
    expected = warehouse.read("sliced").sort_by("id")
    assert pa.Table.from_batches(cut).sort_by("id").equals(expected)


@pytest.mark.parametrize("option", ["batch_rows", "split_bytes", "parallelism", "max_partition_bytes",
                                    "open_cost_bytes"])
@pytest.mark.parametrize("value", ["-1", "1.5", "64k", "many"])
def test_a_whole_number_option_of_another_form_is_refused_naming_it(warehouse, option, value):
    """The reader's numeric options are refused while planning (not in each task), with the option's name."""
    pytest.importorskip("pyspark.sql.datasource")
    from airflow_acid.client.spark_source import AcidDataSource

    warehouse.create_table("opts", [("id", "int")])
    source = AcidDataSource({**_source_options(warehouse, **{option: value}), "path": "default.opts"})
    with pytest.raises(ValueError, match=f"hive_acid option '{option}' must be a whole number ≥ 0, got '{value}'"):
        source.reader(source.schema())


def test_planning_keeps_one_metastore_per_url_and_still_sees_every_commit(warehouse):
    """schema() and partitions() share the planning worker's metastore (one engine per URL) but read the table and
    take the snapshot afresh for every query."""
    pytest.importorskip("pyspark.sql.datasource")
    from airflow_acid.client.spark_source import open_warehouse

    warehouse.create_table("sliced", [("id", "int"), ("name", "string")])
    options = _source_options(warehouse)
    with open_warehouse(options, planning=True) as first, open_warehouse(options, planning=True) as second:
        assert first.metastore is second.metastore
    with open_warehouse(options) as own:
        assert own.metastore is not first.metastore  # the driver's other uses (writes, commits) open their own
    seen = []
    for start in (0, 10):
        with warehouse.transaction() as txn:
            txn.insert("sliced", [{"id": i, "name": "x"} for i in range(start, start + 10)])
        seen.append(sum(b.num_rows for b in _read_all(options)))
    assert seen == [10, 20]


def test_workers_freeze_their_imported_heap_once_per_set_of_modules(monkeypatch):
    """Spark's pyspark.daemon runs gc.collect() after every call: the modules' objects are frozen out of it, once
    for each new set of imported modules, not for every call."""
    import gc
    import sys
    import types

    pytest.importorskip("pyspark.sql.datasource")
    from airflow_acid.client import spark_source

    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(len(sys.modules)))
    monkeypatch.setattr(spark_source, "_frozen_at_modules", 0)
    spark_source._freeze_imported_heap()
    spark_source._freeze_imported_heap()
    assert frozen == [len(sys.modules)]
    monkeypatch.setitem(sys.modules, "freshly_imported_module", types.ModuleType("freshly_imported_module"))
    spark_source._freeze_imported_heap()
    spark_source._freeze_imported_heap()
    assert frozen == [len(sys.modules) - 1, len(sys.modules)]
