"""REBALANCE through Spark (issue 16 item 2): the 25k-row Trino nation partition with two delete deltas, rebalanced
into 4 buckets ordered by a column in the shared SparkSession — one lean end-to-end check that the rebalance unit
ships to an executor and its output is a valid base (the spreading rules are tested in-process in
tests/compactor/test_rebalance.py)."""

from __future__ import annotations

import shutil

import pytest

from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.submit import run_plan_in_session
from tests.spark.helpers import check_acid_output, compactor_snapshot, plan_one, rows_with_ids, snapshot

pytestmark = pytest.mark.slow


def test_rebalance_in_a_shared_session(spark, interop, tmp_path):
    src, loc = interop / "trino-nation-25k-with-delete-deltas", tmp_path / "p"
    (loc / "delta_0000002_0000002_0000").mkdir(parents=True)
    shutil.copy(src / "nationFile25kRowsSortedOnNationKey/bucket_00000", loc / "delta_0000002_0000002_0000")
    for d in ("delete_delta_0000003_0000003_0000", "delete_delta_0000004_0000004_0000"):
        shutil.copytree(src / "nation_delete_deltas" / d, loc / d)
    before = sorted(r[3:] for r in rows_with_ids(str(loc), snapshot(4)))  # the rows, without their ROW__IDs

    plan = plan_one(str(loc), "rebalance", 40, compactor_snapshot(4), number_of_buckets=4, order_by=[("n_name", True)])
    result = run_plan_in_session(CompactionPlan((plan,)), spark).by_id()["1"]
    assert result.status == JobStatus.SUCCEEDED, result.error
    assert result.outputs == ["base_0000004_v0000040"] and result.rows_out == 23000 and result.files == 4
    assert check_acid_output(str(loc), "base_0000004_v0000040") == 23000
    after = rows_with_ids(str(loc), snapshot(4))
    assert sorted(r[3:] for r in after) == before
    assert sorted(r[2] for r in after) == list(range(23000))  # new rowIds 0..n-1
    assert {r[0] for r in after} == {2}  # the highest write id of the rows (ORDER BY)
