"""One large bucket read as N stripe-range splits (the Spark reader's work units, client/pyspark_reader.py
``_splits``) with many delete events: each split reading only the delete events in its keys' interval (the data
file's ``hive.acid.key.index``, Hive's OrcRawRecordMerger) against each split reading every delete event of the
bucket (the behaviour before), in the same run.

The table: ``base_0000001`` with one bucket file of ``rows`` rows (id bigint, amount double) in many stripes, and
``--delete-deltas`` delete deltas, each deleting a random share of ``deletes`` rows spread over the whole base (so
every delete delta overlaps every split). Both ways of holding delete events are measured: in memory (the default
``hive.transactional.events.mem``) and streamed (``events_mem=0``, acid/delete_cursor.py). What runs is the merge of
each split in this process (``_Reader.batches``, what an executor runs for one work unit), one split after the other:
the figure is the total over the splits, the fastest of ``--repeat`` runs.

Reported per mode: seconds, delete events read (the rows of the delete-delta stripes each split reads, summed over
the splits), surviving rows (checked against the generator's). Goals: rows correct; the splits read at most 0.35× the delete
events (at full scale: 9 splits, 8 stripes a delete delta, so each split reads about 2 of them); the bounded reads
take at most 0.9× the unbounded reads' time, streamed and in memory (each split also reads its share of the base,
the same either way).

Usage: python bench/bench_split_reads.py [--scale 1.0] [--splits 8] [--delete-deltas 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from goals import Goal, emit
from timing import fastest

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.delete_settings import DEFAULT_EVENTS_MEM
from airflow_acid.acid.event_schema import delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, write_acid_version_file
from airflow_acid.acid.fast_event_writer import AcidOrcFileWriter, write_acid_orc
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import BucketPlan, _Reader, plan_merge
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.writeids import ValidReaderWriteIdList
from airflow_acid.client.pyspark_reader import _splits

FULL_ROWS = 8_000_000
FULL_DELETES = 2_000_000
CHUNK = 1_000_000
ORC = OrcSettings(compression="ZLIB", stripe_size=384 << 10, base_delta_ratio=8)
"""Stripes of 384 KiB for the base, 48 KiB for the delete deltas: a large bucket's many stripes at a bench's size."""
PROP = bucket_codec.encode(0, 0)
ROW_SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64())])


def build(loc: Path, rows: int, deletes: int, deltas: int, seed: int = 1) -> int:
    """The table; returns the number of surviving rows."""
    storage = storage_for(str(loc))
    writer = AcidOrcFileWriter(storage, "base_0000001/bucket_00000", kind=FileKind.BASE, orc=ORC)
    for start in range(0, rows, CHUNK):
        ids = np.arange(start, min(rows, start + CHUNK), dtype=np.int64)
        writer.write(insert_events(pa.table({"id": ids, "amount": ids * 0.5}, schema=ROW_SCHEMA), 1, PROP, start))
    writer.close()
    write_acid_version_file(storage.child("base_0000001"))
    rng = np.random.default_rng(seed)
    deleted = np.sort(rng.choice(rows, deletes, replace=False))
    owner = rng.integers(0, deltas, len(deleted))
    for i in range(deltas):
        row_ids = deleted[owner == i]
        w = i + 2
        keys = pa.table({"originalTransaction": pa.array(np.ones(len(row_ids), np.int64)),
                         "bucket": pa.array(np.full(len(row_ids), PROP, np.int32)), "rowId": pa.array(row_ids)})
        d = names.format_delta(w, w, 0, delete=True)
        write_acid_orc(storage, f"{d}/bucket_00000", delete_events(keys, w, ROW_SCHEMA), kind=FileKind.DELTA, orc=ORC)
        write_acid_version_file(storage.child(d))
    return rows - len(deleted)


def read_splits(loc: Path, splits: list[BucketPlan], wids: ValidReaderWriteIdList, events_mem: int,
                bounded: bool) -> tuple[int, int]:
    """Surviving rows over every split, and the delete events the splits read (rows of the stripes read)."""
    storage = storage_for(str(loc))
    rows = events = 0
    for bucket in splits:
        reader = _Reader(storage, wids, ROW_SCHEMA, [0], events_mem=events_mem)
        reader.bounded_splits = bounded
        deletes = reader.delete_events(bucket)
        events += sum(f.stripe_range_rows(deletes.bounds.stripes(f)) for f in deletes.files)
        rows += sum(b.num_rows for b in reader.batches(bucket))
    return rows, events


def run(work: Path, scale: float, n_splits: int, deltas: int, repeat: int) -> dict:
    rows, deletes = max(1000, int(FULL_ROWS * scale)), max(deltas, int(FULL_DELETES * scale))
    t0 = time.perf_counter()
    surviving = build(work, rows, deletes, deltas)
    build_s = time.perf_counter() - t0
    storage = storage_for(str(work))
    files = storage.list_files()
    delete_dirs = sorted({f.path.split("/")[0] for f in files if f.path.startswith("delete_delta_")})
    (bucket,) = plan_merge(files, base="base_0000001", original_files=[], deltas=delete_dirs).buckets
    size = sum(s.size for s in bucket.data)
    splits = [BucketPlan(bucket.bucket_id, data, bucket.deletes)
              for data in _splits(storage, bucket, max(1, size // n_splits))]
    wids = ValidReaderWriteIdList(table="bench.t", high_watermark=deltas + 1)
    out: dict = {"benchmark": f"one bucket of {rows} rows read as {len(splits)} stripe-range splits, "
                              f"{deletes} delete events in {deltas} delete deltas: bounded vs every delete event",
                 "scale": scale, "rows": rows, "deletes": deletes, "splits": len(splits),
                 "build_seconds": round(build_s, 1), "load_average": os.getloadavg()[0]}
    correct = True
    for label, events_mem in (("in_memory", DEFAULT_EVENTS_MEM), ("streamed", 0)):
        mode: dict = {}
        read_splits(work, splits, wids, events_mem, True)  # warm: page cache, lazy imports
        best = {False: float("inf"), True: float("inf")}
        got: dict[bool, list[tuple[int, int]]] = {False: [], True: []}
        for _ in range(max(1, repeat)):  # interleaved, so both see the same load
            for bounded in (False, True):
                def once(bounded: bool = bounded, events_mem: int = events_mem,
                         got: dict[bool, list[tuple[int, int]]] = got) -> None:
                    got[bounded].append(read_splits(work, splits, wids, events_mem, bounded))

                best[bounded] = min(best[bounded], fastest(once, 1))
        for bounded in (False, True):
            survivors, events = got[bounded][-1]
            correct = correct and all(g[0] == surviving for g in got[bounded])
            mode["bounded" if bounded else "every_delete"] = {
                "seconds": round(best[bounded], 3), "delete_events_read": events, "rows": survivors}
        mode["ratio_bounded_vs_every"] = round(mode["bounded"]["seconds"] / mode["every_delete"]["seconds"], 3)
        mode["delete_events_read_ratio"] = round(mode["bounded"]["delete_events_read"]
                                                 / max(1, mode["every_delete"]["delete_events_read"]), 3)
        out[label] = mode
    out["rows_correct"] = int(correct)
    out["load_average_after"] = os.getloadavg()[0]
    return out


GOALS = [
    Goal("delete events the splits read, bounded vs every delete event <= 0.35x (9 splits, 8 stripes a delete delta)",
         "streamed.delete_events_read_ratio", "<=", 0.35),
    Goal("in memory: bounded splits' time vs every delete event <= 0.9x", "in_memory.ratio_bounded_vs_every", "<=",
         0.9),
    Goal("streamed: bounded splits' time vs every delete event <= 0.9x", "streamed.ratio_bounded_vs_every", "<=", 0.9),
    Goal("rows correct (1 = yes)", "rows_correct", ">=", 1),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of 8 M base rows and 2 M deletes")
    ap.add_argument("--splits", type=int, default=8, help="work units the bucket is cut into (about)")
    ap.add_argument("--delete-deltas", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=None, help="where to build the table (default: a temporary directory)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-split-reads-", dir=args.workdir))
    try:
        emit(run(work, args.scale, args.splits, args.delete_deltas, args.repeat), GOALS)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
