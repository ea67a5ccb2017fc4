"""Statements run against a warehouse on each backend: Hive's output columns and values, SHOW COMPACTIONS filters,
AND WAIT until a worker finished, ABORT results per id, DDL through the client API, and the errors users hit."""

from __future__ import annotations

import pytest

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.client.errors import NotTransactionalError
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.compactions import ShowCompactionsRow
from airflow_acid.metastore.errors import AlreadyExistsError, InvalidInputError, NoSuchObjectError
from airflow_acid.services import CompactionWaitTimeout, request_compaction
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.statements import StatementExecutor, parse_statement
from tests.services.support import COLUMNS, inserts, make_non_transactional, unique


def run(wh, text: str, **kwargs):
    return StatementExecutor(wh, **kwargs).run(parse_statement(text))


def records(result) -> list[dict]:
    return result.records()


def test_show_compactions_filters_and_columns(wh):
    db = unique("sc")
    wh.create_table(f"{db}.a", COLUMNS, partition_by=[("ds", "string")])
    wh.create_table(f"{db}.b", COLUMNS)
    for ds in ("x", "y"):
        inserts(wh, f"{db}.a", {"ds": ds}, batches=1)
    first = request_compaction(wh, f"{db}.a", "ds=x", "major", pool="etl")[0].compaction_id
    second = request_compaction(wh, f"{db}.a", "ds=y", "minor")[0].compaction_id
    third = request_compaction(wh, f"{db}.b", None, "major")[0].compaction_id
    wh.metastore.compactions.abort_compactions([third])

    result = run(wh, f"SHOW COMPACTIONS DATABASE {db}")
    assert result.columns == ShowCompactionsRow.columns() and result.columns[19] == "hightestwriteid"
    assert result.null == "---"
    assert sorted(r["compactionid"] for r in records(result)) == [first, second, third]
    row = next(r for r in records(result) if r["compactionid"] == first)
    assert (row["dbname"], row["tabname"], row["partname"], row["type"], row["state"], row["poolname"]) == \
        (db, "a", "ds=x", "MAJOR", "initiated", "etl")
    assert row["enqueuetime"] > 0 and row["workerhost"] is None
    assert result.text_rows()[0][6] == "---"

    def ids(text: str) -> list[int]:
        return [r["compactionid"] for r in records(run(wh, text))]

    assert ids(f"SHOW COMPACTIONS COMPACTIONID={second}") == [second]
    assert ids(f"SHOW COMPACTIONS DATABASE {db} POOL 'etl'") == [first]
    assert sorted(ids(f"SHOW COMPACTIONS DATABASE {db} POOL 'default'")) == [second, third]
    assert ids(f"SHOW COMPACTIONS {db}.a PARTITION (ds='y')") == [second]
    assert ids(f"SHOW COMPACTIONS DATABASE {db} TYPE 'minor'") == [second]
    assert ids(f"SHOW COMPACTIONS DATABASE {db} STATUS 'aborted'") == [third]
    assert ids(f"SHOW COMPACTIONS {db}.a ORDER BY compactionid DESC") == [second, first]
    assert ids(f"SHOW COMPACTIONS {db}.a ORDER BY cq_id ASC LIMIT 1") == [first]
    assert ids("SHOW COMPACTIONS COMPACTIONID=987654") == []

    with pytest.raises(NoSuchObjectError, match=f"table {db}.nosuch does not exist"):
        run(wh, f"SHOW COMPACTIONS {db}.nosuch")
    with pytest.raises(NoSuchObjectError, match="database nosuchdb"):
        run(wh, "SHOW COMPACTIONS DATABASE nosuchdb")
    with pytest.raises(InvalidInputError, match="unknown key 'hr'"):
        run(wh, f"SHOW COMPACTIONS {db}.a PARTITION (hr='1')")
    with pytest.raises(InvalidInputError, match="unknown compaction state 'done' after STATUS; use one of "
                                                "'initiated', 'working', 'ready for cleaning'"):
        run(wh, "SHOW COMPACTIONS STATUS 'done'")
    with pytest.raises(InvalidInputError, match="unknown compaction type 'big'"):
        run(wh, "SHOW COMPACTIONS TYPE 'big'")
    with pytest.raises(InvalidInputError, match="cannot order SHOW COMPACTIONS by 'colour asc'"):
        run(wh, "SHOW COMPACTIONS ORDER BY colour")


def test_show_transactions_and_locks(wh):
    db = unique("tl")
    info = wh.create_table(f"{db}.t", COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, f"{db}.t", {"ds": "x"}, batches=1)
    aborted = wh.transaction()
    aborted.abort()
    with wh.read_snapshot(info, "ds=x") as reader:
        result = run(wh, "SHOW TRANSACTIONS")
        assert result.columns == ["txnid", "state", "startedtime", "lastheartbeattime", "user", "host"]
        mine = {r["txnid"]: r for r in records(result)}
        assert mine[reader.txn_id]["state"] == "OPEN" and mine[aborted.txn_id]["state"] == "ABORTED"
        assert mine[reader.txn_id]["host"] == "testhost" and mine[reader.txn_id]["startedtime"] > 0

        result = run(wh, f"SHOW LOCKS {db}.t PARTITION (ds='x')")
        assert result.columns == ["lockid", "database", "table", "partition", "lock_state", "blocked_by", "lock_type",
                                  "transaction_id", "last_heartbeat", "acquired_at", "user", "hostname", "agent_info"]
        [lock] = records(result)
        assert (lock["database"], lock["table"], lock["partition"], lock["lock_state"], lock["lock_type"],
                lock["transaction_id"]) == (db, "t", "ds=x", "ACQUIRED", "SHARED_READ", reader.txn_id)
        assert result.text_rows()[0][5] == "NULL"  # blocked_by
        assert [r["lockid"] for r in records(run(wh, f"SHOW LOCKS DATABASE {db}"))] == [lock["lockid"]]
        extended = run(wh, f"SHOW LOCKS EXTENDED {db}.t")
        assert extended.columns[-2:] == ["heartbeat_count", "blocked_by_txn_id"] and len(extended.rows) == 1
        assert run(wh, f"SHOW LOCKS {db}.t PARTITION (ds='other')").rows == []
    assert run(wh, f"SHOW LOCKS {db}.t").rows == []
    with pytest.raises(NoSuchObjectError):
        run(wh, "SHOW LOCKS DATABASE nosuchdb")


def test_compact_and_wait_for_a_worker(wh):
    table = f"st.{unique('cw')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=2)
    pool = unique("pool")
    sleeps: list[float] = []
    waiting: list[str] = []

    def a_worker_runs(seconds: float) -> None:
        sleeps.append(seconds)
        Worker(wh.metastore, runner=LocalRunner()).run_next(pool)

    result = run(wh, f"ALTER TABLE {table} COMPACT 'major' AND WAIT POOL '{pool}'", wait_first_poll_s=0.01,
                 sleep=a_worker_runs, on_wait=waiting.append)
    [row] = records(result)
    assert result.columns == ["compactionid", "dbname", "tabname", "partname", "type", "state", "message"]
    assert (row["type"], row["state"]) == ("MAJOR", "ready for cleaning") and sleeps == [0.01]
    assert row["message"] == f"Compaction with id {row['compactionid']} finished with status: ready for cleaning"
    assert result.messages == [] and not result.failed
    assert waiting and f"compaction(s) {row['compactionid']}" in waiting[0]

    again = run(wh, f"ALTER TABLE {table} COMPACT 'major'")
    assert records(again)[0]["state"] == "refused" and "already scheduled" in records(again)[0]["message"]


def test_wait_that_ends_in_failure_or_timeout(wh):
    table = f"st.{unique('cw')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=2)
    pool = unique("pool")

    class BrokenRunner:
        def run(self, plan, *, job_name, spark_conf):
            raise RuntimeError("the cluster is gone")

    result = run(wh, f"ALTER TABLE {table} COMPACT 'minor' AND WAIT POOL '{pool}'", wait_first_poll_s=0,
                 sleep=lambda s: Worker(wh.metastore, runner=BrokenRunner()).run_next(pool))
    assert result.failed and records(result)[0]["state"] == "failed"
    message = records(result)[0]["message"]
    assert "finished with status: failed" in message and "the cluster is gone" in message

    with pytest.raises(CompactionWaitTimeout, match="still waiting for a worker"):
        run(wh, f"ALTER TABLE {table} COMPACT 'major' AND WAIT POOL '{pool}'", wait_first_poll_s=0.01,
            wait_timeout_s=0.05)


def test_compact_a_partitioned_table_without_partition(wh):
    table = f"st.{unique('cp')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")],
                    properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    inserts(wh, table, {"ds": "x"}, batches=2)
    inserts(wh, table, {"ds": "y"}, batches=1)
    result = run(wh, f"ALTER TABLE {table} COMPACT 'minor' WITH OVERWRITE TBLPROPERTIES "
                     "('compactor.mapreduce.map.memory.mb'='1024')")
    x, y = records(result)
    assert (x["partname"], x["type"], x["state"]) == ("ds=x", "MAJOR", "initiated")
    assert (y["partname"], y["compactionid"], y["state"]) == ("ds=y", None, "not needed")
    assert wh.metastore.compactions.get(x["compactionid"]).properties == {"compactor.mapreduce.map.memory.mb": "1024"}
    assert y["message"].startswith("not compacted: no base")

    with pytest.raises(NoSuchObjectError, match="partition ds=zz"):
        run(wh, f"ALTER TABLE {table} PARTITION (ds='zz') COMPACT 'major'")
    with pytest.raises(InvalidInputError, match="unknown key 'hr'"):
        run(wh, f"ALTER TABLE {table} PARTITION (hr='1') COMPACT 'major'")
    with pytest.raises(InvalidInputError, match="unknown compaction type 'medium' after COMPACT; use one of 'major', "
                                                "'minor', 'rebalance'"):
        run(wh, f"ALTER TABLE {table} PARTITION (ds='x') COMPACT 'medium'")
    with pytest.raises(InvalidInputError, match="request property 'mapreduce.x' is not understood"):
        run(wh, f"ALTER TABLE {table} COMPACT 'major' WITH OVERWRITE TBLPROPERTIES ('mapreduce.x'='1')")
    with pytest.raises(NoSuchObjectError, match="st.nosuch"):
        run(wh, "ALTER TABLE st.nosuch COMPACT 'major'")


def test_abort_transactions_and_compactions(wh):
    table = f"st.{unique('ab')}"
    wh.create_table(table, COLUMNS)
    open_txn = wh.transaction()
    with wh.transaction() as committed:
        committed.insert(table, [{"id": 1, "name": "a"}])
    result = run(wh, f"ABORT TRANSACTIONS {open_txn.txn_id} {committed.txn_id} 98765")
    assert result.columns == ["txnid", "status", "message"] and result.failed
    assert records(result) == [
        {"txnid": open_txn.txn_id, "status": "Success", "message": "Successfully aborted transaction"},
        {"txnid": committed.txn_id, "status": "Error", "message": "Transaction is already committed"},
        {"txnid": 98765, "status": "Error", "message": "No such transaction (never opened, or ended and cleaned up)"}]
    assert wh.metastore.txns.txn_state(open_txn.txn_id) is TxnState.ABORTED

    queued = request_compaction(wh, table, None, "major", pool=unique("pool"))[0].compaction_id
    result = run(wh, f"ABORT COMPACTIONS {queued}")
    assert records(result) == [{"compactionid": queued, "status": "Success",
                                "message": "Successfully aborted compaction"}] and not result.failed
    assert wh.metastore.compactions.get(queued).state is CompactionState.ABORTED
    result = run(wh, f"ABORT COMPACTIONS {queued}, 98765")
    assert [r["status"] for r in records(result)] == ["Error", "Error"] and result.failed
    assert "state-aborted" in records(result)[0]["message"]
    assert records(result)[1]["message"] == "No Such Compaction Id Available"


def test_create_describe_and_alter_properties(wh):
    db = unique("ddl")
    name = f"{db}.orders"
    run(wh, f"CREATE DATABASE {db}")
    result = run(wh, f"CREATE TABLE {name} (id INT COMMENT 'order id', amount DECIMAL(10,2), tags ARRAY<STRING>) "
                     "COMMENT 'all orders' PARTITIONED BY (ds STRING) CLUSTERED BY (id) INTO 4 BUCKETS STORED AS ORC "
                     "TBLPROPERTIES ('transactional'='true', 'no_auto_compaction'='true')")
    info = wh.table(name)
    assert result.messages == [f"table {name} created at {info.location}"]
    assert [(c.name, c.type, c.comment) for c in info.columns] == [("id", "int", "order id"),
                                                                   ("amount", "decimal(10,2)", None),
                                                                   ("tags", "array<string>", None)]
    assert [(k.name, k.type) for k in info.partition_keys] == [("ds", "string")]
    assert (info.bucket_cols, info.num_buckets, info.is_transactional) == (["id"], 4, True)
    assert info.properties["comment"] == "all orders" and info.property("no_auto_compaction") == "true"
    exists = run(wh, f"CREATE TABLE IF NOT EXISTS {name} (id INT) STORED AS ORC")
    assert exists.messages == [f"table {name} already exists"]
    with pytest.raises(AlreadyExistsError):
        run(wh, f"CREATE TABLE {name} (id INT)")
    run(wh, f"CREATE TABLE {db}.plain (id INT) TBLPROPERTIES ('transactional'='false')")  # a plain ORC table
    assert not wh.table(f"{db}.plain").is_transactional
    with pytest.raises(InvalidInputError, match="insert_only2"):
        run(wh, f"CREATE TABLE {db}.bad (id INT) TBLPROPERTIES ('transactional_properties'='insert_only2')")
    assert not wh.metastore.catalog.table_exists(db, "bad")

    plain = run(wh, f"DESCRIBE {name}")
    assert plain.columns == ["col_name", "data_type", "comment"]
    assert plain.rows[:4] == [["id", "int", "order id"], ["amount", "decimal(10,2)", ""], ["tags", "array<string>", ""],
                              ["ds", "string", ""]]
    assert plain.rows[4:] == [["", "", ""], ["# Partition Information", "", ""], ["# col_name", "data_type", "comment"],
                              ["ds", "string", ""]]
    formatted = {r[0]: r[1] for r in run(wh, f"DESCRIBE FORMATTED {name}").rows if r[0]}
    assert formatted["Database:"] == db and formatted["Location:"] == info.location
    assert formatted["Num Buckets:"] == "4" and formatted["Bucket Columns:"] == "[id]"
    assert formatted["Table Type:"] == "MANAGED_TABLE"
    params = {r[1]: r[2] for r in run(wh, f"DESCRIBE FORMATTED {name}").rows if r[0] == "" and r[1]}
    assert params["transactional"] == "true" and params["bucketing_version"] == "2"

    run(wh, f"ALTER TABLE {name} SET TBLPROPERTIES ('compactorthreshold.hive.compactor.delta.num.threshold'='3')")
    run(wh, f"ALTER TABLE {name} UNSET TBLPROPERTIES ('no_auto_compaction')")
    info = wh.table(name)
    assert info.property("compactorthreshold.hive.compactor.delta.num.threshold") == "3"
    assert info.property("no_auto_compaction") is None
    assert run(wh, f"ALTER TABLE {name} UNSET TBLPROPERTIES IF EXISTS ('no_auto_compaction')").messages == \
        [f"table {name}: nothing to change"]
    with pytest.raises(InvalidInputError, match="has no property 'no_auto_compaction'; use UNSET TBLPROPERTIES IF"):
        run(wh, f"ALTER TABLE {name} UNSET TBLPROPERTIES ('no_auto_compaction')")
    with pytest.raises(InvalidInputError, match="delta.num.threshold='many' is not an integer"):
        run(wh, f"ALTER TABLE {name} SET TBLPROPERTIES ('compactorthreshold.hive.compactor.delta.num.threshold'="
                "'many')")
    with pytest.raises(InvalidInputError, match="cannot be turned into a non-transactional"):
        run(wh, f"ALTER TABLE {name} SET TBLPROPERTIES ('transactional'='false')")

    wh.metastore.catalog.add_partition(db, "orders", {"ds": "x"})
    assert run(wh, f"ALTER TABLE {name} PARTITION (ds='x') SET TBLPROPERTIES ('no_cleanup'='true')").messages == \
        [f"partition ds=x of {name}: set no_cleanup=true"]
    described = run(wh, f"DESCRIBE FORMATTED {name} PARTITION (ds='x')").rows
    assert ["Partition Value:", "[x]", ""] in described and ["", "no_cleanup", "true"] in described
    run(wh, f"ALTER TABLE {name} PARTITION (ds='x') UNSET TBLPROPERTIES ('no_cleanup')")
    assert wh.metastore.catalog.get_partition(db, "orders", "ds=x").param("no_cleanup") is None
    with pytest.raises(NoSuchObjectError, match="partition ds=nope"):
        run(wh, f"DESCRIBE {name} PARTITION (ds='nope')")
    with pytest.raises(NoSuchObjectError):
        run(wh, f"DESCRIBE {db}.nosuch")


def test_non_transactional_table_cannot_be_compacted(wh):
    table = f"st.{unique('nt')}"
    wh.create_table(table, COLUMNS)
    make_non_transactional(wh, table)  # as a table Hive created without TBLPROPERTIES ('transactional'='true')
    with pytest.raises(NotTransactionalError, match="not transactional"):
        run(wh, f"ALTER TABLE {table} COMPACT 'major'")
    assert run(wh, f"DESCRIBE {table}").rows[0] == ["id", "int", ""]
