"""Streaming ingest (batches of transactions × rows each) and bulk insert throughput of the client API, each
against pyarrow writing the same rows to one plain ORC file in the same run.

Prints one JSON object. Usage: python bench/bench_streaming_ingest.py [--txns 100] [--rows-per-txn 1000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po

from airflow_acid.client.warehouse import AcidWarehouse


def make_rows(n: int, start: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "name": pa.array([f"name-{i % 1000}" for i in ids]), "amount": ids * 0.5})


def pyarrow_seconds(table: pa.Table, path: Path) -> float:
    t0 = time.perf_counter()
    po.write_table(table, str(path), compression="zlib")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--txns", type=int, default=100, help="transactions per streaming batch")
    ap.add_argument("--rows-per-txn", type=int, default=1000)
    ap.add_argument("--batches", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wh = AcidWarehouse(f"sqlite:///{root / 'metastore.db'}", root / "wh")
        cols = [("id", "bigint"), ("name", "string"), ("amount", "double")]
        wh.create_table("stream", cols)
        wh.create_table("bulk", cols)
        chunks = [make_rows(args.rows_per_txn, i * args.rows_per_txn) for i in range(args.txns * args.batches)]
        total = sum(c.num_rows for c in chunks)

        t0 = time.perf_counter()
        with wh.streaming_connection("stream", batch_size=args.txns) as conn:
            for chunk in chunks:
                conn.write(chunk)
                conn.commit()
        streaming_s = time.perf_counter() - t0
        assert wh.read("stream").num_rows == total

        everything = pa.concat_tables(chunks)
        t0 = time.perf_counter()
        with wh.transaction() as txn:
            txn.insert("bulk", everything)
        bulk_s = time.perf_counter() - t0
        assert wh.read("bulk").num_rows == total

        plain_s = pyarrow_seconds(everything, root / "plain.orc")
        wh.close()
    result = {
        "rows": total,
        "streaming": {"transactions": args.txns * args.batches, "batch_size": args.txns,
                      "rows_per_txn": args.rows_per_txn, "seconds": round(streaming_s, 3),
                      "rows_per_s": round(total / streaming_s),
                      "txns_per_s": round(args.txns * args.batches / streaming_s, 1)},
        "bulk_insert": {"seconds": round(bulk_s, 3), "rows_per_s": round(total / bulk_s)},
        "pyarrow_plain_orc": {"seconds": round(plain_s, 3), "rows_per_s": round(total / plain_s)},
        "streaming_vs_pyarrow": round(plain_s / streaming_s, 4),
        "bulk_vs_pyarrow": round(plain_s / bulk_s, 4),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
