"""Shadow mode and takeover on Hive 4.0.0 and 4.2.0 metastore databases (PostgreSQL, MariaDB): a shadow run over a
scripted history of Hive's compactor writes no Hive table (row checksums of every table before/after) and the report
puts each table in the right category; with a scope, the Initiator declines a table Hive's Initiator would also
compact — naming the ALTER TABLE to run in Hive — and takes it over once it is marked."""

from __future__ import annotations

import json
import time

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from airflow_acid.cli import main
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.config.scope import CompactionScope
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.initiator_store import Outcome
from tests.backends import SERVER_BACKENDS
from tests.compactor.initiator_support import synthetic_write
from tests.compactor.shadow_support import DECISION_TABLES, plant_hive_row, row_checksums
from tests.hive import hms
from tests.hive.conftest import load_hive_database

pytestmark = pytest.mark.slow

CONF = MetastoreConf(opentxn_timeout_ms=0, delta_num_threshold=2)
COLUMNS = [("id", "int"), ("name", "string")]
ENV = {"AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD": "2"}


@pytest.fixture(params=[pytest.param((b, v), marks=pytest.mark.servers, id=f"{b}-{v}")
                        for b in SERVER_BACKENDS for v in ("4.0.0", "4.2.0")])
def hive_db(request):
    url, drop = load_hive_database(*request.param)
    engine = sa.create_engine(url)
    try:
        yield url, engine
    finally:
        engine.dispose()
        drop()


def _setup(engine, ms, root) -> int:
    db_id = hms.register_database(engine, "sales", str(root / "sales.db"))
    for name in ("orders", "events", "quiet"):
        hms.register_table(engine, db_id, name, COLUMNS, str(root / "sales.db" / name))
    for name, n in (("orders", 3), ("events", 3), ("quiet", 1)):
        for _ in range(n):
            synthetic_write(ms, root / "sales.db" / name, "sales", name, None)
    return db_id


def _mark_no_auto_compaction(engine, table: str) -> None:
    """ALTER TABLE sales.<table> SET TBLPROPERTIES ('no_auto_compaction'='true') as HMS records it."""
    tbls, params = sa.table("TBLS", sa.column("TBL_ID"), sa.column("TBL_NAME")), \
        sa.table("TABLE_PARAMS", sa.column("TBL_ID"), sa.column("PARAM_KEY"), sa.column("PARAM_VALUE"))
    with engine.begin() as conn:
        tbl_id = conn.execute(sa.select(tbls.c.TBL_ID).where(tbls.c.TBL_NAME == table)).scalar_one()
        conn.execute(params.insert().values(TBL_ID=tbl_id, PARAM_KEY="no_auto_compaction", PARAM_VALUE="true"))


def test_shadow_run_writes_no_hive_table_and_reports_categories(hive_db, tmp_path):
    url, engine = hive_db
    ms = Metastore(url, CONF)
    try:
        _setup(engine, ms, tmp_path)
        assert ms.create_decisions_table()
        now = ms.initiator.now_ms()
        plant_hive_row(engine, queue=False, cid=9001, table="orders", db="sales", state="s", enqueued_ms=now - 60_000)
        plant_hive_row(engine, queue=False, cid=9002, table="quiet", db="sales", state="c", enqueued_ms=now - 50_000,
                       message="Compaction is already scheduled with state='working'")
        before = row_checksums(engine, exclude=DECISION_TABLES)

        result = CliRunner().invoke(main, ["shadow", "run", "--metastore-url", url, "--warehouse", str(tmp_path),
                                           "--json"], catch_exceptions=False, env=ENV)
        assert result.exit_code == 0, result.output
        assert {d["table"] for d in json.loads(result.output)["declined"]} == {"sales.orders", "sales.events",
                                                                               "sales.quiet"}
        assert row_checksums(engine, exclude=DECISION_TABLES) == before

        result = CliRunner().invoke(main, ["shadow", "report", "--metastore-url", url, "--since", "1d", "--json"],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        got = {r["table"]: r for r in json.loads(result.output)["rows"]}
        assert {t: r["category"] for t, r in got.items()} == {
            "sales.orders": "agreed", "sales.events": "hive never compacted", "sales.quiet": "hive refused"}
        assert got["sales.events"]["acid"]["delta_count"] == 3 and got["sales.events"]["acid"]["outcome"] == \
            "would queue"
        table = CliRunner().invoke(main, ["shadow", "report", "--metastore-url", url], catch_exceptions=False)
        assert "hive never compacted" in table.output and "sales.events" in table.output
        assert row_checksums(engine, exclude=DECISION_TABLES) == before
    finally:
        ms.close()


def test_takeover_declines_until_the_table_is_marked_in_hive(hive_db, tmp_path):
    url, engine = hive_db
    ms = Metastore(url, CONF)
    try:
        db_id = _setup(engine, ms, tmp_path)
        hms.register_table(engine, db_id, "pooled", COLUMNS, str(tmp_path / "sales.db" / "pooled"),
                           properties={"hive.compactor.worker.pool": "airflow"})
        for _ in range(3):
            synthetic_write(ms, tmp_path / "sales.db" / "pooled", "sales", "pooled", None)
        assert ms.shadow.hive_initiator_last_seen() is None
        ms.create_decisions_table()
        # Hive's Initiator recorded its last run in its AUX_TABLE mutex row and queued a compaction a minute ago.
        now = ms.initiator.now_ms()
        with engine.begin() as conn:
            conn.execute(sa.table("AUX_TABLE", sa.column("MT_KEY1"), sa.column("MT_KEY2")).insert().values(
                MT_KEY1="Initiator", MT_KEY2=now - 30_000))
        assert ms.shadow.hive_initiator_last_seen() == now - 30_000
        plant_hive_row(engine, queue=False, cid=9001, table="quiet", db="sales", state="s", enqueued_ms=now - 60_000)
        scope = CompactionScope.parse("sales.orders", "airflow")
        report = Initiator(ms, CONF, host="acidhost", scope=scope).run_cycle()
        got = {r.table: r for r in report.results}
        assert got["pooled"].outcome is Outcome.QUEUED  # its pool is one no Hive worker serves
        assert got["orders"].outcome is Outcome.DECLINED
        assert "ALTER TABLE sales.orders SET TBLPROPERTIES ('no_auto_compaction'='true') in Hive" in \
            got["orders"].reason
        assert got["events"].outcome is Outcome.SKIPPED and "outside [acid] scope" in got["events"].reason
        assert [c.table for c in ms.compactions.find(state="initiated")] == ["pooled"]
        assert ms.initiator.latest_decision("sales", "orders").outcome is Outcome.DECLINED

        _mark_no_auto_compaction(engine, "orders")
        synthetic_write(ms, tmp_path / "sales.db" / "orders", "sales", "orders", None)
        report = Initiator(ms, CONF, host="acidhost", scope=scope).run_cycle()
        got = {r.table: r for r in report.results}
        assert got["orders"].outcome is Outcome.QUEUED
        assert sorted(c.table for c in ms.compactions.find(state="initiated")) == ["orders", "pooled"]
    finally:
        ms.close()


def _tables_of(engine) -> set[str]:
    return {name.upper() for name in sa.inspect(engine).get_table_names()}


def _logged_cycle(ms, engine) -> int:
    """One shadow cycle that writes no Hive table (row checksums); the time its decisions were logged."""
    from airflow_acid.metastore.schema import ACID_INITIATOR_DECISION_LOG as ADL

    before = row_checksums(engine, exclude=DECISION_TABLES)
    Initiator(ms, CONF, host="shadowhost").run_shadow()
    assert row_checksums(engine, exclude=DECISION_TABLES) == before
    with engine.connect() as conn:
        decided = int(conn.execute(sa.select(sa.func.max(ADL.c.ADL_DECIDED_AT))).scalar_one())
    time.sleep(0.02)
    return decided


def test_shadow_history_over_a_range_is_created_only_on_request(hive_db, tmp_path, caplog):
    """The decision log appears on a Hive metastore only with ``hive create-decisions-table``; one made by an older
    release (decisions table only) still gives a report (the latest decisions), and the command adds just the log.
    Then three shadow cycles against Hive's scripted history: earlier/later judged from the history, no Hive table
    changed, and the log trimmed to its retention."""
    from airflow_acid.metastore.schema import ACID_INITIATOR_DECISION_LOG as ADL
    from airflow_acid.metastore.schema import ACID_INITIATOR_DECISIONS
    from airflow_acid.services.shadow import ShadowCategory, shadow_report

    url, engine = hive_db
    root = tmp_path / "sales.db"
    db_id = hms.register_database(engine, "sales", str(root))
    for name in ("early", "late", "starved"):
        hms.register_table(engine, db_id, name, COLUMNS, str(root / name))
    hive_tables = _tables_of(engine)
    fingerprint = hms.schema_fingerprint(engine, hive_tables)
    with Metastore(url, CONF) as ms:  # an active cycle and a refused shadow run create nothing
        assert Initiator(ms, CONF, host="acidhost").run_cycle().ran
    for name, n in (("early", 3), ("late", 1), ("starved", 3)):
        for _ in range(n):
            synthetic_write_at(engine, root / name, name)
    refused = CliRunner().invoke(main, ["shadow", "run", "--metastore-url", url, "--warehouse", str(tmp_path)],
                                 env=ENV)
    assert refused.exit_code == 1 and "create-decisions-table" in refused.output
    assert _tables_of(engine) == hive_tables

    with engine.begin() as conn:  # the decisions table as an older release created it: no log
        ACID_INITIATOR_DECISIONS.create(conn)
    with Metastore(url, CONF) as ms:
        assert ms.profile.decisions_table and not ms.profile.decision_log_table
        assert "shadow cycles record only the latest decision" in caplog.text
        Initiator(ms, CONF, host="shadowhost").run_shadow()
        old = {r.table: r for r in shadow_report(ms).rows}
        assert old["starved"].category is ShadowCategory.STARVED and old["starved"].history.decisions == 1
    created = CliRunner().invoke(main, ["hive", "create-decisions-table", "--metastore-url", url])
    assert created.exit_code == 0 and "created ACID_INITIATOR_DECISIONS and ACID_INITIATOR_DECISION_LOG" in \
        created.output, created.output
    assert _tables_of(engine) == hive_tables | {"ACID_INITIATOR_DECISIONS", "ACID_INITIATOR_DECISION_LOG"}
    assert hms.schema_fingerprint(engine, hive_tables) == fingerprint  # nothing of Hive's altered

    with Metastore(url, CONF) as ms:
        start = ms.initiator.now_ms()
        t1 = _logged_cycle(ms, engine)
        plant_hive_row(engine, queue=False, cid=9101, table="early", db="sales", state="s", enqueued_ms=t1 + 1)
        plant_hive_row(engine, queue=False, cid=9102, table="late", db="sales", state="s", type_code="i",
                       enqueued_ms=t1 + 2)
        synthetic_write_at(engine, root / "early", "early", kind="base")  # Hive's compaction took the deltas
        for _ in range(2):
            synthetic_write_at(engine, root / "late", "late")
        t2 = _logged_cycle(ms, engine)
        t3 = _logged_cycle(ms, engine)
        before = row_checksums(engine)
        report = shadow_report(ms, start, t3 + 1000)
        got = {r.table: r for r in report.rows}
        assert {t: r.category for t, r in got.items()} == {
            "early": ShadowCategory.EARLIER, "late": ShadowCategory.LATER, "starved": ShadowCategory.STARVED}
        assert got["early"].compact_at == t1 and got["early"].decision.outcome is Outcome.NOT_NEEDED
        assert got["late"].compact_at == t2 and got["starved"].history.decisions == 3
        result = CliRunner().invoke(main, ["shadow", "report", "--metastore-url", url, "--since", str(start),
                                           "--json"], catch_exceptions=False)
        rows = {r["table"]: r for r in json.loads(result.output)["rows"]}
        assert rows["sales.early"]["category"] == "would compact earlier" and rows["sales.early"]["flips"] == 1
        table = CliRunner().invoke(main, ["shadow", "report", "--metastore-url", url, "--since", str(start)],
                                   catch_exceptions=False)
        assert "would queue ×1" not in table.output and "would queue → not needed ×2" in table.output
        assert row_checksums(engine) == before  # the report only reads

        with engine.begin() as conn:  # the first two cycles are past the 30-day default retention
            conn.execute(sa.update(ADL).where(ADL.c.ADL_DECIDED_AT <= t2)
                         .values(ADL_DECIDED_AT=ADL.c.ADL_DECIDED_AT - 31 * 86_400_000))
        assert ms.initiator.purge_decision_log() == 6  # the HouseKeeper's step
        with engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(ADL)).scalar_one() == 3
    assert hms.schema_fingerprint(engine, hive_tables) == fingerprint


def synthetic_write_at(engine, location, table: str, kind: str = "delta") -> None:
    """One committed write of sales.<table> through airflow-acid's transaction API on the Hive metastore."""
    url = engine.url.render_as_string(hide_password=False)
    with Metastore(url, CONF) as ms:
        synthetic_write(ms, location, "sales", table, None, kind=kind)
