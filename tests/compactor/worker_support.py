"""Helpers of the Worker and Cleaner tests: a warehouse on each backend, table histories, reads, directory names."""

from __future__ import annotations

import os

import pyarrow.compute as pc

from airflow_acid.acid.codes import CompactionType
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf

# No open-txn timeout window: a committed compaction is cleanable as soon as its readers are gone.
CONF = MetastoreConf(opentxn_timeout_ms=0)
COLUMNS = [("id", "int"), ("name", "string")]


def make_warehouse(url: str, root, conf: MetastoreConf = CONF) -> AcidWarehouse:
    ms = Metastore(url, conf).init()
    return AcidWarehouse(ms, root, init=False, host="testhost")


def history(wh: AcidWarehouse, table: str = "db.t", partition: dict | None = None, *, batches: int = 3) -> None:
    """Inserts, an update and a delete: several deltas and a delete delta."""
    for i in range(batches):
        with wh.transaction() as t:
            t.insert(table, [{"id": i * 10 + j, "name": f"n{i}{j}"} for j in range(4)], partition)
    where = pc.field("id") == 1
    with wh.transaction() as t:
        t.update(table, set={"name": "updated"}, where=where)
    with wh.transaction() as t:
        t.delete(table, where=pc.field("id") == 12)


def new_table(wh: AcidWarehouse, table: str = "db.t", **kwargs):
    return wh.create_table(table, COLUMNS, **kwargs)


def rows(wh: AcidWarehouse, table: str = "db.t") -> list[tuple]:
    return sorted(tuple(r.values()) for r in wh.read(table).to_pylist())


def acid_dirs(location: str) -> list[str]:
    return sorted(p for p in os.listdir(location) if not p.startswith((".", "_")))


def hidden_dirs(location: str) -> list[str]:
    return sorted(p for p in os.listdir(location) if p.startswith("_tmp"))


def enqueue(wh: AcidWarehouse, kind: str, table: str = "db.t", partition: str | None = None, **kwargs) -> int:
    db, name = table.split(".")
    result = wh.metastore.compactions.enqueue(db, name, partition, CompactionType.parse(kind), **kwargs)
    assert result.accepted, result.message
    return result.id


def leave_aborted_insert(wh: AcidWarehouse, table: str = "db.t", ids=(900,)) -> int:
    """A writer that wrote its delta and then aborted without removing it (crashed): returns its txn id."""
    t = wh.transaction()
    t.insert(table, [{"id": i, "name": "aborted"} for i in ids])
    t._written.clear()  # the crash: nothing cleans up the files
    t.abort()
    return t.txn_id
