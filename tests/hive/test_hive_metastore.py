"""airflow-acid on an existing Hive 4 metastore database (Hive's own schema scripts 4.0.0 / 4.1.0 / 4.2.0 on
PostgreSQL and MariaDB): tables registered the way HMS registers them, data written through airflow-acid, Hive's own
rows (an open reader, its lock, a commit relying on the column default, a compaction request, a history row) read
and honoured, Initiator → Worker → Cleaner, reads equal the model, and Hive's schema unchanged at the end."""

from __future__ import annotations

import time

import pyarrow.compute as pc
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.cli import main
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore import Metastore
from airflow_acid.metastore import init as schema_init
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import HiveMetastoreError
from airflow_acid.metastore.flavour import Flavour
from airflow_acid.services import explain
from airflow_acid.spark.runners import LocalRunner, SessionRunner
from tests.hive import hms

pytestmark = pytest.mark.slow

CONF = MetastoreConf(opentxn_timeout_ms=0, delta_num_threshold=2)
COLUMNS = [("id", "int"), ("name", "string")]
META_INFO = b'{"hive":"compaction meta info"}'


def _t(name: str, *columns: str) -> sa.TableClause:
    return sa.table(name, *[sa.column(c) for c in columns])


def _register(engine, root) -> dict:
    db_id = hms.register_database(engine, "sales", str(root / "sales.db"))
    orders = hms.register_table(engine, db_id, "orders", COLUMNS, str(root / "sales.db" / "orders"))
    events = hms.register_table(engine, db_id, "events", COLUMNS, str(root / "sales.db" / "events"),
                                partition_keys=[("ds", "string")])
    for ds in ("d1", "d2"):
        hms.register_partition(engine, events, [ds], f"ds={ds}", str(root / "sales.db" / "events" / f"ds={ds}"))
    return {"db": db_id, "orders": orders, "events": events}


def _hive_lock(engine, txn_id: int, db: str, table: str) -> int:
    """The SHARED_READ lock HiveServer2's DbTxnManager takes for a query in ``txn_id`` (acquired, heartbeat 0)."""
    nl = _t("NEXT_LOCK_ID", "NL_NEXT")
    locks = _t("HIVE_LOCKS", "HL_LOCK_EXT_ID", "HL_LOCK_INT_ID", "HL_TXNID", "HL_DB", "HL_TABLE", "HL_PARTITION",
               "HL_LOCK_STATE", "HL_LOCK_TYPE", "HL_LAST_HEARTBEAT", "HL_ACQUIRED_AT", "HL_USER", "HL_HOST",
               "HL_HEARTBEAT_COUNT", "HL_AGENT_INFO")
    with engine.begin() as conn:
        ext = int(conn.execute(sa.select(nl.c.NL_NEXT).with_for_update()).scalar_one())
        conn.execute(sa.update(nl).values(NL_NEXT=ext + 1))
        conn.execute(sa.insert(locks).values(
            HL_LOCK_EXT_ID=ext, HL_LOCK_INT_ID=1, HL_TXNID=txn_id, HL_DB=db, HL_TABLE=table, HL_PARTITION=None,
            HL_LOCK_STATE="a", HL_LOCK_TYPE="r", HL_LAST_HEARTBEAT=0, HL_ACQUIRED_AT=int(time.time() * 1000),
            HL_USER="hive", HL_HOST="hs2.example", HL_HEARTBEAT_COUNT=0, HL_AGENT_INFO="hive_query_1"))
    return ext


def _hive_history_row(engine, cc_id: int) -> None:
    """A 'succeeded' COMPLETED_COMPACTIONS row as Hive 4's markCleaned leaves it, with CC_META_INFO."""
    cc = _t("COMPLETED_COMPACTIONS", "CC_ID", "CC_DATABASE", "CC_TABLE", "CC_PARTITION", "CC_STATE", "CC_TYPE",
            "CC_WORKER_ID", "CC_ENQUEUE_TIME", "CC_START", "CC_END", "CC_RUN_AS", "CC_HIGHEST_WRITE_ID",
            "CC_META_INFO", "CC_HADOOP_JOB_ID", "CC_INITIATOR_ID", "CC_INITIATOR_VERSION", "CC_WORKER_VERSION")
    now = int(time.time() * 1000)
    with engine.begin() as conn:
        conn.execute(sa.insert(cc).values(
            CC_ID=cc_id, CC_DATABASE="sales", CC_TABLE="events", CC_PARTITION="ds=d2", CC_STATE="s", CC_TYPE="i",
            CC_WORKER_ID="hs2.example-32", CC_ENQUEUE_TIME=now - 60_000, CC_START=now - 50_000, CC_END=now - 40_000,
            CC_RUN_AS="hive", CC_HIGHEST_WRITE_ID=0, CC_META_INFO=sa.literal(META_INFO, sa.LargeBinary),
            CC_HADOOP_JOB_ID="job_1700000000000_0001", CC_INITIATOR_ID="hs2.example-17",
            CC_INITIATOR_VERSION="4.2.0", CC_WORKER_VERSION="4.2.0"))


def _hive_commit_record(engine, txn_id: int) -> None:
    """A COMPLETED_TXN_COMPONENTS row as Hive 4's commitTxn inserts it: CTC_TIMESTAMP left to the column default."""
    ctc = _t("COMPLETED_TXN_COMPONENTS", "CTC_TXNID", "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION", "CTC_WRITEID",
             "CTC_UPDATE_DELETE")
    with engine.begin() as conn:
        conn.execute(sa.insert(ctc).values(CTC_TXNID=txn_id, CTC_DATABASE="sales", CTC_TABLE="events",
                                           CTC_PARTITION="ds=d2", CTC_WRITEID=None, CTC_UPDATE_DELETE="N"))


def _cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _rows(wh: AcidWarehouse, table: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in wh.read(table).to_pylist())


def test_hive_metastore_end_to_end(hive_url, hive_engine, tmp_path, request, spark_if_needed):
    backend, version = request.node.callspec.params["hive_url"]
    engine = hive_engine
    before = hms.schema_fingerprint(engine)
    ids = _register(engine, tmp_path)

    ms = Metastore(hive_url, CONF)
    try:
        # --- detected, and nothing that would alter Hive's schema is allowed -------------------------------------
        assert ms.profile.flavour is Flavour.HIVE and ms.profile.hive_version == version
        assert ms.profile.commit_time_is_timestamp and ms.profile.job_id_width == 32
        assert not ms.profile.decisions_table
        with pytest.raises(HiveMetastoreError, match="Hive metastore .*schematool"):
            ms.init()
        for action in (schema_init.upgrade, schema_init.downgrade):
            with pytest.raises(HiveMetastoreError, match="Hive metastore"):
                action(hive_url)
        result = _cli("init", "--metastore-url", hive_url)
        assert result.exit_code == 1 and "Hive metastore" in result.output
        with pytest.raises(HiveMetastoreError, match="is a Hive metastore"):
            _ = Metastore(hive_url, flavour="acid").profile
        status = _cli("status", "--metastore-url", hive_url, "--json")
        assert status.exit_code == 0 and f'"hive_schema_version": "{version}"' in status.output

        catalog = ms.catalog
        for ddl, what in [
            (lambda: catalog.create_database("other", str(tmp_path / "other.db")), "create database other"),
            (lambda: catalog.create_table("sales", "t2", COLUMNS), "create table sales.t2"),
            (lambda: catalog.drop_table("sales", "orders"), "drop table sales.orders"),
            (lambda: catalog.alter_table_properties("sales", "orders", {"no_auto_compaction": "true"}),
             "alter the properties of table sales.orders"),
            (lambda: catalog.drop_partition("sales", "events", {"ds": "d1"}), "drop a partition of sales.events"),
            (lambda: catalog.alter_database_params("sales", {"x": "y"}), "alter database sales"),
        ]:
            with pytest.raises(HiveMetastoreError, match=f"cannot {what}: .*run the DDL in Hive"):
                ddl()

        # --- the catalog as HMS wrote it -------------------------------------------------------------------------
        wh = AcidWarehouse(ms, tmp_path, host="testhost")
        assert ms.catalog.list_databases() == ["default", "sales"] or ms.catalog.list_databases() == ["sales"]
        events = wh.table("sales.events")
        assert [c.name for c in events.columns] == ["id", "name"] and [k.name for k in events.partition_keys] == ["ds"]
        assert events.is_transactional and abs(events.create_time - time.time() * 1000) < 600_000  # seconds → ms
        assert sorted(p.name for p in wh.list_partitions("sales.events")) == ["ds=d1", "ds=d2"]

        # --- writes through airflow-acid into Hive's tables and partitions ---------------------------------------
        model_orders, model_events = [], []
        for i in range(3):
            with wh.transaction() as t:
                t.insert("sales.orders", [{"id": i, "name": f"o{i}"}])
                t.insert("sales.events", [{"id": i, "name": f"e{i}"}], {"ds": "d1"})
            model_orders.append((i, f"o{i}"))
            model_events.append((i, f"e{i}", "d1"))
        with wh.transaction() as t:
            t.update("sales.events", set={"name": "changed"}, where=pc.field("id") == 1)
        model_events = [(i, "changed" if i == 1 else n, d) for i, n, d in model_events]
        with wh.transaction() as t:
            t.delete("sales.orders", where=pc.field("id") == 0)
        model_orders = [r for r in model_orders if r[0] != 0]
        with pytest.raises(HiveMetastoreError, match=r"partition ds=d3 of table sales.events is not registered.*"
                                                     r"ADD PARTITION \(ds='d3'\)"):
            with wh.transaction() as t:
                t.insert("sales.events", [{"id": 99, "name": "nowhere"}], {"ds": "d3"})
        assert not (tmp_path / "sales.db" / "events" / "ds=d3").exists() or \
            not any((tmp_path / "sales.db" / "events" / "ds=d3").rglob("*.orc*"))

        # --- rows Hive writes ---------------------------------------------------------------------------------------
        reader = hms.hive_open_txn(engine)  # a long-running query in HiveServer2
        lock_id = _hive_lock(engine, reader, "sales", "orders")
        _hive_commit_record(engine, reader - 1 if reader > 1 else reader)
        _hive_history_row(engine, 10_000)
        hive_cq = hms.hive_compact_request(engine, "sales", "orders", None, "a", META_INFO)

        txns = {t.txnid: t for t in ms.txns.show_transactions()}
        assert txns[reader].state is TxnState.OPEN and txns[reader].user == "hive"
        assert txns[reader].host == "hs2.example"
        locks = [lk for lk in ms.locks.show_locks() if lk.ext_id == lock_id]
        assert locks and locks[0].transaction_id == reader and locks[0].user == "hive"
        shown = {r.compactionid: r for r in ms.compactions.show_compactions()}
        assert shown[hive_cq].state == "initiated" and shown[hive_cq].tabname == "orders"
        assert shown[10_000].state == "succeeded" and shown[10_000].hadoopjobid == "job_1700000000000_0001"
        candidates, _ = Initiator(ms, CONF).store.write_candidates(None, 100)
        hive_commit = [c for c in candidates if c.partition == "ds=d2"]
        assert hive_commit and abs(hive_commit[0].last_commit_ms - ms.txns.db.run(lambda c: _now(c))) < 120_000

        # --- Initiator → Worker → Cleaner ------------------------------------------------------------------------
        report = Initiator(ms, CONF).run_cycle()
        assert report.ran, report.message
        queued = {(r.table, r.partition) for r in report.queued}
        assert ("events", "ds=d1") in queued
        runner = SessionRunner(spark_if_needed) if spark_if_needed is not None else LocalRunner()
        worker = Worker(ms, runner=runner, host="testhost")
        outcomes = []
        while (outcome := worker.run_next()) is not None:
            outcomes.append(outcome)
        by_id = {o.compaction_id: o for o in outcomes}
        assert by_id[hive_cq].status == WorkerStatus.COMPACTED, by_id[hive_cq].message  # Hive-queued row ran
        assert all(o.status == WorkerStatus.COMPACTED for o in outcomes), [(o.entity, o.message) for o in outcomes]
        job_ids = [r.hadoopjobid for r in ms.compactions.show_compactions() if r.compactionid in by_id]
        assert job_ids and all(j and len(j) <= 32 for j in job_ids)
        assert _rows(wh, "sales.orders") == sorted(model_orders)
        assert _rows(wh, "sales.events") == sorted(model_events)

        # The reader Hive opened before the compaction committed keeps its files: not cleaned, and 'why' says who.
        cleaner = Cleaner(ms, CONF)
        first = cleaner.run_cycle()
        assert first.skipped is None
        waiting = {e.compaction_id for e in first.waiting}
        assert hive_cq in waiting
        blockers = explain(wh, "sales.orders").cleanup_blockers
        assert any(b["txn_id"] == reader and b["user"] == "hive" for b in blockers), blockers
        assert any("decisions are not recorded on this Hive metastore" in s
                   for s in explain(wh, "sales.orders").summary)
        why = _cli("why", "sales.orders", "--metastore-url", hive_url, "--warehouse", str(tmp_path))
        assert why.exit_code == 0 and str(reader) in why.output and "hs2.example" in why.output

        hms.hive_end_txn(engine, reader)
        with engine.begin() as conn:  # Hive releases the query's locks with the txn
            conn.execute(sa.delete(_t("HIVE_LOCKS", "HL_TXNID")).where(sa.column("HL_TXNID") == reader))
        second = cleaner.run_cycle()
        cleaned = {e.compaction_id for e in second.entries if e.status == CleanerStatus.CLEANED}
        assert hive_cq in cleaned and set(by_id) <= cleaned | {e.compaction_id for e in first.entries}
        final = ms.compactions.get(hive_cq)
        assert final.state is CompactionState.SUCCEEDED
        cc = _t("COMPLETED_COMPACTIONS", "CC_ID", "CC_META_INFO")
        with engine.connect() as conn:
            assert bytes(conn.execute(sa.select(cc.c.CC_META_INFO).where(cc.c.CC_ID == hive_cq)).scalar()) == META_INFO
        assert _rows(wh, "sales.orders") == sorted(model_orders)
        assert _rows(wh, "sales.events") == sorted(model_events)
        orders_dirs = sorted(p.name for p in (tmp_path / "sales.db" / "orders").iterdir()
                             if not p.name.startswith((".", "_")))
        assert len(orders_dirs) == 1 and orders_dirs[0].startswith("base_"), orders_dirs
    finally:
        ms.close()
    assert hms.schema_fingerprint(engine) == before
    assert ids["orders"] != ids["events"]


def _now(conn) -> int:
    from airflow_acid.metastore.db import now_ms

    return now_ms(conn)


@pytest.fixture
def spark_if_needed(request):
    """The session-wide SparkSession for the 4.2.0 runs (one real Spark compaction per engine); None elsewhere."""
    backend, version = request.node.callspec.params["hive_url"]
    if version != "4.2.0":
        return None
    return request.getfixturevalue("spark")
