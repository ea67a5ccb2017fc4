"""Benchmark: latency of CompactionQueue.claim_next with a long queue versus a short one, per backend.

For each backend a fresh database is created, ``--rows`` 'initiated' rows are queued, and ``--claims`` claims
are timed (each claimed row is put back afterwards, outside the timing, so the queue length stays constant).
The baseline is the same measurement with ``--baseline-rows`` rows queued, in the same run. Prints JSON.

    .venv/bin/python bench/bench_claim_next.py [--rows 10000] [--claims 300] [--backends sqlite,postgresql,mariadb]
                                               [--state-id-index]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import Goal, emit

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.metastore.compactions import CompactionQueue
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.init import init_schema
from airflow_acid.metastore.schema import COMPACTION_QUEUE, NEXT_COMPACTION_QUEUE_ID

PG_ADMIN_URL = os.environ.get("AIRFLOW_ACID_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MYSQL_ADMIN_URL = os.environ.get("AIRFLOW_ACID_TEST_MYSQL", "mysql+pymysql://root@127.0.0.1:3306/test")


def _server_database(admin_url: str):
    name = f"acid_bench_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = sa.engine.make_url(admin_url).set(database=name).render_as_string(hide_password=False)

    def drop() -> None:
        with admin.connect() as conn:
            suffix = " WITH (FORCE)" if admin.dialect.name == "postgresql" else ""
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}{suffix}")
        admin.dispose()

    return url, drop


def _seed(db: Database, rows: int) -> None:
    """Queue ``rows`` initiated compactions in bulk (ids from NEXT_COMPACTION_QUEUE_ID, as enqueue would)."""
    def work(conn) -> None:
        conn.execute(sa.delete(COMPACTION_QUEUE))
        start = int(conn.execute(sa.select(NEXT_COMPACTION_QUEUE_ID.c.NCQ_NEXT).with_for_update()).scalar_one())
        now = now_ms(conn)
        batch = [{"CQ_ID": start + i, "CQ_DATABASE": "bench", "CQ_TABLE": f"t{i % 500}", "CQ_PARTITION": f"p={i}",
                  "CQ_STATE": CompactionState.INITIATED.value, "CQ_TYPE": CompactionType.MINOR.value,
                  "CQ_ENQUEUE_TIME": now, "CQ_RETRY_RETENTION": 0} for i in range(rows)]
        for chunk in range(0, rows, 2000):
            conn.execute(sa.insert(COMPACTION_QUEUE), batch[chunk:chunk + 2000])
        conn.execute(sa.update(NEXT_COMPACTION_QUEUE_ID).values(NCQ_NEXT=start + rows))

    db.run(work, what="seed benchmark queue")
    with db.begin() as conn:  # steady state: the planner has statistics (autovacuum / auto-analyze would)
        conn.exec_driver_sql('ANALYZE "COMPACTION_QUEUE"' if conn.dialect.name == "postgresql"
                             else "ANALYZE TABLE COMPACTION_QUEUE" if conn.dialect.name == "mysql" else "ANALYZE")


def _measure(db: Database, rows: int, claims: int) -> dict:
    _seed(db, rows)
    queue = CompactionQueue(db, MetastoreConf())
    for _ in range(5):  # warm up connections and plans
        info = queue.claim_next("bench-0")
        _put_back(db, info.id)
    samples = []
    for n in range(claims):
        started = time.perf_counter()
        info = queue.claim_next(f"bench-{n}")
        samples.append((time.perf_counter() - started) * 1000)
        assert info is not None and info.state is CompactionState.WORKING
        _put_back(db, info.id)
    samples.sort()
    return {"queued": rows, "claims": claims, "p50_ms": round(statistics.median(samples), 3),
            "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 3), "max_ms": round(samples[-1], 3)}


def _put_back(db: Database, cq_id: int) -> None:
    db.run(lambda conn: conn.execute(sa.update(COMPACTION_QUEUE).where(COMPACTION_QUEUE.c.CQ_ID == cq_id).values(
        CQ_STATE=CompactionState.INITIATED.value, CQ_WORKER_ID=None, CQ_START=None)))


def run_backend(backend: str, rows: int, baseline_rows: int, claims: int, state_id_index: bool = False) -> dict:
    drop = None
    tmp = None
    if backend == "sqlite":
        tmp = tempfile.TemporaryDirectory()
        url = f"sqlite:///{tmp.name}/metastore.db"
    else:
        url, drop = _server_database(PG_ADMIN_URL if backend == "postgresql" else MYSQL_ADMIN_URL)
    db = Database(url)
    try:
        init_schema(db)
        if state_id_index:  # candidate schema change: lets 'WHERE CQ_STATE = ? ORDER BY CQ_ID' skip the sort
            with db.begin() as conn:
                q = '"' if conn.dialect.name != "mysql" else "`"
                conn.exec_driver_sql(f"CREATE INDEX {q}IX_CQ_STATE_ID{q} ON {q}COMPACTION_QUEUE{q} "
                                     f"({q}CQ_STATE{q}, {q}CQ_ID{q})")
        baseline = _measure(db, baseline_rows, claims)
        large = _measure(db, rows, claims)
        return {"backend": backend, "state_id_index": state_id_index, "baseline": baseline, "large": large,
                "ratio_p50": round(large["p50_ms"] / baseline["p50_ms"], 2),
                "ratio_p95": round(large["p95_ms"] / baseline["p95_ms"], 2)}
    finally:
        db.dispose()
        if drop:
            drop()
        if tmp:
            tmp.cleanup()


GOALS = [Goal(f"claim_next p50 with 10,000 queued rows <= 2x with 10 ({backend})", f"ratio_p50.{backend}", "<=", 2.0)
         for backend in ("sqlite", "postgresql", "mariadb")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--baseline-rows", type=int, default=10)
    parser.add_argument("--claims", type=int, default=300)
    parser.add_argument("--backends", default="sqlite,postgresql,mariadb")
    parser.add_argument("--state-id-index", action="store_true",
                        help="also add an index on (CQ_STATE, CQ_ID) to measure that schema change")
    args = parser.parse_args(argv)
    results = []
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        try:
            results.append(run_backend(backend, args.rows, args.baseline_rows, args.claims, args.state_id_index))
        except sa.exc.OperationalError as exc:
            results.append({"backend": backend, "skipped": f"database not reachable: {exc.orig}"})
    emit({"benchmark": "claim_next", "results": results,
          "ratio_p50": {r["backend"]: r["ratio_p50"] for r in results if "ratio_p50" in r}}, GOALS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
