"""Cost-aware fair scheduling (issue 19 item 2): one huge partition and many small ones compete for a run's
budget — small ones are not starved, the huge one is not starved either (aging), and the budget is never exceeded."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_acid.acid.codes import CompactionType
from airflow_acid.compactor.scheduling import priority_weights, schedule, schedule_queue
from airflow_acid.config import Budgets, InvalidSettingError, budgets_from_mapping
from tests.compactor.initiator_support import (
    synthetic_write,
    warehouse_on,
)

KB = 1024
RUN_S = 600  # one compaction DAG run every 10 minutes
ARRIVALS = 40  # small partitions queued per run


@pytest.fixture
def queue(tmp_path):
    """A huge partition (one big base + one small delta: little to gain per byte) and a small one (five small
    deltas: much to gain per byte), both queued; returns (warehouse, huge row, small row)."""
    wh = warehouse_on(f"sqlite:///{tmp_path / 'metastore.db'}", tmp_path / "wh")
    info = wh.create_table("db.t", [("id", "int")], partition_by=[("ds", "string")])
    ms = wh.metastore
    for part in ("huge", "small"):
        ms.catalog.add_partition("db", "t", {"ds": part})
    huge = f"{info.location}/ds=huge"
    synthetic_write(ms, huge, "db", "t", "ds=huge", kind="base", size=600 * KB)
    synthetic_write(ms, huge, "db", "t", "ds=huge", size=2 * KB)
    for _ in range(5):
        synthetic_write(ms, f"{info.location}/ds=small", "db", "t", "ds=small", size=4 * KB)
    ids = [ms.compactions.enqueue("db", "t", p, CompactionType.MAJOR).id for p in ("ds=huge", "ds=small")]
    yield wh, ids
    wh.close()


def _simulate(huge, small, budgets: Budgets, runs: int):
    """Runs of the compaction DAG: each run ARRIVALS new small rows arrive, the schedule admits within the budget,
    admitted rows leave the queue. Returns (run of the huge row or None, waits of small rows in runs, totals)."""
    waiting = [huge]
    next_id, huge_ran, waits, totals = 1000, None, [], []
    for run in range(runs):
        now = huge.enqueue_time + (run + 1) * RUN_S * 1000
        for _ in range(ARRIVALS):
            waiting.append(dataclasses.replace(small, compaction_id=next_id, enqueue_time=now - 1000))
            next_id += 1
        plan = schedule(waiting, budgets, now)
        totals.append(plan.totals())
        for item in plan.admitted:
            if item.preview is huge:
                huge_ran = run
            else:
                waits.append((now - item.preview.enqueue_time) / 1000 / RUN_S)
        admitted = {id(i.preview) for i in plan.admitted}
        waiting = [p for p in waiting if id(p) not in admitted]
    return huge_ran, waits, totals, waiting


def test_huge_and_small_partitions_share_the_budget_fairly(queue):
    wh, (huge_id, small_id) = queue
    budgets = Budgets(bytes_per_run=1000 * KB, aging_s=RUN_S)
    first = schedule_queue(wh.metastore, budgets)
    by_id = {i.preview.compaction_id: i for i in first.items}
    huge, small = by_id[huge_id].preview, by_id[small_id].preview
    # the estimates come from the listing: bytes and files to read, benefit of each
    assert huge.estimate.bytes_in == 602 * KB and huge.estimate.files_in == 2
    assert small.estimate.bytes_in == 20 * KB and small.estimate.deltas_removed == 5
    assert small.estimate.benefit_per_cost > huge.estimate.benefit_per_cost
    assert [i.preview.compaction_id for i in first.admitted] == [small_id, huge_id]  # best ratio first; both fit

    huge_ran, waits, totals, left = _simulate(huge, small, budgets, runs=30)
    assert all(b <= budgets.bytes_per_run for b, _ in totals)  # never exceeded
    assert huge_ran is not None and huge_ran <= 10  # aging: the huge partition gets its turn
    assert max(waits) <= 2  # and the small ones are not starved meanwhile
    assert len(left) <= ARRIVALS * 2  # the queue stays bounded

    # without aging the huge partition would starve behind the stream of small ones (the test can fail)
    starved, _, _, _ = _simulate(huge, small, dataclasses.replace(budgets, aging_s=1e12), runs=30)
    assert starved is None


def test_budgets_per_table_pool_and_core_seconds_and_oversize_rows(queue):
    wh, (huge_id, small_id) = queue
    plans = {i.preview.compaction_id: i.preview for i in schedule_queue(wh.metastore, Budgets()).items}
    huge, small = plans[huge_id], plans[small_id]
    many = [dataclasses.replace(small, compaction_id=100 + k, table=f"t{k % 2}", pool="etl" if k % 3 else None,
                                enqueue_time=0) for k in range(30)]
    plan = schedule(many, Budgets(bytes_per_table=100 * KB), 1000)
    for table in ("t0", "t1"):
        assert plan.totals(lambda i, t=table: i.preview.table == t)[0] <= 100 * KB
    assert len(plan.admitted) == 10 and all(i.held and "table" in i.held for i in plan.held)
    plan = schedule(many, Budgets(bytes_per_pool=60 * KB), 1000)
    assert plan.totals(lambda i: i.preview.pool == "etl")[0] <= 60 * KB and len(plan.admitted) == 6
    seconds = small.estimate.core_seconds
    plan = schedule(many, Budgets(core_seconds_per_run=seconds * 4.5), 1000)
    assert len(plan.admitted) == 4 and plan.totals()[1] <= seconds * 4.5
    plan = schedule([huge, small], Budgets(bytes_per_run=100 * KB), 1000)
    assert [i.preview.compaction_id for i in plan.admitted] == [small_id]
    assert "on its own" in plan.held[0].held  # never admitted: the budget is never exceeded
    assert "exceeds the budget of 100.0 KiB per run" in plan.held[0].held  # sizes as the console writes them
    assert priority_weights(plan.admitted + plan.held) == [2, 1]


def test_budget_settings():
    budgets = budgets_from_mapping({"compaction_budget_bytes": "10gb", "compaction_budget_core_seconds": "3600",
                                    "compaction_budget_table_bytes": "512m", "compaction_aging": "30m",
                                    "compaction_budget_pool_bytes": ""})
    assert budgets == Budgets(bytes_per_run=10 * 1024 ** 3, core_seconds_per_run=3600.0,
                              bytes_per_table=512 * 1024 ** 2, aging_s=1800.0)
    assert budgets_from_mapping({}) == Budgets()
    for bad in ({"compaction_budget_bytes": "lots"}, {"compaction_budget_bytes": "-1"}, {"compaction_aging": "0"}):
        with pytest.raises(InvalidSettingError, match="compaction"):
            budgets_from_mapping(bad)
