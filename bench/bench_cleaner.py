"""Benchmark: one Cleaner cycle over many partitions whose compactions are all 'ready for cleaning', local disk.

Setup (bulk SQL — the Initiator bench's COPY loader on PostgreSQL, multi-row inserts elsewhere — and tiny files;
timed apart as ``setup_seconds``): one partitioned table of ``--partitions`` partitions; txns 1 and 2 wrote write
ids 1 and 2, compactor txn 3 committed; every partition holds ``base_0000001`` and ``delta_0000002_0000002_0000``
(obsolete) next to the compaction's ``base_0000002_v0000003``, and has a major compaction row 'ready for cleaning'
(CQ_HIGHEST_WRITE_ID 2, CQ_NEXT_TXN_ID 4, committed an hour ago). Measured in a fresh process:

* ``cycle``: the Cleaner cycle — seconds, rows cleaned, directory listings (Storage.list_files calls), delete calls
  (Storage.delete_paths calls), metastore statements (SQLAlchemy ``before_cursor_execute``, by first keyword), each
  also per row;
* ``listing_floor`` (baseline): listing every partition directory once outside the Cleaner — the least any cycle
  that looks at them costs; ``verified``: the obsolete directories are gone and every compaction's output stays.

The issue-35 goal (``--root /dev/shm`` keeps the 300,000 directories off the disk):

    .venv/bin/python bench/bench_cleaner.py --partitions 100000 --backend postgresql --root /dev/shm

    .venv/bin/python bench/bench_cleaner.py [--partitions 10000] [--backend sqlite|postgresql] [--fetch-size 1000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_initiator import CountedListings, _load, _pg_database, _sparse
from bench_streaming_ingest import StatementCounter
from goals import Goal, emit

from airflow_acid.acid.codes import CompactionState, CompactionType, TxnType
from airflow_acid.acid.fs import Storage, storage_for
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import now_ms
from airflow_acid.metastore.schema import COMPACTION_QUEUE, NEXT_COMPACTION_QUEUE_ID, PARTITIONS, SDS, TBLS
from airflow_acid.metastore.store import Metastore

DB, TABLE = "bench", "events"
OBSOLETE = ("base_0000001", "delta_0000002_0000002_0000")


class CountedDeletes:
    """Counts batched delete calls (Storage.delete_paths) and the paths they were given, while active."""

    def __init__(self) -> None:
        self.calls = 0
        self.paths = 0
        self._lock = threading.Lock()

    @contextmanager
    def active(self):
        original = Storage.delete_paths

        def counted(storage: Storage, relatives: Iterable[str], listing=None) -> list[str]:
            relatives = list(relatives)
            with self._lock:
                self.calls += 1
                self.paths += len(relatives)
            return original(storage, relatives, listing)
        Storage.delete_paths = counted  # type: ignore[method-assign]
        try:
            yield self
        finally:
            Storage.delete_paths = original  # type: ignore[method-assign]


def setup(ms: Metastore, root: Path, partitions: int) -> tuple[list[str], str]:
    """Catalog rows, txns, compaction rows and files; returns the partitions' locations and the compaction's base."""
    ms.catalog.create_database(DB, str(root))
    info = ms.catalog.create_table(DB, TABLE, [("id", "int")], partition_keys=[("d", "string")],
                                   properties={"transactional": "true"})
    width = len(str(partitions - 1))
    names = [f"d={i:0{width}d}" for i in range(partitions)]
    for _ in range(2):  # write ids 1 and 2
        txn = ms.txns.open_txn(user="bench", host="bench")
        ms.txns.allocate_write_id(txn, DB, TABLE)
        ms.txns.commit(txn)
    compactor = ms.txns.open_txn(user="bench", host="bench", txn_type=TxnType.COMPACTION)
    ms.txns.commit(compactor)
    output = f"base_0000002_v{compactor:07d}"
    with ms.db.begin() as conn:
        now = now_ms(conn)
        tbl_id = conn.execute(sa.select(TBLS.c.TBL_ID).where(TBLS.c.TBL_NAME == TABLE)).scalar_one()
        first_sd = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(SDS.c.SD_ID), 0))).scalar_one()) + 1
        _load(conn, SDS, ({"SD_ID": first_sd + i, "LOCATION": f"{info.location}/{n}", "NUM_BUCKETS": -1}
                          for i, n in enumerate(names)), ["SD_ID", "LOCATION", "NUM_BUCKETS"])
        _load(conn, PARTITIONS, ({"CREATE_TIME": now, "PART_NAME": n, "SD_ID": first_sd + i, "TBL_ID": tbl_id}
                                 for i, n in enumerate(names)), ["CREATE_TIME", "PART_NAME", "SD_ID", "TBL_ID"])
        columns = ["CQ_ID", "CQ_DATABASE", "CQ_TABLE", "CQ_PARTITION", "CQ_STATE", "CQ_TYPE", "CQ_HIGHEST_WRITE_ID",
                   "CQ_TXN_ID", "CQ_NEXT_TXN_ID", "CQ_COMMIT_TIME", "CQ_ENQUEUE_TIME", "CQ_RETRY_RETENTION"]
        _load(conn, COMPACTION_QUEUE, ({
            "CQ_ID": i + 1, "CQ_DATABASE": DB, "CQ_TABLE": TABLE, "CQ_PARTITION": n,
            "CQ_STATE": CompactionState.READY_FOR_CLEANING.value, "CQ_TYPE": CompactionType.MAJOR.value,
            "CQ_HIGHEST_WRITE_ID": 2, "CQ_TXN_ID": compactor, "CQ_NEXT_TXN_ID": compactor + 1,
            "CQ_COMMIT_TIME": now - 3_600_000, "CQ_ENQUEUE_TIME": now - 3_700_000, "CQ_RETRY_RETENTION": 0}
            for i, n in enumerate(names)), columns)
        conn.execute(sa.delete(NEXT_COMPACTION_QUEUE_ID))
        conn.execute(sa.insert(NEXT_COMPACTION_QUEUE_ID).values(NCQ_NEXT=partitions + 1))
    if ms.db.dialect == "postgresql":
        with ms.db.engine.connect() as c:
            c.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
    locations = [f"{info.location}/{n}" for n in names]
    for loc in locations:
        for directory in (*OBSOLETE, output):
            _sparse(Path(loc) / directory / "bucket_00000", 100)
    return locations, output


def _cycle_in_child(url: str, conf: MetastoreConf) -> dict:
    """The measured cycle, in a fresh process (no warm caches)."""
    with Metastore(url, conf) as ms:
        cleaner = Cleaner(ms, conf)
        statements = StatementCounter()
        with CountedListings().active() as listings, CountedDeletes().active() as deletes, \
                statements.counting(ms.db.engine):
            clock = time.perf_counter()
            report = cleaner.run_cycle()
            seconds = time.perf_counter() - clock
        cleaned = sum(1 for e in report.entries if e.status is CleanerStatus.CLEANED)
        rows = max(len(report.entries), 1)
        total = sum(statements.kinds.values())
        return {"seconds": round(seconds, 3), "rows": len(report.entries), "cleaned": cleaned,
                "waiting": len(report.waiting), "deleted_directories": len(report.deletions),
                "directory_listings": listings.count, "listings_per_row": round(listings.count / rows, 3),
                "delete_calls": deletes.calls, "delete_calls_per_row": round(deletes.calls / rows, 3),
                "statements": total, "statements_per_row": round(total / rows, 3),
                "statements_by_kind": dict(statements.kinds.most_common()),
                "ms_per_row": round(1000 * seconds / rows, 3)}


def _progress(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} bench_cleaner: {message}", file=sys.stderr, flush=True)


def measure(url: str, root: Path, partitions: int, conf: MetastoreConf) -> dict:
    with Metastore(url, conf).init() as ms:
        _progress(f"setting up {partitions} partitions ready for cleaning")
        clock = time.perf_counter()
        locations, output = setup(ms, root, partitions)
        setup_s = time.perf_counter() - clock
        backend = ms.db.dialect
    _progress(f"set up in {setup_s:.1f} s; listing floor")
    clock = time.perf_counter()
    listed = sum(len(storage_for(loc).list_files()) for loc in locations)
    floor_s = time.perf_counter() - clock
    _progress("measuring the cycle")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        cycle = pool.apply(_cycle_in_child, (url, conf))
    _progress(f"cycle: {cycle['seconds']} s; verifying")
    left = sum(1 for loc in locations for d in OBSOLETE if os.path.exists(os.path.join(loc, d)))
    kept = sum(1 for loc in locations if os.path.exists(os.path.join(loc, output)))
    with Metastore(url, conf) as ms:
        queued = ms.db.run(lambda conn: conn.execute(sa.select(sa.func.count()).select_from(COMPACTION_QUEUE))
                           .scalar_one())
    return {"backend": backend, "partitions": partitions, "setup_seconds": round(setup_s, 2), "cycle": cycle,
            "listing_floor": {"seconds": round(floor_s, 3), "directories": len(locations), "files": listed},
            "verified": {"obsolete_directories_left": left, "outputs_kept": kept, "queue_rows_left": queued},
            "ratio_cycle_vs_listing_floor": round(cycle["seconds"] / max(floor_s, 1e-9), 2)}


def run(new_database: Callable[[], tuple[str | None, Callable[[], None]]], partitions: int, fetch_size: int,
        root: str | None) -> dict:
    conf = MetastoreConf(opentxn_timeout_ms=0, compactor_fetch_size=fetch_size)
    result: dict = {"benchmark": "cleaner_cycle", "fetch_size": fetch_size,
                    "warehouse_root": root or tempfile.gettempdir(), "load_average": list(os.getloadavg())}
    with tempfile.TemporaryDirectory(prefix="bench_cleaner_", dir=root) as tmp:
        url, drop = new_database()
        try:
            result.update(measure(url or f"sqlite:///{Path(tmp) / 'metastore.db'}", Path(tmp) / "warehouse",
                                  partitions, conf))
        finally:
            drop()
    return result


GOALS = [Goal("Cleaner cycle, 100,000 partitions ready for cleaning < 60 s", "cycle.seconds", "<", 60.0,
              when=lambda r: r["partitions"] >= 100_000),
         Goal("Cleaner: one directory listing per row", "cycle.listings_per_row", "<=", 1.0),
         Goal("Cleaner: one batched delete per row", "cycle.delete_calls_per_row", "<=", 1.0),
         Goal("Cleaner: every obsolete directory deleted", "verified.obsolete_directories_left", "<=", 0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--url", default=os.environ.get("AIRFLOW_ACID_BENCH_URL"),
                        help="metastore database URL (default: a fresh SQLite file)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite",
                        help="postgresql: a fresh database on the AIRFLOW_ACID_TEST_PG server (ignored with --url)")
    parser.add_argument("--fetch-size", type=int, default=1000, help="metastore.compactor.fetch.size: rows per page")
    parser.add_argument("--root", default=None,
                        help="where the partitions' directories are created (default: the system temp folder)")
    args = parser.parse_args()
    if args.partitions < 1:
        parser.error("--partitions must be at least 1")

    def new_database() -> tuple[str | None, Callable[[], None]]:
        if args.url is None and args.backend == "postgresql":
            return _pg_database()
        return args.url, lambda: None

    emit(run(new_database, args.partitions, args.fetch_size, args.root), GOALS)


if __name__ == "__main__":
    main()
