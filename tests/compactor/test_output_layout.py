"""The Worker checks its own output's layout before it commits (issue 30 item 4): a job whose output holds a layout
another engine misreads — an attempt suffix in a delete delta, a _copy_N file, a nested directory — fails with the
finding's message, its transaction aborted, its output removed and the table's rows unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.spark.driver import execute_plan
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import acid_dirs, enqueue, hidden_dirs, history, new_table, rows


def _attempt_suffix(location: Path, outputs: list[str]) -> None:
    (delete,) = [o for o in outputs if o.startswith("delete_delta_")]
    os.rename(location / delete / "bucket_00000", location / delete / "bucket_00000_0")


def _copy_name(location: Path, outputs: list[str]) -> None:
    (delta,) = [o for o in outputs if o.startswith(("delta_", "base_"))]
    os.rename(location / delta / "bucket_00000", location / delta / "bucket_00000_copy_1")


def _nested(location: Path, outputs: list[str]) -> None:
    (delta,) = [o for o in outputs if o.startswith(("delta_", "base_"))]
    os.mkdir(location / delta / "HIVE_UNION_SUBDIR_1")
    os.rename(location / delta / "bucket_00000", location / delta / "HIVE_UNION_SUBDIR_1" / "bucket_00000")


class _LayoutBreakingRunner:
    """Runs the job, then rearranges its output files the way another writer would have left them."""

    def __init__(self, damage) -> None:
        self.damage = damage

    def run(self, plan, *, job_name, spark_conf):
        result = execute_plan(plan)
        for c in result.compactions:
            self.damage(Path(c.location), list(c.outputs))
        return result


@pytest.mark.parametrize(("kind", "damage", "expect"), [
    ("minor", _attempt_suffix, "a delete-delta bucket file with an attempt suffix (_0)"),
    ("minor", _copy_name, "a _copy_N file in the full-ACID directory"),
    ("major", _nested, "a sub-directory inside an ACID directory"),
])
def test_output_with_a_misread_layout_never_commits(sqlite_wh, kind, damage, expect):
    wh = sqlite_wh
    info = new_table(wh)
    history(wh)
    before, dirs_before = rows(wh), acid_dirs(info.location)
    cq = enqueue(wh, kind)
    outcome = Worker(wh.metastore, runner=_LayoutBreakingRunner(damage)).run_next()
    assert outcome.status == WorkerStatus.FAILED and expect in outcome.message, outcome
    assert acid_dirs(info.location) == dirs_before and hidden_dirs(info.location) == []
    assert wh.metastore.txns.txn_state(outcome.txn_id) is TxnState.ABORTED
    row = wh.metastore.compactions.get(cq)
    assert row.state is CompactionState.FAILED and expect in row.error_message
    assert rows(wh) == before


def test_a_clean_output_passes_the_layout_check(wh):
    info = new_table(wh)
    history(wh)
    before = rows(wh)
    enqueue(wh, "minor")
    assert Worker(wh.metastore, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    assert any(d.startswith("delete_delta_") and "_v" in d for d in acid_dirs(info.location))
    assert rows(wh) == before
