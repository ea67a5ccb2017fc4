"""Task messages: each survives the trip through XCom (JSON) unchanged, with the keys DAGs read."""

from __future__ import annotations

import json

from airflow_acid.compactor.messages import (
    CleanedEntity,
    CleanerSummary,
    HouseKeeperReport,
    QueuedCompaction,
    WorkerOutcome,
    WorkerStatus,
)


def _through_json(data):
    return json.loads(json.dumps(data))


def test_queued_compaction_round_trip_and_keys():
    q = QueuedCompaction(7, "db", "t", "ds=a", "MAJOR", "etl", "12 deltas")
    data = _through_json(q.to_xcom())
    assert set(data) == {"compaction_id", "database", "table", "partition", "type", "pool", "reason", "label"}
    assert data["label"] == "db.t/ds=a MAJOR"
    assert QueuedCompaction.from_xcom(data) == q


def test_worker_outcome_round_trip_and_keys():
    o = WorkerOutcome(3, "db.t", WorkerStatus.COMPACTED, None, 11, "h-compactor-db.t", ("base_0000002_v0000011",),
                      10, 8, 1, 300, 1.25)
    data = _through_json(o.to_xcom())
    assert data["status"] == "compacted" and data["outputs"] == ["base_0000002_v0000011"]
    assert set(data) == {"compaction_id", "entity", "status", "message", "txn_id", "job_name", "outputs", "rows_in",
                         "rows_out", "files", "bytes", "seconds"}
    assert WorkerOutcome.from_xcom(data) == o


def test_cleaner_summary_round_trip_and_keys():
    s = CleanerSummary(False, (CleanedEntity(1, "db.t", "cleaned", None, ("delta_1_1",), ()),), (),
                       (CleanedEntity(2, "db.u", "waiting", "txn 9 open", (), ("transaction 9 …",)),), 1)
    data = _through_json(s.to_xcom())
    assert set(data) == {"dry_run", "cleaned", "abort_cleanups", "waiting", "deletions"}
    assert set(data["cleaned"][0]) == {"compaction_id", "entity", "status", "message", "deleted", "blockers"}
    assert CleanerSummary.from_xcom(data) == s


def test_housekeeper_report_round_trip():
    r = HouseKeeperReport(True, aborted_txns=[4, 5], deleted_locks=2, history_rows_purged=3, seconds=0.1234)
    data = _through_json(r.to_xcom())
    assert data["seconds"] == 0.123 and data["aborted_txns"] == [4, 5]
    back = HouseKeeperReport.from_xcom(data)
    assert back.aborted_txns == [4, 5] and back.history_rows_purged == 3 and back.ran
