"""table_health / warehouse_health: what one listing per partition shows — deltas, delete deltas, delta/base ratio,
obsolete and aborted directories, aborted transactions, the queue row and the last finished compaction."""

from __future__ import annotations

import json

import pytest

from airflow_acid.client.errors import NotTransactionalError
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.services import LastCompaction, request_compaction, table_health, warehouse_health
from airflow_acid.spark.runners import LocalRunner
from tests.services.support import COLUMNS, crashed_insert, delete, inserts, make_non_transactional, unique


def test_partitions_before_and_after_a_compaction(wh):
    table = f"ops.{unique('health')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, table, {"ds": "a"}, batches=3)
    delete(wh, table, 10)
    crashed_insert(wh, table, {"ds": "a"})
    inserts(wh, table, {"ds": "b"}, batches=1)

    a, b = table_health(wh, table)
    assert (a.database, a.partition, b.partition) == ("ops", "ds=a", "ds=b")
    assert a.location.endswith("ds=a") and a.base_write_id is None and a.base_bytes == 0
    assert (a.deltas, a.delete_deltas, a.obsolete_dirs, a.aborted_dirs, a.aborted_txns) == (3, 1, 0, 1, 1)
    assert a.delta_bytes > 0 and a.delta_base_ratio is None
    assert (a.current_compaction, a.last_compaction, a.error) == (None, None, None)
    assert (b.deltas, b.delete_deltas, b.aborted_txns) == (1, 0, 0)

    pool = unique("pool")
    [queued] = request_compaction(wh, table, "ds=a", "major", pool=pool)
    a = table_health(wh, table)[0]
    assert a.current_compaction == f"MAJOR compaction {queued.compaction_id} initiated"
    assert Worker(wh.metastore, runner=LocalRunner()).run_next(pool).status == WorkerStatus.COMPACTED
    a = table_health(wh, table)[0]
    assert a.current_compaction == f"MAJOR compaction {queued.compaction_id} ready for cleaning"
    assert a.base_write_id is not None and a.base_bytes > 0 and (a.deltas, a.delete_deltas) == (0, 0)
    assert a.delta_base_ratio == 0.0 and a.obsolete_dirs == 4 and a.aborted_dirs == 1

    Cleaner(wh.metastore).clean(queued.compaction_id)
    a = table_health(wh, table)[0]
    assert (a.obsolete_dirs, a.aborted_dirs, a.aborted_txns, a.current_compaction) == (0, 0, 0, None)
    assert a.last_compaction == LastCompaction(queued.compaction_id, "MAJOR", "succeeded",
                                               a.last_compaction.enqueue_time, a.last_compaction.end_time, None)
    assert a.last_compaction.end_time >= a.last_compaction.enqueue_time > 0
    payload = json.loads(json.dumps(a.to_dict()))
    assert payload["last_compaction"]["state"] == "succeeded" and payload["partition"] == "ds=a"


def test_ratio_of_an_unpartitioned_table_and_the_warehouse_view(wh):
    db = unique("hdb")
    table = f"{db}.plain"
    wh.create_table(table, COLUMNS)
    wh.create_table(f"{db}.empty", COLUMNS)
    wh.create_table(f"{db}.text", COLUMNS)
    make_non_transactional(wh, f"{db}.text")
    inserts(wh, table, batches=2)
    [queued] = request_compaction(wh, table, None, "major", pool=(pool := unique("pool")))
    Worker(wh.metastore, runner=LocalRunner()).run_next(pool)
    inserts(wh, table, batches=1, start=100)

    [row] = table_health(wh, table)
    assert row.partition is None and row.deltas == 1
    assert row.delta_base_ratio == pytest.approx(row.delta_bytes / row.base_bytes)
    assert row.current_compaction == f"MAJOR compaction {queued.compaction_id} ready for cleaning"

    rows = warehouse_health(wh, db)
    assert [(r.table, r.partition) for r in rows] == [("empty", None), ("plain", None)]
    assert (rows[0].deltas, rows[0].base_bytes, rows[0].error) == (0, 0, None)
    assert {(r.database, r.table) for r in warehouse_health(wh)} >= {(db, "empty"), (db, "plain")}
    with pytest.raises(NotTransactionalError, match=f"table {db}.text is not transactional"):
        table_health(wh, f"{db}.text")


def test_unknown_table_or_database(wh):
    wh.create_database("ops")  # exists or not, depending on which tests ran before in this module's database
    with pytest.raises(NoSuchObjectError, match="nosuch"):
        table_health(wh, "ops.nosuch")
    with pytest.raises(NoSuchObjectError, match="nosuchdb"):
        warehouse_health(wh, "nosuchdb")
