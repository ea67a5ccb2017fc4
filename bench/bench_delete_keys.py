"""Building a bucket's delete-key set (what every merge-on-read and compaction does first) from 10 delete deltas,
vs pyarrow reading the same files' three key columns — the floor of any way to gather them.

Two shapes, 1,000,000 delete events each by default: deletes of rows from 3 write ids (few (originalTransaction,
bucket) pairs: a base and a couple of deltas) and from 100,000 write ids (rows streamed in by many small
transactions). Each side runs ``--repeat`` times alternately and keeps its fastest run. Prints one JSON object.
Usage: python bench/bench_delete_keys.py [--deletes 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
from goals import emit
from timing import fastest

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.event_schema import KEY_FIELDS, delete_events
from airflow_acid.acid.event_writer import write_event_file
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import _listing_and_plan, _Reader
from airflow_acid.acid.writeids import ValidReaderWriteIdList

B0 = bucket_codec.encode(0)
SCHEMA = pa.schema([("id", pa.int64())])
DELTAS = 10


def build(root: Path, deletes: int, pairs: int, seed: int) -> None:
    """``DELTAS`` delete deltas whose events, together, delete ``deletes`` rows of ``pairs`` write ids."""
    rng = np.random.default_rng(seed)
    per_file = deletes // DELTAS
    for i in range(DELTAS):
        o = rng.integers(1, pairs + 1, per_file).astype(np.int64)
        r = rng.integers(0, 10 * per_file, per_file).astype(np.int64)
        order = np.lexsort((r, o))
        keys = pa.table({KEY_FIELDS[0]: o[order], KEY_FIELDS[1]: pa.array(np.full(per_file, B0, dtype=np.int32)),
                         KEY_FIELDS[2]: r[order]})
        w = pairs + 1 + i
        write_event_file(str(root / names.format_delta(w, w, 0, delete=True)), 0, delete_events(keys, w, SCHEMA))


def measure(root: Path, high: int, repeat: int) -> dict:
    snapshot = ValidReaderWriteIdList(table="bench.t", high_watermark=high)
    storage, plan = _listing_and_plan(str(root), snapshot, None, None)
    (bucket,) = plan.buckets
    reader = _Reader(storage, snapshot, SCHEMA, [0])
    files = [storage_for(str(root)).full_path(src.path) for src in bucket.deletes]
    built = reader.delete_events(bucket).load()
    assert built is not None
    set_s = fastest(lambda: reader.delete_events(bucket).load(), repeat)
    read_s = fastest(lambda: [po.ORCFile(f).read(columns=list(KEY_FIELDS)) for f in files], repeat)
    return {"pairs": len(built.row_ids), "delete_set_seconds": round(set_s, 4),
            "pyarrow_read_keys_seconds": round(read_s, 4), "ratio_vs_pyarrow_read": round(read_s / set_s, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deletes", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    out: dict = {"benchmark": "delete_keys", "delete_deltas": DELTAS, "deletes": args.deletes}
    with tempfile.TemporaryDirectory() as tmp:
        for label, pairs in (("few_pairs", 3), ("many_pairs", 100_000)):
            root = Path(tmp) / label
            build(root, args.deletes, pairs, seed=pairs)
            out[label] = measure(root, pairs + DELTAS, args.repeat)
    emit(out, [])


if __name__ == "__main__":
    main()
