"""Backlog alerts (services/alerts.py): limits on the backlog and on the oldest 'initiated' / 'ready for cleaning'
ages; a row waiting to be cleaned names the open transaction that blocks it."""

from __future__ import annotations

import time

import pytest

from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.config import BacklogLimits
from airflow_acid.errors import AcidInputError
from airflow_acid.services import request_compaction
from airflow_acid.services.alerts import check_backlog
from airflow_acid.spark.runners import LocalRunner
from tests.services.support import COLUMNS, inserts, unique


def test_backlog_and_ages_past_their_limits_name_the_blocking_transaction(wh):
    ms = wh.metastore
    table = f"ops.{unique('alert')}"
    info = wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=3)
    assert check_backlog(ms, BacklogLimits(0, 0, 0)) == []           # nothing queued: nothing to say
    pool = unique("pool")
    [queued] = request_compaction(wh, table, None, "major", pool=pool)
    time.sleep(0.05)

    alerts = {a.kind: a for a in check_backlog(ms, BacklogLimits(max_backlog=0, max_initiated_age_s=0))}
    assert alerts["backlog"].message == "compaction backlog 1 > limit 0 (1 initiated, 0 working, " \
                                        "0 ready for cleaning)"
    assert alerts["initiated_age"].compaction_id == queued.compaction_id
    assert f"compaction {queued.compaction_id} of {info.full_name} has waited 'initiated'" in \
        alerts["initiated_age"].message and f"({pool})" in alerts["initiated_age"].message
    assert check_backlog(ms, BacklogLimits(max_backlog=1, max_initiated_age_s=3600)) == []

    reader = wh.read_snapshot(info).__enter__()
    try:
        assert Worker(ms, runner=LocalRunner()).run_next(pool).status == WorkerStatus.COMPACTED
        time.sleep(0.05)
        alerts = {a.kind: a for a in check_backlog(ms, BacklogLimits(max_backlog=0, max_ready_for_cleaning_age_s=0))}
        aged = alerts["ready_for_cleaning_age"]
        assert aged.compaction_id == queued.compaction_id and aged.value > 0 and aged.limit == 0
        assert "has been 'ready for cleaning' for" in aged.message
        assert f"blocked by transaction {reader.txn_id} (" in aged.message and "testhost" in aged.message
        assert [b["txn_id"] for b in aged.blockers] == [reader.txn_id]
        assert f"compaction {queued.compaction_id}, is blocked by transaction {reader.txn_id}" in \
            alerts["backlog"].message
        assert check_backlog(ms, BacklogLimits(max_ready_for_cleaning_age_s=3600)) == []
    finally:
        reader.__exit__(None, None, None)
    [aged] = check_backlog(ms, BacklogLimits(max_ready_for_cleaning_age_s=0))
    assert aged.blockers == [] and "nothing blocks it: is the acid_cleanup DAG running?" in aged.message
    Cleaner(ms).clean(queued.compaction_id)
    assert check_backlog(ms, BacklogLimits(0, 0, 0)) == []


@pytest.mark.parametrize("limits", [{"max_backlog": -1}, {"max_ready_for_cleaning_age_s": float("nan")}])
def test_bad_limits_are_refused(limits):
    with pytest.raises(AcidInputError, match="must be a non-negative number"):
        BacklogLimits(**limits)
