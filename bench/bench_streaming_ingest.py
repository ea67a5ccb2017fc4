"""Streaming ingest (batches of transactions × rows each) and bulk insert throughput of the client API, each
against pyarrow writing the same rows to one plain ORC file in the same run.

Each streaming configuration also reports ``statements``: the SQL statements the metastore received per
transaction (counted with a SQLAlchemy ``before_cursor_execute`` listener in one extra, untimed run; by kind, and
per batch of transactions, which opens them and allocates their write ids together).

Prints one JSON object. Usage: python bench/bench_streaming_ingest.py [--txns 100] [--rows-per-txn 1000,10000]
[--bulk-rows 1000000]

The bulk insert uses the client's parallel writers (one file per writer, see ``writers``); set
AIRFLOW_ACID_WRITER_THREADS=1 to measure one writer against the same single-threaded pyarrow baseline.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import sqlalchemy as sa
from goals import Goal, emit

from airflow_acid.acid.statement_writer import writer_threads
from airflow_acid.client.warehouse import AcidWarehouse


def make_rows(n: int, start: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "name": pa.array([f"name-{i % 1000}" for i in ids]), "amount": ids * 0.5})


def pyarrow_seconds(table: pa.Table, path: Path) -> float:
    t0 = time.perf_counter()
    po.write_table(table, str(path), compression="zlib")
    return time.perf_counter() - t0


class StatementCounter:
    """Counts the SQL statements an engine sends (SQLAlchemy's ``before_cursor_execute``), by first keyword; an
    ``executemany`` counts once (one statement, one round trip)."""

    def __init__(self) -> None:
        self.kinds: collections.Counter[str] = collections.Counter()

    def __call__(self, _conn, _cursor, statement: str, _params, _context, _executemany) -> None:
        words = statement.lstrip().split(None, 1)
        self.kinds[words[0].upper() if words else "?"] += 1

    @contextmanager
    def counting(self, engine: sa.engine.Engine):
        sa.event.listen(engine, "before_cursor_execute", self)
        try:
            yield self
        finally:
            sa.event.remove(engine, "before_cursor_execute", self)


def statement_counts(root: Path, txns: int, batches: int, chunks: list[pa.Table]) -> dict:
    """One untimed streaming run with every metastore statement counted."""
    counter = StatementCounter()
    with AcidWarehouse(f"sqlite:///{root / 'metastore-counted.db'}", root / "wh-counted") as wh:
        wh.create_table("stream", COLS)
        with counter.counting(wh.metastore.db.engine):
            with wh.streaming_connection("stream", batch_size=txns) as conn:
                for chunk in chunks:
                    conn.write(chunk)
                    conn.commit()
    total = sum(counter.kinds.values())
    n = txns * batches
    return {"total": total, "per_txn": round(total / n, 2), "per_batch": round(total / batches, 1),
            "by_kind_per_txn": {k: round(v / n, 2) for k, v in sorted(counter.kinds.items())}}


def streaming_run(root: Path, txns: int, batches: int, rows_per_txn: int, repeat: int = 3) -> dict:
    """A table streamed into with ``txns``-transaction batches of ``rows_per_txn`` rows, vs pyarrow plain ORC: each
    side ``repeat`` times, alternately (a fresh table each time), the ratio of the medians."""
    chunks = [make_rows(rows_per_txn, i * rows_per_txn) for i in range(txns * batches)]
    everything = pa.concat_tables(chunks)
    total = everything.num_rows
    runs, plain = [], []
    for run in range(repeat):
        with AcidWarehouse(f"sqlite:///{root / f'metastore{run}.db'}", root / f"wh{run}") as wh:
            wh.create_table("stream", COLS)
            t0 = time.perf_counter()
            with wh.streaming_connection("stream", batch_size=txns) as conn:
                for chunk in chunks:
                    conn.write(chunk)
                    conn.commit()
            runs.append(time.perf_counter() - t0)
            assert wh.read("stream").num_rows == total
        plain.append(pyarrow_seconds(everything, root / "plain.orc"))
    streaming_s, plain_s = statistics.median(runs), statistics.median(plain)
    return {"transactions": txns * batches, "batch_size": txns, "rows_per_txn": rows_per_txn, "rows": total,
            "seconds": round(streaming_s, 3), "runs_seconds": [round(s, 3) for s in runs],
            "rows_per_s": round(total / streaming_s), "txns_per_s": round(txns * batches / streaming_s, 1),
            "pyarrow_plain_orc_seconds": round(plain_s, 3), "pyarrow_runs_seconds": [round(s, 3) for s in plain],
            "vs_pyarrow": round(plain_s / streaming_s, 4),
            "statements": statement_counts(root, txns, batches, chunks)}


def bulk_run(root: Path, total: int, repeat: int = 3) -> dict:
    """One transaction inserting ``total`` rows, vs pyarrow plain ORC: each side warmed up once, then ``repeat``
    alternating runs; the ratio is of the medians. ``writers`` is the client's parallel writers
    ($AIRFLOW_ACID_WRITER_THREADS or the usable cores)."""
    everything = make_rows(total, 0)
    with AcidWarehouse(f"sqlite:///{root / 'metastore.db'}", root / "wh") as wh:
        wh.create_table("bulk", COLS)
        bulk, plain = [], []
        for run in range(repeat + 1):
            t0 = time.perf_counter()
            with wh.transaction() as txn:
                txn.insert("bulk", everything)
            seconds = time.perf_counter() - t0
            plain_s = pyarrow_seconds(everything, root / "plain.orc")
            if run:  # the first run of each warms up (imports, allocator, page cache)
                bulk.append(seconds)
                plain.append(plain_s)
        assert wh.read("bulk").num_rows == total * (repeat + 1)
    bulk_s, plain_s = statistics.median(bulk), statistics.median(plain)
    return {"rows": total, "writers": writer_threads(), "seconds": round(bulk_s, 3),
            "runs_seconds": [round(s, 3) for s in bulk], "rows_per_s": round(total / bulk_s),
            "pyarrow_plain_orc_seconds": round(plain_s, 3), "pyarrow_runs_seconds": [round(s, 3) for s in plain],
            "vs_pyarrow": round(plain_s / bulk_s, 4)}


COLS = [("id", "bigint"), ("name", "string"), ("amount", "double")]
GOALS = [Goal("streaming ingest vs pyarrow plain ORC, 1,000 rows/txn >= 0.05x", "streaming.1000.vs_pyarrow", ">=", 0.05),
         Goal("streaming ingest vs pyarrow plain ORC, 10,000 rows/txn >= 0.25x", "streaming.10000.vs_pyarrow", ">=", 0.25),
         Goal("bulk insert vs pyarrow plain ORC >= 0.5x", "bulk_insert.vs_pyarrow", ">=", 0.5)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--txns", type=int, default=100, help="transactions per streaming batch")
    ap.add_argument("--rows-per-txn", default="1000,10000", help="comma-separated; one streaming run each")
    ap.add_argument("--batches", type=int, default=1)
    ap.add_argument("--bulk-rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side; the ratio is of the medians")
    args = ap.parse_args()
    streaming = {}
    for rows_per_txn in [int(r) for r in args.rows_per_txn.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            streaming[str(rows_per_txn)] = streaming_run(Path(tmp), args.txns, args.batches, rows_per_txn,
                                                          args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        bulk = bulk_run(Path(tmp), args.bulk_rows, args.repeat)
    emit({"benchmark": "streaming_ingest", "baseline": "pyarrow.orc.write_table (zlib) of the same rows, same run",
          "streaming": streaming, "bulk_insert": bulk}, GOALS)


if __name__ == "__main__":
    main()
