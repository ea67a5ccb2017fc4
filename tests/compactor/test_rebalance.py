"""REBALANCE compaction (issue 16 item 2): requested only by ALTER TABLE … COMPACT 'rebalance' [CLUSTERED INTO n
BUCKETS] [ORDER BY …] (never by the Initiator), stored in CQ_NUMBER_OF_BUCKETS / CQ_ORDER_BY, run by the Worker in a
REBALANCE_COMPACTION txn holding EXCL_WRITE, written as base_N_vC with rows spread evenly over N bucket files and new
ROW__IDs — on SQLite, PostgreSQL and MariaDB; the spreading itself checked against a model."""

from __future__ import annotations

import math
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.codes import CompactionState, CompactionType, DataOperation, LockType, TxnType
from airflow_acid.acid.fs import ListedFile
from airflow_acid.acid.names import parse_dir
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.planner import NothingToCompact, compose_compaction
from airflow_acid.compactor.worker import Worker
from airflow_acid.job.errors import PlanError
from airflow_acid.job.plan import CompactionPlan, format_order_by, parse_order_by
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.locks import lock_component_for, lock_type_for
from airflow_acid.spark.rebalance import rebalanced_events
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.statements import StatementExecutor, parse_statement
from airflow_acid.statements.errors import StatementSyntaxError
from tests.services.support import COLUMNS, inserts, unique

ROW_SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])


def run(wh, text: str):
    return StatementExecutor(wh).run(parse_statement(text))


def _merged(ids: list[int | None], write_ids: list[int]) -> pa.Table:
    n = len(ids)
    return pa.table({"originalTransaction": pa.array(write_ids, pa.int64()),
                     "bucket": pa.array([bucket_codec.encode(i % 3) for i in range(n)], pa.int32()),
                     "rowId": pa.array(range(n), pa.int64()), "id": pa.array(ids, pa.int32()),
                     "name": pa.array([f"n{i}" for i in range(n)])})


# --- the spreading, against a model -------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-50, 50)), max_size=40), st.integers(1, 6),
       st.sampled_from([(), (("id", False),), (("id", True),)]))
def test_rows_spread_evenly_with_new_row_ids(ids, buckets, order_by):
    write_ids = [1 + i // 7 for i in range(len(ids))]
    merged = _merged(ids, write_ids)
    files = rebalanced_events(merged, ROW_SCHEMA, buckets, order_by)
    assert len(files) == buckets
    per = max(1, math.ceil(len(ids) / buckets))
    events = pa.concat_tables(files)
    # Model: Hive's row_number() over (ORDER BY … | ORDER BY ROW__ID) - 1 is the rowId; bucket = rowId DIV
    # ceil(rows / N); NULLs first ascending, last descending; ties keep ROW__ID order.
    order = sorted(range(len(ids)), key=lambda i: (write_ids[i], i % 3, i))
    if order_by:
        order = sorted(order, key=lambda i: (ids[i] is not None, ids[i] or 0), reverse=order_by[0][1])
        expected_writes = [max(write_ids, default=0)] * len(ids)
    else:
        expected_writes = [write_ids[i] for i in order]
    expected_ids = [ids[i] for i in order]
    assert [r["id"] for r in events.column("row").to_pylist()] == expected_ids
    assert events.column("originalTransaction").to_pylist() == expected_writes
    assert events.column("currentTransaction").to_pylist() == expected_writes
    assert events.column("rowId").to_pylist() == list(range(len(ids)))
    for b, table in enumerate(files):
        assert table.num_rows == max(0, min(per, len(ids) - b * per))
        assert set(table.column("bucket").to_pylist()) <= {bucket_codec.encode(b)}
    assert set(events.column("operation").to_pylist()) <= {0}


def test_order_by_text_round_trips_and_bad_text_is_refused():
    assert format_order_by([("a", True), ("b", False)]) == "ORDER BY a DESC, b ASC"
    assert parse_order_by("ORDER BY a DESC, b ASC") == (("a", True), ("b", False))
    assert parse_order_by("order by `x`") == (("x", False),)
    assert parse_order_by(None) == () and format_order_by([]) is None
    with pytest.raises(PlanError, match="not a list of column names"):
        parse_order_by("ORDER BY a + 1 DESC")


def test_rebalance_takes_excl_write_and_never_records_a_write():
    assert lock_type_for(DataOperation.REBALANCE) is LockType.EXCL_WRITE
    assert lock_type_for(DataOperation.COMPACT) is LockType.SHARED_READ
    assert lock_component_for(DataOperation.REBALANCE, "db", "t").operation.value == "s"


# --- statement → queue → worker → base_N_vC, on each backend ------------------------------------------------------


def _bucket_files(location: str, base: str) -> dict[str, pa.Table]:
    directory = os.path.join(location, base)
    return {f: po.read_table(os.path.join(directory, f)) for f in sorted(os.listdir(directory))
            if f.startswith("bucket_")}


class _Spy(LocalRunner):
    """Runs the plan in-process and notes the open compactor transactions and their locks while the job runs."""

    def __init__(self, wh) -> None:
        super().__init__()
        self.wh = wh
        self.txns: list[tuple[int, TxnType]] = []
        self.locks: list[tuple[int, str]] = []

    def run(self, plan, **kwargs):
        self.txns = [(t.txnid, t.txn_type) for t in self.wh.metastore.txns.show_transactions()
                     if t.txn_type in (TxnType.COMPACTION, TxnType.REBALANCE_COMPACTION)]
        mine = {t for t, _ in self.txns}
        self.locks = [(int(r.transaction_id), r.lock_type) for r in self.wh.metastore.locks.show_locks(None, None, None)
                      if r.transaction_id is not None and int(r.transaction_id) in mine]
        return super().run(plan, **kwargs)


def test_rebalance_statement_runs_through_the_worker(wh):
    table = f"rb.{unique('rb')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=3)
    with wh.transaction() as t:
        t.delete(table, where=pc.field("id") == 11)
    before = sorted(tuple(r.values()) for r in wh.read(table).to_pylist())

    result = run(wh, f"ALTER TABLE {table} COMPACT 'rebalance' CLUSTERED INTO 3 BUCKETS ORDER BY name DESC")
    [row] = result.records()
    assert (row["type"], row["state"]) == ("REBALANCE", "initiated")
    queued = wh.metastore.compactions.get(row["compactionid"])
    assert (queued.type, queued.number_of_buckets, queued.order_by) == (CompactionType.REBALANCE, 3,
                                                                       "ORDER BY name DESC")
    # CQ_ORDER_BY/CQ_NUMBER_OF_BUCKETS are shown to SHOW COMPACTIONS' filter by type too
    assert [r[0] for r in run(wh, f"SHOW COMPACTIONS {table} TYPE 'rebalance'").rows] == [queued.id]

    runner = _Spy(wh)
    outcome = Worker(wh.metastore, runner=runner, host="w1").run_next()
    assert outcome.status is WorkerStatus.COMPACTED, outcome.message
    done = wh.metastore.compactions.get(queued.id)
    assert done.state is CompactionState.READY_FOR_CLEANING
    assert (done.number_of_buckets, done.order_by) == (3, "ORDER BY name DESC")
    assert runner.txns == [(done.txn_id, TxnType.REBALANCE_COMPACTION)]
    assert runner.locks == [(done.txn_id, "EXCL_WRITE")]

    location = wh.table(table).location
    [base] = [d for d in os.listdir(location) if d.startswith("base_")]
    parsed = parse_dir(base)
    assert parsed is not None and parsed.visibility_txn_id == done.txn_id and parsed.write_id == 4
    files = _bucket_files(location, base)
    assert list(files) == ["bucket_00000", "bucket_00001", "bucket_00002"]
    assert [f.num_rows for f in files.values()] == [3, 3, 2]  # 8 rows: ceil(8 / 3) = 3 per bucket
    names = [r["name"] for f in files.values() for r in f.column("row").to_pylist()]
    assert names == sorted(names, reverse=True)
    assert [r for f in files.values() for r in f.column("rowId").to_pylist()] == list(range(8))
    assert {w for f in files.values() for w in f.column("originalTransaction").to_pylist()} == {3}
    assert sorted(tuple(r.values()) for r in wh.read(table).to_pylist()) == before


def test_rebalance_without_options_keeps_write_ids_and_bucket_count(wh):
    table = f"rb.{unique('rb')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, table, {"ds": "a"}, batches=2)
    with wh.transaction() as t:
        t.update(table, set={"name": "u"}, where=pc.field("id") == 1)
    before = wh.read(table).sort_by("id").to_pylist()
    [row] = run(wh, f"ALTER TABLE {table} PARTITION (ds='a') COMPACT 'rebalance'").records()
    queued = wh.metastore.compactions.get(row["compactionid"])
    assert (queued.number_of_buckets, queued.order_by) == (None, None)
    outcome = Worker(wh.metastore, runner=LocalRunner(), host="w1").run_next()
    assert outcome.status is WorkerStatus.COMPACTED, outcome.message
    location = wh.metastore.catalog.get_partition(*table.split("."), "ds=a").location
    [base] = [d for d in os.listdir(location) if d.startswith("base_")]
    files = _bucket_files(location, base)
    assert list(files) == ["bucket_00000"]  # the client writes one bucket id: N = 1
    events = files["bucket_00000"]
    assert events.column("rowId").to_pylist() == list(range(6))
    assert events.column("originalTransaction").to_pylist() == [1, 1, 2, 2, 2, 3]  # ROW__ID order, own write ids
    assert wh.read(table).sort_by("id").to_pylist() == before


def test_rebalance_is_refused_when_an_update_holds_the_table(wh):
    table = f"rb.{unique('rb')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=1)
    [row] = run(wh, f"ALTER TABLE {table} COMPACT 'rebalance'").records()
    writer = wh.transaction()
    try:
        writer.update(table, set={"name": "x"}, where=pc.field("id") == 1)  # SHARED_WRITE or EXCL_WRITE
        outcome = Worker(wh.metastore, runner=LocalRunner(), host="w1").run_next()
        assert outcome.status is WorkerStatus.FAILED
        assert "could not acquire the EXCL_WRITE lock" in outcome.message
        assert wh.metastore.compactions.get(row["compactionid"]).state is CompactionState.FAILED
    finally:
        writer.abort()


def test_rebalance_requests_hive_refuses(wh):
    db = unique("rbx")
    wh.create_table(f"{db}.bucketed", COLUMNS, bucket_by=["id"], num_buckets=2)
    wh.create_table(f"{db}.parted", COLUMNS, partition_by=[("ds", "string")])
    wh.create_table(f"{db}.plain", COLUMNS)
    with pytest.raises(InvalidInputError, match="is bucketed .*CLUSTERED BY id INTO 2 BUCKETS.*request MAJOR"):
        run(wh, f"ALTER TABLE {db}.bucketed COMPACT 'rebalance'")
    with pytest.raises(InvalidInputError, match="needs a partition"):
        run(wh, f"ALTER TABLE {db}.parted COMPACT 'rebalance'")
    with pytest.raises(InvalidInputError, match="has no column 'nope'; order by one of id, name"):
        run(wh, f"ALTER TABLE {db}.plain COMPACT 'rebalance' ORDER BY nope")
    with pytest.raises(StatementSyntaxError, match="only allowed for a 'rebalance' compaction"):
        run(wh, f"ALTER TABLE {db}.plain COMPACT 'major' CLUSTERED INTO 2 BUCKETS")
    assert wh.metastore.compactions.find(db=db) == []


def test_worker_refuses_a_queued_rebalance_of_a_bucketed_table(wh):
    """A row queued behind the statement's back (or before the table became bucketed) is refused, as Hive does."""
    table = f"rb.{unique('rb')}"
    wh.create_table(table, COLUMNS, bucket_by=["id"], num_buckets=2)
    inserts(wh, table, batches=1)
    cq = wh.metastore.compactions.enqueue(*table.split("."), None, CompactionType.REBALANCE).id
    outcome = Worker(wh.metastore, runner=LocalRunner(), host="w1").run_next()
    assert outcome.status is WorkerStatus.REFUSED and "is bucketed" in outcome.message
    assert wh.metastore.compactions.get(cq).state is CompactionState.REFUSED


def test_plan_round_trips_rebalance_options():
    files = [ListedFile("base_0000003_v0000009/bucket_00000", 100)]
    wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="db.t", high_watermark=3))
    state = get_acid_state(files, wil, ignore_empty_files=True)
    plan = compose_compaction(state, wil, 20, "rebalance", location="/x", compaction_id="1", number_of_buckets=4,
                           order_by=[("a", True)])
    assert plan.final_outputs == ("base_0000003_v0000020",)  # a base alone: same write id, C's visibility
    again = CompactionPlan.from_json(CompactionPlan((plan,)).to_json()).compactions[0]
    assert (again.type, again.number_of_buckets, again.order_by) == (CompactionType.REBALANCE, 4, (("a", True),))
    major = compose_compaction(state, wil, 20, "major", location="/x", compaction_id="1")
    assert isinstance(major, NothingToCompact) and major.reason.startswith("major compaction needs")
