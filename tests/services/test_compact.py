"""request_compaction / wait_for_compactions: ALTER TABLE … COMPACT semantics (direct enqueue, refusal, Hive 4
per-partition thresholds without PARTITION, pools) and AND WAIT polling until a worker has done the work."""

from __future__ import annotations

import pytest

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.errors import InvalidInputError, NoSuchObjectError
from airflow_acid.services import CompactionWaitTimeout, request_compaction, wait_for_compactions
from airflow_acid.services.compact import FIRST_POLL_S, MAX_POLL_S
from airflow_acid.spark.runners import LocalRunner
from tests.services.support import COLUMNS, inserts, unique


def test_direct_request_refusal_and_pools(wh):
    table = f"ops.{unique('cmp')}"
    wh.create_table(table, COLUMNS, properties={"hive.compactor.worker.pool": "etl"})
    inserts(wh, table, batches=1)
    [first] = request_compaction(wh, table, compaction_type="MINOR",
                                 properties={"compactor.mapreduce.map.memory.mb": 2048})
    assert (first.type, first.state, first.message) == ("MINOR", "initiated",
                                                        f"Compaction enqueued with id {first.compaction_id}")
    row = wh.metastore.compactions.get(first.compaction_id)
    assert row.pool_name == "etl" and row.properties == {"compactor.mapreduce.map.memory.mb": "2048"}
    [again] = request_compaction(wh, table, compaction_type="major", pool="other")
    assert (again.compaction_id, again.state) == (None, "refused")
    assert again.message == f"Compaction is already scheduled with state='initiated' and id={first.compaction_id}"


def test_partitioned_table_without_partition_uses_the_thresholds(wh):
    table = f"ops.{unique('cmp')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")],
                    properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    inserts(wh, table, {"ds": "a"}, batches=2)
    inserts(wh, table, {"ds": "b"}, batches=1)
    a, b = request_compaction(wh, table, compaction_type="minor", pool=unique("pool"))
    assert (a.partition, a.type, a.state) == ("ds=a", "MAJOR", "initiated") and a.compaction_id > 0
    assert (b.partition, b.type, b.state, b.compaction_id) == ("ds=b", None, "not needed", None)
    assert "1 current delta(s) ≤" in b.message
    [named] = request_compaction(wh, table, {"ds": "b"}, "minor")
    assert (named.partition, named.type, named.state) == ("ds=b", "MINOR", "initiated")


def test_errors_queue_nothing(wh):
    table = f"ops.{unique('cmp')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, table, {"ds": "a"}, batches=1)
    with pytest.raises(InvalidInputError, match="'rebalance' is not supported; use 'major' or 'minor'"):
        request_compaction(wh, table, "ds=a", "rebalance")
    with pytest.raises(InvalidInputError, match="request property 'mapreduce.x' is not understood"):
        request_compaction(wh, table, "ds=a", properties={"mapreduce.x": "1"})
    with pytest.raises(NoSuchObjectError, match="partition ds=zz"):
        request_compaction(wh, table, "ds=zz")
    with pytest.raises(InvalidInputError):
        request_compaction(wh, table, {"hr": "1"})
    with pytest.raises(NoSuchObjectError):
        request_compaction(wh, "ops.nosuch")
    assert wh.metastore.compactions.find(db="ops", table=table.split(".")[1]) == []


def test_wait_until_a_worker_compacted_it(wh):
    table = f"ops.{unique('cmp')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=2)
    pool = unique("pool")
    [queued] = request_compaction(wh, table, compaction_type="major", pool=pool)
    sleeps: list[float] = []

    def worker_runs_while_we_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            Worker(wh.metastore, runner=LocalRunner()).run_next(pool)

    final = wait_for_compactions(wh.metastore, [queued.compaction_id], first_poll_s=0.5, max_poll_s=1.5,
                                 sleep=worker_runs_while_we_sleep)
    assert sleeps == [0.5, 1.0, 1.5]  # doubling, capped at hive.compactor.wait.timeout
    assert final[queued.compaction_id].state is CompactionState.READY_FOR_CLEANING


def test_wait_gives_up_after_the_timeout(wh):
    table = f"ops.{unique('cmp')}"
    wh.create_table(table, COLUMNS)
    [queued] = request_compaction(wh, table, compaction_type="major", pool=unique("pool"))
    clock = iter([0.0, 0.0, 1.0, 2.5, 3.0])
    sleeps: list[float] = []
    with pytest.raises(CompactionWaitTimeout, match=f"compaction\\(s\\) {queued.compaction_id} still waiting") as err:
        wait_for_compactions(wh.metastore, [queued.compaction_id], first_poll_s=1.0, timeout_s=2.5,
                             sleep=sleeps.append, clock=lambda: next(clock))
    assert err.value.pending == [queued.compaction_id] and sleeps == [1.0, 1.5]
    assert wh.metastore.compactions.get(queued.compaction_id).state is CompactionState.INITIATED


def test_wait_checks_often_enough_to_report_a_finished_compaction_within_seconds(wh):
    """AND WAIT's default polling: short first, doubling, never more than MAX_POLL_S between checks (Hive's cap,
    hive.compactor.wait.timeout = 300 s, reported minutes after the compaction ended)."""
    table = f"ops.{unique('cmp')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=2)
    pool = unique("pool")
    [queued] = request_compaction(wh, table, compaction_type="major", pool=pool)
    sleeps: list[float] = []

    def worker_runs_late(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 9:
            Worker(wh.metastore, runner=LocalRunner()).run_next(pool)

    final = wait_for_compactions(wh.metastore, [queued.compaction_id], sleep=worker_runs_late)
    assert sleeps[0] == FIRST_POLL_S <= 0.5 and max(sleeps) == MAX_POLL_S <= 5.0
    assert sleeps[:5] == [FIRST_POLL_S * 2 ** i for i in range(5)] and sleeps[-1] == MAX_POLL_S
    assert final[queued.compaction_id].state is CompactionState.READY_FOR_CLEANING
@pytest.mark.parametrize(("batches", "ctype", "reason"), [
    (1, "minor", "minor compaction needs more than one current delta; found 1"),
    (1, "major", "major compaction needs original files or more than one of base + current deltas; found no base "
                 "and 1 current delta(s)"),
    (0, "major", "found no base and 0 current delta(s)"),
])
def test_request_is_not_queued_when_the_worker_would_refuse_it(wh, batches, ctype, reason):
    """queue_anyway=False (the DAG's and the console's requests): what the Worker would refuse is not queued, with
    the Worker's own reason; queued anyway, the Worker does refuse it — the check and the Worker agree."""
    table = f"ops.{unique('pre')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=batches)
    [checked] = request_compaction(wh, table, compaction_type=ctype, queue_anyway=False)
    assert (checked.compaction_id, checked.state, checked.type) == (None, "not queued", ctype.upper())
    assert reason in checked.message and "queue anyway" in checked.message.lower()
    assert wh.metastore.compactions.find(db="ops", table=table.split(".")[1]) == []

    [queued] = request_compaction(wh, table, compaction_type=ctype)  # Hive's behaviour: queued regardless
    assert queued.state == "initiated"
    [outcome] = Worker(wh.metastore, runner=LocalRunner()).claim_and_compact([queued.compaction_id])[0]
    assert outcome.status == "refused" and reason in (outcome.message or "")
    assert wh.metastore.compactions.get(queued.compaction_id).state is CompactionState.REFUSED


def test_request_check_lets_through_what_the_worker_would_do(wh):
    """Enough deltas, or only the Cleaner's work left (the Worker then hands the row to the Cleaner): queued."""
    table = f"ops.{unique('pre')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=2)
    [minor] = request_compaction(wh, table, compaction_type="minor", queue_anyway=False)
    assert minor.state == "initiated" and minor.compaction_id is not None
    [duplicate] = request_compaction(wh, table, compaction_type="major", queue_anyway=False)
    assert (duplicate.state, duplicate.existing_id) == ("refused", minor.compaction_id)


def test_requester_id_names_the_surface_and_the_user():
    import socket

    from airflow_acid.services import requester_id

    host = socket.gethostname()
    assert requester_id("dag", "alice") == f"{host}-dag:alice"
    assert requester_id("ui", "bob smith/x") == f"{host}-ui:bob_smith_x"
    assert requester_id("dag", None) == f"{host}-dag"
    assert len(requester_id("ui", "u" * 500)) == 128
