"""What exact timestamps cost a file write: OrcFileBuilder (the writer every file goes through) vs pyarrow's ORC
writer writing the same rows directly, for in-span timestamps (pyarrow path + checks), pre-1970 fractions and
values outside 1677–2262 with nanoseconds (pyorc's row writer, which stores them as ORC's Java writer does).

Prints one JSON object. Usage: python bench/bench_timestamp_write.py [--rows 500000]
"""

from __future__ import annotations

import argparse

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
from goals import Goal, emit
from timing import fastest

from airflow_acid.acid.orc_file_builder import write_orc_bytes
from airflow_acid.acid.timestamps import WIDE_TIMESTAMP

GOALS = [Goal("in-span timestamps through OrcFileBuilder vs pyarrow directly >= 0.85x",
              "ratio_in_span_vs_pyarrow", ">=", 0.85)]
OPTIONS = {"compression": "zlib"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.rows
    rng = np.random.default_rng(7)
    ids = pa.array(np.arange(n, dtype=np.int64))
    in_span = pa.array(rng.integers(0, 2_000_000_000 * 10**9, n), pa.timestamp("ns"))
    pre_1970 = pa.array(rng.integers(-2_000_000_000 * 10**9, 0, n), pa.timestamp("ns"))
    seconds = rng.integers(-62135596800, 253402300799, n)
    wide = pa.StructArray.from_arrays([pa.array(seconds), pa.array(rng.integers(0, 10**9, n).astype(np.int32))],
                                      fields=list(WIDE_TIMESTAMP))
    tables = {name: pa.table({"id": ids, "t": col}) for name, col in
              (("in_span", in_span), ("pre_1970", pre_1970), ("wide", wide))}
    baseline = fastest(lambda: po.write_table(tables["in_span"], pa.BufferOutputStream(), compression="zlib"),
                       args.repeat)
    seconds_of = {name: fastest(lambda t=t: write_orc_bytes(t, OPTIONS), args.repeat if name == "in_span" else 1)
                  for name, t in tables.items()}
    emit({
        "benchmark": "timestamp_write", "rows": n,
        "baseline": "pyarrow.orc.write_table (zlib) of the in-span rows (id bigint, t timestamp)",
        "baseline_seconds": round(baseline, 4),
        **{f"{name}_seconds": round(s, 4) for name, s in seconds_of.items()},
        **{f"{name}_rows_per_s": round(n / s) for name, s in seconds_of.items()},
        "ratio_in_span_vs_pyarrow": round(baseline / seconds_of["in_span"], 3),
        "ratio_pre_1970_vs_pyarrow": round(baseline / seconds_of["pre_1970"], 3),
        "ratio_wide_vs_pyarrow": round(baseline / seconds_of["wide"], 3),
    }, GOALS)


if __name__ == "__main__":
    main()
