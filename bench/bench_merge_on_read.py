"""Merge-on-read throughput: base + 20 insert deltas + 5 delete deltas vs pyarrow reading one plain ORC file.

Prints one JSON object. The baseline reads the same surviving rows from a single plain ORC file written by
pyarrow, measured in the same run. Usage: python bench/bench_merge_on_read.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
from goals import Goal, emit

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.event_schema import delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, write_event_file
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.writeids import ValidReaderWriteIdList

B0 = bucket_codec.encode(0)


def rows(n: int, start: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "amount": ids * 0.5, "name": pa.array([f"name-{i % 1000}" for i in range(n)])})


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


GOALS = [Goal("merge-on-read vs pyarrow reading the same rows from one plain ORC file >= 0.6x", "ratio_vs_baseline",
              ">=", 0.6)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows in the base")
    ap.add_argument("--delta-rows", type=int, default=10_000, help="rows per insert delta")
    ap.add_argument("--deletes", type=int, default=10_000, help="delete events per delete delta")
    ap.add_argument("--repeat", type=int, default=15, help="best of N for both sides (a ~50 ms read needs many)")
    args = ap.parse_args()
    rng = np.random.default_rng(42)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        t0 = time.perf_counter()
        write_event_file(str(root / "base_0000001"), 0, insert_events(rows(args.rows, 0), 1, B0), kind=FileKind.BASE)
        for i in range(20):
            w = 2 + i
            write_event_file(str(root / names.format_delta(w, w, 0)), 0,
                             insert_events(rows(args.delta_rows, args.rows + i * args.delta_rows), w, B0))
        schema = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("name", pa.string())])
        for j in range(5):
            w = 22 + j
            targets = np.sort(rng.choice(args.rows, size=args.deletes, replace=False))
            keys = pa.table({"originalTransaction": pa.array(np.ones(len(targets), dtype=np.int64)),
                             "bucket": pa.array(np.full(len(targets), B0, dtype=np.int32)),
                             "rowId": pa.array(targets.astype(np.int64))})
            write_event_file(str(root / names.format_delta(w, w, 0, delete=True)), 0, delete_events(keys, w, schema))
        setup = time.perf_counter() - t0
        snapshot = ValidReaderWriteIdList(table="bench.t", high_watermark=26)
        merge_s, merged = best(lambda: read_acid_table(str(root), snapshot), args.repeat)
        plain = Path(tmp) / "plain.orc"
        po.write_table(merged, str(plain), compression="zlib")
        base_s, baseline = best(lambda: po.ORCFile(str(plain)).read(), args.repeat)
        assert baseline.num_rows == merged.num_rows
        n = merged.num_rows
        emit({
            "benchmark": "merge_on_read",
            "base_rows": args.rows, "insert_deltas": 20, "delta_rows": args.delta_rows,
            "delete_deltas": 5, "deletes_per_delta": args.deletes, "surviving_rows": n,
            "merge_seconds": round(merge_s, 4), "merge_rows_per_s": round(n / merge_s),
            "baseline": "pyarrow.orc read of one plain ORC file with the same rows",
            "baseline_seconds": round(base_s, 4), "baseline_rows_per_s": round(n / base_s),
            "ratio_vs_baseline": round((n / merge_s) / (n / base_s), 3),
            "setup_seconds": round(setup, 2),
        }, GOALS)


if __name__ == "__main__":
    main()
