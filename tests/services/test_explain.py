"""explain(): the Initiator's recorded decision, what its thresholds say now, the queue, and which open transactions
keep a 'ready for cleaning' compaction from being cleaned — as data and as sentences."""

from __future__ import annotations

import json

import pytest

from airflow_acid.acid.codes import CompactionType
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.dry_run import dry_run
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.errors import InvalidInputError, NoSuchObjectError
from airflow_acid.services import explain
from airflow_acid.spark.runners import LocalRunner
from tests.services.support import COLUMNS, crashed_insert, inserts, unique


def test_partition_below_thresholds_then_compacted_and_blocked_by_a_reader(wh):
    table = f"ops.{unique('why')}"
    info = wh.create_table(table, COLUMNS, partition_by=[("ds", "string")],
                           properties={"compactorthreshold.hive.compactor.delta.num.threshold": "2"})
    inserts(wh, table, {"ds": "a"}, batches=2)

    e = explain(wh, table, "ds=a")
    assert (e.database, e.table, e.partition, e.decision, e.current_compaction) == ("ops", info.name, "ds=a", None,
                                                                                   None)
    assert e.evaluation["type"] is None and e.evaluation["rule"] == "below_delta_num"
    assert e.evaluation["delta_count"] == 2 and e.evaluation["delta_num_threshold"] == 2
    assert "has not evaluated" in e.summary[0]
    assert "would not compact it" in e.summary[1] and "compactorthreshold.hive.compactor.delta.num.threshold=2" \
        in e.summary[1]

    Initiator(wh.metastore).evaluate_table("ops", info.name, enqueue=True)  # records the decision
    e = explain(wh, table, {"ds": "a"})
    assert e.decision["outcome"] == "not needed" and e.decision["rule"] == "below_delta_num"
    assert e.decision["delta_count"] == 2 and e.decision["time"] > 0
    assert "The Initiator last looked at" in e.summary[0] and "did not compact it" in e.summary[0]

    inserts(wh, table, {"ds": "a"}, batches=1, start=50)
    [result] = Initiator(wh.metastore).evaluate_table("ops", info.name, enqueue=True, pool=(pool := unique("pool")))
    e = explain(wh, table, "ds=a")
    assert e.decision["outcome"] == "queued" and e.decision["compaction_id"] == result.compaction_id
    assert e.current_compaction == {**e.current_compaction, "id": result.compaction_id, "state": "initiated",
                                    "type": "MAJOR", "pool": pool}
    assert e.evaluation["blocked_by"] == f"compaction {result.compaction_id} of ops.{info.name}/ds=a is already " \
                                         "'initiated'"
    assert e.summary[0].startswith(f"MAJOR compaction {result.compaction_id} of ops.{info.name}/ds=a is queued")

    reader = wh.read_snapshot(info).__enter__()
    try:
        Worker(wh.metastore, runner=LocalRunner()).run_next(pool)
        e = explain(wh, table, "ds=a")
        assert e.current_compaction is None and e.evaluation["blocked_by"] is None
        [blocker] = e.cleanup_blockers
        assert (blocker["compaction_id"], blocker["txn_id"], blocker["host"]) == (result.compaction_id,
                                                                                   reader.txn_id, "testhost")
        assert "opened before compaction" in blocker["why"] and blocker["age_s"] >= 0
        assert e.cleanup == [{"compaction_id": result.compaction_id, "status": "waiting",
                              "message": e.cleanup[0]["message"], "deletions": []}]
        assert any(s.startswith("Cleanup is blocked") and f"transaction {reader.txn_id}" in s for s in e.summary)
    finally:
        reader.__exit__(None, None, None)
    e = explain(wh, table, "ds=a")
    assert e.cleanup_blockers == [] and e.cleanup[0]["status"] == "would clean"
    assert e.cleanup[0]["message"] == "the next Cleaner run deletes 3 obsolete or aborted directories"
    assert sorted(d["path"].split("_")[0] for d in e.cleanup[0]["deletions"]) == ["delta"] * 3
    assert any("ready to be cleaned" in s and "deletes 3" in s for s in e.summary)
    assert json.loads(json.dumps(e.to_dict()))["cleanup"][0]["deletions"][0]["reason"].startswith("obsolete")


def test_no_auto_compaction_holds_back_an_unpartitioned_table(wh):
    table = f"ops.{unique('why')}"
    wh.create_table(table, COLUMNS, properties={"no_auto_compaction": "true", "no_cleanup": "true"})
    e = explain(wh, table)
    assert e.partition is None and e.evaluation["blocked_by"] == f"table {table} has no_auto_compaction=true"
    assert any("Automatic compaction is held back" in s for s in e.summary)
    assert any("no_cleanup=true" in s for s in e.summary)


def test_bad_arguments(wh):
    table = f"ops.{unique('why')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, table, {"ds": "a"}, batches=1)
    with pytest.raises(InvalidInputError, match=r"is partitioned; name one partition \(partitions: ds=a\)"):
        explain(wh, table)
    with pytest.raises(NoSuchObjectError, match="partition ds=zz"):
        explain(wh, table, "ds=zz")
    with pytest.raises(InvalidInputError, match="hr"):
        explain(wh, table, {"hr": "1"})
    with pytest.raises(NoSuchObjectError):
        explain(wh, "ops.nosuch")


def test_aborted_writes_are_explained(wh):
    table = f"ops.{unique('why')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, table, {"ds": "a"}, batches=1)
    crashed_insert(wh, table, {"ds": "a"})
    e = explain(wh, table, "ds=a")
    assert (e.evaluation["aborted_txns"], e.evaluation["aborted_dirs"]) == (1, 1)
    assert e.evaluation["oldest_aborted_txn_started"] > 0
    [sentence] = [s for s in e.summary if "aborted transaction(s)" in s]
    assert sentence.startswith(f"1 aborted transaction(s) wrote to {table}/ds=a (the oldest started ")
    assert "1 aborted director(y/ies) on disk" in sentence and "hive.compactor.abortedtxn.threshold=1000" in sentence


def _compact(wh, table: str, partition: str | None = None) -> int:
    db, name = table.split(".")
    queued = wh.metastore.compactions.enqueue(db, name, partition, CompactionType.MAJOR)
    outcome = Worker(wh.metastore, runner=LocalRunner()).compact_batch(
        [wh.metastore.compactions.claim(queued.id, "testhost-1").id])[0]
    assert outcome.compaction_id == queued.id and outcome.status == "compacted", outcome.message
    return queued.id


def _no_raw_words(data) -> None:
    """No ``None`` and no raw state/status names (``would_clean``, ``ready_for_cleaning``, one-letter codes) in what
    the Why page shows."""
    text = json.dumps(data)
    for raw in ("would_clean", "ready_for_cleaning", "not_needed", '"r"', '"i"', '"w"'):
        assert raw not in text, raw
    assert "None" not in " ".join(data["summary"])
    assert all(c["message"] for c in data["cleanup"])


def test_a_compaction_ready_for_cleaning_is_waiting_for_cleaning_not_another_major(wh):
    """The issue's demo.customers: a second MAJOR left the old base for the Cleaner. The thresholds must not count
    that base (no "would compact (MAJOR) — multi_base"), the queue row counts as queued, and the dry run agrees."""
    table = f"ops.{unique('why')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=2)
    _compact(wh, table)
    Cleaner(wh.metastore).run_cycle()
    inserts(wh, table, batches=1, start=70)
    waiting = _compact(wh, table)  # base_1 (obsolete) and base_3 now; no Cleaner run

    e = explain(wh, table)
    assert e.current_compaction is None
    assert [(c["id"], c["state"]) for c in e.queue] == [(waiting, "ready for cleaning")]
    ev = e.evaluation
    assert (ev["verdict"], ev["scheduled"]["id"], ev["type"]) == ("waiting for cleaning", waiting, None)
    assert ev["rule"] != "multi_base" and ev["rule_text"] == "below every threshold"
    assert any(s.startswith(f"{table} is waiting for cleaning: compaction {waiting} committed") for s in e.summary)
    assert not any("would queue" in s for s in e.summary)
    assert e.cleanup[0]["status"] == "would clean" and "deletes" in e.cleanup[0]["message"]
    _no_raw_words(e.to_dict())
    plan = dry_run(wh.metastore)
    assert not [r for r in plan.would_queue if f"{r.database}.{r.table}" == table]

    Cleaner(wh.metastore).run_cycle()
    e = explain(wh, table)
    assert (e.queue, e.evaluation["verdict"], e.evaluation["scheduled"]) == ([], "not needed", None)


def test_queued_counts_every_queue_state_and_threshold_verdicts(wh):
    table = f"ops.{unique('why')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")],
                    properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    inserts(wh, table, {"ds": "a"}, batches=2)
    e = explain(wh, table, "ds=a")
    assert (e.queue, e.evaluation["verdict"], e.evaluation["type"]) == ([], "would compact", "MAJOR")
    assert e.evaluation["rule_text"] == "many deltas and no base"

    db, name = table.split(".")
    queued = wh.metastore.compactions.enqueue(db, name, "ds=a", CompactionType.MINOR)
    e = explain(wh, table, "ds=a")
    assert [(c["id"], c["state"]) for c in e.queue] == [(queued.id, "initiated")]
    assert (e.evaluation["verdict"], e.evaluation["scheduled"]["id"]) == ("already queued", queued.id)
    assert any(f"compaction {queued.id} is already 'initiated'" in s for s in e.summary)
    _no_raw_words(e.to_dict())
