"""A major compaction whose merge streams the delete deltas (hive.transactional.events.mem below the bucket's delete
events, acid/delete_cursor.py) writes the same base as the in-memory merge, and the snapshot reads the same."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid import delete_cursor
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.driver import execute_plan, run_locally
from tests.spark.helpers import EMP, EMP_ORC, compactor_snapshot, emp_rows, plan_one, rows_with_ids, snapshot


def _history(loc: str) -> None:
    """Write ids 1-2 insert 60 rows over 3 buckets (two statements); 3-6 delete overlapping sets, 5 aborts."""
    write_statement(loc, 1, 0, EMP, inserts=emp_rows([(i, f"a{i}", i) for i in range(40)]),
                    bucket_of=lambda t: t["id"].to_numpy() % 3)
    write_statement(loc, 2, 0, EMP, inserts=emp_rows([(i, f"b{i}", i) for i in range(40, 50)]),
                    bucket_of=lambda t: t["id"].to_numpy() % 3)
    write_statement(loc, 2, 1, EMP, inserts=emp_rows([(i, f"c{i}", i) for i in range(50, 60)]),
                    bucket_of=lambda t: t["id"].to_numpy() % 3)
    for w, ids in ((3, range(0, 60, 4)), (4, range(0, 60, 6)), (5, range(1, 60, 2)), (6, range(2, 60, 5))):
        live = rows_with_ids(loc, snapshot(w - 1, aborted=[5] if w > 5 else []), EMP)
        keys = [r[:3] for r in live if r[3] in set(ids)] if w != 5 else [r[:3] for r in live if r[3] % 2]
        deletes = pa.table({"originalTransaction": pa.array([k[0] for k in keys], pa.int64()),
                            "bucket": pa.array([k[1] for k in keys], pa.int32()),
                            "rowId": pa.array([k[2] for k in keys], pa.int64())})
        write_statement(loc, w, 0, EMP, deletes=deletes, bucket_of=lambda t: t["id"].to_numpy() % 3)


def test_major_compaction_streams_deletes_below_the_threshold(tmp_path, monkeypatch):
    monkeypatch.setattr(delete_cursor, "MIN_BATCH_ROWS", 1)
    monkeypatch.setattr(delete_cursor, "MAX_BATCH_ROWS", 2)
    monkeypatch.setattr(delete_cursor, "MAX_OPEN_FILES", 2)  # 4 delete deltas: merged into run files first
    streamed, in_memory = str(tmp_path / "streamed"), str(tmp_path / "memory")
    Path(streamed).mkdir()
    _history(streamed)
    shutil.copytree(streamed, in_memory)
    snap = snapshot(6, aborted=[5])
    before = rows_with_ids(streamed, snap, EMP)
    assert len(before) < 60 and any(r[3] % 2 for r in before)  # deletes applied, write id 5's ignored
    seen: list[int] = []

    def spy(units):
        seen.extend(u.events_mem for u in units)
        return run_locally(units)

    wil = compactor_snapshot(6, aborted=[5])
    props = {"compactor.hive.transactional.events.mem": "0"}
    c = plan_one(streamed, "major", 50, wil, row_schema=EMP_ORC, table_properties=props)
    (res,) = execute_plan(CompactionPlan((c,)), spy).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    assert seen and set(seen) == {0}
    (m,) = execute_plan(CompactionPlan((plan_one(in_memory, "major", 50, wil, row_schema=EMP_ORC),))).compactions
    assert m.status == JobStatus.SUCCEEDED, m.error
    assert rows_with_ids(streamed, snap, EMP) == before == rows_with_ids(in_memory, snap, EMP)
    for f in sorted(Path(in_memory, res.outputs[0]).glob("bucket_*")):
        a = open_orc_file(str(Path(streamed, res.outputs[0], f.name))).read()
        b = open_orc_file(str(f)).read()
        assert a.drop_columns(["row"]).equals(b.drop_columns(["row"]))
        assert pc.all(pc.equal(a.column("row").combine_chunks().field("id"),
                               b.column("row").combine_chunks().field("id"))).as_py()
