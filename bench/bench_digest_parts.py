"""Where the proof's cost goes (``[acid] compaction_verify = digest``): one-bucket major compactions of the compaction
anchor's input in this process, with ``verify`` off and digest in turn, the digest runs split into hashing the merged
rows, decoding the files read back (all threads) and hashing those rows — each as a fraction of the CPU of the
compaction without a check (``bench_digest_cost.py`` measures the whole in fresh processes).

``floor`` is the least the proof can cost with this reader and this hash, measured on the last run's output file
alone: decoding the columns the digest covers with pyarrow's C++ ORC reader and nothing else (``decode``), the
same rows written again without compression and decoded (``decode_uncompressed``: the difference is ZLIB's
inflate), and hashing rows already in memory (``hash_one_side``; the proof hashes two sides) — each as a fraction
of the CPU of the compaction without a check. Prints one JSON object.
Usage: python bench/bench_digest_parts.py [--gib 0.05] [--repeat 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.orc as po
from bench_major_compaction import build_table
from goals import emit

from airflow_acid.acid import digest
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.planner import compose_for_directory
from airflow_acid.job.plan import CompactionPlan, OrcSettings
from airflow_acid.spark import output_check
from airflow_acid.spark.runners import LocalRunner


class _Meter:
    """CPU seconds of the proof's parts: hashing (this thread) on each side, and the whole read-back (all threads)."""

    def __init__(self) -> None:
        self.side = "hash_read"
        self.cpu = {"hash_read": 0.0, "hash_written": 0.0, "read_back": 0.0}
        self.digest_columns = digest.digest_columns
        self.check = output_check.Expected.check

    def install(self) -> None:
        meter = self

        def digest_columns(columns, num_rows=None):
            start = time.thread_time()
            try:
                return meter.digest_columns(columns, num_rows)
            finally:
                meter.cpu[meter.side] += time.thread_time() - start

        def check(expected, storage):
            meter.side, start = "hash_written", time.process_time()
            try:
                return meter.check(expected, storage)
            finally:
                meter.cpu["read_back"] += time.process_time() - start
                meter.side = "hash_read"

        digest.digest_columns = digest_columns  # what DigestBuilder.add calls
        output_check.Expected.check = check


def compact(loc: Path, write_ids: int, verify: str) -> float:
    for d in loc.glob("base_*_v*"):
        shutil.rmtree(d)  # the previous run's output
    wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="bench.t", high_watermark=write_ids))
    plan = dataclasses.replace(compose_for_directory(str(loc), wil, 1000, "major", compaction_id="parts"),
                               verify=verify)
    start = time.process_time()
    (result,) = LocalRunner().run(CompactionPlan((plan,)), job_name="parts", spark_conf={}).compactions
    assert result.status == "succeeded", result.error
    return time.process_time() - start


_COLUMNS = ["originalTransaction", "bucket", "rowId", "row"]
"""What the read-back of a base decodes (``output_check._read_back``: the ROW__ID and every column)."""


def _batches(path: Path) -> Iterator[pa.RecordBatch]:
    """The digest's columns of an ORC file as the read-back scans them (``event_reader.OrcDataFile._scan``)."""
    from airflow_acid.acid.event_reader import SCAN_BATCH_ROWS, SCAN_READAHEAD

    fragment = ds.OrcFileFormat().make_fragment(pa.OSFile(str(path)))
    yield from fragment.to_batches(columns=_COLUMNS, batch_size=SCAN_BATCH_ROWS, batch_readahead=SCAN_READAHEAD,
                                   fragment_readahead=1, use_threads=False)


def _decode_cpu(path: Path) -> float:
    start = time.process_time()
    for _ in _batches(path):
        pass
    return time.process_time() - start


def _hash_cpu(path: Path) -> float:
    """CPU of digesting the file's rows, decoded beforehand batch by batch (the decoding is not counted)."""
    spent = 0.0
    for batch in _batches(path):
        columns = [batch.column(k) for k in _COLUMNS[:3]] + batch.column("row").flatten()
        start = time.thread_time()
        digest.digest_columns(columns, batch.num_rows)
        spent += time.thread_time() - start
    return spent


def _uncompressed_copy(path: Path, target: Path) -> None:
    writer = po.ORCWriter(str(target), compression="uncompressed", stripe_size=64 << 20)
    for batch in _batches(path):
        writer.write(pa.Table.from_batches([batch]))
    writer.close()


def floor(loc: Path, repeat: int) -> dict[str, float]:
    """CPU seconds of the proof's unavoidable parts on the output files in ``loc`` (best of ``repeat``)."""
    outputs = sorted(loc.glob("base_*_v*/bucket_*"))
    copies = []
    for i, path in enumerate(outputs):
        copies.append(loc.parent / f"uncompressed_{i}.orc")
        _uncompressed_copy(path, copies[-1])
    best = {"decode": float("inf"), "decode_uncompressed": float("inf"), "hash_one_side": float("inf")}
    for _ in range(max(1, repeat)):
        best["decode"] = min(best["decode"], sum(_decode_cpu(p) for p in outputs))
        best["decode_uncompressed"] = min(best["decode_uncompressed"], sum(_decode_cpu(p) for p in copies))
        best["hash_one_side"] = min(best["hash_one_side"], sum(_hash_cpu(p) for p in outputs))
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=0.05, help="approximate input size of the one bucket in GiB")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-digest-parts-"))
    try:
        loc = work / "t"
        info = build_table(loc, args.gib, 1, 50, OrcSettings())
        meter = _Meter()
        meter.install()
        off, parts = [], []
        for _ in range(max(1, args.repeat)):
            off.append(compact(loc, info["write_ids"], "off"))
            meter.cpu = dict.fromkeys(meter.cpu, 0.0)
            total = compact(loc, info["write_ids"], "digest")
            parts.append({**meter.cpu, "total": total})
        least = floor(loc, args.repeat)  # the last digest run's output is still in place
        base = statistics.median(off)
        median = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
        decode = median["read_back"] - median["hash_written"]
        emit({
            "benchmark": "digest_parts", "input_gib": round(info["input_bytes"] / (1 << 30), 3),
            "rows": info["rows_inserted"], "cpu_off": round(base, 2), "cpu_digest": round(median["total"], 2),
            "share_of_off": {"hash_read": round(median["hash_read"] / base, 3),
                             "decode_read_back": round(decode / base, 3),
                             "hash_written": round(median["hash_written"] / base, 3),
                             "total": round(median["total"] / base - 1, 3)},
            "floor": {**{k: round(v / base, 3) for k, v in least.items()},
                      "inflate": round((least["decode"] - least["decode_uncompressed"]) / base, 3),
                      "total": round((least["decode"] + 2 * least["hash_one_side"]) / base, 3)},
        }, [])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
