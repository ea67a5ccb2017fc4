"""A major compaction whose merge streams the delete deltas (hive.transactional.events.mem below the bucket's delete
events, acid/delete_cursor.py) writes the same base as the in-memory merge, a minor compaction whose delete side is
merged as streams (acid/delete_merge.py) the same delete_delta, and the snapshot reads the same."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po

from airflow_acid.acid import bucket_codec, delete_cursor
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.delete_merge import MergedDeleteEvents
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.event_schema import event_arrow_schema
from airflow_acid.acid.merge import BucketPlan, DataSource, SourceKind
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.job.plan import CompactionPlan, OrcSettings
from airflow_acid.job.result import JobStatus
from airflow_acid.spark import units
from airflow_acid.spark.driver import execute_plan, run_locally
from airflow_acid.spark.units import WorkUnit, execute_unit
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


def test_minor_compaction_streams_its_delete_events_below_the_threshold(tmp_path, monkeypatch):
    """A MINOR compaction through the local unit runner with ``compactor.hive.transactional.events.mem`` 0: each
    bucket's delete events are merged from its delete deltas as streams (2 at a time: a bucket with 3 is merged
    into run files first; 2 events a batch) into the same delete_delta files as the in-memory sort writes, write
    id 5's (aborted) dropped, the output proof agrees, and the table reads the model's rows."""
    monkeypatch.setattr(delete_cursor, "MIN_BATCH_ROWS", 1)
    monkeypatch.setattr(delete_cursor, "MAX_BATCH_ROWS", 2)
    monkeypatch.setattr(delete_cursor, "MAX_OPEN_FILES", 2)
    streamed, in_memory = str(tmp_path / "streamed"), str(tmp_path / "memory")
    Path(streamed).mkdir()
    _history(streamed)
    shutil.copytree(streamed, in_memory)
    snap = snapshot(6, aborted=[5])
    before = rows_with_ids(streamed, snap, EMP)
    deleted = {i for step in (4, 6) for i in range(0, 60, step)} | set(range(2, 60, 5))
    assert sorted(r[3] for r in before) == sorted(set(range(60)) - deleted)  # the model: write id 5's deletes void
    wil = compactor_snapshot(6, aborted=[5])
    props = {"compactor.hive.transactional.events.mem": "0"}
    merges: list[MergedDeleteEvents] = []

    class Spy(MergedDeleteEvents):
        def tables(self, row_schema):
            merges.append(self)
            return super().tables(row_schema)

    monkeypatch.setattr(units, "MergedDeleteEvents", Spy)
    (res,) = execute_plan(CompactionPlan((plan_one(streamed, "minor", 50, wil, row_schema=EMP_ORC,
                                                   table_properties=props),))).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    assert len(merges) == 3 and any(g.run_files for g in merges)
    assert all(g.run_files == (2 if len(g.files) > 2 else 0) and 0 < g.peak_events <= 2 * 3 for g in merges)
    (m,) = execute_plan(CompactionPlan((plan_one(in_memory, "minor", 50, wil, row_schema=EMP_ORC),))).compactions
    assert m.status == JobStatus.SUCCEEDED, m.error
    assert len(merges) == 3  # the in-memory run sorted its deletes
    assert res.outputs == m.outputs and res.outputs[1].startswith("delete_delta_0000001_0000006")
    assert all(k.read_digest == k.written_digest and k.rows_read == k.rows_written for k in res.checks), res.checks
    delete_files = sorted(Path(in_memory, res.outputs[1]).glob("bucket_*"))
    assert len(delete_files) == 3
    events = 0
    for f in delete_files:
        a = open_orc_file(str(Path(streamed, res.outputs[1], f.name))).read()
        assert a.equals(open_orc_file(str(f)).read())
        assert set(a.column("currentTransaction").to_pylist()) <= {3, 4, 6}
        events += a.num_rows
    assert events == sum(k.rows_written for k in res.checks if k.output == res.outputs[1])
    assert rows_with_ids(streamed, snap, EMP) == before == rows_with_ids(in_memory, snap, EMP)


def test_an_unsorted_delete_delta_makes_the_minor_unit_sort_in_memory(tmp_path):
    """A delete delta out of key order cannot be merged as a stream: the unit drops its streamed writer (nothing
    stored) and writes the in-memory sort, and its proof counts each event once."""
    schema = event_arrow_schema(EMP)
    keys = [(1, 5), (1, 2), (2, 0), (1, 9)]
    events = pa.Table.from_arrays([pa.array([2] * 4, pa.int32()), pa.array([k[0] for k in keys], pa.int64()),
                                   pa.array([bucket_codec.encode(0)] * 4, pa.int32()),
                                   pa.array([k[1] for k in keys], pa.int64()), pa.array([3] * 4, pa.int64()),
                                   pa.nulls(4, schema.field(5).type)], schema=schema)
    d = "delete_delta_0000003_0000003_0000"
    (tmp_path / d).mkdir()
    po.write_table(events, str(tmp_path / d / "bucket_00000"))
    source = DataSource(f"{d}/bucket_00000", (tmp_path / d / "bucket_00000").stat().st_size, SourceKind.EVENTS, d)
    unit = WorkUnit(0, 0, BucketPlan(0, (), (source,)), CompactionType.MINOR, str(tmp_path),
                    compactor_snapshot(3).to_string(), EMP, OrcSettings(), "_tmp",
                    ("delta_0000003_0000003_v0000009", "delete_delta_0000003_0000003_v0000009"), events_mem=0)
    result = execute_unit(unit)
    assert result.error is None and result.rows_out == 4
    (check,) = result.checks
    assert check.rows_read == check.rows_written == 4 and check.read_digest == check.written_digest
    out = open_orc_file(str(tmp_path / "_tmp" / unit.outputs[1] / "bucket_00000")).read()
    assert list(zip(out.column("originalTransaction").to_pylist(), out.column("rowId").to_pylist())) == sorted(keys)
