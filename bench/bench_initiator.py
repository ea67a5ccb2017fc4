"""Benchmark: one Initiator cycle over a table of many partitions of which some have new writes, local filesystem.

Setup (bulk SQL — COPY on PostgreSQL, multi-row inserts elsewhere — and sparse files; timed apart as
``setup_seconds``): one partitioned table; every partition is registered and has a COMPLETED_TXN_COMPONENTS row of
txn 1 an hour old; the Initiator's last-checked time is half an hour ago. Then ``--hot`` partitions get a base and
new committed writes: half of them 11 deltas (→ MINOR), half 3 deltas (→ below the thresholds). Only the hot
partitions exist on disk (nothing else may be listed). Measured, in the same run, each in a fresh process (so its
peak RSS is the cycle's own):

* ``cycle``: the Initiator cycle that finds the hot partitions — streamed from the metastore in batches of
  ``--fetch-size`` (metastore.compactor.fetch.size) — with seconds, candidates, directory listings (counted by
  wrapping Storage.list_files), listings per candidate, queued/declined, and ``peak_rss_mib`` of its process;
* ``idle_cycle`` (baseline 1): the next cycle, with no new writes;
* ``listing_floor`` (baseline 2): listing every hot partition directory once outside the Initiator — the least any
  cycle that looks at them costs;
* ``memory`` (with ``--compare-partitions N``): the same hot partitions in a table of N partitions (set up and
  measured in the same run), to show that the cycle's memory does not grow with the partition count.

``--threads`` is hive.compactor.request.queue (candidates evaluated in parallel); ``--backend postgresql`` runs on a
fresh PostgreSQL database (``AIRFLOW_ACID_TEST_PG`` admin URL) instead of SQLite. The issue-35 goal:

    .venv/bin/python bench/bench_initiator.py --partitions 1000000 --hot 100000 --backend postgresql \
        --compare-partitions 100000

(Hive's default of one request-queue thread: local listings are bound by system calls and the GIL, so more threads
only contend — ``--threads 4`` shows it.)

    .venv/bin/python bench/bench_initiator.py [--partitions 10000] [--hot 1000] [--url sqlite:///…] [--threads 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
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


def _load(conn, table: sa.Table, rows: Iterable[dict], columns: list[str]) -> None:
    """Bench-only bulk loader: COPY on PostgreSQL (psycopg), multi-row inserts of 5,000 elsewhere."""
    if conn.dialect.name == "postgresql":
        names = ", ".join(f'"{c}"' for c in columns)
        with conn.connection.driver_connection.cursor() as cur, \
                cur.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row([row[c] for c in columns])
        return
    chunk: list[dict] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == 5000:
            conn.execute(sa.insert(table), chunk)
            chunk = []
    if chunk:
        conn.execute(sa.insert(table), chunk)


def setup(ms: Metastore, root: Path, partitions: int, hot: int) -> list[str]:
    """Catalog rows, txns, write ids, COMPLETED_TXN_COMPONENTS and the hot partitions' files; returns the hot
    partitions' locations."""
    ms.catalog.create_database(DB, str(root))
    info = ms.catalog.create_table(DB, TABLE, [("id", "int")], partition_keys=[("d", "string")],
                                   properties={"transactional": "true"})
    width = len(str(partitions - 1))

    def name(i: int) -> str:
        return f"d={i:0{width}d}"

    step = partitions // hot
    hot_names = [name(i) for i in range(0, partitions, step)][:hot]
    many, few = hot_names[: hot // 2], hot_names[hot // 2:]
    writes = {1: None} | {k: many + (few if k <= FEW + 2 else []) for k in range(2, MANY + 3)}

    with ms.db.begin() as conn:
        now = now_ms(conn)
        tbl_id = conn.execute(sa.select(TBLS.c.TBL_ID).where(TBLS.c.TBL_NAME == TABLE)).scalar_one()
        first_sd = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(SDS.c.SD_ID), 0))).scalar_one()) + 1
        _load(conn, SDS, ({"SD_ID": first_sd + i, "LOCATION": f"{info.location}/{name(i)}", "NUM_BUCKETS": -1}
                          for i in range(partitions)), ["SD_ID", "LOCATION", "NUM_BUCKETS"])
        _load(conn, PARTITIONS, ({"CREATE_TIME": now, "PART_NAME": name(i), "SD_ID": first_sd + i, "TBL_ID": tbl_id}
                                 for i in range(partitions)), ["CREATE_TIME", "PART_NAME", "SD_ID", "TBL_ID"])
        conn.execute(sa.insert(TXNS), [{"TXN_ID": k, "TXN_STATE": "c", "TXN_STARTED": now - 3_600_000,
                                        "TXN_LAST_HEARTBEAT": now, "TXN_USER": "bench", "TXN_HOST": "bench",
                                        "TXN_TYPE": 0} for k in writes])
        conn.execute(sa.insert(TXN_TO_WRITE_ID), [{"T2W_TXNID": k, "T2W_DATABASE": DB, "T2W_TABLE": TABLE,
                                                   "T2W_WRITEID": k} for k in writes])
        conn.execute(sa.insert(NEXT_WRITE_ID).values(NWI_DATABASE=DB, NWI_TABLE=TABLE, NWI_NEXT=max(writes) + 1))
        order = {n: i for i, n in enumerate(hot_names)}

        def ctc_rows() -> Iterable[dict]:
            for i in range(partitions):  # txn 1 wrote every partition an hour ago
                yield {"CTC_TXNID": 1, "CTC_DATABASE": DB, "CTC_TABLE": TABLE, "CTC_PARTITION": name(i),
                       "CTC_TIMESTAMP": now - 3_600_000, "CTC_WRITEID": 1, "CTC_UPDATE_DELETE": "N"}
            for k, parts in writes.items():  # then the hot ones: a base (txn 2) and deltas, a minute ago
                for n in parts or ():
                    yield {"CTC_TXNID": k, "CTC_DATABASE": DB, "CTC_TABLE": TABLE, "CTC_PARTITION": n,
                           "CTC_TIMESTAMP": now - 60_000 + order[n], "CTC_WRITEID": k, "CTC_UPDATE_DELETE": "N"}

        _load(conn, COMPLETED_TXN_COMPONENTS, ctc_rows(), ["CTC_TXNID", "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION",
                                                           "CTC_TIMESTAMP", "CTC_WRITEID", "CTC_UPDATE_DELETE"])
        acquire_mutex(conn, INITIATOR_MUTEX)
        set_mutex_value(conn, INITIATOR_MUTEX, now - 1_800_000)
    if conn.dialect.name == "postgresql":
        with ms.db.engine.connect() as c:
            c.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")

    locations = {n: f"{info.location}/{n}" for n in hot_names}
    for k, parts in writes.items():
        for n in parts or ():
            directory = f"base_{k:07d}" if k == 2 else f"delta_{k:07d}_{k:07d}_0000"
            _sparse(Path(locations[n]) / directory / "bucket_00000", BASE_BYTES if k == 2 else DELTA_BYTES)
    return list(locations.values())


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


def _cycle_in_child(url: str, conf: MetastoreConf) -> dict:
    """The measured cycle and the idle cycle after it, in a fresh process (its peak RSS is the cycle's own)."""
    with Metastore(url, conf) as ms:
        initiator = Initiator(ms, conf, host="bench")
        before_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        with CountedListings().active() as listings:
            report = initiator.run_cycle()
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cycle_finds = listings.count
        with CountedListings().active() as listings:
            idle = initiator.run_cycle()
        queued = report.queued
        declined = report.declined
        return {
            "cycle": {
                "seconds": round(report.seconds, 3), "truncated": report.truncated,
                "candidates": report.candidates, "directory_listings": cycle_finds,
                "listings_per_candidate": round(cycle_finds / max(report.candidates, 1), 3),
                "listings_reported": report.listings, "queued": len(queued),
                "queued_minor": sum(1 for r in queued if r.type is not None and r.type.display == "MINOR"),
                "declined": len(declined),
                "declined_not_needed": sum(1 for r in declined if r.outcome is Outcome.NOT_NEEDED),
                "ms_per_candidate": round(1000 * report.seconds / max(report.candidates, 1), 3),
                "peak_rss_mib": round(peak_mib, 1), "rss_before_cycle_mib": round(before_mib, 1),
            },
            "idle_cycle": {"seconds": round(idle.seconds, 3), "candidates": idle.candidates,
                           "directory_listings": listings.count},
        }


def _progress(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} bench_initiator: {message}", file=sys.stderr, flush=True)


def measure(url: str, root: Path, partitions: int, hot: int, conf: MetastoreConf) -> dict:
    """Set up one metastore (timed apart), then the cycles in a fresh process and the listing floor."""
    with Metastore(url, conf).init() as ms:
        _progress(f"setting up {partitions} partitions, {hot} with new writes")
        clock = time.perf_counter()
        locations = setup(ms, root, partitions, hot)
        setup_s = time.perf_counter() - clock
        backend = ms.db.dialect
    _progress(f"set up in {setup_s:.1f} s; measuring the cycle")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        cycles = pool.apply(_cycle_in_child, (url, conf))
    _progress(f"cycle: {cycles['cycle']['seconds']} s; listing floor")
    clock = time.perf_counter()
    listed = sum(len(storage_for(loc).list_files()) for loc in locations)
    floor_s = time.perf_counter() - clock
    _progress("cleaning up")
    seconds = cycles["cycle"]["seconds"]
    return {"backend": backend, "partitions": partitions, "partitions_with_new_writes": hot,
            "setup_seconds": round(setup_s, 2), **cycles,
            "listing_floor": {"seconds": round(floor_s, 3), "directories": len(locations), "files": listed},
            "ratio_cycle_vs_listing_floor": round(seconds / floor_s, 3),
            "ratio_cycle_vs_idle_cycle": round(seconds / max(cycles["idle_cycle"]["seconds"], 1e-9), 1)}


def run(new_database: Callable[[], tuple[str, Callable[[], None]]], partitions: int, hot: int, threads: int = 1,
        fetch_size: int = 1000, compare_partitions: int | None = None, root: str | None = None) -> dict:
    """The measured run, and with ``compare_partitions`` the same hot partitions among that many partitions."""
    conf = MetastoreConf(opentxn_timeout_ms=0, compactor_fetch_size=fetch_size, request_queue=threads)
    result: dict = {"benchmark": "initiator_cycle", "request_queue_threads": threads, "fetch_size": fetch_size,
                    "warehouse_root": root or tempfile.gettempdir(), "load_average": list(os.getloadavg())}
    runs = [partitions] + ([compare_partitions] if compare_partitions else [])
    measured = []
    for count in runs:
        with tempfile.TemporaryDirectory(prefix="bench_initiator_", dir=root) as tmp:
            url, drop = new_database()
            try:
                measured.append(measure(url or f"sqlite:///{Path(tmp) / 'metastore.db'}", Path(tmp) / "warehouse",
                                        count, hot, conf))
            finally:
                drop()
    result.update(measured[0])
    if compare_partitions:
        other = measured[1]
        result["memory"] = {
            "peak_rss_mib": {str(partitions): result["cycle"]["peak_rss_mib"],
                             str(compare_partitions): other["cycle"]["peak_rss_mib"]},
            "cycle_seconds": {str(partitions): result["cycle"]["seconds"],
                              str(compare_partitions): other["cycle"]["seconds"]},
            "setup_seconds": {str(partitions): result["setup_seconds"], str(compare_partitions): other["setup_seconds"]},
            "ratio_peak_rss": round(result["cycle"]["peak_rss_mib"] / other["cycle"]["peak_rss_mib"], 3),
            "partitions_ratio": round(partitions / compare_partitions, 1),
        }
    return result


GOALS = [Goal("Initiator cycle, 100,000 partitions / 10,000 with writes, PostgreSQL < 10 s", "cycle.seconds", "<", 10.0,
              when=lambda r: r["backend"] == "postgresql" and 100_000 <= r["partitions"] < 1_000_000
              and r["partitions_with_new_writes"] >= 10_000),
         Goal("Initiator cycle, 1,000,000 partitions / 100,000 with writes, PostgreSQL < 30 s", "cycle.seconds", "<",
              30.0, when=lambda r: r["backend"] == "postgresql" and r["partitions"] >= 1_000_000
              and r["partitions_with_new_writes"] >= 100_000),
         Goal("at most one directory listing per candidate", "cycle.listings_per_candidate", "<=", 1.0),
         Goal("cycle memory flat in the partition count (peak RSS at 10x the partitions <= 1.25x)",
              "memory.ratio_peak_rss", "<=", 1.25, when=lambda r: r.get("memory", {}).get("partitions_ratio", 0) >= 10)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--hot", type=int, default=1_000)
    parser.add_argument("--url", default=os.environ.get("AIRFLOW_ACID_BENCH_URL"),
                        help="metastore database URL (default: a fresh SQLite file)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite",
                        help="postgresql: a fresh database on the AIRFLOW_ACID_TEST_PG server (ignored with --url)")
    parser.add_argument("--threads", type=int, default=1, help="hive.compactor.request.queue")
    parser.add_argument("--fetch-size", type=int, default=1000,
                        help="metastore.compactor.fetch.size: candidates per batch of the streamed cycle")
    parser.add_argument("--root", default=None,
                        help="where the hot partitions' directories are created (default: the system temp folder)")
    parser.add_argument("--compare-partitions", type=int, default=None,
                        help="also measure the same --hot partitions among this many partitions (memory flatness)")
    args = parser.parse_args()
    if not 0 < args.hot <= args.partitions:
        parser.error("--hot must be between 1 and --partitions")
    if args.compare_partitions is not None and not 0 < args.hot <= args.compare_partitions:
        parser.error("--hot must be between 1 and --compare-partitions")
    if args.url is not None and args.compare_partitions is not None:
        parser.error("--compare-partitions needs fresh databases (leave out --url)")

    def new_database() -> tuple[str, Callable[[], None]]:
        if args.url is None and args.backend == "postgresql":
            return _pg_database()
        return args.url, lambda: None

    emit(run(new_database, args.partitions, args.hot, args.threads, args.fetch_size, args.compare_partitions,
             args.root), GOALS)

if __name__ == "__main__":
    main()
