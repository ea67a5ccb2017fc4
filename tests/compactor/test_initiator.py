"""The Initiator on SQLite, PostgreSQL and MariaDB: every decision rule and override of docs/hive-acid.md#initiator,
readable reasons for every declined candidate, one listing per candidate, no listing without new writes."""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.compactor.decision import Rule
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.metastore.initiator_store import INITIATOR_MUTEX, InitiatorStore, Outcome
from airflow_acid.metastore.schema import COMPLETED_COMPACTIONS, COMPLETED_TXN_COMPONENTS, TABLE_PARAMS, TBLS
from tests.compactor.initiator_support import (
    CONF,
    CountingFileSystem,
    aborted_writes,
    insert_rows,
    synthetic_write,
)

MAJOR, MINOR = CompactionType.MAJOR, CompactionType.MINOR


def _by_table(report) -> dict[str, object]:
    return {(r.table if r.partition is None else f"{r.table}/{r.partition}"): r for r in report.results}


def _initiator(wh, **changes) -> Initiator:
    return Initiator(wh.metastore, dataclasses.replace(CONF, **changes) if changes else None, host="inithost")


def _table_param(wh, table: str, key: str, value: str) -> None:
    """Write a TABLE_PARAMS row directly (as another metastore client could: no validation, any key case)."""
    with wh.metastore.db.begin() as conn:
        tbl_id = conn.execute(sa.select(TBLS.c.TBL_ID).where(TBLS.c.TBL_NAME == table)).scalar_one()
        conn.execute(sa.insert(TABLE_PARAMS).values(TBL_ID=tbl_id, PARAM_KEY=key, PARAM_VALUE=value))


def test_threshold_decisions_and_overrides(wh):
    ms = wh.metastore
    wh.create_table("nobase11", [("id", "int")], properties={"hive.compactor.worker.pool": "etl"})
    insert_rows(wh, "nobase11", 11)
    wh.create_table("nobase10", [("id", "int")])
    insert_rows(wh, "nobase10", 10)
    wh.create_table("override4", [("id", "int")],
                    properties={"compactorthreshold.hive.compactor.delta.num.threshold": "4"})
    insert_rows(wh, "override4", 5)
    base = wh.create_table("base11", [("id", "int")])
    synthetic_write(ms, base.location, "default", "base11", None, kind="base", size=100_000)
    for _ in range(11):
        synthetic_write(ms, base.location, "default", "base11", None, size=100)
    ratio = wh.create_table("ratio02", [("id", "int")])
    synthetic_write(ms, ratio.location, "default", "ratio02", None, kind="base", size=10_000)
    synthetic_write(ms, ratio.location, "default", "ratio02", None, size=1_000)
    synthetic_write(ms, ratio.location, "default", "ratio02", None, kind="delete_delta", size=1_000)
    small = wh.create_table("ratio005", [("id", "int")])
    synthetic_write(ms, small.location, "default", "ratio005", None, kind="base", size=10_000)
    synthetic_write(ms, small.location, "default", "ratio005", None, size=500)
    pct = wh.create_table("pct_override", [("id", "int")],
                          properties={"compactorthreshold.hive.compactor.delta.pct.threshold": "0.01"})
    synthetic_write(ms, pct.location, "default", "pct_override", None, kind="base", size=10_000)
    synthetic_write(ms, pct.location, "default", "pct_override", None, size=500)

    report = _initiator(wh).run_cycle()
    got = _by_table(report)
    assert report.ran and report.candidates == 7 and report.listings == 7

    r = got["nobase11"]
    assert (r.outcome, r.type, r.rule) == (Outcome.QUEUED, MAJOR, Rule.DELTA_NUM_NO_BASE.value)
    assert "11 current delta(s) > hive.compactor.delta.num.threshold=10 and no base" in r.reason
    r = got["nobase10"]
    assert (r.outcome, r.type) == (Outcome.NOT_NEEDED, None)
    assert "10 current delta(s) ≤ hive.compactor.delta.num.threshold=10" in r.reason
    r = got["override4"]
    assert (r.outcome, r.type) == (Outcome.QUEUED, MAJOR)
    assert "5 current delta(s) > compactorthreshold.hive.compactor.delta.num.threshold=4" in r.reason
    r = got["base11"]
    assert (r.outcome, r.type, r.rule) == (Outcome.QUEUED, MINOR, Rule.DELTA_NUM.value)
    assert r.stats.base_size == 100_000 and r.stats.delta_size == 1_100 and r.stats.delta_count == 11
    r = got["ratio02"]
    assert (r.outcome, r.type, r.rule) == (Outcome.QUEUED, MAJOR, Rule.DELTA_PCT.value)
    assert "delta/base size 0.2 > hive.compactor.delta.pct.threshold=0.1" in r.reason
    r = got["ratio005"]
    assert (r.outcome, r.type) == (Outcome.NOT_NEEDED, None)
    assert "delta/base size 0.05 ≤ hive.compactor.delta.pct.threshold=0.1" in r.reason
    r = got["pct_override"]
    assert (r.outcome, r.type) == (Outcome.QUEUED, MAJOR)
    assert "> compactorthreshold.hive.compactor.delta.pct.threshold=0.01" in r.reason

    queue = {(c.table, c.type, c.pool_name, c.initiator_id) for c in ms.compactions.find(state="initiated")}
    assert queue == {("nobase11", MAJOR, "etl", "inithost-initiator"), ("override4", MAJOR, None, "inithost-initiator"),
                     ("base11", MINOR, None, "inithost-initiator"), ("ratio02", MAJOR, None, "inithost-initiator"),
                     ("pct_override", MAJOR, None, "inithost-initiator")}
    for r in report.declined:  # every declined candidate says why, and the answer is stored
        assert r.reason and _initiator(wh).why(r.database, r.table, r.partition).reason == r.reason
    # Below-threshold decisions leave no history row behind (no churn), but can be asked about.
    assert ms.compactions.find(state="did not initiate") == []
    assert _initiator(wh).why("default", "ratio005").reason == got["ratio005"].reason
    assert _initiator(wh).why("DEFAULT", "nobase11").compaction_id == got["nobase11"].compaction_id


def test_nothing_new_means_no_candidates_and_no_listing(wh, tmp_path):
    wh.create_table("t", [("id", "int")])
    insert_rows(wh, "t", 2)
    first = _initiator(wh).run_cycle()
    assert first.candidates == 1 and first.listings == 1
    fs = CountingFileSystem()
    second = Initiator(wh.metastore, CONF, host="inithost", filesystem=fs).run_cycle()
    assert (second.candidates, second.listings, fs.listed) == (0, 0, [])
    assert second.last_checked_ms == first.started_ms and second.next_last_checked_ms == second.started_ms


def test_each_candidate_listed_once_untouched_partitions_never(wh):
    ms = wh.metastore
    info = wh.create_table("p", [("id", "int")], partition_by=[("d", "string")])
    locations = {}
    for day in range(6):
        part = ms.catalog.add_partition("default", "p", {"d": str(day)})
        locations[part.name] = part.location
        synthetic_write(ms, part.location, "default", "p", part.name)
    fs = CountingFileSystem()
    first = Initiator(ms, CONF, host="inithost", filesystem=fs).run_cycle()
    assert first.candidates == 6 and first.listings == 6
    assert sorted(fs.listed) == sorted(locations.values())
    for name in ("d=1", "d=4"):
        synthetic_write(ms, locations[name], "default", "p", name)
    fs.listed.clear()
    second = Initiator(ms, CONF, host="inithost", filesystem=fs).run_cycle()
    assert {r.partition for r in second.results} == {"d=1", "d=4"}
    assert sorted(fs.listed) == sorted([locations["d=1"], locations["d=4"]])
    assert second.listings == 2 and info.location not in fs.listed


def test_no_auto_compaction_on_table_and_database(wh):
    ms = wh.metastore
    tables = {"plain": wh.create_table("plain", [("id", "int")]), "upper": wh.create_table("upper", [("id", "int")]),
              "off": wh.create_table("off", [("id", "int")], properties={"no_auto_compaction": "true"}),
              "db2.quiet": wh.create_table("db2.quiet", [("id", "int")]),
              "db3.loud": wh.create_table("db3.loud", [("id", "int")], properties={"no_auto_compaction": "true"})}
    _table_param(wh, "upper", "NO_AUTO_COMPACTION", "TRUE")
    ms.catalog.alter_database_params("db2", {"no_auto_compaction": "true"})
    ms.catalog.alter_database_params("db3", {"no_auto_compaction": "false"})  # the database parameter wins
    for info in tables.values():
        for _ in range(11):
            synthetic_write(ms, info.location, info.database, info.name, None)
    report = _initiator(wh).run_cycle()
    got = {(r.database, r.table): r for r in report.results}
    assert got[("default", "plain")].outcome is Outcome.QUEUED
    assert got[("db3", "loud")].outcome is Outcome.QUEUED
    for key in (("default", "upper"), ("default", "off")):
        assert got[key].outcome is Outcome.SKIPPED
        assert got[key].reason.startswith(f"table {key[0]}.{key[1]} has no_auto_compaction=true")
        assert not got[key].listed
    assert got[("db2", "quiet")].outcome is Outcome.SKIPPED
    assert got[("db2", "quiet")].reason.startswith("database db2 has no_auto_compaction=true")
    assert report.listings == 2


def test_already_queued_is_skipped(wh):
    ms = wh.metastore
    wh.create_table("t", [("id", "int")])
    queued = ms.compactions.enqueue("default", "t", None, MINOR)
    insert_rows(wh, "t", 11)
    report = _initiator(wh).run_cycle()
    (r,) = report.results
    assert (r.outcome, r.listed) == (Outcome.SKIPPED, False)
    assert r.reason == f"compaction {queued.id} of default.t is already 'initiated'"
    ms.compactions.claim_next("w-1")
    insert_rows(wh, "t", 1)
    (r,) = _initiator(wh).run_cycle().results
    assert "is already 'working'" in r.reason


def test_two_failures_back_off_until_retry_time(wh):
    ms = wh.metastore
    wh.create_table("t", [("id", "int")])
    insert_rows(wh, "t", 11)
    initiator = _initiator(wh)
    for attempt in range(2):
        (r,) = initiator.run_cycle().results
        assert r.outcome is Outcome.QUEUED, (attempt, r.reason)
        claimed = ms.compactions.claim_next("worker-1")
        ms.compactions.mark_failed(claimed.id, f"spark job failed ({attempt})")
    # Found again through the newest history row ('failed'), without new writes; now two consecutive failures.
    report = initiator.run_cycle()
    (r,) = report.results
    assert (r.outcome, r.listed) == (Outcome.SKIPPED, False)
    assert r.reason.startswith("Compaction is not initiated since last 2 consecutive compaction attempts failed")
    (row,) = ms.compactions.find(table="t", state="did not initiate")
    assert row.error_message == r.reason and row.initiator_id == "inithost-initiator"
    assert initiator.why("default", "t").reason == r.reason
    assert ms.compactions.find(table="t", state="initiated") == []
    # Still inside hive.compactor.initiator.failed.retry.time (7 d): skipped again.
    (r,) = initiator.run_cycle().results
    assert r.outcome is Outcome.SKIPPED
    # The retry time passes: the next cycle queues it again.
    with ms.db.begin() as conn:
        conn.execute(sa.update(COMPLETED_COMPACTIONS)
                     .where(COMPLETED_COMPACTIONS.c.CC_STATE == CompactionState.FAILED.value)
                     .values(CC_ENQUEUE_TIME=COMPLETED_COMPACTIONS.c.CC_ENQUEUE_TIME - 8 * 86_400_000))
    (r,) = initiator.run_cycle().results
    assert (r.outcome, r.type) == (Outcome.QUEUED, MAJOR)


def test_aborted_transactions_drive_compaction_when_not_cleaned_by_the_cleaner(wh):
    ms = wh.metastore
    wh.create_table("many", [("id", "int")])
    wh.create_table("old", [("id", "int")])
    wh.create_table("few", [("id", "int")])
    now = InitiatorStore(ms.db).now_ms()
    aborted_writes(ms, "default", "many", None, 1001)
    aborted_writes(ms, "default", "old", None, 1, started_ms=now - 13 * 3_600_000)
    aborted_writes(ms, "default", "few", None, 3)
    # Hive 4's default (hive.compactor.clean.aborts.using.cleaner=true): aborts are the Cleaner's job.
    assert _initiator(wh).run_cycle().candidates == 0
    report = _initiator(wh, clean_aborts_using_cleaner=False).run_cycle()
    got = _by_table(report)
    assert set(got) == {"many", "old"} and report.listings == 0
    assert (got["many"].outcome, got["many"].type, got["many"].rule) == (Outcome.QUEUED, MAJOR, "too_many_aborts")
    assert got["many"].reason == "MAJOR: 1001 aborted transactions > hive.compactor.abortedtxn.threshold=1000"
    assert (got["old"].outcome, got["old"].type, got["old"].rule) == (Outcome.QUEUED, MINOR, "old_abort")
    assert "> hive.compactor.aborted.txn.time.threshold=43200 s" in got["old"].reason


def test_insert_only_switch_dropped_table_and_table_level_write(wh):
    ms = wh.metastore
    wh.create_table("mm", [("id", "int")], transactional_properties="insert_only")
    insert_rows(wh, "mm", 11)
    wh.create_table("p", [("id", "int")], partition_by=[("d", "string")])
    with ms.db.begin() as conn:
        rows = [{"CTC_TXNID": 0, "CTC_DATABASE": "default", "CTC_TABLE": t, "CTC_PARTITION": None,
                 "CTC_TIMESTAMP": 1, "CTC_WRITEID": 1, "CTC_UPDATE_DELETE": "N"} for t in ("ghost", "p")]
        conn.execute(sa.insert(COMPLETED_TXN_COMPONENTS), rows)
    got = _by_table(_initiator(wh, compact_insert_only=False).run_cycle())
    assert got["mm"].outcome is Outcome.SKIPPED
    assert got["mm"].reason == "table default.mm is insert-only and hive.compactor.compact.insert.only=false"
    assert (got["ghost"].outcome, got["ghost"].reason) == (Outcome.SKIPPED,
                                                          "table default.ghost no longer exists (dropped)")
    assert got["p"].outcome is Outcome.SKIPPED and "dynamic-partition write" in got["p"].reason
    insert_rows(wh, "mm", 1)
    got = _by_table(_initiator(wh).run_cycle())  # Hive's default compacts insert-only tables
    assert (got["mm"].outcome, got["mm"].type) == (Outcome.QUEUED, MAJOR)


def test_bad_threshold_property_is_reported_and_recorded(wh):
    ms = wh.metastore
    wh.create_table("t", [("id", "int")])
    _table_param(wh, "t", "compactorthreshold.hive.compactor.delta.num.threshold", "ten")
    insert_rows(wh, "t", 2)
    (r,) = _initiator(wh).run_cycle().results
    assert r.outcome is Outcome.ERROR
    assert "table default.t: property compactorthreshold.hive.compactor.delta.num.threshold='ten' is not a number" \
        in r.reason
    (row,) = ms.compactions.find(table="t", state="did not initiate")
    assert row.error_message == r.reason


def test_lease_keeps_one_initiator_running(wh):
    store = InitiatorStore(wh.metastore.db)
    assert store.acquire_lease(INITIATOR_MUTEX, "other-initiator", 60_000).acquired
    report = _initiator(wh).run_cycle()
    assert not report.ran and "another Initiator (other-initiator) is running" in report.message
    store.release_lease(INITIATOR_MUTEX, "other-initiator")
    assert _initiator(wh).run_cycle().ran


def test_evaluate_table_runs_thresholds_per_partition(wh):
    ms = wh.metastore
    wh.create_table("p", [("id", "int")], partition_by=[("d", "string")])
    insert_rows(wh, "p", 11, partition={"d": "busy"})
    insert_rows(wh, "p", 2, partition={"d": "quiet"})
    initiator = _initiator(wh)
    results = {r.partition: r for r in initiator.evaluate_table(
        "default", "P", properties={"compactor.spark.executor.memory": "2g"}, pool="manual")}
    assert (results["d=busy"].outcome, results["d=busy"].type) == (Outcome.QUEUED, MAJOR)
    assert results["d=quiet"].outcome is Outcome.NOT_NEEDED and "2 current delta(s) ≤" in results["d=quiet"].reason
    (row,) = ms.compactions.find(table="p", state="initiated")
    assert (row.partition, row.pool_name, row.properties) == ("d=busy", "manual",
                                                             {"compactor.spark.executor.memory": "2g"})
    assert initiator.why("default", "p", "d=quiet").outcome is Outcome.NOT_NEEDED
    # A request can lower the threshold for itself through tblprops.compactorthreshold.*.
    results = {r.partition: r for r in initiator.evaluate_table(
        "default", "p", enqueue=False,
        properties={"tblprops.compactorthreshold.hive.compactor.delta.num.threshold": "1"})}
    assert (results["d=quiet"].type, results["d=quiet"].outcome) == (MAJOR, Outcome.WOULD_QUEUE)
    assert initiator.why("default", "p", "d=quiet").outcome is Outcome.NOT_NEEDED  # a dry run stores nothing
    assert len(ms.compactions.find(table="p", state="initiated")) == 1


def test_write_candidates_window_resumes_where_the_limit_cut(wh):
    wh.create_table("a", [("id", "int")])
    wh.create_table("b", [("id", "int")])
    wh.create_table("c", [("id", "int")])
    for name in ("a", "b", "c"):
        insert_rows(wh, name, 1)
    store = InitiatorStore(wh.metastore.db)
    taken, resume = store.write_candidates(None, 2)
    assert [c.table for c in taken] == ["a", "b"] and resume == taken[-1].last_commit_ms
    rest, resume2 = store.write_candidates(resume, 2)
    assert "c" in [c.table for c in rest] and resume2 is None


def test_write_candidates_window_moves_past_more_candidates_than_the_limit_at_one_commit_time(wh):
    """One dynamic-partition insert commits many partitions at one CTC_TIMESTAMP: a window starting there must not
    give the same first page every cycle (the rest would never be looked at)."""
    wh.create_table("a", [("id", "int")])
    wh.create_table("p", [("id", "int")], partition_by=[("d", "string")])
    wh.create_table("z", [("id", "int")])
    insert_rows(wh, "a", 1)
    with wh.transaction() as txn:  # five partitions, one commit
        txn.insert("p", [{"id": i, "d": str(i)} for i in range(5)])
    insert_rows(wh, "z", 1)
    store = InitiatorStore(wh.metastore.db)
    seen: set[tuple[str, str | None]] = set()
    since, cycles = None, 0
    while True:
        cycles += 1
        assert cycles <= 4, f"the window is stuck at {since} after seeing {sorted(seen, key=str)}"
        taken, resume = store.write_candidates(since, 2)
        seen |= {(c.table, c.partition) for c in taken}
        if resume is None:
            break
        assert since is None or resume > since or len(taken) > 2, "a window that cannot move must page on"
        since = resume
    assert seen == {("a", None), ("z", None)} | {("p", f"d={i}") for i in range(5)}
    same_time = [c for c in store.write_candidates(None, 100)[0] if c.table == "p"]
    assert len({c.last_commit_ms for c in same_time}) == 1  # the case under test: one commit time


def test_parallel_evaluation_on_request_queue_threads(wh):
    """hive.compactor.request.queue > 1: candidates are listed and decided on threads, queued in one batch in
    candidate order; a partition already queued is refused as before, results keep the candidates' order."""
    ms = wh.metastore
    wh.create_table("p", [("id", "int")], partition_by=[("d", "string")])
    for day in range(8):
        part = ms.catalog.add_partition("default", "p", {"d": str(day)})
        for _ in range(11 if day % 2 == 0 else 2):
            synthetic_write(ms, part.location, "default", "p", part.name)
    busy = ms.compactions.enqueue("default", "p", "d=6", MINOR, highest_write_id_now=-1).id
    fs = CountingFileSystem()
    report = Initiator(ms, dataclasses.replace(CONF, request_queue=4), host="inithost", filesystem=fs).run_cycle()
    assert [r.partition for r in report.results if r.partition != "d=6"] == [f"d={d}" for d in (0, 1, 2, 3, 4, 5, 7)]
    assert report.listings == 7 == len(fs.listed)
    queued = report.queued
    assert [r.partition for r in queued] == ["d=0", "d=2", "d=4"] and all(r.type is MAJOR for r in queued)
    assert [r.compaction_id for r in queued] == sorted(r.compaction_id for r in queued)
    assert {r.partition for r in report.results if r.outcome is Outcome.NOT_NEEDED} == {"d=1", "d=3", "d=5", "d=7"}
    skipped = _by_table(report)["p/d=6"]
    assert skipped.outcome is not Outcome.QUEUED and str(busy) in skipped.reason
    assert {c.partition for c in ms.compactions.find(state="initiated")} == {"d=0", "d=2", "d=4", "d=6"}
