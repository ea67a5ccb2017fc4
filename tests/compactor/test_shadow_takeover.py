"""Shadow mode and the takeover scope on SQLite, PostgreSQL and MariaDB: a shadow run records decisions and changes
nothing else; the shadow report puts each table in the right category against a scripted history of Hive's
compactor; out-of-scope tables are left alone by the Initiator and the Cleaner."""

from __future__ import annotations

import dataclasses

from airflow_acid.acid.codes import CompactionType
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.config.scope import CompactionScope
from airflow_acid.metastore.initiator_store import Outcome
from airflow_acid.services.shadow import ShadowCategory, shadow_report
from tests.compactor.initiator_support import CONF, aborted_writes, synthetic_write
from tests.compactor.shadow_support import DECISION_TABLES, plant_hive_row, row_checksums


def _tables(wh, deltas: dict[str, int]) -> None:
    for name, n in deltas.items():
        info = wh.create_table(name, [("id", "int")])
        for _ in range(n):
            synthetic_write(wh.metastore, info.location, "default", name, None)


def test_shadow_run_records_decisions_and_changes_nothing_else(wh):
    ms = wh.metastore
    _tables(wh, {"busy": 11, "quiet": 2})
    before = row_checksums(ms.db.engine, exclude=DECISION_TABLES)
    report = Initiator(ms, CONF, host="shadowhost").run_shadow()
    assert row_checksums(ms.db.engine, exclude=DECISION_TABLES) == before
    assert ms.compactions.find(state="initiated") == []
    got = {d.table: d for d in ms.initiator.decisions()}
    assert got["busy"].outcome is Outcome.WOULD_QUEUE and got["busy"].delta_count == 11
    assert got["quiet"].outcome is Outcome.NOT_NEEDED
    assert {d.initiator_id for d in got.values()} == {"shadowhost-shadow"}
    assert report.candidates == 2
    # A second shadow run sees every candidate again (it never moves a last-checked time).
    assert Initiator(ms, CONF, host="shadowhost").run_shadow().candidates == 2


def test_shadow_report_categories_against_hive_history(wh):
    ms = wh.metastore
    _tables(wh, {"agreed": 11, "earlier": 11, "later": 2, "starved": 11, "refused": 11, "failed": 11, "idle": 1})
    Initiator(ms, CONF, host="shadowhost").run_shadow()
    decided = ms.initiator.latest_decision("default", "agreed").decided_at
    engine = ms.db.engine
    plant_hive_row(engine, queue=False, cid=9001, table="agreed", state="s", enqueued_ms=decided - 60_000)
    plant_hive_row(engine, queue=True, cid=9002, table="earlier", state="i", enqueued_ms=decided + 60_000)
    plant_hive_row(engine, queue=False, cid=9003, table="later", state="s", type_code="i", enqueued_ms=decided - 5)
    plant_hive_row(engine, queue=False, cid=9004, table="refused", state="c", enqueued_ms=decided - 10,
                   message="Compaction is already scheduled")
    plant_hive_row(engine, queue=False, cid=9005, table="refused", state="a", enqueued_ms=decided - 9,
                   message="Caught exception while trying to determine if we should compact")
    plant_hive_row(engine, queue=False, cid=9006, table="failed", state="f", enqueued_ms=decided - 8,
                   message="java.io.IOException: worker died")
    plant_hive_row(engine, queue=False, cid=9007, table="cleanup_only", state="s", type_code="c",
                   enqueued_ms=decided - 7)
    plant_hive_row(engine, queue=False, cid=9008, table="old", state="s", enqueued_ms=decided - 30 * 86_400_000)
    before = row_checksums(engine)

    report = shadow_report(ms, decided - 3_600_000, decided + 3_600_000)
    got = {r.table: r for r in report.rows}
    assert {t: r.category for t, r in got.items()} == {
        "agreed": ShadowCategory.AGREED, "earlier": ShadowCategory.EARLIER, "later": ShadowCategory.LATER,
        "starved": ShadowCategory.STARVED, "refused": ShadowCategory.HIVE_REFUSED,
        "failed": ShadowCategory.HIVE_FAILED, "idle": ShadowCategory.AGREED,
        "cleanup_only": ShadowCategory.NOT_EVALUATED}  # "old" is outside the range
    assert got["starved"].decision.delta_count == 11 and got["starved"].decision.delta_size == 1100
    assert [h.id for h in got["refused"].hive] == [9004, 9005]
    assert got["failed"].hive[0].message == "java.io.IOException: worker died"
    data = report.to_dict()
    assert data["counts"]["hive never compacted"] == 1 and data["counts"]["agreed"] == 2
    assert row_checksums(engine) == before  # the report only reads


def test_out_of_scope_tables_untouched_by_initiator_and_cleaner(wh):
    ms = wh.metastore
    _tables(wh, {"owned": 11, "other": 11})
    scope = CompactionScope.parse("default.own*")
    report = Initiator(ms, CONF, host="inithost", scope=scope).run_cycle()
    got = {r.table: r for r in report.results}
    assert got["owned"].outcome is Outcome.QUEUED
    assert got["other"].outcome is Outcome.SKIPPED and "outside [acid] scope (scope=default.own*)" in \
        got["other"].reason and not got["other"].listed
    assert [c.table for c in ms.compactions.find(state="initiated")] == ["owned"]

    aborted_writes(ms, "default", "other", None, 3)
    aborted_writes(ms, "default", "owned", None, 3)
    cleaner = Cleaner(ms, dataclasses.replace(CONF, abortedtxn_threshold=2), scope=scope)
    assert [e.entity for e in cleaner.clean_aborted(dry_run=True)] == ["default.owned"]
    unscoped = Cleaner(ms, dataclasses.replace(CONF, abortedtxn_threshold=2))
    assert sorted(e.entity for e in unscoped.clean_aborted(dry_run=True)) == ["default.other", "default.owned"]


def test_scope_matching():
    scope = CompactionScope.parse("sales, crm.orders, stage.tmp_*", "airflow")
    assert scope.covers("sales", "anything") and scope.covers("CRM", "Orders")
    assert scope.covers("stage", "tmp_1") and not scope.covers("stage", "final")
    assert not scope.covers("crm", "customers") and scope.covers("crm", "customers", pool="airflow")
    assert CompactionScope().covers("any", "table") and not CompactionScope().explicit


def test_shadow_cycle_of_the_sensors_queues_nothing_and_says_so(wh):
    from airflow_acid.services.reports import initiator_cycle

    ms = wh.metastore
    _tables(wh, {"busy": 11})
    cycle = initiator_cycle(ms, shadow=True)
    assert cycle.waiting == [] and cycle.shadow and ms.compactions.find(state="initiated") == []
    assert cycle.lines[0].startswith("shadow mode ([acid] mode = shadow)")
    assert any(line.startswith("would compact: default.busy") for line in cycle.lines)
    assert ms.initiator.latest_decision("default", "busy").outcome is Outcome.WOULD_QUEUE
    active = initiator_cycle(ms)  # mode active: the same table is queued
    assert [q.compaction_id for q in active.waiting] and not active.shadow


def test_mode_and_scope_options():
    import pytest

    from airflow_acid.config import AcidConfig
    from airflow_acid.metastore.errors import InvalidSettingError

    config = AcidConfig.from_mapping({"mode": "Shadow", "scope": "sales, crm.orders", "scope_pools": "airflow",
                                      "takeover_hive_active_window": "30m"})
    assert config.shadow and config.scope.patterns == ("sales", "crm.orders") and config.scope.pools == ("airflow",)
    assert config.takeover_hive_active_window_s == 1800
    default = AcidConfig.from_mapping({})
    assert default.mode == "active" and not default.shadow and not default.scope.explicit
    with pytest.raises(InvalidSettingError, match="mode='passive': must be active or shadow"):
        AcidConfig.from_mapping({"mode": "passive"})


def test_cleaner_leaves_compactions_of_out_of_scope_tables_to_hive(wh):
    from airflow_acid.compactor.messages import WorkerStatus
    from airflow_acid.compactor.worker import Worker
    from airflow_acid.spark.runners import LocalRunner
    from tests.compactor.initiator_support import insert_rows

    ms = wh.metastore
    ids = {}
    for name in ("owned", "other"):
        wh.create_table(name, [("id", "int")])
        insert_rows(wh, name, 2)
        ids[name] = ms.compactions.enqueue("default", name, None, CompactionType.MAJOR).id
    for _ in ids:
        assert Worker(ms, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    scope = CompactionScope.parse("default.owned")
    report = Cleaner(ms, CONF, scope=scope).run_cycle()
    handled = {e.compaction_id for e in report.entries + report.waiting}
    assert ids["owned"] in handled and ids["other"] not in handled
    assert ms.compactions.get(ids["other"]).state.display == "ready for cleaning"
    assert ms.compactions.get(ids["owned"]).state.display != "ready for cleaning"


def test_compaction_dag_runs_only_queued_rows_of_the_scope(wh):
    from airflow_acid.services.reports import initiator_cycle

    ms = wh.metastore
    _tables(wh, {"owned": 1, "other": 1})
    hive_queued = {t: ms.compactions.enqueue("default", t, None, CompactionType.MAJOR).id for t in ("owned", "other")}
    cycle = initiator_cycle(ms, scope=CompactionScope.parse("default.owned"))
    assert [q.compaction_id for q in cycle.waiting] == [hive_queued["owned"]]
    assert sorted(q.compaction_id for q in initiator_cycle(ms).waiting) == sorted(hive_queued.values())


def test_shadow_run_walks_past_the_fetch_size(wh):
    ms = wh.metastore
    _tables(wh, {f"t{i}": 11 if i % 2 else 1 for i in range(5)})
    report = Initiator(ms, dataclasses.replace(CONF, compactor_fetch_size=2), host="shadowhost").run_shadow()
    assert report.candidates == 5 and not report.truncated
    got = {d.table: d.outcome for d in ms.initiator.decisions()}
    assert got == {"t0": Outcome.NOT_NEEDED, "t1": Outcome.WOULD_QUEUE, "t2": Outcome.NOT_NEEDED,
                   "t3": Outcome.WOULD_QUEUE, "t4": Outcome.NOT_NEEDED}
    assert ms.compactions.find(state="initiated") == []
