"""getAcidState scaling: directory selection over listings of 1k, 10k and 100k deltas.

Prints one JSON object: seconds and microseconds per listing entry for each size, and the ratio of the
per-entry cost at the largest size to the smallest (≈1 means linear scaling). The listing is synthetic
(names and sizes only): getAcidState is pure and never touches the filesystem.
Usage: python bench/bench_acid_state.py [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import time

from goals import Goal, emit

from airflow_acid.acid import names
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.writeids import ValidReaderWriteIdList


def listing(n: int) -> list[tuple[str, int]]:
    """A base plus n single-statement deltas and a delete delta every 10th write, one bucket file each."""
    files = [(f"{names.format_base(1)}/bucket_00000", 1 << 20)]
    for w in range(2, n + 2):
        files.append((f"{names.format_delta(w, w, 0)}/bucket_00000", 1024))
        if w % 10 == 0:
            files.append((f"{names.format_delta(w, w, 0, delete=True)}/bucket_00000", 256))
    return files


def measure(n: int, repeat: int = 3) -> dict:
    files = listing(n)
    snapshot = ValidReaderWriteIdList(table="bench.t", high_watermark=n + 1, aborted=tuple(range(3, n, 97)))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        state = get_acid_state(files, snapshot)
        best = min(best, time.perf_counter() - t0)
    return {"deltas": n, "entries": len(files), "seconds": round(best, 4),
            "us_per_entry": round(best / len(files) * 1e6, 2), "current_deltas": len(state.current_deltas)}


GOALS = [Goal("getAcidState scales linearly: per-entry cost at the largest listing <= 2x the smallest's",
              "ratio_us_per_entry_largest_vs_smallest", "<=", 2.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    runs = [measure(int(s)) for s in args.sizes.split(",")]
    emit({"benchmark": "acid_state_scaling", "runs": runs,
          "ratio_us_per_entry_largest_vs_smallest": round(runs[-1]["us_per_entry"] / runs[0]["us_per_entry"], 2)},
         GOALS)


if __name__ == "__main__":
    main()
