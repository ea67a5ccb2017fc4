"""Major compaction of one bucket holding 100 M valid delete events spread over 1,000 write ids (a GDPR purge), whose
merge streams the delete deltas (above ``hive.transactional.events.mem``, acid/delete_cursor.py), vs the same bucket
with 1 M deletes (held in memory, below the threshold).

The table: ``base_0000001`` with one bucket file of ``1.25 × deletes`` rows (id bigint, amount double), and 1,000
``delete_delta_W_W`` (W = 2..1001), each deleting ~1/1,000 of the deleted rows, spread over the whole base (every
delete delta overlaps every other one's key range: the k-way merge's hardest shape). The baseline table has the same
base (hard-linked) and 1 M deletes over the same 1,000 write ids.

What runs is the compaction job's driver in-process (``spark/driver.py`` ``execute_plan`` with ``run_locally``):
exactly what each Spark task runs — the merge, the output writer, the digest check of the written base — without
Spark's scheduling (a JVM and Python workers would only add a constant). ``hive.compactor.max.num.delta`` is raised
to the number of delete deltas, so the major compaction is one step: with Hive's 500 it would first run two partial
minor compactions (measured on their own with ``--minor``). Each compaction runs in
a child process that samples its resident anonymous memory (``RssAnon`` of /proc/self/status) every 10 ms and
reports the peak, and its peak RSS (``VmHWM``).

Goals: peak anonymous memory of the 100 M compaction ≤ 1 GiB; its time per input event (base rows + delete events
read) within 1.5× of the 1 M compaction's — the two buckets cannot take the same time (one reads 225 M events, the
other 126 M), so the goal compares the cost of each event read; rows correct (the output base holds exactly the
surviving rows: count and sum of ids, checked against the generator's). ``--scale`` shrinks both (0.001: 100,000
deletes; the 1 M baseline and ``hive.transactional.events.mem`` shrink by the same factor, so the large bucket still
streams and the small one does not); the memory goal is judged at full scale only.

``--minor``: a MINOR compaction of the same delete deltas instead (no base is built: a minor compaction leaves it
alone), whose delete side above the threshold is k-way merged from the delete deltas and written batch by batch
(acid/delete_merge.py), the 1 M baseline sorted in memory; an input event is a delete event, and the output is
correct when the compacted delete_delta holds exactly the deleted row ids, in key order.

Usage: python bench/bench_many_deletes.py [--scale 1.0] [--write-ids 1000] [--repeat 1] [--workdir DIR] [--minor]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
from goals import Goal, emit

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.delete_settings import DEFAULT_EVENTS_MEM
from airflow_acid.acid.event_schema import delete_events, insert_events
from airflow_acid.acid.event_writer import FileKind, write_acid_version_file
from airflow_acid.acid.fast_event_writer import AcidOrcFileWriter, write_acid_orc
from airflow_acid.acid.fs import storage_for
from airflow_acid.job.plan import OrcSettings

FULL_DELETES = 100_000_000
BASELINE_DELETES = 1_000_000
BASE_FACTOR = 1.25
"""Base rows per delete event: 25 % of the base survives."""
CHUNK = 4_000_000
ORC = OrcSettings(compression="ZLIB")
PROP = bucket_codec.encode(0, 0)
ROW_SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64())])


def build_base(loc: Path, rows: int) -> None:
    storage = storage_for(str(loc))
    writer = AcidOrcFileWriter(storage, "base_0000001/bucket_00000", kind=FileKind.BASE, orc=ORC)
    for start in range(0, rows, CHUNK):
        ids = np.arange(start, min(rows, start + CHUNK), dtype=np.int64)
        data = pa.table({"id": ids, "amount": ids.astype(np.float64) * 0.5}, schema=ROW_SCHEMA)
        writer.write(insert_events(data, 1, PROP, start))
    writer.close()
    write_acid_version_file(storage.child("base_0000001"))


def build_deletes(loc: Path, base_rows: int, deletes: int, write_ids: int, seed: int) -> dict:
    """Delete deltas W = 2..write_ids+1 deleting ``deletes`` distinct base rows (row id = id), each W a random share
    of them; returns the surviving rows' count and id sum."""
    rng = np.random.default_rng(seed)
    deleted = np.sort(rng.choice(base_rows, deletes, replace=False)) if deletes < base_rows // 4 else None
    if deleted is None:  # most rows deleted: pick the survivors instead (a smaller draw)
        survivors = rng.choice(base_rows, base_rows - deletes, replace=False)
        mask = np.ones(base_rows, dtype=bool)
        mask[survivors] = False
        deleted = np.flatnonzero(mask)
        del mask, survivors
    writer_of = rng.integers(0, write_ids, len(deleted)).astype(np.uint16)
    order = np.argsort(writer_of, kind="stable")  # grouped by write id, ascending row ids within each
    counts = np.bincount(writer_of, minlength=write_ids)
    del writer_of
    storage = storage_for(str(loc))
    end = 0
    for i, count in enumerate(counts.tolist()):
        rows = deleted[order[end:end + count]]
        end += count
        if not count:
            continue
        w = i + 2
        keys = pa.table({"originalTransaction": pa.array(np.ones(count, np.int64)),
                         "bucket": pa.array(np.full(count, PROP, np.int32)), "rowId": pa.array(rows)})
        d = names.format_delta(w, w, 0, delete=True)
        write_acid_orc(storage, f"{d}/bucket_00000", delete_events(keys, w, ROW_SCHEMA), kind=FileKind.DELTA,
                       orc=ORC)
        write_acid_version_file(storage.child(d))
    all_ids = base_rows * (base_rows - 1) // 2
    return {"deletes": int(len(deleted)), "rows_out": base_rows - int(len(deleted)),
            "id_sum_out": all_ids - int(deleted.sum()), "deleted_sum": int(deleted.sum())}


# -- the measured child -----------------------------------------------------------------------------


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def child(loc: str, hwm: int, events_mem: int, kind: str = "major") -> None:
    """Compact ``loc`` in this process (the job's driver, units run locally) and print seconds and peak memory."""
    from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
    from airflow_acid.compactor.planner import compose_for_directory
    from airflow_acid.job.plan import CompactionPlan
    from airflow_acid.spark.driver import execute_plan

    peak = [_status("RssAnon")]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _status("RssAnon"))

    wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="bench.t", high_watermark=hwm))
    plan = compose_for_directory(loc, wil, 5000, kind, compaction_id="bench",
                                 row_schema="struct<id:bigint,amount:double>", events_mem=events_mem,
                                 max_num_delta=hwm)  # one step over every delete delta (see the docstring)
    start_anon = peak[0]
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    (res,) = execute_plan(CompactionPlan((plan,))).compactions  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    if res.status != "succeeded":
        raise SystemExit(f"compaction failed: {res.error}")
    print(json.dumps({"seconds": seconds, "rows_in": res.rows_in, "rows_out": res.rows_out, "output": res.outputs[-1],
                      "peak_anon_mib": round(max(peak[0], _status("RssAnon")) / 2**20, 1),
                      "start_anon_mib": round(start_anon / 2**20, 1),
                      "vm_hwm_mib": round(_status("VmHWM") / 2**20, 1)}))


def compact(loc: Path, hwm: int, events_mem: int, kind: str = "major") -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(loc), "--hwm", str(hwm),
                          "--events-mem", str(events_mem), "--type", kind], check=True,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def check_output(loc: Path, output: str, expected: dict) -> bool:
    f = po.ORCFile(str(loc / output / "bucket_00000"))
    count, total = 0, 0
    for i in range(f.nstripes):
        ids = f.read_stripe(i, columns=["row"]).column(0).field("id").to_numpy()
        count += len(ids)
        total += int(ids.sum())
    return count == expected["rows_out"] and total == expected["id_sum_out"]


def check_minor_output(loc: Path, output: str, expected: dict) -> bool:
    """The compacted delete_delta holds every deleted row id once, in key order (one originalTransaction here)."""
    f = po.ORCFile(str(loc / output / "bucket_00000"))
    count, total, last, ordered = 0, 0, -1, True
    for i in range(f.nstripes):
        ids = f.read_stripe(i, columns=["rowId"]).column(0).to_numpy()
        if len(ids):
            ordered = ordered and int(ids[0]) > last and bool(np.all(ids[1:] > ids[:-1]))
            last = int(ids[-1])
        count += len(ids)
        total += int(ids.sum())
    return ordered and count == expected["deletes"] and total == expected["deleted_sum"]


def run(work: Path, scale: float, write_ids: int, repeat: int, minor: bool = False) -> dict:
    deletes = max(write_ids, int(FULL_DELETES * scale))
    baseline_deletes = max(write_ids, int(BASELINE_DELETES * scale))
    base_rows = int(deletes * BASE_FACTOR)
    events_mem = max(1, int(DEFAULT_EVENTS_MEM * scale))  # the threshold scales too: "many" streams, "few" does not
    many, few = work / "many", work / "few"
    kind = "minor" if minor else "major"
    t0 = time.perf_counter()
    if not minor:
        build_base(many, base_rows)
        (few / "base_0000001").mkdir(parents=True)
        for f in (many / "base_0000001").iterdir():
            os.link(f, few / "base_0000001" / f.name)
    expected = {"many": build_deletes(many, base_rows, deletes, write_ids, seed=1),
                "few": build_deletes(few, base_rows, baseline_deletes, write_ids, seed=2)}
    build_s = time.perf_counter() - t0
    runs: dict[str, list[dict]] = {"many": [], "few": []}
    for _ in range(max(1, repeat)):
        for label, loc in (("few", few), ("many", many)):
            runs[label].append(compact(loc, write_ids + 1, events_mem, kind))
    out: dict = {"benchmark": f"{kind} compaction of one bucket with many delete events (streamed) vs 1 M deletes",
                 "scale": scale, "write_ids": write_ids, "base_rows": base_rows, "build_seconds": round(build_s, 1),
                 "events_mem": events_mem}
    correct = True
    for label, loc in (("many", many), ("few", few)):
        best = min(runs[label], key=lambda r: r["seconds"])
        exp = expected[label]
        if minor:
            ok = check_minor_output(loc, best["output"], exp) and best["rows_out"] == exp["deletes"]
        else:
            ok = check_output(loc, best["output"], exp) and best["rows_out"] == exp["rows_out"]
        correct = correct and ok
        events = exp["deletes"] if minor else base_rows + exp["deletes"]
        out[label] = {"deletes": exp["deletes"], "streamed": exp["deletes"] > events_mem,
                      "seconds": round(best["seconds"], 2), "runs": [round(r["seconds"], 2) for r in runs[label]],
                      "input_events": events, "ns_per_input_event": round(best["seconds"] * 1e9 / events, 1),
                      "rows_out": best["rows_out"], "rows_correct": ok,
                      "peak_anon_mib": max(r["peak_anon_mib"] for r in runs[label]),
                      "vm_hwm_mib": max(r["vm_hwm_mib"] for r in runs[label])}
    out["ratio_per_event_vs_1m"] = round(out["many"]["ns_per_input_event"] / out["few"]["ns_per_input_event"], 3)
    out["rows_correct"] = int(correct)
    return out


GOALS = [
    Goal("100 M deletes: peak anonymous memory <= 1 GiB (MiB)", "many.peak_anon_mib", "<=", 1024,
         when=lambda r: r.get("scale", 0) >= 1),
    Goal("100 M deletes: time per input event vs 1 M deletes <= 1.5x", "ratio_per_event_vs_1m", "<=", 1.5),
    Goal("rows correct (1 = yes)", "rows_correct", ">=", 1),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of 100 M deletes (and of the 1 M baseline)")
    ap.add_argument("--write-ids", type=int, default=1000, help="delete deltas (one write id each)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workdir", default=None, help="where to build the tables (default: a temporary directory)")
    ap.add_argument("--minor", action="store_true", help="a minor compaction of the delete deltas instead of a major")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--type", default="major", help=argparse.SUPPRESS)
    ap.add_argument("--hwm", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--events-mem", type=int, default=DEFAULT_EVENTS_MEM, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.hwm, args.events_mem, args.type)
        return
    work = Path(tempfile.mkdtemp(prefix="bench-many-deletes-", dir=args.workdir))
    try:
        emit(run(work, args.scale, args.write_ids, args.repeat, args.minor), GOALS)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
