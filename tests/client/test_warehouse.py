"""The client API: the seed's UPDATE and MERGE examples byte for byte, tables, statements, partitions, buckets,
insert-only tables, locks and TXN_COMPONENTS, and bad input that leaves nothing behind."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyorc
import pytest
import sqlalchemy as sa

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.codes import LockType
from airflow_acid.acid.event_reader import read_event_file
from airflow_acid.client.bucketing import assign_buckets
from airflow_acid.client.errors import (
    NotTransactionalError,
    SchemaMismatchError,
    TransactionClosedError,
    UnsupportedOperationError,
)
from airflow_acid.client.predicates import source
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.schema import COMPLETED_TXN_COMPONENTS, TABLE_PARAMS, TBLS, TXN_COMPONENTS
from tests.warehouse_support import EMPLOYEE, SEED_ROWS, tree

B0 = 536870912  # BucketCodec V1: bucket 0, statement 0


def _rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def _user_metadata(path) -> dict[str, str]:
    with open(path, "rb") as fh:
        return {k: v.decode() for k, v in pyorc.Reader(fh).user_metadata.items()}


def _employee(wh):
    wh.create_table("employee", EMPLOYEE)
    with wh.transaction() as txn:
        txn.insert("employee", SEED_ROWS)
    return wh.table("employee")


def test_seed_example_a_insert_then_update(warehouse, tmp_path):
    info = _employee(warehouse)
    with warehouse.transaction() as txn:
        result = txn.update("employee", set={"salary": 7000}, where=pc.field("id") == 2)
    assert (result.write_id, result.statement_ids, result.rows) == (2, (0,), 1)
    root = tmp_path / "wh" / "employee"
    assert info.location == str(root)
    assert tree(root) == [
        "delete_delta_0000002_0000002_0000/_orc_acid_version", "delete_delta_0000002_0000002_0000/bucket_00000",
        "delta_0000001_0000001_0000/_orc_acid_version", "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000002_0000002_0000/_orc_acid_version", "delta_0000002_0000002_0000/bucket_00000",
    ]
    inserted = read_event_file(str(root / "delta_0000001_0000001_0000/bucket_00000")).to_pylist()
    assert [(e["operation"], e["originalTransaction"], e["bucket"], e["rowId"], e["currentTransaction"])
            for e in inserted] == [(0, 1, B0, 0, 1), (0, 1, B0, 1, 1), (0, 1, B0, 2, 1)]
    assert [e["row"] for e in inserted] == [dict(zip(("id", "name", "salary"), r)) for r in SEED_ROWS]
    deleted = read_event_file(str(root / "delete_delta_0000002_0000002_0000/bucket_00000")).to_pylist()
    assert deleted == [{"operation": 2, "originalTransaction": 1, "bucket": B0, "rowId": 1,
                        "currentTransaction": 2, "row": None}]
    new = read_event_file(str(root / "delta_0000002_0000002_0000/bucket_00000")).to_pylist()
    assert new == [{"operation": 0, "originalTransaction": 2, "bucket": B0, "rowId": 0, "currentTransaction": 2,
                    "row": {"id": 2, "name": "Tom", "salary": 7000}}]
    assert (root / "delta_0000002_0000002_0000/_orc_acid_version").read_bytes() == b"2"
    meta = _user_metadata(root / "delete_delta_0000002_0000002_0000/bucket_00000")
    assert meta == {"hive.acid.key.index": f"1,{B0},1;", "hive.acid.stats": "0,0,1", "hive.acid.version": "2"}
    meta = _user_metadata(root / "delta_0000001_0000001_0000/bucket_00000")
    assert meta["hive.acid.key.index"] == f"1,{B0},2;" and meta["hive.acid.stats"] == "3,0,0"
    assert _rows(warehouse.read("employee")) == [
        {"id": 1, "name": "Jerry", "salary": 5000}, {"id": 2, "name": "Tom", "salary": 7000},
        {"id": 3, "name": "Kate", "salary": 6000}]


def test_seed_example_b_merge(warehouse, tmp_path):
    _employee(warehouse)
    with warehouse.transaction() as txn:
        result = txn.merge("employee", [(2, "Tom", 7000), (4, "Mary", 9000)], on="id",
                           when_matched_update=["salary"], when_not_matched_insert=True)
    assert (result.write_id, result.statement_ids, result.inserted, result.deleted) == (2, (0, 1), 2, 1)
    root = tmp_path / "wh" / "employee"
    assert sorted({p.split("/")[0] for p in tree(root)}) == [
        "delete_delta_0000002_0000002_0001", "delta_0000001_0000001_0000", "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001"]
    b1 = bucket_codec.encode(0, 1)
    assert read_event_file(str(root / "delta_0000002_0000002_0000/bucket_00000")).to_pylist() == [
        {"operation": 0, "originalTransaction": 2, "bucket": B0, "rowId": 0, "currentTransaction": 2,
         "row": {"id": 4, "name": "Mary", "salary": 9000}}]
    assert read_event_file(str(root / "delete_delta_0000002_0000002_0001/bucket_00000")).to_pylist() == [
        {"operation": 2, "originalTransaction": 1, "bucket": B0, "rowId": 1, "currentTransaction": 2, "row": None}]
    assert read_event_file(str(root / "delta_0000002_0000002_0001/bucket_00000")).to_pylist() == [
        {"operation": 0, "originalTransaction": 2, "bucket": b1, "rowId": 0, "currentTransaction": 2,
         "row": {"id": 2, "name": "Tom", "salary": 7000}}]
    assert b1 == 536870913
    assert _rows(warehouse.read("employee")) == [
        {"id": 1, "name": "Jerry", "salary": 5000}, {"id": 2, "name": "Tom", "salary": 7000},
        {"id": 3, "name": "Kate", "salary": 6000}, {"id": 4, "name": "Mary", "salary": 9000}]


def test_merge_expressions_and_cardinality_check(warehouse, tmp_path):
    _employee(warehouse)
    with warehouse.transaction() as txn:
        txn.merge("employee", pa.table({"id": [1, 9], "bonus": [100, 50]}), on="id",
                  when_matched_update={"salary": pc.field("salary") + source("bonus")},
                  when_not_matched_insert={"id": source("id"), "name": "new", "salary": source("bonus")})
    assert _rows(warehouse.read("employee", columns=["id", "salary"])) == [
        {"id": 1, "salary": 5100}, {"id": 2, "salary": 8000}, {"id": 3, "salary": 6000}, {"id": 9, "salary": 50}]
    before = tree(tmp_path / "wh")
    with pytest.raises(SchemaMismatchError, match="cardinality"):
        with warehouse.transaction() as txn:
            txn.merge("employee", [(1, "a", 1), (1, "b", 2)], on="id", when_matched_update=True)
    assert tree(tmp_path / "wh") == before


def test_statements_in_one_transaction_see_each_other(warehouse, tmp_path):
    warehouse.create_table("employee", EMPLOYEE)
    with warehouse.transaction() as txn:
        assert txn.insert("employee", SEED_ROWS).statement_ids == (0,)
        assert txn.update("employee", set={"salary": pc.field("salary") * 2}, where={"name": "Kate"}).rows == 1
        assert txn.delete("employee", where=pc.field("id") == 1).statement_ids == (2,)
    assert _rows(warehouse.read("employee")) == [{"id": 2, "name": "Tom", "salary": 8000},
                                                {"id": 3, "name": "Kate", "salary": 12000}]
    dirs = sorted({p.split("/")[0] for p in tree(tmp_path / "wh" / "employee")})
    assert dirs == ["delete_delta_0000001_0000001_0001", "delete_delta_0000001_0000001_0002",
                    "delta_0000001_0000001_0000", "delta_0000001_0000001_0001"]


def test_inputs_pandas_arrow_dicts_and_reads_with_filter(warehouse):
    warehouse.create_table("employee", EMPLOYEE)
    with warehouse.transaction() as txn:
        txn.insert("employee", pd.DataFrame({"id": [1], "name": ["a"], "salary": [10]}))
        txn.insert("employee", pa.table({"ID": pa.array([2], pa.int64()), "name": ["b"], "salary": [20]}))
        txn.insert("employee", [{"id": 3, "name": None, "salary": 30}])
    assert warehouse.read("employee", filter=pc.field("salary") >= 20, columns=["id"]).to_pylist() == [
        {"id": 2}, {"id": 3}]
    assert warehouse.read("employee", filter={"name": None}).num_rows == 1


def test_partitioned_static_dynamic_and_cross_partition_statements(warehouse, tmp_path):
    warehouse.create_table("sales", [("id", "int"), ("amount", "double")], partition_by=[("ds", "string")])
    with warehouse.transaction() as txn:
        txn.insert("sales", [(1, 1.0), (2, 2.0)], partition={"ds": "d1"})
        txn.insert("sales", [{"id": 3, "amount": 3.0, "ds": "d2"}, {"id": 4, "amount": -4.0, "ds": "d3"}])
    assert [p.name for p in warehouse.list_partitions("sales")] == ["ds=d1", "ds=d2", "ds=d3"]
    with warehouse.transaction() as txn:
        res = txn.update("sales", set={"amount": 0.0}, where=pc.field("amount") < 2.5)
        assert sorted(res.partitions) == ["ds=d1", "ds=d3"]
        rows = warehouse.metastore.db.run(lambda c: c.execute(
            sa.select(TXN_COMPONENTS.c.TC_PARTITION, TXN_COMPONENTS.c.TC_OPERATION_TYPE)
            .where(TXN_COMPONENTS.c.TC_TXNID == txn.txn_id)).all())
        assert sorted(rows) == [("ds=d1", "u"), ("ds=d3", "u")]  # the table-level placeholder was replaced
        txn.delete("sales", where=(pc.field("ds") == "d2"))
    table = warehouse.read("sales")
    assert sorted(zip(*[table.column(c).to_pylist() for c in ("id", "amount", "ds")])) == [
        (1, 0.0, "d1"), (2, 0.0, "d1"), (4, 0.0, "d3")]
    assert warehouse.read("sales", partition={"ds": "d3"}).column("id").to_pylist() == [4]
    assert warehouse.read("sales", partition={"ds": "nope"}).num_rows == 0
    # projections of a partitioned table: data columns pushed into the merge, partition columns added after
    assert sorted(warehouse.read("sales", columns=["ds", "amount"]).to_pylist(), key=str) == [
        {"ds": "d1", "amount": 0.0}, {"ds": "d1", "amount": 0.0}, {"ds": "d3", "amount": 0.0}]
    assert sorted(warehouse.read("sales", columns=["ds"]).column("ds").to_pylist()) == ["d1", "d1", "d3"]
    assert "ds=d2/delete_delta_0000002_0000002_0001/bucket_00000" in tree(tmp_path / "wh" / "sales")
    done = warehouse.metastore.db.run(lambda c: c.execute(
        sa.select(COMPLETED_TXN_COMPONENTS.c.CTC_PARTITION, COMPLETED_TXN_COMPONENTS.c.CTC_WRITEID)).all())
    assert sorted(done) == [("ds=d1", 1), ("ds=d1", 2), ("ds=d2", 1), ("ds=d2", 2), ("ds=d3", 1), ("ds=d3", 2)]


def test_writes_take_hive4_default_locks_released_at_commit(warehouse):
    """hive.txn.xlock.write=true (Hive 4's default): INSERT takes SHARED_READ, UPDATE/DELETE EXCL_WRITE."""
    warehouse.create_table("employee", EMPLOYEE)
    with warehouse.transaction() as txn:
        txn.insert("employee", SEED_ROWS)
        locks = warehouse.metastore.locks.show_locks()
        assert [(lk.table, lk.lock_type, lk.transaction_id) for lk in locks] == [
            ("employee", LockType.SHARED_READ.name, txn.txn_id)]
    assert warehouse.metastore.locks.show_locks() == []
    with warehouse.transaction() as txn:
        txn.update("employee", set={"salary": 1}, where=pc.field("id") == 1)
        assert [lk.lock_type for lk in warehouse.metastore.locks.show_locks()] == [LockType.EXCL_WRITE.name]
    assert warehouse.metastore.locks.show_locks() == []


def test_bucketed_table_rows_land_in_their_murmur3_bucket(warehouse, tmp_path):
    warehouse.create_table("users", [("id", "bigint"), ("name", "string")], bucket_by=["id"], num_buckets=4)
    ids = list(range(40))
    with warehouse.transaction() as txn:
        txn.insert("users", [(i, f"u{i}") for i in ids])
    expected = assign_buckets(pa.table({"id": pa.array(ids, pa.int64())}), ["id"], ["bigint"], 4)
    root = tmp_path / "wh" / "users" / "delta_0000001_0000001_0000"
    for bucket in range(4):
        events = read_event_file(str(root / f"bucket_{bucket:05d}"))
        assert sorted(r["id"] for r in events.column("row").to_pylist()) == [
            i for i, b in zip(ids, expected) if b == bucket]
        assert set(events.column("bucket").to_pylist()) == {bucket_codec.encode(bucket, 0)}
        assert events.column("rowId").to_pylist() == list(range(events.num_rows))
    with warehouse.transaction() as txn:
        txn.update("users", set={"name": "x"}, where=pc.field("id") < 10)
        with pytest.raises(UnsupportedOperationError, match="bucket column"):
            txn.update("users", set={"id": 1})
    assert sorted(warehouse.read("users", filter=pc.field("name") == "x").column("id").to_pylist()) == list(range(10))


def test_insert_only_table_holds_plain_orc_and_refuses_updates(warehouse, tmp_path):
    warehouse.create_table("log", [("msg", "string")], transactional_properties="insert_only")
    with warehouse.transaction() as txn:
        txn.insert("log", [("a",), ("b",)])
    files = tree(tmp_path / "wh" / "log")
    assert files == ["delta_0000001_0000001_0000/000000_0"]
    plain = po.ORCFile(str(tmp_path / "wh" / "log" / files[0]))
    assert plain.schema.names == ["msg"]
    assert warehouse.read("log").column("msg").to_pylist() == ["a", "b"]
    with warehouse.transaction() as txn:
        with pytest.raises(UnsupportedOperationError, match="insert-only"):
            txn.delete("log", where={"msg": "a"})


def test_table_ddl_properties_and_drop(warehouse, tmp_path):
    info = warehouse.create_table("db1.t", pa.schema([("x", pa.int64()), ("y", pa.string())]),
                                  partition_by={"p": "int"})
    assert info.location == str(tmp_path / "wh" / "db1.db" / "t")
    assert info.property("transactional") == "true" and info.property("bucketing_version") == "2"
    assert warehouse.alter_table_properties("db1.t", {"no_auto_compaction": "true"}).property(
        "no_auto_compaction") == "true"
    with warehouse.transaction() as txn:
        txn.insert("db1.t", [(1, "a")], partition={"p": 7})
    assert warehouse.read("db1.t").to_pylist() == [{"x": 1, "y": "a", "p": 7}]
    warehouse.drop_table("db1.t")
    assert not (tmp_path / "wh" / "db1.db" / "t").exists()
    assert warehouse.list_tables("db1") == []


# --- bad input: a clear error and nothing left behind --------------------------------------------------


@pytest.mark.parametrize("rows, message", [
    ([(1, "a", "lots")], "row 0, column salary"),
    ([(1, "a")], "row 0 has 2 values"),
    ([{"id": 1, "name": "a"}], "lacks column.*salary"),
    ([{"id": 1, "name": "a", "salary": 1, "bonus": 2}], "column 'bonus'"),
    (pa.table({"id": ["x"], "name": ["a"], "salary": [1]}), "column id expects int32"),
    ("not rows", "must be a list of rows"),
])
def test_rows_that_do_not_fit_the_schema(warehouse, tmp_path, rows, message):
    warehouse.create_table("employee", EMPLOYEE)
    with warehouse.transaction() as txn:
        with pytest.raises(SchemaMismatchError, match=message):
            txn.insert("employee", rows)
        txn.insert("employee", SEED_ROWS[:1])  # a rejected statement leaves the transaction usable
    assert warehouse.read("employee").num_rows == 1
    assert tree(tmp_path / "wh") == ["employee/delta_0000001_0000001_0000/_orc_acid_version",
                                     "employee/delta_0000001_0000001_0000/bucket_00000"]


def test_unknown_partition_keys_and_bad_predicates(warehouse, tmp_path):
    warehouse.create_table("sales", [("id", "int")], partition_by=[("ds", "string")])
    warehouse.create_table("plain", [("id", "int")])
    with pytest.raises(SchemaMismatchError):
        with warehouse.transaction() as txn:
            with pytest.raises(InvalidInputError, match="unknown key 'day'"):
                txn.insert("sales", [(1,)], partition={"day": "d1"})
            with pytest.raises(InvalidInputError, match="not partitioned"):
                txn.insert("plain", [(1,)], partition={"ds": "d1"})
            with pytest.raises(SchemaMismatchError, match="partition=|partition column"):
                txn.insert("sales", [(1,)])
            txn.delete("sales", where=pc.field("nope") == 1)
    assert tree(tmp_path / "wh") == []
    assert warehouse.list_partitions("sales") == []


def test_non_transactional_table_is_refused(warehouse, tmp_path):
    warehouse.create_table("legacy", [("id", "int")])

    def make_plain(conn):  # a table registered by another tool without transactional=true
        tbl_id = conn.execute(sa.select(TBLS.c.TBL_ID).where(TBLS.c.TBL_NAME == "legacy")).scalar_one()
        conn.execute(sa.update(TABLE_PARAMS).where(TABLE_PARAMS.c.TBL_ID == tbl_id,
                                                   TABLE_PARAMS.c.PARAM_KEY == "transactional")
                     .values(PARAM_VALUE="false"))

    warehouse.metastore.db.run(make_plain)
    with warehouse.transaction() as txn:
        with pytest.raises(NotTransactionalError, match="default.legacy is not transactional"):
            txn.insert("legacy", [(1,)])
    with pytest.raises(NotTransactionalError):
        warehouse.read("legacy")
    assert tree(tmp_path / "wh") == []


def test_closed_transaction_cannot_be_reused(warehouse):
    warehouse.create_table("employee", EMPLOYEE)
    with warehouse.transaction() as txn:
        txn.insert("employee", SEED_ROWS)
    for action in (lambda: txn.insert("employee", SEED_ROWS), lambda: txn.delete("employee"), txn.commit,
                   txn.abort):
        with pytest.raises(TransactionClosedError, match=f"transaction {txn.txn_id} is already committed"):
            action()
    assert warehouse.read("employee").num_rows == 3


def test_exception_in_block_aborts_and_removes_files(warehouse, tmp_path):
    _employee(warehouse)
    before = tree(tmp_path / "wh")
    with pytest.raises(RuntimeError, match="boom"):
        with warehouse.transaction() as txn:
            txn.insert("employee", [(9, "x", 1)])
            txn.delete("employee", where={"id": 1})
            assert len(tree(tmp_path / "wh")) == len(before) + 4  # files are in place before commit
            raise RuntimeError("boom")
    assert txn.state == "aborted"
    assert tree(tmp_path / "wh") == before
    assert warehouse.metastore.txns.txn_state(txn.txn_id).value == "a"
    assert len(warehouse.read("employee")) == 3


def test_read_sees_a_partition_created_by_a_txn_committed_before_its_snapshot(empty_db_url, tmp_path):
    """A reader used to list the partitions before taking its snapshot: a writer that added a partition and
    committed in between was in the snapshot, but its partition was never read."""
    from airflow_acid.client.warehouse import AcidWarehouse

    wh = AcidWarehouse(empty_db_url, tmp_path / "wh")
    try:
        info = wh.create_table("db.t", [("k", "int")], partition_by=[("p", "string")])
        with wh.transaction() as txn:
            txn.insert("db.t", [{"k": 1, "p": "a"}])
        txns, open_txn = wh.metastore.txns, wh.metastore.txns.open_txn
        writer: dict[str, int] = {}

        def open_txn_after_a_writer_committed(**kwargs):  # the reader listed partitions just before this call
            txns.open_txn = open_txn
            with wh.transaction() as other:
                other.insert("db.t", [{"k": 2, "p": "b"}])
            writer["txn"] = other.txn_id
            return open_txn(**kwargs)

        txns.open_txn = open_txn_after_a_writer_committed
        with wh.read_snapshot(info) as snap:
            assert snap.txns.is_txn_valid(writer["txn"])
            rows = [r for t in snap.targets for r in wh.io.read_partition(info, t, snap.write_ids, snap.txns).to_pylist()]
        assert sorted(r["k"] for r in rows) == [1, 2]
        assert [t.name for t in snap.targets] == ["p=a", "p=b"]
    finally:
        wh.close()


def test_timestamps_over_hives_full_range_insert_update_read(warehouse):
    """Hive's timestamp range 0001-01-01 … 9999-12-31 (outside 1677–2262 read at microseconds), nested too."""
    import datetime as dt

    warehouse.create_table("ts", [("id", "int"), ("t", "timestamp"), ("s", "struct<t:timestamp,d:date>")])
    low, high = dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    with warehouse.transaction() as txn:
        txn.insert("ts", [(1, low, {"t": high, "d": dt.date(1, 1, 1)}), (2, dt.datetime(2000, 1, 1), None)])
    with warehouse.transaction() as txn:
        txn.update("ts", set={"id": 10}, where=pc.field("id") == 1)
    rows = sorted(warehouse.read("ts").to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 2, "t": dt.datetime(2000, 1, 1), "s": None},
                    {"id": 10, "t": low, "s": {"t": high, "d": dt.date(1, 1, 1)}}]
    assert warehouse.read("ts").schema.field("t").type == pa.timestamp("us")
    warehouse.create_table("ns", [("t", "timestamp")])  # all values inside 1677–2262: Hive's nanoseconds kept
    with warehouse.transaction() as txn:
        txn.insert("ns", pa.table({"t": pa.array([1], pa.timestamp("ns"))}))
    assert warehouse.read("ns").column("t").combine_chunks() == pa.array([1], pa.timestamp("ns"))
