"""Benchmark: one Initiator cycle over a table of 10,000 partitions of which 1,000 have new writes, local filesystem.

Setup (bulk SQL and sparse files, not timed): one partitioned table; every partition has a base written by txn 1
(100 kB sparse bucket file) and a COMPLETED_TXN_COMPONENTS row an hour old; the Initiator's last-checked time is
half an hour ago. Then ``--hot`` partitions get new committed writes: half of them 11 deltas (→ MINOR), half 3
deltas (→ below the thresholds). Measured, in the same run:

* ``cycle``: the Initiator cycle(s) that find the hot partitions (seconds, candidates, directory listings counted by
  wrapping Storage.list_files, listings per candidate, queued/declined). More hot partitions than
  metastore.compactor.fetch.size (at most 5,000) take several cycles, each resuming where the last stopped;
  ``cycle`` sums them (``cycles`` says how many), ``cycle.per_cycle_seconds`` lists each;
* ``idle_cycle`` (baseline 1): the next cycle, with no new writes;
* ``full_listing`` (baseline 2): listing every partition directory once — the least a scan without the
  last-checked window would cost.

``--threads`` is hive.compactor.request.queue (candidates evaluated in parallel); ``--backend postgresql`` runs on a
fresh PostgreSQL database (``AIRFLOW_ACID_TEST_PG`` admin URL) instead of SQLite. The issue-17 goal:

    .venv/bin/python bench/bench_initiator.py --partitions 100000 --hot 10000 --backend postgresql

(Hive's default of one request-queue thread: local listings are bound by system calls and the GIL, so more threads
only contend — ``--threads 4`` shows it.)

    .venv/bin/python bench/bench_initiator.py [--partitions 10000] [--hot 1000] [--url sqlite:///…] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import Goal, emit

from airflow_acid.acid.fs import Storage, storage_for
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import acquire_mutex, now_ms, set_mutex_value
from airflow_acid.metastore.initiator_store import INITIATOR_MUTEX, Outcome
from airflow_acid.metastore.schema import (
    COMPLETED_TXN_COMPONENTS,
    NEXT_WRITE_ID,
    PARTITIONS,
    SDS,
    TBLS,
    TXN_TO_WRITE_ID,
    TXNS,
)
from airflow_acid.metastore.store import Metastore

DB, TABLE = "bench", "events"
BASE_BYTES, DELTA_BYTES = 100_000, 100
MANY, FEW = 11, 3  # deltas per hot partition: above / below hive.compactor.delta.num.threshold (10)


class CountedListings:
    """Counts directory listings (calls of Storage.list_files, whichever way the filesystem lists) while active."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    @contextmanager
    def active(self):
        original = Storage.list_files

        def counted(storage: Storage) -> list:
            with self._lock:
                self.count += 1
            return original(storage)
        Storage.list_files = counted  # type: ignore[method-assign]
        try:
            yield self
        finally:
            Storage.list_files = original  # type: ignore[method-assign]


def _sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size)


def setup(ms: Metastore, root: Path, partitions: int, hot: int) -> list[str]:
    """Catalog rows, txns, write ids, COMPLETED_TXN_COMPONENTS and files; returns the partition locations."""
    ms.catalog.create_database(DB, str(root))
    info = ms.catalog.create_table(DB, TABLE, [("id", "int")], partition_keys=[("d", "string")],
                                   properties={"transactional": "true"})
    names = [f"d={i:05d}" for i in range(partitions)]
    locations = [f"{info.location}/{n}" for n in names]
    hot_names = names[::partitions // hot][:hot]
    many, few = hot_names[: hot // 2], hot_names[hot // 2:]
    writes = {1: names} | {k: many + (few if k <= FEW + 1 else []) for k in range(2, MANY + 2)}

    with ms.db.begin() as conn:
        now = now_ms(conn)
        tbl_id = conn.execute(sa.select(TBLS.c.TBL_ID).where(TBLS.c.TBL_NAME == TABLE)).scalar_one()
        first_sd = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(SDS.c.SD_ID), 0))).scalar_one()) + 1
        conn.execute(sa.insert(SDS), [{"SD_ID": first_sd + i, "LOCATION": loc, "NUM_BUCKETS": -1}
                                      for i, loc in enumerate(locations)])
        conn.execute(sa.insert(PARTITIONS), [{"CREATE_TIME": now, "PART_NAME": n, "SD_ID": first_sd + i,
                                              "TBL_ID": tbl_id} for i, n in enumerate(names)])
        conn.execute(sa.insert(TXNS), [{"TXN_ID": k, "TXN_STATE": "c", "TXN_STARTED": now - 3_600_000,
                                        "TXN_LAST_HEARTBEAT": now, "TXN_USER": "bench", "TXN_HOST": "bench",
                                        "TXN_TYPE": 0} for k in writes])
        conn.execute(sa.insert(TXN_TO_WRITE_ID), [{"T2W_TXNID": k, "T2W_DATABASE": DB, "T2W_TABLE": TABLE,
                                                   "T2W_WRITEID": k} for k in writes])
        conn.execute(sa.insert(NEXT_WRITE_ID).values(NWI_DATABASE=DB, NWI_TABLE=TABLE, NWI_NEXT=max(writes) + 1))
        # hot writes a millisecond apart per partition: commits of one real txn share a time, but with more hot
        # partitions than metastore.compactor.fetch.size all at ONE time each cycle's window would restart at it
        order = {n: i for i, n in enumerate(hot_names)}
        rows = [{"CTC_TXNID": k, "CTC_DATABASE": DB, "CTC_TABLE": TABLE, "CTC_PARTITION": n,
                 "CTC_TIMESTAMP": now - 3_600_000 if k == 1 else now - 60_000 + order[n], "CTC_WRITEID": k,
                 "CTC_UPDATE_DELETE": "N"}
                for k, parts in writes.items() for n in parts]
        for start in range(0, len(rows), 5000):
            conn.execute(sa.insert(COMPLETED_TXN_COMPONENTS), rows[start:start + 5000])
        acquire_mutex(conn, INITIATOR_MUTEX)
        set_mutex_value(conn, INITIATOR_MUTEX, now - 1_800_000)

    by_name = dict(zip(names, locations))
    for k, parts in writes.items():
        for n in parts:
            directory = f"base_{k:07d}" if k == 1 else f"delta_{k:07d}_{k:07d}_0000"
            _sparse(Path(by_name[n]) / directory / "bucket_00000", BASE_BYTES if k == 1 else DELTA_BYTES)
    return locations


PG_ADMIN_URL = os.environ.get("AIRFLOW_ACID_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _pg_database() -> tuple[str, Callable[[], None]]:
    """A fresh PostgreSQL database and the function that drops it."""
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


def _cycles(initiator: Initiator) -> list:
    """Initiator cycles until one is not truncated by metastore.compactor.fetch.size."""
    reports = [initiator.run_cycle()]
    while reports[-1].truncated and len(reports) < 10:
        reports.append(initiator.run_cycle())
    return reports


def run(url: str | None, partitions: int, hot: int, threads: int = 1) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_initiator_") as tmp:
        root = Path(tmp) / "warehouse"
        url = url or f"sqlite:///{Path(tmp) / 'metastore.db'}"
        conf = MetastoreConf(opentxn_timeout_ms=0, compactor_fetch_size=min(5000, max(1000, hot)),
                             request_queue=threads)
        with Metastore(url, conf).init() as ms:
            clock = time.perf_counter()
            locations = setup(ms, root, partitions, hot)
            setup_s = time.perf_counter() - clock

            initiator = Initiator(ms, conf, host="bench")
            with CountedListings().active() as listings:
                reports = _cycles(initiator)
            cycle_finds = listings.count
            with CountedListings().active() as listings:
                idle = initiator.run_cycle()
            idle_finds = listings.count

            clock = time.perf_counter()
            listed = sum(len(storage_for(loc).list_files()) for loc in locations)
            full_s = time.perf_counter() - clock

            seconds = sum(r.seconds for r in reports)
            candidates = sum(r.candidates for r in reports)
            results = [x for r in reports for x in r.results]
            queued = [x for x in results if x.outcome is Outcome.QUEUED]
            declined = [x for x in results if x.outcome is not Outcome.QUEUED]
            return {
                "benchmark": "initiator_cycle", "backend": ms.db.dialect, "partitions": partitions,
                "partitions_with_new_writes": hot, "request_queue_threads": threads,
                "fetch_size": conf.compactor_fetch_size, "setup_seconds": round(setup_s, 2),
                "cycles": len(reports),
                "cycle": {
                    "seconds": round(seconds, 3), "per_cycle_seconds": [round(r.seconds, 3) for r in reports],
                    "candidates": candidates, "directory_listings": cycle_finds,
                    "listings_per_candidate": round(cycle_finds / candidates, 3),
                    "listings_reported": sum(r.listings for r in reports), "queued": len(queued),
                    "queued_minor": sum(1 for r in queued if r.type is not None and r.type.display == "MINOR"),
                    "declined": len(declined),
                    "declined_not_needed": sum(1 for r in declined if r.outcome is Outcome.NOT_NEEDED),
                    "ms_per_candidate": round(1000 * seconds / candidates, 3),
                },
                "idle_cycle": {"seconds": round(idle.seconds, 3), "candidates": idle.candidates,
                               "directory_listings": idle_finds},
                "full_listing": {"seconds": round(full_s, 3), "directories": len(locations), "files": listed},
                "ratio_cycle_vs_full_listing": round(seconds / full_s, 3),
                "ratio_cycle_vs_idle_cycle": round(seconds / max(idle.seconds, 1e-9), 1),
                "ratio_listings_vs_full_listing": round(cycle_finds / len(locations), 3),
            }


GOALS = [Goal("Initiator cycle, 100,000 partitions / 10,000 with writes, PostgreSQL < 10 s", "cycle.seconds", "<", 10.0,
              when=lambda r: r["backend"] == "postgresql" and r["partitions"] >= 100_000
              and r["partitions_with_new_writes"] >= 10_000),
         Goal("at most one directory listing per candidate", "cycle.listings_per_candidate", "<=", 1.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--hot", type=int, default=1_000)
    parser.add_argument("--url", default=os.environ.get("AIRFLOW_ACID_BENCH_URL"),
                        help="metastore database URL (default: a fresh SQLite file)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite",
                        help="postgresql: a fresh database on the AIRFLOW_ACID_TEST_PG server (ignored with --url)")
    parser.add_argument("--threads", type=int, default=1, help="hive.compactor.request.queue")
    args = parser.parse_args()
    if not 0 < args.hot <= args.partitions:
        parser.error("--hot must be between 1 and --partitions")
    if args.url is None and args.backend == "postgresql":
        url, drop = _pg_database()
        try:
            emit(run(url, args.partitions, args.hot, args.threads), GOALS)
        finally:
            drop()
        return
    emit(run(args.url, args.partitions, args.hot, args.threads), GOALS)


if __name__ == "__main__":
    main()
