"""Cost of writing one small ACID event file with pyarrow's ORC writer, with and without the malloc tuning of
``acid/malloc_tuning.py`` (what a streaming commit pays per file).

Each side runs in its own process (``mallopt`` is process-wide and cannot be undone), alternately, ``--repeat``
times; a process writes the same events ``--files`` times to memory and reports its median milliseconds per file.
Prints one JSON object with the median over processes. Usage: python bench/bench_orc_writer_setup.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from goals import emit

SIZES = (1, 1_000, 10_000)


def child(files: int) -> None:
    """Write each size ``files`` times; print {size: median ms per file}."""
    import pyarrow as pa
    import pyarrow.orc as po

    from airflow_acid.acid import bucket_codec
    from airflow_acid.acid.event_schema import insert_events
    from airflow_acid.acid.malloc_tuning import keep_freed_memory_for_small_files

    applied = keep_freed_memory_for_small_files()
    out: dict[str, float | bool] = {"applied": applied}
    for size in SIZES:
        rows = pa.table({"id": pa.array(range(size), pa.int64()), "name": [f"name-{i % 1000}" for i in range(size)]})
        events = insert_events(rows, 1, bucket_codec.encode(0))
        times = []
        for _ in range(files):
            sink = pa.BufferOutputStream()
            t0 = time.perf_counter()
            po.write_table(events, sink, compression="zlib")
            times.append(time.perf_counter() - t0)
        out[str(size)] = statistics.median(times) * 1000
    print(json.dumps(out))


def run_side(tuned: bool, files: int) -> dict[str, float | bool]:
    env = dict(os.environ, AIRFLOW_ACID_MALLOC_TUNING="1" if tuned else "0")
    done = subprocess.run([sys.executable, __file__, "--child", "--files", str(files)], env=env, check=True,
                          capture_output=True, text=True)
    result: dict[str, float | bool] = json.loads(done.stdout)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200, help="files written per size in one process")
    ap.add_argument("--repeat", type=int, default=3, help="processes per side, run alternately")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.files)
        return
    runs: dict[bool, list[dict[str, float | bool]]] = {True: [], False: []}
    for _ in range(args.repeat):
        for tuned in (True, False):
            runs[tuned].append(run_side(tuned, args.files))
    result: dict[str, object] = {
        "benchmark": "orc_writer_setup",
        "what": "pyarrow.orc.write_table of ACID insert events (id bigint, name string) to memory, median ms per file",
        "files_per_process": args.files, "processes_per_side": args.repeat,
        "tuning_applied": all(bool(r["applied"]) for r in runs[True]),
    }
    for size in SIZES:
        tuned = statistics.median(float(r[str(size)]) for r in runs[True])
        plain = statistics.median(float(r[str(size)]) for r in runs[False])
        result[f"events_{size}"] = {"ms_tuned": round(tuned, 3), "ms_untuned": round(plain, 3),
                                    "speedup": round(plain / tuned, 2)}
    emit(result, [])


if __name__ == "__main__":
    main()
