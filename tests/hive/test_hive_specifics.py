"""One Hive 4.2.0 metastore per engine shared by this module (each test uses its own database names): Hive's
AUX_TABLE mutexes exclude airflow-acid's services and Hive's, the decisions table only on request, errors that are
not duplicate keys, names that differ only in case or accents on Hive's MySQL tables, and 4.3's catalog column."""

from __future__ import annotations

import logging
import uuid

import pyarrow.compute as pc
import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionType, LockType
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.housekeeper import HouseKeeper
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore import Metastore, hive_mutex
from airflow_acid.metastore.catalog import _insert, is_unique_violation
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import AlreadyExistsError, MetastoreError
from airflow_acid.metastore.flavour import RUN_TASK_COLUMNS
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.metastore.runs import TaskIdentity
from airflow_acid.metastore.schema import DBS
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.statements import StatementExecutor, parse_statement
from tests.hive import hms

pytestmark = pytest.mark.slow

CONF = MetastoreConf(opentxn_timeout_ms=0, delta_num_threshold=2)
COLUMNS = [("id", "int"), ("name", "string")]


@pytest.fixture
def engine(hive_42_url):
    eng = sa.create_engine(hive_42_url)
    yield eng
    eng.dispose()


@pytest.fixture
def ms(hive_42_url):
    metastore = Metastore(hive_42_url, CONF)
    yield metastore
    metastore.close()


def _hive_holds(engine, key: str):
    """Hive's MutexAPI.acquireLock: SELECT … FOR UPDATE on the AUX_TABLE row, kept until the cycle ends (Hive's
    TxnHandler connections run at READ COMMITTED)."""
    conn = engine.connect().execution_options(isolation_level="READ COMMITTED")
    aux = sa.table("AUX_TABLE", sa.column("MT_KEY1"), sa.column("MT_KEY2"))
    if conn.execute(sa.select(aux.c.MT_KEY1).where(aux.c.MT_KEY1 == key)).first() is None:
        conn.execute(sa.insert(aux).values(MT_KEY1=key, MT_KEY2=0))
        conn.commit()
    conn.execute(sa.select(aux.c.MT_KEY2).where(aux.c.MT_KEY1 == key).with_for_update()).all()
    return conn


def test_hive_services_and_airflow_acid_services_never_run_at_once(engine, ms):
    for key, run, skipped in [
        ("Initiator", lambda: Initiator(ms, CONF).run_cycle(), lambda r: not r.ran and "Hive's Initiator" in r.message),
        ("Cleaner", lambda: Cleaner(ms, CONF).run_cycle(), lambda r: r.skipped and "Hive's Cleaner" in r.skipped),
        ("HouseKeeper", lambda: HouseKeeper(ms, CONF).run_once(), lambda r: not r.ran and "HouseKeeper" in r.message),
        ("TxnCleaner", lambda: HouseKeeper(ms, CONF).run_once(), lambda r: not r.ran and "TxnCleaner" in r.message),
    ]:
        hive = _hive_holds(engine, key)
        try:
            report = run()
            assert skipped(report), (key, report)
        finally:
            hive.rollback()
            hive.close()
        assert not skipped(run()), key  # Hive's cycle ended: airflow-acid's runs

    # While airflow-acid's Initiator holds Hive's row, Hive's (and a second airflow-acid) cannot take it; on release
    # MT_KEY2 holds the cycle's start, as Hive's releaseLocks(timestamp) leaves it.
    held = hive_mutex.try_acquire(ms.db, "Initiator")
    assert held is not None
    try:
        assert hive_mutex.try_acquire(ms.db, "Initiator") is None
        assert not Initiator(ms, CONF).run_cycle().ran
    finally:
        held.release(123_456)
    report = Initiator(ms, CONF).run_cycle()
    assert report.ran and report.last_checked_ms == 123_456


def test_decisions_are_recorded_only_after_the_explicit_command(engine, ms, hive_42_url, tmp_path, caplog):
    db = f"d{uuid.uuid4().hex[:8]}"
    db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
    hms.register_table(engine, db_id, "t", COLUMNS, str(tmp_path / f"{db}.db" / "t"))
    wh = AcidWarehouse(ms, tmp_path, host="testhost")
    for i in range(3):
        with wh.transaction() as t:
            t.insert(f"{db}.t", [{"id": i, "name": "x"}])
    assert not ms.profile.decisions_table
    initiator = Initiator(ms, CONF)
    assert initiator.run_cycle().ran
    assert initiator.why(db, "t") is None  # nothing recorded, nothing created
    assert "ACID_INITIATOR_DECISIONS" not in sa.inspect(engine).get_table_names()

    before = hms.schema_fingerprint(engine)
    from click.testing import CliRunner

    from airflow_acid.cli import main

    result = CliRunner().invoke(main, ["hive", "create-decisions-table", "--metastore-url", hive_42_url])
    assert result.exit_code == 0 and "created ACID_INITIATOR_DECISIONS" in result.output
    after = hms.schema_fingerprint(engine)
    added = {c[0] for c in after["columns"]} - {c[0] for c in before["columns"]}
    assert added == {"ACID_INITIATOR_DECISIONS", "ACID_INITIATOR_DECISION_LOG"}  # nothing of Hive's changed
    assert hms.schema_fingerprint(engine, {t for t in {c[0] for c in before["columns"]}}) == \
        hms.schema_fingerprint(engine, {c[0] for c in before["columns"]})
    with Metastore(hive_42_url, CONF) as fresh:
        assert fresh.profile.decisions_table and fresh.profile.decision_log_table
        wh2 = AcidWarehouse(fresh, tmp_path, host="testhost")
        with wh2.transaction() as t:
            t.insert(f"{db}.t", [{"id": 9, "name": "y"}])
        Initiator(fresh, CONF).run_cycle()
        assert Initiator(fresh, CONF).why(db, "t") is not None
    with engine.begin() as conn:  # leave the shared database as Hive made it for the next tests
        for name in ("ACID_INITIATOR_DECISIONS", "ACID_INITIATOR_DECISION_LOG"):
            conn.exec_driver_sql(f"DROP TABLE {name}" if engine.dialect.name == "mysql" else f'DROP TABLE "{name}"')


def test_integrity_errors_other_than_duplicates_are_reported_as_what_they_are(engine, ms):
    with ms.db.begin() as conn:  # a NOT NULL violation is an IntegrityError too, but no duplicate
        with pytest.raises(MetastoreError) as caught:
            _insert(conn, DBS, {"DB_ID": 999_999, "NAME": "x", "DB_LOCATION_URI": None}, name="database x")
        assert not is_unique_violation(caught.value.__cause__)
        conn.rollback()
    assert not isinstance(caught.value, AlreadyExistsError)
    assert "database x" in str(caught.value) and "DB_LOCATION_URI" in str(caught.value)
    with ms.db.begin() as conn:
        with pytest.raises(AlreadyExistsError, match="already exists"):
            _insert(conn, sa.table("CTLGS", sa.column("CTLG_ID"), sa.column("NAME"), sa.column("LOCATION_URI")),
                    {"CTLG_ID": 1, "NAME": "hive", "LOCATION_URI": "x"}, name="catalog hive")
        conn.rollback()


def test_partitions_differing_only_in_case_or_accents(engine, ms, tmp_path, caplog):
    """Hive's MySQL tables: PARTITIONS.PART_NAME is latin1_bin (both partitions exist), the transactional tables are
    latin1_swedish_ci (they are one entity there). Data stays apart; the overlap is tracked as Hive tracks it and
    warned about; PostgreSQL keeps them apart everywhere."""
    db = f"c{uuid.uuid4().hex[:8]}"
    root = tmp_path / f"{db}.db"
    db_id = hms.register_database(engine, db, str(root))
    tbl = hms.register_table(engine, db_id, "t", COLUMNS, str(root / "t"), partition_keys=[("ds", "string")])
    names = ["ds=a", "ds=A", "ds=e", "ds=\u00e9"]
    for n in names:
        hms.register_partition(engine, tbl, [n[3:]], n, str(root / "t" / n))
    wh = AcidWarehouse(ms, tmp_path, host="testhost")
    model = []
    with caplog.at_level(logging.WARNING, logger="airflow_acid.metastore.catalog"):
        for i in range(3):
            for n in names:
                with wh.transaction() as t:
                    t.insert(f"{db}.t", [{"id": i, "name": n}], {"ds": n[3:]})
                model.append((i, n, n[3:]))
    warned = [r.getMessage() for r in caplog.records if "differ only in case or accents" in r.getMessage()]
    ci = engine.dialect.name == "mysql"
    assert ms.profile.case_insensitive_names is ci
    if ci:
        assert any("ds=A" in m and "ds=a" in m for m in warned), warned
        assert any("ds=\u00e9" in m and "ds=e" in m for m in warned), warned
    else:
        assert not warned
    assert sorted(tuple(r.values()) for r in wh.read(f"{db}.t").to_pylist()) == sorted(model)
    for n in names:  # each partition keeps its own directory and rows
        assert sorted(r["name"] for r in wh.read(f"{db}.t", n[3:] and {"ds": n[3:]}).to_pylist()) == [n] * 3

    # Every partition can be compacted on request and reads stay equal to the model.
    worker = Worker(ms, runner=LocalRunner(), host="testhost")
    compacted = {}
    for n in names:
        result = ms.compactions.enqueue(db, "t", n, CompactionType.MAJOR)
        if not result.accepted:  # on the CI tables a twin's queued row counts as this one's, as in Hive
            assert ci, result.message
            result = None
        while (outcome := worker.run_next()) is not None:
            compacted[outcome.entity] = outcome
        if result is None:  # once the twin's compaction is cleaned, this partition's own request is accepted
            Cleaner(ms, CONF).run_cycle()
            result = ms.compactions.enqueue(db, "t", n, CompactionType.MAJOR)
            assert result.accepted, result.message
            while (outcome := worker.run_next()) is not None:
                compacted[outcome.entity] = outcome
    assert {f"{db}.t/{n}" for n in names} <= set(compacted), sorted(compacted)
    assert all(o.status == WorkerStatus.COMPACTED for o in compacted.values()), compacted
    Cleaner(ms, CONF).run_cycle()
    for n in names:  # each partition's own directory was compacted into a base
        assert any(p.name.startswith("base_") for p in (root / "t" / n).iterdir()), n
    assert sorted(tuple(r.values()) for r in wh.read(f"{db}.t").to_pylist()) == sorted(model)


def test_rebalance_on_a_hive_metastore(engine, ms, tmp_path):
    """ALTER TABLE … COMPACT 'rebalance' on Hive's own schema: CQ_NUMBER_OF_BUCKETS / CQ_ORDER_BY (Hive 4 columns)
    carry the options to the Worker and into COMPLETED_COMPACTIONS; CQ_TYPE is Hive's 'r'."""
    db = f"r{uuid.uuid4().hex[:8]}"
    db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
    hms.register_table(engine, db_id, "t", COLUMNS, str(tmp_path / f"{db}.db" / "t"))
    wh = AcidWarehouse(ms, tmp_path, host="testhost")
    for i in range(3):
        with wh.transaction() as t:
            t.insert(f"{db}.t", [{"id": i * 2 + j, "name": f"n{i}{j}"} for j in range(2)])
    [row] = StatementExecutor(wh).run(parse_statement(
        f"ALTER TABLE {db}.t COMPACT 'rebalance' CLUSTERED INTO 2 BUCKETS ORDER BY id DESC")).records()
    cq = sa.table("COMPACTION_QUEUE", sa.column("CQ_ID"), sa.column("CQ_TYPE"), sa.column("CQ_NUMBER_OF_BUCKETS"),
                  sa.column("CQ_ORDER_BY"))
    with engine.connect() as conn:
        assert conn.execute(sa.select(cq.c.CQ_TYPE, cq.c.CQ_NUMBER_OF_BUCKETS, cq.c.CQ_ORDER_BY)
                            .where(cq.c.CQ_ID == row["compactionid"])).one() == ("r", 2, "ORDER BY id DESC")
    outcome = Worker(ms, runner=LocalRunner(), host="testhost").run_next()
    assert outcome.status == WorkerStatus.COMPACTED, outcome.message
    Cleaner(ms, CONF).run_cycle()
    done = ms.compactions.get(row["compactionid"])
    assert (done.state.value, done.number_of_buckets, done.order_by) == ("s", 2, "ORDER BY id DESC")
    location = tmp_path / f"{db}.db" / "t"
    [base] = [p for p in location.iterdir() if p.name.startswith("base_")]
    assert sorted(p.name for p in base.glob("bucket_*")) == ["bucket_00000", "bucket_00001"]
    assert sorted(r["id"] for r in wh.read(f"{db}.t").to_pylist()) == list(range(6))


def test_catalog_statements_on_a_hive_metastore_are_hives(engine, ms, tmp_path):
    """USE and SHOW read Hive's catalog; CREATE / DROP DATABASE, CREATE / DROP TABLE and ADD / DROP PARTITION are
    refused with the statement to run in Hive, nothing changed."""
    from airflow_acid.metastore.errors import HiveMetastoreError

    db = f"c{uuid.uuid4().hex[:8]}"
    db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
    tbl_id = hms.register_table(engine, db_id, "t", COLUMNS, str(tmp_path / f"{db}.db" / "t"),
                                partition_keys=[("ds", "string")])
    hms.register_partition(engine, tbl_id, ["a"], "ds=a", str(tmp_path / f"{db}.db" / "t" / "ds=a"))
    ex = StatementExecutor(AcidWarehouse(ms, tmp_path, host="testhost"))

    def rows(text: str) -> list[str]:
        return [r[0] for r in ex.run(parse_statement(text)).rows]

    assert db in rows("SHOW DATABASES") and rows(f"SHOW DATABASES LIKE '{db}'") == [db]
    ex.run(parse_statement(f"USE {db}"))
    assert rows("SHOW TABLES") == ["t"] and rows("SHOW PARTITIONS t") == ["ds=a"]
    for statement, what in [(f"CREATE DATABASE {db}x", f"create database {db}x"),
                            (f"DROP DATABASE {db} CASCADE", f"drop database {db}"),
                            ("CREATE TABLE u (id INT)", f"create table {db}.u"),
                            ("DROP TABLE t", f"drop table {db}.t"),
                            ("ALTER TABLE t DROP PARTITION (ds='a')", f"drop a partition of {db}.t")]:
        with pytest.raises(HiveMetastoreError, match=f"cannot {what}: .*run the DDL in Hive"):
            ex.run(parse_statement(statement))
    with pytest.raises(HiveMetastoreError, match=r"add it in Hive first \(ALTER TABLE"):
        ex.run(parse_statement("ALTER TABLE t ADD PARTITION (ds='b')"))
    assert rows("SHOW TABLES") == ["t"] and rows("SHOW PARTITIONS t") == ["ds=a"]


NEWER_CATALOG_COLUMNS = {"HIVE_LOCKS": "HL_CATALOG", "TXN_COMPONENTS": "TC_CATALOG",
                         "COMPLETED_TXN_COMPONENTS": "CTC_CATALOG", "COMPACTION_QUEUE": "CQ_CATALOG",
                         "COMPLETED_COMPACTIONS": "CC_CATALOG", "TXN_TO_WRITE_ID": "T2W_CATALOG",
                         "NEXT_WRITE_ID": "NWI_CATALOG", "WRITE_SET": "WS_CATALOG"}


def test_catalog_columns_of_newer_schemas_are_filled(engine, hive_42_url, tmp_path):
    """Hive 4.3 adds NOT NULL catalog columns (e.g. HIVE_LOCKS.HL_CATALOG) to the transactional tables: found by
    reflection and filled with the default catalog on every insert path. (The columns are added here to stand in
    for a newer schema; this test runs last in the module.)"""
    q = "`" if engine.dialect.name == "mysql" else '"'
    with engine.begin() as conn:
        for table, column in NEWER_CATALOG_COLUMNS.items():
            # existing rows get 'hive' (as Hive's upgrade script fills them); then no default, as in a fresh schema
            conn.exec_driver_sql(f"ALTER TABLE {q}{table}{q} ADD {q}{column}{q} varchar(256) NOT NULL DEFAULT 'hive'")
            conn.exec_driver_sql(f"ALTER TABLE {q}{table}{q} ALTER COLUMN {q}{column}{q} DROP DEFAULT")
    db = f"k{uuid.uuid4().hex[:8]}"
    db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
    hms.register_table(engine, db_id, "t", COLUMNS, str(tmp_path / f"{db}.db" / "t"))
    with Metastore(hive_42_url, CONF) as ms:
        assert ms.profile.catalog_columns == {t: (c,) for t, c in NEWER_CATALOG_COLUMNS.items()}
        txn = ms.txns.open_txn(user="u", host="h")
        ms.locks.lock([LockComponent("default", None, None, LockType.SHARED_READ)], txn_id=txn, user="u", host="h")
        hl = sa.table("HIVE_LOCKS", sa.column("HL_TXNID"), sa.column("HL_CATALOG"))
        with engine.connect() as conn:
            assert conn.execute(sa.select(hl.c.HL_CATALOG).where(hl.c.HL_TXNID == txn)).scalar() == "hive"
        ms.txns.abort(txn)

        wh = AcidWarehouse(ms, tmp_path, host="testhost")
        for i in range(3):
            with wh.transaction() as t:
                t.insert(f"{db}.t", [{"id": i, "name": "x"}])
        with wh.transaction() as t:
            t.update(f"{db}.t", set={"name": "y"}, where=pc.field("id") == 1)
        result = ms.compactions.enqueue(db, "t", None, CompactionType.MAJOR)
        assert result.accepted, result.message
        worker = Worker(ms, runner=LocalRunner(), host="testhost")
        while (outcome := worker.run_next()) is not None:
            assert outcome.status == WorkerStatus.COMPACTED, outcome.message
        Cleaner(ms, CONF).run_cycle()
        assert ms.compactions.get(result.id).state.value == "s"
        assert sorted(tuple(r.values()) for r in wh.read(f"{db}.t").to_pylist()) == [(0, "x"), (1, "y"), (2, "x")]
    with engine.connect() as conn:
        for table, column in NEWER_CATALOG_COLUMNS.items():
            values = set(conn.execute(sa.select(sa.column(column)).select_from(sa.table(table))).scalars())
            assert values <= {"hive"}, (table, values)


def test_run_figures_are_recorded_only_after_the_extra_tables_are_created(engine, hive_42_url, tmp_path):
    """Hive's COMPLETED_COMPACTIONS gets no columns: the figures live in ACID_COMPACTION_RUNS, created beside Hive's
    tables by ``airflow-acid hive create-extra-tables``; before that compactions run and record nothing."""
    from click.testing import CliRunner

    from airflow_acid.cli import main

    db = f"d{uuid.uuid4().hex[:8]}"
    db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
    hms.register_table(engine, db_id, "t", COLUMNS, str(tmp_path / f"{db}.db" / "t"))
    task = TaskIdentity("acid_compaction", "manual__1", "compact")

    def compact(ms: Metastore) -> int:
        wh = AcidWarehouse(ms, tmp_path, host="testhost")
        for i in range(2):
            with wh.transaction() as t:
                t.insert(f"{db}.t", [{"id": i, "name": "x"}])
        cq = ms.compactions.enqueue(db, "t", None, CompactionType.MAJOR).id
        worker = Worker(ms, runner=LocalRunner(), task=task)
        assert ms.compactions.claim(cq, worker.worker_id) is not None  # this row, not another test's
        assert worker.compact(cq).status is WorkerStatus.COMPACTED
        return cq

    with Metastore(hive_42_url, CONF) as ms:
        assert not ms.profile.runs_table
        first = compact(ms)
        assert ms.runs.get(first) is None and ms.compactions.purge_history() >= 0
        (row,) = ms.compactions.show_compactions(id=first)
        assert row.filesin is None and row.hightestwriteid is not None
    before = hms.schema_fingerprint(engine)
    result = CliRunner().invoke(main, ["hive", "create-extra-tables", "--metastore-url", hive_42_url])
    assert result.exit_code == 0, result.output
    assert "ACID_COMPACTION_RUNS" in result.output
    hive_tables = {c[0] for c in before["columns"]}
    assert hms.schema_fingerprint(engine, hive_tables) == before  # nothing of Hive's changed
    with Metastore(hive_42_url, CONF) as ms:
        assert ms.profile.runs_table
        second = compact(ms)
        (row,) = ms.compactions.show_compactions(id=second)
        assert (row.filesin, row.rowsout, row.deltasbefore, row.deltasafter) == (3, 4, 2, 0)  # base + 2 deltas
        assert row.digestin == row.digestout and row.digestin.startswith("4:")
        assert ms.profile.run_task_columns and (row.dagid, row.taskid, row.trynumber) == ("acid_compaction", "compact",
                                                                                            1)
    with engine.begin() as conn:  # the table as an older release created it: no digest nor task columns
        for column in ("ACR_DIGEST_IN", "ACR_DIGEST_OUT", *RUN_TASK_COLUMNS):
            conn.exec_driver_sql(f"ALTER TABLE ACID_COMPACTION_RUNS DROP COLUMN {column}"
                                 if engine.dialect.name == "mysql"
                                 else f'ALTER TABLE "ACID_COMPACTION_RUNS" DROP COLUMN "{column}"')
    with Metastore(hive_42_url, CONF) as ms:
        assert ms.profile.runs_table and not ms.profile.run_digest_columns and not ms.profile.run_task_columns
        third = compact(ms)  # figures recorded, digests and task not (the compaction is still proven)
        (row,) = ms.compactions.show_compactions(id=third)
        assert row.filesin is not None and row.digestin is None and ms.runs.get(second) is not None
        assert row.dagid is None and not ms.runs.record_task(third, task)
    with engine.begin() as conn:  # leave the shared database as Hive made it for the next tests
        for name in ("ACID_COMPACTION_RUNS", "ACID_INITIATOR_DECISIONS", "ACID_INITIATOR_DECISION_LOG"):
            conn.exec_driver_sql(f"DROP TABLE {name}" if engine.dialect.name == "mysql" else f'DROP TABLE "{name}"')


def test_candidate_window_pages_on_at_one_hive_commit_time(engine, ms):
    """Hive's CTC_TIMESTAMP rows of one dynamic-partition commit share a timestamp: with more of them than the fetch
    size, the window pages on by key (Hive's timestamp columns, whole seconds on MySQL) instead of repeating."""
    db = f"w{uuid.uuid4().hex[:8]}"
    ctc = sa.table("COMPLETED_TXN_COMPONENTS", *[sa.column(c) for c in (
        "CTC_TXNID", "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION", "CTC_TIMESTAMP", "CTC_WRITEID", "CTC_UPDATE_DELETE")])
    txn_id = ms.txns.open_txn(user="hive", host="hs2.example")
    ms.txns.commit(txn_id)  # the components below stand for its dynamic-partition insert
    catalog = {c["name"] for c in sa.inspect(engine).get_columns("COMPLETED_TXN_COMPONENTS")} & {"CTC_CATALOG"}
    if catalog:  # newer schemas: a NOT NULL catalog column
        ctc.append_column(sa.column("CTC_CATALOG"))
    extra = {"CTC_CATALOG": "hive"} if catalog else {}
    with engine.begin() as conn:
        stamp = conn.execute(sa.select(sa.func.current_timestamp())).scalar_one().replace(microsecond=0)
        conn.execute(sa.insert(ctc), [dict(**extra, CTC_TXNID=txn_id, CTC_DATABASE=db, CTC_TABLE="t", CTC_PARTITION=f"d={i}",
                                           CTC_TIMESTAMP=stamp, CTC_WRITEID=1, CTC_UPDATE_DELETE="N")
                                      for i in range(5)] +
                     [dict(**extra, CTC_TXNID=txn_id, CTC_DATABASE=db, CTC_TABLE="u", CTC_PARTITION=None,
                           CTC_TIMESTAMP=stamp, CTC_WRITEID=1, CTC_UPDATE_DELETE="N")])
    everything = [c for c in ms.initiator.write_candidates(None, 5000)[0] if c.database == db]
    assert len(everything) == 6 and len({c.last_commit_ms for c in everything}) == 1
    since = everything[0].last_commit_ms
    taken, _resume = ms.initiator.write_candidates(since, 2)
    assert {(c.table, c.partition) for c in everything} <= {(c.table, c.partition) for c in taken}
