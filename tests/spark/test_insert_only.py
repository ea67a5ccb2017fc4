"""Insert-only (MM) compactions in the engine: in-process and on the real Spark engine (the session ``spark``).
Outputs are plain ORC files named ``00000N_0`` holding the union of the inputs (base, then deltas by write id,
statement id, file name), aborted deltas are skipped, no ``_orc_acid_version`` is written, and a reader at the
committed snapshot sees the same rows as before."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest

from airflow_acid.acid.event_reader import FileFormat, open_orc_file
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.names import ORC_ACID_VERSION_FILE
from airflow_acid.job.layout import tmp_dir_name
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.submit import run_plan_in_session
from tests.spark.helpers import compactor_snapshot, plan_one, run_inprocess, snapshot

C = 20
SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])
ROW_SCHEMA = "struct<id:int,name:string>"


def _write(loc: Path, directory: str, name: str, ids: list[int]) -> None:
    (loc / directory).mkdir(parents=True, exist_ok=True)
    po.write_table(pa.table({"id": pa.array(ids, pa.int32()), "name": [f"r{i}" for i in ids]}, schema=SCHEMA),
                   str(loc / directory / name))


def _mm_table(loc: Path) -> None:
    """Write ids 1-2 (two buckets in 2), 3 aborted, 4 in two statements, 5 with a copy file."""
    _write(loc, "delta_0000001_0000001_0000", "000000_0", [1, 2])
    _write(loc, "delta_0000002_0000002_0000", "000000_0", [3])
    _write(loc, "delta_0000002_0000002_0000", "000001_0", [4, 5])
    _write(loc, "delta_0000003_0000003_0000", "000000_0", [666])
    _write(loc, "delta_0000004_0000004_0000", "000000_0", [6])
    _write(loc, "delta_0000004_0000004_0001", "000000_0", [7])
    _write(loc, "delta_0000005_0000005_0000", "000000_0", [8])
    _write(loc, "delta_0000005_0000005_0000", "000000_0_copy_1", [9])


def _ids(loc: Path, directory: str) -> dict[str, list[int]]:
    out = {}
    for name in sorted(os.listdir(loc / directory)):
        f = open_orc_file(str(loc / directory / name), expect=FileFormat.ORIGINAL)
        assert f.file_schema.names == ["id", "name"] and not f.user_metadata
        out[name] = f.read().column("id").to_pylist()
    return out


def _visible(loc: Path) -> list[tuple]:
    table = read_acid_table(str(loc), snapshot(5, aborted=(3,)), schema=SCHEMA)
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.mark.parametrize("kind", ["major", "minor"])
def test_mm_compaction_in_process(tmp_path, kind):
    loc = tmp_path / "mm"
    _mm_table(loc)
    before = _visible(loc)
    plan = plan_one(str(loc), kind, C, compactor_snapshot(5, aborted=(3,)), row_schema=ROW_SCHEMA, insert_only=True)
    (res,) = run_inprocess(plan).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    out = "base_0000005_v0000020" if kind == "major" else "delta_0000001_0000005_v0000020"
    assert res.outputs == [out] and (res.rows_in, res.rows_out, res.files) == (9, 9, 2)
    assert _ids(loc, out) == {"000000_0": [1, 2, 3, 6, 7, 8, 9], "000001_0": [4, 5]}
    assert not (loc / out / ORC_ACID_VERSION_FILE).exists() and not (loc / tmp_dir_name(C)).exists()
    assert _visible(loc) == before


def test_mm_major_over_a_compacted_base_and_acid_files_are_refused(tmp_path):
    loc = tmp_path / "mm"
    _write(loc, "base_0000002_v0000010", "000000_0", [1, 2])
    _write(loc, "delta_0000003_0000003_0000", "000000_0", [3])
    plan = plan_one(str(loc), "major", C, compactor_snapshot(3), insert_only=True)  # schema from the files
    (res,) = run_inprocess(plan).compactions
    assert res.status == JobStatus.SUCCEEDED and _ids(loc, "base_0000003_v0000020") == {"000000_0": [1, 2, 3]}
    # An ACID event file in an MM table: the unit refuses it and leaves nothing behind.
    events = pa.table({"operation": pa.array([0], pa.int32()), "originalTransaction": pa.array([4], pa.int64()),
                       "bucket": pa.array([536870912], pa.int32()), "rowId": pa.array([0], pa.int64()),
                       "currentTransaction": pa.array([4], pa.int64()),
                       "row": pa.array([{"id": 4, "name": "r4"}], pa.struct(list(SCHEMA)))})
    (loc / "delta_0000004_0000004_0000").mkdir()
    po.write_table(events, str(loc / "delta_0000004_0000004_0000" / "bucket_00000"))
    plan = plan_one(str(loc), "major", C + 1, compactor_snapshot(4), insert_only=True)
    (res,) = run_inprocess(plan).compactions
    assert res.status == JobStatus.FAILED and "insert-only table holds plain files only" in res.error
    assert sorted(os.listdir(loc)) == ["base_0000002_v0000010", "base_0000003_v0000020", "delta_0000003_0000003_0000",
                                       "delta_0000004_0000004_0000"]


@pytest.mark.slow
def test_mm_plan_on_spark(spark, tmp_path):
    """Major of one partition and minor of another in one Spark application."""
    p1, p2 = tmp_path / "t" / "p=1", tmp_path / "t" / "p=2"
    _mm_table(p1)
    _mm_table(p2)
    before1, before2 = _visible(p1), _visible(p2)
    wil = compactor_snapshot(5, aborted=(3,))
    plan = CompactionPlan((plan_one(str(p1), "major", C, wil, cid="p1", row_schema=ROW_SCHEMA, insert_only=True),
                           plan_one(str(p2), "minor", C, wil, cid="p2", row_schema=ROW_SCHEMA, insert_only=True)))
    result = run_plan_in_session(CompactionPlan.from_json(plan.to_json()), spark)
    by_id = result.by_id()
    assert [by_id[i].status for i in ("p1", "p2")] == [JobStatus.SUCCEEDED] * 2, [by_id[i].error for i in ("p1", "p2")]
    assert by_id["p1"].outputs == ["base_0000005_v0000020"] and by_id["p2"].outputs == ["delta_0000001_0000005_v0000020"]
    assert _ids(p1, "base_0000005_v0000020") == _ids(p2, "delta_0000001_0000005_v0000020") == {
        "000000_0": [1, 2, 3, 6, 7, 8, 9], "000001_0": [4, 5]}
    assert (_visible(p1), _visible(p2)) == (before1, before2)
