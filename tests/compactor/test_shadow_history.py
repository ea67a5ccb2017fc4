"""The shadow report over a time range on SQLite, PostgreSQL and MariaDB: several shadow cycles at different times
against a scripted history of Hive's compactor, each cycle logged in ACID_INITIATOR_DECISION_LOG; "earlier" and
"later" come from airflow-acid's decision at its last look before Hive acted even when the decision flipped since;
no Hive table changes; the log is trimmed to its retention by each shadow cycle and by the HouseKeeper."""

from __future__ import annotations

import dataclasses
import time

import sqlalchemy as sa

from airflow_acid.compactor.housekeeper import HouseKeeper
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.metastore.initiator_store import Outcome
from airflow_acid.metastore.schema import ACID_INITIATOR_DECISION_LOG as ADL
from airflow_acid.services.shadow import ShadowCategory, shadow_report
from tests.compactor.initiator_support import CONF, synthetic_write
from tests.compactor.shadow_support import DECISION_TABLES, plant_hive_row, row_checksums

DAY_MS = 86_400_000


def _write(wh, table: str, n: int, kind: str = "delta") -> None:
    location = wh.metastore.catalog.get_table("default", table).location
    for _ in range(n):
        synthetic_write(wh.metastore, location, "default", table, None, kind=kind)


def _cycle(wh) -> int:
    """One shadow cycle that writes no Hive table (checked); returns the time its decisions were logged."""
    ms = wh.metastore
    before = row_checksums(ms.db.engine, exclude=DECISION_TABLES)
    Initiator(ms, CONF, host="shadowhost").run_shadow()
    assert row_checksums(ms.db.engine, exclude=DECISION_TABLES) == before
    with ms.db.engine.connect() as conn:
        decided = conn.execute(sa.select(sa.func.max(ADL.c.ADL_DECIDED_AT))).scalar_one()
    time.sleep(0.02)  # the next cycle (and the Hive rows planted in between) get later times
    return int(decided)


def _log_rows(ms) -> int:
    with ms.db.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(ADL)).scalar_one()


def test_report_over_a_range_of_shadow_cycles_against_a_scripted_hive_history(wh):
    ms = wh.metastore
    engine = ms.db.engine
    tables = {"early": 11, "late": 2, "agreed": 11, "starved": 11, "went_away": 11, "refused": 11, "failed": 11}
    for name, n in tables.items():
        wh.create_table(name, [("id", "int")])
        _write(wh, name, n)
    start = ms.initiator.now_ms()
    plant_hive_row(engine, queue=False, cid=9001, table="agreed", state="s", enqueued_ms=start - 1)
    time.sleep(0.02)

    t1 = _cycle(wh)
    _write(wh, "went_away", 1, kind="base")  # INSERT OVERWRITE: nothing left to compact, and Hive never did
    t2 = _cycle(wh)
    # Between the second and third cycle Hive compacts "early" (airflow-acid wanted it since t1) and "late" (where
    # airflow-acid, with its thresholds, saw nothing to do); it refuses "refused" and fails "failed".
    plant_hive_row(engine, queue=False, cid=9002, table="early", state="s", enqueued_ms=t2 + 1)
    plant_hive_row(engine, queue=False, cid=9003, table="late", state="s", type_code="i", enqueued_ms=t2 + 2)
    plant_hive_row(engine, queue=False, cid=9004, table="refused", state="c", enqueued_ms=t2 + 3,
                   message="Compaction is already scheduled")
    plant_hive_row(engine, queue=False, cid=9005, table="failed", state="f", enqueued_ms=t2 + 4,
                   message="java.io.IOException: worker died")
    _write(wh, "early", 1, kind="base")  # Hive's compaction removed the deltas: airflow-acid flips to "not needed"
    _write(wh, "late", 9)  # more writes: airflow-acid now wants it too, after Hive
    t3 = _cycle(wh)
    assert t1 < t2 < t3
    assert _log_rows(ms) == 3 * len(tables)  # one row per table per cycle
    latest = {d.table: d.outcome for d in ms.initiator.decisions()}
    assert latest["early"] is Outcome.NOT_NEEDED and latest["late"] is Outcome.WOULD_QUEUE
    before = row_checksums(engine)

    report = shadow_report(ms, start - 60_000, t3 + 60_000)
    got = {r.table: r for r in report.rows}
    assert {t: r.category for t, r in got.items()} == {
        "early": ShadowCategory.EARLIER, "late": ShadowCategory.LATER, "agreed": ShadowCategory.AGREED,
        "starved": ShadowCategory.STARVED, "went_away": ShadowCategory.AGREED,
        "refused": ShadowCategory.HIVE_REFUSED, "failed": ShadowCategory.HIVE_FAILED}
    early = got["early"]
    assert early.decision.outcome is Outcome.NOT_NEEDED  # the latest decision; the verdict comes from the history
    assert early.compact_at == t1 and early.lead_ms == t2 + 1 - t1 and early.history.flips == 1
    assert early.timeline_text == "would queue ×2 → not needed"
    assert got["late"].compact_at == t3 and got["late"].lead_ms == t2 + 2 - t3 < 0
    assert got["starved"].history.decisions == 3 and got["starved"].decision.delta_count == 11

    data = report.to_dict()
    rows = {r["table"]: r for r in data["rows"]}
    assert rows["default.early"]["acid"]["outcome"] == "not needed"  # the existing shape, unchanged
    assert rows["default.early"]["basis"]["outcome"] == "would queue"  # what it decided before Hive acted
    assert rows["default.early"]["basis"]["delta_count"] == 11 and rows["default.late"]["basis"]["delta_count"] == 2
    assert rows["default.early"]["timeline"] == [
        {"outcome": "would queue", "from": t1, "to": t2, "cycles": 2, "type": "MAJOR", "delta_count": [11, 11],
         "delta_size": [1100, 1100], "base_size": [0, 0]},
        {"outcome": "not needed", "from": t3, "to": t3, "cycles": 1, "type": None, "delta_count": [0, 0],
         "delta_size": [0, 0], "base_size": [100, 100]}]
    assert rows["default.late"]["timeline"][0]["delta_count"] == [2, 2]
    assert (rows["default.early"]["decisions"], rows["default.early"]["flips"]) == (3, 1)
    assert rows["default.early"]["hive_first_at"] == t2 + 1 and rows["default.early"]["compact_at"] == t1
    assert data["counts"]["would compact earlier"] == 1 and data["counts"]["agreed"] == 2

    # Only the cycles and Hive rows inside a range count: after Hive acted, "early" was never worth compacting.
    after = shadow_report(ms, t3 - 1, t3 + 60_000)
    narrowed = {r.table: r for r in after.rows}
    assert narrowed["early"].category is ShadowCategory.AGREED and narrowed["early"].hive == []
    assert narrowed["late"].category is ShadowCategory.STARVED
    assert row_checksums(engine) == before  # the report only reads


def test_the_log_is_trimmed_to_its_retention(wh):
    ms = wh.metastore
    wh.create_table("t", [("id", "int")])
    _write(wh, "t", 2)

    def age(days: int, up_to_id: int | None = None) -> None:
        with ms.db.engine.begin() as conn:
            query = sa.update(ADL).values(ADL_DECIDED_AT=ADL.c.ADL_DECIDED_AT - days * DAY_MS)
            conn.execute(query if up_to_id is None else query.where(ADL.c.ADL_ID <= up_to_id))

    def ids() -> list[int]:
        with ms.db.engine.connect() as conn:
            return sorted(conn.execute(sa.select(ADL.c.ADL_ID)).scalars())

    _cycle(wh)
    first = ids()
    _cycle(wh)
    age(31, up_to_id=max(first))  # the first cycle is past the 30-day default, the second is not
    report = HouseKeeper(ms, CONF, host="hk").run_once()
    assert report.decision_log_rows_purged == 1 and len(ids()) == 1 and ids()[0] > max(first)
    assert report.to_dict()["decision_log_rows_purged"] == 1

    age(29)
    _cycle(wh)  # kept: 29 days is inside the retention
    assert len(ids()) == 2
    age(2)
    _cycle(wh)  # a shadow cycle trims by itself (where no HouseKeeper runs, e.g. on a Hive metastore)
    assert len(ids()) == 2

    off = dataclasses.replace(CONF, decision_log_retention_s=0)
    Initiator(ms, off, host="shadowhost").run_shadow()  # 0: no log kept, the latest decision still recorded
    assert len(ids()) == 2 and ms.initiator.latest_decision("default", "t") is not None
    assert HouseKeeper(ms, off, host="hk").run_once().decision_log_rows_purged == 2 and ids() == []


def test_an_active_cycle_does_not_log(wh):
    """Only shadow cycles log: an active cycle's decisions are the queue rows the report would compare them with."""
    ms = wh.metastore
    wh.create_table("t", [("id", "int")])
    _write(wh, "t", 11)
    report = Initiator(ms, CONF, host="activehost").run_cycle()
    assert [r.outcome for r in report.results] == [Outcome.QUEUED] and _log_rows(ms) == 0
