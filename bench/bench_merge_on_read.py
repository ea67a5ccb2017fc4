"""Merge-on-read throughput: base + 20 insert deltas (+ 5 delete deltas) vs pyarrow reading one plain ORC file.

Prints one JSON object. ``unpruned_*`` times the same merge decoding every ACID column of every file (as before
issue 35), in the same rounds. Two layouts, each against its baseline — the same surviving rows read from a single plain
ORC file written by pyarrow — measured in the same run, the two reads alternating (the better of N each):
``untouched``: the 5 delete deltas delete rows of another bucket only, so no delete event touches the bucket read;
the top level: the 5 delete deltas delete 10,000 random base rows each. ``projection`` reads one column of the
second layout against pyarrow reading that column. Usage: python bench/bench_merge_on_read.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
from goals import Goal, emit

from airflow_acid.acid import bucket_codec, merge, names
from airflow_acid.acid.event_reader import OrcDataFile
from airflow_acid.acid.event_schema import delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, write_event_file
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.writeids import ValidReaderWriteIdList

B0 = bucket_codec.encode(0)


def rows(n: int, start: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "amount": ids * 0.5, "name": pa.array([f"name-{i % 1000}" for i in range(n)])})


def best_of(fns: dict[str, Callable[[], pa.Table]], repeat: int) -> tuple[dict[str, float], dict[str, pa.Table]]:
    """The best time of each function over ``repeat`` rounds, the functions alternating within a round (a loaded
    machine then slows both sides alike), and each one's last result."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    out: dict[str, pa.Table] = {}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            out[name] = fn()
            times[name].append(time.perf_counter() - t0)
    return {k: min(v) for k, v in times.items()}, out


GOALS = [
    Goal("merge-on-read, base + 20 deltas, no delete touching the bucket, vs pyarrow reading the same rows from one "
         "plain ORC file >= 0.9x", "untouched.ratio_vs_baseline", ">=", 0.9),
    Goal("merge-on-read with 5 delete deltas vs pyarrow reading the same rows from one plain ORC file >= 0.75x",
         "ratio_vs_baseline", ">=", 0.75),
]
SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("name", pa.string())])


def write_table(root: Path, args: argparse.Namespace, *, delete_bucket: int) -> None:
    """Base of ``args.rows`` rows (write id 1), 20 insert deltas (2..21), 5 delete deltas (22..26) deleting random
    base rows of bucket ``delete_bucket`` (written as its bucket file: bucket 0 is the one read)."""
    rng = np.random.default_rng(42)
    write_event_file(str(root / "base_0000001"), 0, insert_events(rows(args.rows, 0), 1, B0), kind=FileKind.BASE)
    for i in range(20):
        w = 2 + i
        write_event_file(str(root / names.format_delta(w, w, 0)), 0,
                         insert_events(rows(args.delta_rows, args.rows + i * args.delta_rows), w, B0))
    prop = bucket_codec.encode(delete_bucket)
    for j in range(5):
        w = 22 + j
        targets = np.sort(rng.choice(args.rows, size=args.deletes, replace=False))
        keys = pa.table({"originalTransaction": pa.array(np.ones(len(targets), dtype=np.int64)),
                         "bucket": pa.array(np.full(len(targets), prop, dtype=np.int32)),
                         "rowId": pa.array(targets.astype(np.int64))})
        write_event_file(str(root / names.format_delta(w, w, 0, delete=True)), delete_bucket,
                         delete_events(keys, w, SCHEMA))


def read_unpruned(root: Path, snapshot: ValidReaderWriteIdList, columns: list[str] | None) -> pa.Table:
    """The merge as before issue 35: every event file's five ACID columns decoded, every delete lookup made, the key
    order checked (the same switches as tests/acid/test_merge_pruning.py)."""
    saved = merge._event_key_range, merge._ordered_by_names, OrcDataFile.stats
    merge._event_key_range = lambda f, src: (merge._LOWEST_KEY, merge._HIGHEST_KEY, None)  # type: ignore[assignment]
    merge._ordered_by_names = lambda plan: False  # type: ignore[assignment]
    OrcDataFile.stats = property(lambda self: None)  # type: ignore[assignment,method-assign]
    try:
        return read_acid_table(str(root), snapshot, columns=columns)
    finally:
        merge._event_key_range, merge._ordered_by_names, OrcDataFile.stats = saved  # type: ignore[method-assign]


def measure(tmp: Path, root: Path, repeat: int, columns: list[str] | None = None) -> dict[str, float | int]:
    """Merge-on-read of ``root`` against pyarrow reading its surviving rows from one plain file (zlib, as the
    event files), in the same run."""
    snapshot = ValidReaderWriteIdList(table="bench.t", high_watermark=26)
    merged = read_acid_table(str(root), snapshot, columns=columns)
    plain = tmp / f"plain-{root.name}.orc"
    po.write_table(merged, str(plain), compression="zlib")
    seconds, out = best_of({"merge": lambda: read_acid_table(str(root), snapshot, columns=columns),
                            "unpruned": lambda: read_unpruned(root, snapshot, columns),
                            "baseline": lambda: po.ORCFile(str(plain)).read(columns=columns)}, repeat)
    assert out["baseline"].num_rows == out["merge"].num_rows == merged.num_rows
    assert out["unpruned"].equals(out["merge"])
    n = merged.num_rows
    return {"surviving_rows": n, "merge_seconds": round(seconds["merge"], 4),
            "merge_rows_per_s": round(n / seconds["merge"]), "baseline_seconds": round(seconds["baseline"], 4),
            "baseline_rows_per_s": round(n / seconds["baseline"]),
            "ratio_vs_baseline": round(seconds["baseline"] / seconds["merge"], 3),
            "unpruned_seconds": round(seconds["unpruned"], 4),
            "unpruned_ratio_vs_baseline": round(seconds["baseline"] / seconds["unpruned"], 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows in the base")
    ap.add_argument("--delta-rows", type=int, default=10_000, help="rows per insert delta")
    ap.add_argument("--deletes", type=int, default=10_000, help="delete events per delete delta")
    ap.add_argument("--repeat", type=int, default=15, help="best of N for both sides (a ~50 ms read needs many)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        untouched, touched = Path(tmp) / "untouched", Path(tmp) / "t"
        write_table(untouched, args, delete_bucket=1)
        write_table(touched, args, delete_bucket=0)
        setup = time.perf_counter() - t0
        result = measure(Path(tmp), touched, args.repeat)
        emit({
            "benchmark": "merge_on_read",
            "base_rows": args.rows, "insert_deltas": 20, "delta_rows": args.delta_rows,
            "delete_deltas": 5, "deletes_per_delta": args.deletes,
            **result,
            "baseline": "pyarrow.orc read of one plain ORC file with the same rows",
            "untouched": {"layout": "the same, the delete deltas deleting rows of bucket 1 only (bucket 0 is read)",
                          **measure(Path(tmp), untouched, args.repeat)},
            "projection": {"layout": "the top level's, columns=['amount'] against pyarrow reading that column",
                           **measure(Path(tmp), touched, args.repeat, ["amount"])},
            "setup_seconds": round(setup, 2),
        }, GOALS)


if __name__ == "__main__":
    main()
