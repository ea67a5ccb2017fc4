"""Shadow mode and takeover on Hive 4.0.0 and 4.2.0 metastore databases (PostgreSQL, MariaDB): a shadow run over a
scripted history of Hive's compactor writes no Hive table (row checksums of every table before/after) and the report
puts each table in the right category; with a scope, the Initiator declines a table Hive's Initiator would also
compact — naming the ALTER TABLE to run in Hive — and takes it over once it is marked."""

from __future__ import annotations

import json

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
