"""Transactions against each other: snapshot isolation, first-committer-wins, aborts, heartbeats, and a writer
process killed mid-transaction. The concurrency tests run on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pyarrow.compute as pc
import pytest

from airflow_acid.client.errors import TransactionClosedError
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import LockNotAcquiredError, WriteConflictError
from tests.heartbeat_support import age_open_txns
from tests.warehouse_support import EMPLOYEE, SEED_ROWS, make_warehouse, tree

SHARED_WRITES = MetastoreConf(txn_xlock_write=False)
"""hive.txn.xlock.write=false: UPDATE/DELETE take SHARED_WRITE, conflicts are resolved at commit (first committer
wins) — what most tests here exercise. Hive 4's default (true, EXCL_WRITE) is tested on its own below."""


@pytest.fixture
def backend_warehouse(empty_db_url, tmp_path):
    wh = AcidWarehouse(empty_db_url, tmp_path / "wh", conf=SHARED_WRITES)
    wh.create_table("employee", EMPLOYEE)
    with wh.transaction() as txn:
        txn.insert("employee", SEED_ROWS)
    yield wh
    wh.close()


def _salaries(wh, table="employee") -> dict[int, int]:
    t = wh.read(table)
    return dict(zip(t.column("id").to_pylist(), t.column("salary").to_pylist()))


def test_reader_never_sees_a_commit_after_its_snapshot(backend_warehouse):
    wh = backend_warehouse
    info = wh.table("employee")
    with wh.read_snapshot(info) as snap:
        with wh.transaction() as txn:
            txn.update("employee", set={"salary": 1}, where=pc.field("id") == 1)
            txn.insert("employee", [(4, "Mary", 9000)])
        old = wh.io.read_partition(info, snap.targets[0], snap.write_ids, snap.txns)
        assert dict(zip(old.column("id").to_pylist(), old.column("salary").to_pylist())) == {
            1: 5000, 2: 8000, 3: 6000}
    assert _salaries(wh) == {1: 1, 2: 8000, 3: 6000, 4: 9000}


def test_writer_snapshot_excludes_later_commits(backend_warehouse):
    wh = backend_warehouse
    first = wh.transaction()
    with wh.transaction() as other:
        other.insert("employee", [(4, "Mary", 9000)])
    assert first.update("employee", set={"salary": 0}).rows == 3  # Mary committed after `first` began
    first.commit()
    assert _salaries(wh) == {1: 0, 2: 0, 3: 0, 4: 9000}


def test_second_concurrent_update_is_aborted_with_its_files(backend_warehouse, tmp_path):
    wh = backend_warehouse
    t1, t2 = wh.transaction(), wh.transaction()
    t1.update("employee", set={"salary": 1}, where=pc.field("id") == 2)
    t2.delete("employee", where=pc.field("id") == 2)
    t1.commit()
    before = tree(tmp_path / "wh")
    with pytest.raises(WriteConflictError, match="write conflict on default.employee"):
        t2.commit()
    assert t2.state == "aborted"
    assert wh.metastore.txns.txn_state(t2.txn_id).value == "a"
    assert not any("0000003" in p for p in tree(tmp_path / "wh"))  # t2's delete_delta_0000003… is gone
    assert len(tree(tmp_path / "wh")) == len(before) - 2
    assert _salaries(wh) == {1: 5000, 2: 1, 3: 6000}


def test_hive4_default_update_waits_for_a_concurrent_writer(empty_db_url, tmp_path):
    """hive.txn.xlock.write=true (Hive 4's default): UPDATE/DELETE take EXCL_WRITE, so a second writer of the same
    table cannot lock it while the first is open — no write conflict at commit is needed — and can once it ends."""
    conf = MetastoreConf(lock_numretries=1, lock_sleep_between_retries_s=0.05)
    assert conf.txn_xlock_write
    with AcidWarehouse(empty_db_url, tmp_path / "wh", conf=conf) as wh:
        wh.create_table("employee", EMPLOYEE)
        with wh.transaction() as txn:
            txn.insert("employee", SEED_ROWS)
        t1, t2 = wh.transaction(), wh.transaction()
        t1.update("employee", set={"salary": 1}, where=pc.field("id") == 2)
        with pytest.raises(LockNotAcquiredError):
            t2.delete("employee", where=pc.field("id") == 2)
        t2.abort()
        t1.commit()
        with wh.transaction() as t3:
            assert t3.delete("employee", where=pc.field("id") == 2).rows == 1
        assert _salaries(wh) == {1: 5000, 3: 6000}


def test_updates_of_different_partitions_both_commit(empty_db_url, tmp_path):
    with AcidWarehouse(empty_db_url, tmp_path / "wh", conf=SHARED_WRITES) as wh:
        wh.create_table("sales", [("id", "int"), ("amount", "int")], partition_by=[("ds", "string")])
        with wh.transaction() as txn:
            txn.insert("sales", [{"id": 1, "amount": 1, "ds": "a"}, {"id": 2, "amount": 2, "ds": "b"}])
        t1, t2 = wh.transaction(), wh.transaction()
        t1.update("sales", set={"amount": 10}, where=pc.field("ds") == "a")
        t2.update("sales", set={"amount": 20}, where=pc.field("ds") == "b")
        t1.commit()
        t2.commit()
        t3, t4 = wh.transaction(), wh.transaction()
        t3.delete("sales", where=pc.field("ds") == "a")
        t4.update("sales", set={"amount": 0}, where=pc.field("id") == 1)
        t3.commit()
        with pytest.raises(WriteConflictError, match="partition ds=a"):
            t4.commit()
        assert wh.read("sales").to_pylist() == [{"id": 2, "amount": 20, "ds": "b"}]


def test_aborted_transactions_leave_nothing_visible(warehouse, tmp_path):
    warehouse.create_table("employee", EMPLOYEE)
    txn = warehouse.transaction()
    txn.insert("employee", SEED_ROWS)
    txn.abort()
    assert tree(tmp_path / "wh") == []
    with warehouse.transaction() as ok:
        ok.insert("employee", SEED_ROWS[:1])
    assert warehouse.read("employee").column("id").to_pylist() == [1]
    assert warehouse.table("employee") and warehouse.metastore.txns.txn_state(txn.txn_id).value == "a"


def test_heartbeats_keep_a_long_transaction_alive(metastore_url, tmp_path, heartbeat_clock):
    conf = MetastoreConf(txn_timeout_s=0.6)
    with make_warehouse(metastore_url, tmp_path / "wh", conf) as wh:
        wh.create_table("employee", EMPLOYEE)
        with wh.transaction() as txn:
            txn.insert("employee", SEED_ROWS)
            heartbeat_clock.elapse(wh.metastore, 1.5)
            assert wh.metastore.housekeeping.abort_timed_out_txns() == []
            assert txn._heartbeater.beats >= 2
        assert wh.read("employee").num_rows == 3


def test_commit_of_a_timed_out_transaction_discards_its_files(metastore_url, tmp_path, heartbeat_clock):
    """Found by the reliability suite: once a late heartbeat had found the txn aborted (hive.txn.timeout), commit
    raised TransactionClosedError but left the client's state 'open' and the txn's delta on disk."""
    conf = MetastoreConf(txn_timeout_s=0.4)
    with make_warehouse(metastore_url, tmp_path / "wh", conf) as wh:
        wh.create_table("employee", EMPLOYEE)
        before = tree(tmp_path / "wh")
        txn = wh.transaction()
        beat = txn._heartbeater._beat
        txn._heartbeater._beat = lambda txn_id: None  # the client stalls: no heartbeat reaches the metastore
        txn.insert("employee", SEED_ROWS)
        heartbeat_clock.elapse(wh.metastore, 0.6)
        assert wh.metastore.housekeeping.abort_timed_out_txns() == [txn.txn_id]
        txn._heartbeater._beat = beat
        heartbeat_clock.advance(txn._heartbeater.interval_s)  # the next beat finds the txn aborted
        assert txn.txn_id in txn._heartbeater.lost
        with pytest.raises(TransactionClosedError, match=f"transaction {txn.txn_id} is no longer open.*ABORT_TIMEOUT"):
            txn.commit()
        assert txn.state == "aborted"
        assert tree(tmp_path / "wh") == before
        assert wh.read("employee").num_rows == 0


def _killed_writer(url: str, location: str, queue) -> None:
    wh = make_warehouse(url, location, MetastoreConf(txn_timeout_s=1.0))
    txn = wh.transaction()
    txn.insert("employee", [(7, "Ghost", 1)])
    queue.put(txn.txn_id)
    time.sleep(60)  # killed long before


def test_writer_killed_mid_transaction_is_invisible_and_times_out(metastore_url, tmp_path):
    conf = MetastoreConf(txn_timeout_s=1.0)
    location = str(tmp_path / "wh")
    with make_warehouse(metastore_url, location, conf) as wh:
        wh.create_table("employee", EMPLOYEE)
        with wh.transaction() as txn:
            txn.insert("employee", SEED_ROWS)
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        child = ctx.Process(target=_killed_writer, args=(metastore_url, location, queue))
        child.start()
        try:
            txn_id = queue.get(timeout=60)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.join()
        assert any("delta_0000002_0000002_0000" in p for p in tree(tmp_path / "wh"))  # its files are there…
        assert sorted(wh.read("employee").column("id").to_pylist()) == [1, 2, 3]  # …but invisible
        assert wh.metastore.txns.txn_state(txn_id).value == "o"
        age_open_txns(wh.metastore, conf.txn_timeout_s + 0.1)  # its heartbeats died with it: let the timeout pass
        aborted = wh.metastore.housekeeping.abort_timed_out_txns()
        assert txn_id in aborted
        assert wh.metastore.txns.txn_state(txn_id).value == "a"
        assert sorted(wh.read("employee").column("id").to_pylist()) == [1, 2, 3]
        with wh.transaction() as txn:  # the table keeps working; the aborted write id stays invisible
            txn.insert("employee", [(8, "Next", 2)])
        assert sorted(wh.read("employee").column("id").to_pylist()) == [1, 2, 3, 8]


def test_merge_and_update_on_complex_columns_with_dict_sources(warehouse):
    """Struct, list and map columns ride through MERGE's join and UPDATE; a MERGE source of dicts takes the table's
    types (a dict for a map column is a map), extra source columns included."""
    warehouse.create_table("cx", [("id", "int"), ("name", "string"), ("m", "map<string,int>"),
                                  ("s", "struct<a:int,b:string>"), ("l", "array<int>")])
    with warehouse.transaction() as txn:
        txn.insert("cx", [{"id": i, "name": f"n{i}", "m": {"k": i}, "s": {"a": i, "b": "x"}, "l": [i]}
                          for i in range(3)])
    source = [{"id": 1, "name": "one", "m": {"z": 9}, "s": {"a": 1, "b": "y"}, "l": [7], "note": "extra"},
              {"id": 5, "name": "five", "m": {"q": 1}, "s": None, "l": None, "note": None}]
    with warehouse.transaction() as txn:
        done = txn.merge("cx", source, "id", when_matched_update=["name", "m", "s", "l"],
                         when_not_matched_insert={"id": pc.field("source.id"), "name": pc.field("source.name"),
                                                  "m": pc.field("source.m")})
        assert (done.inserted, done.deleted) == (2, 1)
        txn.update("cx", {"name": "u"}, {"id": 2})
    got = {r["id"]: r for r in warehouse.read("cx").to_pylist()}
    assert got[1]["m"] == [("z", 9)] and got[1]["s"] == {"a": 1, "b": "y"} and got[1]["l"] == [7]
    assert got[2]["name"] == "u" and got[2]["m"] == [("k", 2)] and got[2]["l"] == [2]
    assert got[5]["m"] == [("q", 1)] and got[5]["s"] is None and got[0]["s"] == {"a": 0, "b": "x"}
