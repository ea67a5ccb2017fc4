"""Event-file write throughput (pyorc, ACID layout and metadata; and the pyarrow-based fast writer that statement
files use) vs pyarrow's plain ORC writer, same rows.

Prints one JSON object. Usage: python bench/bench_event_write.py [--rows 500000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
from goals import Goal, emit
from timing import fastest

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.event_schema import insert_events
from airflow_acid.acid.event_writer import FileKind, write_event_file
from airflow_acid.acid.fast_event_writer import write_acid_orc
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.statement_writer import STATEMENT_ORC

GOALS = [Goal("fast ACID writer (statement files) vs pyarrow writing the same event structs >= 0.5x",
              "ratio_fast_delta_vs_events", ">=", 0.5)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.rows
    ids = np.arange(n, dtype=np.int64)
    data = pa.table({"id": ids, "amount": ids * 0.5, "name": pa.array([f"name-{i % 1000}" for i in range(n)])})
    events = insert_events(data, 1, bucket_codec.encode(0))
    with tempfile.TemporaryDirectory() as tmp:
        counter = iter(range(10**6))
        acid_delta = fastest(lambda: write_event_file(f"{tmp}/d{next(counter)}", 0, events, kind=FileKind.DELTA),
                             args.repeat)
        acid_base = fastest(lambda: write_event_file(f"{tmp}/b{next(counter)}", 0, events, kind=FileKind.BASE), args.repeat)
        fast_delta = fastest(lambda: write_acid_orc(storage_for(f"{tmp}/f{next(counter)}"), "bucket_00000", events,
                                                 kind=FileKind.DELTA, orc=STATEMENT_ORC), args.repeat)
        plain_rows = fastest(lambda: po.write_table(data, f"{tmp}/p{next(counter)}.orc", compression="zlib"), args.repeat)
        plain_events = fastest(lambda: po.write_table(events, f"{tmp}/e{next(counter)}.orc", compression="zlib"),
                            args.repeat)
        size = Path(f"{tmp}/d0/bucket_00000").stat().st_size
        fast_size = Path(f"{tmp}/f{2 * args.repeat}/bucket_00000").stat().st_size
    emit({
        "benchmark": "event_write", "rows": n,
        "acid_delta_seconds": round(acid_delta, 4), "acid_delta_rows_per_s": round(n / acid_delta),
        "acid_base_seconds": round(acid_base, 4), "acid_base_rows_per_s": round(n / acid_base),
        "fast_delta_seconds": round(fast_delta, 4), "fast_delta_rows_per_s": round(n / fast_delta),
        "baseline": "pyarrow.orc.write_table (zlib) of the same rows, plain and as event structs",
        "baseline_plain_seconds": round(plain_rows, 4), "baseline_plain_rows_per_s": round(n / plain_rows),
        "baseline_events_seconds": round(plain_events, 4), "baseline_events_rows_per_s": round(n / plain_events),
        "ratio_delta_vs_plain": round(plain_rows / acid_delta, 3),
        "ratio_delta_vs_events": round(plain_events / acid_delta, 3),
        "ratio_fast_delta_vs_events": round(plain_events / fast_delta, 3),
        "acid_delta_file_bytes": size,
        "fast_delta_file_bytes": fast_size,
    }, GOALS)


if __name__ == "__main__":
    main()
