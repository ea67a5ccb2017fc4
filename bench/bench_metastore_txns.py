"""Benchmark: open+commit transactions per second with 1 and 8 concurrent clients, on SQLite and PostgreSQL.

Each client is a separate process (spawn) with its own Metastore; it opens one transaction and commits it, in a
loop, for ``--seconds``. A fresh database is created per backend and client count. Prints one JSON object with
the rates, the ratios 8 clients vs 1 client and PostgreSQL vs SQLite, and the statements and round trips of
open, allocate write id, lock, commit and abort (``per_call``).

    .venv/bin/python bench/bench_metastore_txns.py [--seconds 5] [--clients 1,8] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import platform
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import Goal, emit

from airflow_acid.acid.codes import LockType, OperationType
from airflow_acid.metastore.init import init_schema
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.metastore.roundtrips import count_round_trips
from airflow_acid.metastore.store import Metastore

PG_ADMIN_URL = os.environ.get("AIRFLOW_ACID_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _pg_database():
    name = f"acid_bench_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = sa.engine.make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)

    def drop() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()

    return url, drop


def _client(url: str, seconds: float, start_at: float) -> tuple[int, float]:
    """Open+commit in a loop from ``start_at`` (wall clock, so all clients start together) for ``seconds``."""
    ms = Metastore(url)
    ms.txns.commit(ms.txns.open_txn(user="bench", host="bench"))  # warm the pool outside the timing
    while time.time() < start_at:
        time.sleep(0.001)
    began = time.perf_counter()
    done = 0
    while time.perf_counter() - began < seconds:
        ms.txns.commit(ms.txns.open_txn(user="bench", host="bench"))
        done += 1
    elapsed = time.perf_counter() - began
    ms.close()
    return done, elapsed


def _measure(url: str, clients: int, seconds: float) -> float:
    """Total committed transactions per second over all clients."""
    ms = Metastore(url)
    init_schema(ms.db)
    ms.close()
    ctx = multiprocessing.get_context("spawn")
    start_at = time.time() + 3.0 + 0.3 * clients  # time for the spawned interpreters to import
    with ctx.Pool(clients) as pool:
        results = pool.starmap(_client, [(url, seconds, start_at)] * clients)
    return sum(done for done, _ in results) / max(elapsed for _, elapsed in results)


def _count_calls(url: str) -> dict[str, dict[str, int]]:
    """Statements and round trips of each hot-path call, measured on its second use (caches warm)."""
    ms = Metastore(url)
    init_schema(ms.db)
    out: dict[str, dict[str, int]] = {}

    @contextlib.contextmanager
    def count(name: str) -> Iterator[None]:
        with count_round_trips(ms.db.engine) as counts:
            yield
        out[name] = counts.as_dict()

    comp = LockComponent("db", "t", "p=1", LockType.SHARED_WRITE, OperationType.INSERT)
    for _ in range(2):  # the second round's counts are the ones kept
        with count("open_txn"):
            txn = ms.txns.open_txn(user="bench", host="bench")
        with count("allocate_write_id"):
            ms.txns.allocate_write_id(txn, "db", "t")
        with count("lock"):
            ms.locks.lock([comp], txn_id=txn, user="bench", host="bench")
        with count("commit_write"):
            ms.txns.commit(txn)
        empty = ms.txns.open_txn(user="bench", host="bench")
        with count("commit_empty"):
            ms.txns.commit(empty)
        doomed = ms.txns.open_txn(user="bench", host="bench")
        ms.txns.allocate_write_id(doomed, "db", "t")
        with count("abort"):
            ms.txns.abort(doomed)
    ms.close()
    return out


GOALS = [Goal("open+commit txns/s, PostgreSQL, 8 clients >= 500", "txn_per_s.postgresql.8", ">=", 500),
         Goal("open+commit txns/s, PostgreSQL, 1 client >= 250", "txn_per_s.postgresql.1", ">=", 250)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    unknown = set(args.backends.split(",")) - {"sqlite", "postgresql"}
    if unknown:
        parser.error(f"unknown backend(s) {', '.join(sorted(unknown))}: choose from sqlite, postgresql")
    counts = [int(c) for c in args.clients.split(",")]
    rates: dict[str, dict[str, float]] = {}
    calls: dict[str, dict[str, dict[str, int]]] = {}
    for backend in args.backends.split(","):
        rates[backend] = {}
        if backend == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                calls[backend] = _count_calls(f"sqlite:///{tmp}/metastore.db")
        else:
            url, drop = _pg_database()
            try:
                calls[backend] = _count_calls(url)
            finally:
                drop()
        for clients in counts:
            if backend == "sqlite":
                with tempfile.TemporaryDirectory() as tmp:
                    rates[backend][str(clients)] = _measure(f"sqlite:///{tmp}/metastore.db", clients, args.seconds)
            else:
                url, drop = _pg_database()
                try:
                    rates[backend][str(clients)] = _measure(url, clients, args.seconds)
                finally:
                    drop()
    out: dict = {
        "benchmark": "open+commit transactions per second",
        "seconds_per_run": args.seconds,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "txn_per_s": {b: {c: round(v, 1) for c, v in r.items()} for b, r in rates.items()},
        "per_call": calls,
        "per_call_is": "statements and round trips (statement, BEGIN, COMMIT, pool pre-ping) of each call",
    }
    lo, hi = str(min(counts)), str(max(counts))
    out[f"ratio_{hi}_vs_{lo}_clients"] = {b: round(r[hi] / r[lo], 2) for b, r in rates.items() if r.get(lo)}
    if "sqlite" in rates and "postgresql" in rates:
        out["ratio_postgresql_vs_sqlite"] = {c: round(rates["postgresql"][c] / rates["sqlite"][c], 2) for c in
                                             rates["sqlite"]}
    emit(out, GOALS)


if __name__ == "__main__":
    main()
