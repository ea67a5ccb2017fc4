"""The doctor (issue 33 item 3) on airflow-acid's schema (SQLite, PostgreSQL, MariaDB) and on Hive 4.0.0 and 4.2.0
metastore databases (PostgreSQL, MariaDB): each stuck state planted with Hive-shaped rows is found exactly (nothing
on the healthy database), diagnosing changes no row, and its fix resolves it while changing only the tables it
names."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.compactions import SCHEDULER_MUTEX
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import acquire_mutex
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.services.doctor import DoctorLimits, FindingKind, Severity, apply_fix, diagnose
from tests.backends import backends, server_database
from tests.hive import hms
from tests.hive.conftest import load_hive_database
from tests.services.doctor_support import HOUR_MS, Planter, changed, checksums, now_ms

CONF = MetastoreConf(opentxn_timeout_ms=0)
LIMITS = DoctorLimits(backlog_rows=20)
COLUMNS = [("id", "int"), ("name", "string")]
ENVS = [*[pytest.param(("acid", p.values[0], None), marks=p.marks, id=f"acid-{p.values[0]}")
          for p in backends("sqlite", "postgresql", "mariadb")],
        *[pytest.param(("hive", backend, version), marks=pytest.mark.servers, id=f"hive-{backend}-{version}")
          for backend in ("postgresql", "mariadb") for version in ("4.0.0", "4.2.0")]]
CQ, CC, TXNS, MHL = "COMPACTION_QUEUE", "COMPLETED_COMPACTIONS", "TXNS", "MIN_HISTORY_LEVEL"


@dataclass
class Env:
    """A metastore with one table ``db.t`` and a few committed writes to it: healthy."""

    ms: Metastore
    engine: Engine
    db: str
    hive: bool
    table: str = "t"


@pytest.fixture(scope="module", params=ENVS)
def env(request, migrated_sqlite, tmp_path_factory):
    flavour, backend, version = request.param
    root = tmp_path_factory.mktemp("wh")
    db = f"doc{uuid.uuid4().hex[:6]}"
    if flavour == "hive":
        url, drop = load_hive_database(backend, version)
    elif backend == "sqlite":
        url, drop = f"sqlite:///{root / 'metastore.db'}", (lambda: None)
    else:
        url, drop = server_database(backend)
    engine = sa.create_engine(url)
    ms = Metastore(url, CONF)
    try:
        if flavour == "hive":
            db_id = hms.register_database(engine, db, str(root / f"{db}.db"))
            hms.register_table(engine, db_id, "t", COLUMNS, str(root / f"{db}.db" / "t"))
        else:
            ms.init()
        wh = AcidWarehouse(ms, root, init=False, host="testhost")
        if flavour != "hive":
            wh.create_table(f"{db}.t", COLUMNS)
        for i in range(3):
            with wh.transaction() as t:
                t.insert(f"{db}.t", [{"id": i, "name": "x"}])
        yield Env(ms, engine, db, flavour == "hive")
    finally:
        ms.close()
        engine.dispose()
        drop()


# --- the stuck states, planted: (finding id, compaction ids, txn ids, tables the fix changes or None, paused DAGs)


def aborted_compactor_ready(p: Planter, e: Env) -> tuple:
    txn = p.txn("a")
    cq = p.queue(e.db, e.table, "r", CQ_TXN_ID=txn, CQ_NEXT_TXN_ID=txn + 1, CQ_HIGHEST_WRITE_ID=3,
                 CQ_WORKER_ID="hms1-worker-1", CQ_START=now_ms(), CQ_COMMIT_TIME=now_ms())
    return f"aborted-compactor-txn:cq={cq}", [cq], [txn], {CQ, CC}, None


def aborted_compactor_working(p: Planter, e: Env) -> tuple:
    txn = p.txn("a")
    cq = p.queue(e.db, e.table, "w", CQ_TXN_ID=txn, CQ_WORKER_ID="hms1-worker-1", CQ_START=now_ms())
    return f"aborted-compactor-txn:cq={cq}", [cq], [txn], {CQ, CC}, None


def stuck_working(p: Planter, e: Env) -> tuple:
    txn = p.txn("o", heartbeat_ago_ms=25 * HOUR_MS)  # the dead worker stopped heartbeating it: one finding, not two
    cq = p.queue(e.db, e.table, "w", CQ_TXN_ID=txn, CQ_WORKER_ID="hms1-worker-1", CQ_START=now_ms() - 25 * HOUR_MS)
    return f"stuck-working:cq={cq}", [cq], [txn], {CQ, CC, TXNS, MHL}, None


def duplicate_queue(p: Planter, e: Env) -> tuple:
    first = p.queue(e.db, e.table, "i")
    second = p.queue(e.db, e.table, "i")
    return f"duplicate-queue:cq={second}", [first, second], [], {CQ, CC}, None


def duplicate_compaction(p: Planter, e: Env) -> tuple:
    first = p.history(e.db, e.table, "s", CC_HIGHEST_WRITE_ID=7)
    second = p.history(e.db, e.table, "s", CC_HIGHEST_WRITE_ID=7)
    return f"duplicate-compaction:cq={first},{second}", [first, second], [], None, None


def stale_txn(p: Planter, e: Env) -> tuple:
    txn = p.txn("o", heartbeat_ago_ms=int(CONF.txn_timeout_s * 1000) + 60_000)
    return f"stale-txn:txn={txn}", [], [txn], {TXNS, MHL}, None


def cleaning_blocked(p: Planter, e: Env) -> tuple:
    blocker = p.txn("o")
    cq = p.queue(e.db, e.table, "r", CQ_NEXT_TXN_ID=blocker + 1, CQ_HIGHEST_WRITE_ID=3,
                 CQ_START=now_ms() - 26 * HOUR_MS, CQ_COMMIT_TIME=now_ms() - 25 * HOUR_MS)
    return f"cleaning-blocked:cq={cq}", [cq], [blocker], {TXNS, MHL}, None


def no_leader_initiator(p: Planter, e: Env) -> tuple:
    p.mutex("Initiator", now_ms() - 2 * HOUR_MS)  # the module's writes came after its last run
    return "no-leader:Initiator", [], [], None, None


def no_leader_cleaner(p: Planter, e: Env) -> tuple:
    p.mutex("Cleaner", now_ms() - 2 * HOUR_MS)
    cq = p.queue(e.db, e.table, "r", CQ_NEXT_TXN_ID=1, CQ_HIGHEST_WRITE_ID=3, CQ_COMMIT_TIME=now_ms())
    return "no-leader:Cleaner", [cq], [], None, None


def bookkeeping_backlog(p: Planter, e: Env) -> tuple:
    p.write_ids(e.db, "old_table", LIMITS.backlog_rows + 10)
    return "bookkeeping-backlog:TXN_TO_WRITE_ID", [], [], None, None


def paused_dag(p: Planter, e: Env) -> tuple:
    cq = p.queue(e.db, e.table, "i")
    assert diagnose(e.ms, limits=LIMITS, paused_dags=set()) == []
    return "paused-dag:acid_compaction", [cq], [], None, {"acid_compaction"}


def orphan_queue_row(p: Planter, e: Env) -> tuple:
    cq = p.queue(e.db, "dropped_table", "i")
    return f"orphan-queue-row:cq={cq}", [cq], [], {CQ}, None


def starved(p: Planter, e: Env) -> tuple:
    e.ms.db.run(lambda conn: acquire_mutex(conn, SCHEDULER_MUTEX))  # the mutex row every enqueue creates once
    p.old_writes(e.db, e.table, CONF.delta_num_threshold, 2 * 24 * HOUR_MS, hive=e.hive)
    return f"starved:{e.db}.{e.table}", [], [], {CQ, "NEXT_COMPACTION_QUEUE_ID"}, None


CASES = [aborted_compactor_ready, aborted_compactor_working, stuck_working, duplicate_queue, duplicate_compaction,
         stale_txn, cleaning_blocked, no_leader_initiator, no_leader_cleaner, bookkeeping_backlog, paused_dag,
         orphan_queue_row, starved]


@pytest.mark.parametrize("plant", CASES, ids=[c.__name__ for c in CASES])
def test_each_stuck_state_is_found_exactly_and_fixed(env, plant):
    planter = Planter(env.engine)
    try:
        assert diagnose(env.ms, limits=LIMITS, paused_dags={"acid_compaction"}) == []
        finding_id, cq_ids, txn_ids, fix_changes, paused = plant(planter, env)
        before = checksums(env.engine)
        found = diagnose(env.ms, limits=LIMITS, paused_dags=paused)
        assert checksums(env.engine) == before, "diagnosing changed rows"
        assert [f.id for f in found] == [finding_id], [f.summary for f in found]
        finding = found[0]
        assert finding.kind is FindingKind(finding_id.split(":")[0])
        assert (sorted(finding.compaction_ids), sorted(finding.txn_ids)) == (sorted(cq_ids), sorted(txn_ids))
        assert finding.evidence and finding.blocks and isinstance(finding.severity, Severity)
        assert finding.to_dict()["id"] == finding_id

        result = apply_fix(env.ms, finding_id, user="ops", limits=LIMITS, paused_dags=paused)
        after = checksums(env.engine)
        if fix_changes is None:
            assert finding.fix is None and finding.advice
            assert not result.applied and "has no automatic fix" in result.message
            assert after == before
        else:
            assert result.applied, result.message
            assert changed(before, after) == fix_changes
            assert diagnose(env.ms, limits=LIMITS, paused_dags=paused) == []
            with pytest.raises(NoSuchObjectError, match="finds no"):
                apply_fix(env.ms, finding_id, user="ops", limits=LIMITS, paused_dags=paused)
    finally:
        planter.remove()


def test_ready_for_cleaning_with_two_blockers_names_both_and_has_no_single_fix(env):
    planter = Planter(env.engine)
    try:
        a, b = planter.txn("o"), planter.txn("o")
        cq = planter.queue(env.db, env.table, "r", CQ_NEXT_TXN_ID=b + 1, CQ_HIGHEST_WRITE_ID=3,
                           CQ_COMMIT_TIME=now_ms() - 25 * HOUR_MS)
        (finding,) = diagnose(env.ms, limits=LIMITS)
        assert finding.id == f"cleaning-blocked:cq={cq}" and finding.txn_ids == [a, b]
        assert f"transaction {a} " in finding.summary and f"transaction {b} " in finding.summary
        assert finding.fix is None and "one by one" in (finding.advice or "")
    finally:
        planter.remove()


def _json(finding: Any) -> dict:
    return finding.to_dict()
