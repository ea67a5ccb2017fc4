"""The compaction engine in-process (no Spark): minor/major semantics, output files, temp output, failures."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.fast_event_writer import write_acid_orc
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.names import LONG_MIN, format_base
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.job.layout import tmp_dir_name
from airflow_acid.job.plan import CompactionPlan, OrcSettings
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.driver import execute_plan
from tests.spark.helpers import (
    EMP,
    EMP_ORC,
    acid_dirs,
    check_acid_output,
    compactor_snapshot,
    plan_one,
    rows_with_ids,
    run_inprocess,
    snapshot,
    write_merge_example,
)

C = 10


def test_merge_example_minor(tmp_path):
    loc = str(tmp_path)
    write_merge_example(loc)
    before = rows_with_ids(loc, snapshot(2))
    result = run_inprocess(plan_one(loc, "minor", C, compactor_snapshot(2), row_schema=EMP_ORC))
    (res,) = result.compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    assert res.outputs == ["delta_0000001_0000002_v0000010", "delete_delta_0000001_0000002_v0000010"]
    assert (res.rows_in, res.rows_out, res.files) == (6, 6, 2)
    new = [d for d in acid_dirs(loc) if d.endswith("_v0000010")]
    assert new == ["delete_delta_0000001_0000002_v0000010", "delta_0000001_0000002_v0000010"]
    inserts = open_orc_file(f"{loc}/delta_0000001_0000002_v0000010/bucket_00000").read()
    names_ = inserts.column("row").combine_chunks().field("name").to_pylist()
    assert names_ == ["Jerry", "Tom", "Kate", "Mary", "Tom"]  # minor compaction deletes nothing
    assert inserts.column("bucket").to_pylist()[-1] == bucket_codec.encode(0, 1)  # statement 1 kept in the row
    deletes = open_orc_file(f"{loc}/delete_delta_0000001_0000002_v0000010/bucket_00000").read()
    assert [(r["originalTransaction"], r["rowId"], r["currentTransaction"]) for r in deletes.to_pylist()] == [(1, 1, 2)]
    assert check_acid_output(loc, "delta_0000001_0000002_v0000010") == 5
    assert check_acid_output(loc, "delete_delta_0000001_0000002_v0000010") == 1
    assert rows_with_ids(loc, snapshot(2)) == before


def test_merge_example_major(tmp_path):
    loc = str(tmp_path)
    write_merge_example(loc)
    before = rows_with_ids(loc, snapshot(2))
    (res,) = run_inprocess(plan_one(loc, "major", C, compactor_snapshot(2))).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    assert res.outputs == ["base_0000002_v0000010"]
    base = open_orc_file(f"{loc}/base_0000002_v0000010/bucket_00000").read()
    got = [(r["originalTransaction"], r["bucket"], r["rowId"], r["row"]["name"], r["row"]["salary"])
           for r in base.to_pylist()]
    s0, s1 = bucket_codec.encode(0, 0), bucket_codec.encode(0, 1)
    assert got == [(1, s0, 0, "Jerry", 5000), (1, s0, 2, "Kate", 6000), (2, s0, 0, "Mary", 9000),
                   (2, s1, 0, "Tom", 7000)]
    assert check_acid_output(loc, "base_0000002_v0000010") == 4
    assert rows_with_ids(loc, snapshot(2)) == before


def test_major_after_minor_reads_the_same(tmp_path):
    loc = str(tmp_path)
    write_merge_example(loc)
    before = rows_with_ids(loc, snapshot(2))
    run_inprocess(plan_one(loc, "minor", C, compactor_snapshot(2)))
    (res,) = run_inprocess(plan_one(loc, "major", C + 1, compactor_snapshot(2))).compactions
    assert res.status == JobStatus.SUCCEEDED and res.outputs == ["base_0000002_v0000011"]
    assert res.steps[0].inputs == ["delete_delta_0000001_0000002_v0000010", "delta_0000001_0000002_v0000010"]
    assert rows_with_ids(loc, snapshot(2)) == before


def _place_interop_set_2(interop: Path, loc: Path) -> None:
    src = interop / "trino-nation-25k-with-delete-deltas"
    (loc / "delta_0000002_0000002_0000").mkdir(parents=True)
    shutil.copy(src / "nationFile25kRowsSortedOnNationKey/bucket_00000", loc / "delta_0000002_0000002_0000")
    for d in ("delete_delta_0000003_0000003_0000", "delete_delta_0000004_0000004_0000"):
        shutil.copytree(src / "nation_delete_deltas" / d, loc / d)


def test_interop_set_2_major_keeps_original_row_ids(interop, tmp_path):
    _place_interop_set_2(interop, tmp_path)
    loc = str(tmp_path)
    before = read_acid_table(loc, snapshot(4), include_row_ids=True)
    (res,) = run_inprocess(plan_one(loc, "major", 20, compactor_snapshot(4))).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    assert res.outputs == ["base_0000004_v0000020"] and (res.rows_in, res.rows_out) == (27000, 23000)
    base = open_orc_file(f"{loc}/base_0000004_v0000020/bucket_00000").read()
    assert base.num_rows == 23000
    row_ids = base.column("rowId").to_numpy()
    assert set(row_ids.tolist()) == set(range(25000)) - set(range(5000, 6000)) - set(range(19000, 20000))
    assert set(base.column("originalTransaction").to_pylist()) == {2}
    assert check_acid_output(loc, "base_0000004_v0000020") == 23000
    after = read_acid_table(loc, snapshot(4), include_row_ids=True)
    assert after.equals(before)
    assert sorted(set(after.column("n_nationkey").to_pylist())) == sorted(set(range(25)) - {5, 19})


def test_interop_set_2_minor_keeps_every_event(interop, tmp_path):
    _place_interop_set_2(interop, tmp_path)
    loc = str(tmp_path)
    (res,) = run_inprocess(plan_one(loc, "minor", 20, compactor_snapshot(4))).compactions
    assert res.outputs == ["delta_0000002_0000004_v0000020", "delete_delta_0000002_0000004_v0000020"]
    assert check_acid_output(loc, "delta_0000002_0000004_v0000020") == 25000
    assert check_acid_output(loc, "delete_delta_0000002_0000004_v0000020") == 2000
    assert read_acid_table(loc, snapshot(4)).num_rows == 23000


@pytest.mark.parametrize(("name", "rows"), [("trino-fullacid-nation-original-file", 24),
                                            ("trino-dummy-id-original-files", 19)])
def test_original_files_keep_synthetic_row_ids_through_major(interop, tmp_path, name, rows):
    loc = tmp_path / "t"
    shutil.copytree(interop / name, loc)
    wid = 10000001
    before = rows_with_ids(str(loc), snapshot(wid))
    assert len(before) == rows
    (res,) = run_inprocess(plan_one(str(loc), "major", 10000005, compactor_snapshot(wid))).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    assert res.outputs == [format_base(wid, 10000005)]
    assert rows_with_ids(str(loc), snapshot(wid)) == before
    assert all(r[0] == 0 for r in before)  # originalTransaction 0: synthetic ids survived
    check_acid_output(str(loc), res.outputs[0])


def test_original_files_without_deltas_make_the_long_min_base(interop, tmp_path):
    loc = tmp_path / "t"
    loc.mkdir()
    for f in ("000000_0", "000001_0", "000002_0", "000002_0_copy_1"):
        shutil.copy(interop / "trino-dummy-id-original-files" / f, loc / f)
    before = rows_with_ids(str(loc), snapshot(5))
    (res,) = run_inprocess(plan_one(str(loc), "major", 7, compactor_snapshot(5))).compactions
    assert res.outputs == [format_base(LONG_MIN, 7)]
    assert sorted(p.name for p in (loc / res.outputs[0]).iterdir()) == [
        "_orc_acid_version", "bucket_00000", "bucket_00001", "bucket_00002"]
    assert rows_with_ids(str(loc), snapshot(5)) == before


def test_multi_stripe_output_has_one_key_index_entry_per_stripe(tmp_path):
    n = 60_000
    rows = pa.table({"id": pa.array(np.arange(n, dtype=np.int32)), "name": pa.array([f"n{i}" for i in range(n)]),
                     "salary": pa.array(np.arange(n, dtype=np.int32))})
    for w in (1, 2, 3):
        write_statement(str(tmp_path), w, 0, EMP, inserts=rows, bucket_of=lambda t: t["id"].to_numpy() % 2)
    small = {"orc.stripe.size": str(64 * 1024), "orc.compress": "SNAPPY"}
    (res,) = run_inprocess(plan_one(str(tmp_path), "major", 9, compactor_snapshot(3),
                                    table_properties=small)).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    with open(tmp_path / res.outputs[0] / "bucket_00001", "rb") as fh:
        import pyorc
        assert pyorc.Reader(fh).num_of_stripes > 1
    assert check_acid_output(str(tmp_path), res.outputs[0]) == 3 * n


@pytest.mark.parametrize("compression", ["NONE", "ZLIB", "SNAPPY", "ZSTD"])
def test_fast_writer_round_trips_every_compression(tmp_path, compression):
    from airflow_acid.acid.event_schema import insert_events
    from airflow_acid.acid.event_writer import FileKind
    from airflow_acid.acid.fs import storage_for

    rows = pa.table({"id": pa.array(np.arange(5000, dtype=np.int32)), "name": [str(i) for i in range(5000)],
                     "salary": pa.array(np.zeros(5000, dtype=np.int32))})
    events = insert_events(rows, 3, bucket_codec.encode(0, 0))
    written = write_acid_orc(storage_for(str(tmp_path / "base_0000003_v0000004")), "bucket_00000", events,
                             kind=FileKind.BASE, orc=OrcSettings(compression=compression, stripe_size=16 * 1024))
    assert written.rows == 5000 and written.stripes >= 1
    (tmp_path / "base_0000003_v0000004" / "_orc_acid_version").write_bytes(b"2")
    assert check_acid_output(str(tmp_path), "base_0000003_v0000004") == 5000
    assert open_orc_file(written.path).read().equals(events.cast(open_orc_file(written.path).read().schema))


def test_rerun_replaces_leftovers_of_a_crashed_attempt(tmp_path):
    loc = str(tmp_path)
    write_merge_example(loc)
    before = rows_with_ids(loc, snapshot(2))
    c = plan_one(loc, "minor", C, compactor_snapshot(2))
    # A crashed attempt: half-written temp output and one renamed output holding garbage.
    junk = tmp_path / tmp_dir_name(C) / "delta_0000001_0000002_v0000010"
    junk.mkdir(parents=True)
    (junk / "bucket_00000").write_bytes(b"partial")
    (tmp_path / "delete_delta_0000001_0000002_v0000010").mkdir()
    (tmp_path / "delete_delta_0000001_0000002_v0000010" / "bucket_00007").write_bytes(b"junk")
    (res,) = run_inprocess(c).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    assert not (tmp_path / tmp_dir_name(C)).exists()
    assert sorted(p.name for p in (tmp_path / "delete_delta_0000001_0000002_v0000010").iterdir()) == [
        "_orc_acid_version", "bucket_00000"]
    assert rows_with_ids(loc, snapshot(2)) == before


def test_a_failing_compaction_leaves_nothing_and_does_not_stop_the_others(tmp_path):
    good, bad = tmp_path / "p=1", tmp_path / "p=2"
    write_merge_example(str(good))
    write_merge_example(str(bad))
    cg = plan_one(str(good), "major", C, compactor_snapshot(2), cid="good")
    cb = plan_one(str(bad), "major", C, compactor_snapshot(2), cid="bad")
    (bad / "delta_0000002_0000002_0000" / "bucket_00000").write_bytes(b"ORC but truncated")
    result = execute_plan(CompactionPlan((cg, cb))).by_id()
    assert result["good"].status == JobStatus.SUCCEEDED
    assert result["bad"].status == JobStatus.FAILED
    assert "delta_0000002_0000002_0000/bucket_00000" in result["bad"].error
    assert not any(p.name.endswith("_v0000010") or p.name.startswith("_tmp") for p in bad.iterdir())


def test_stale_plan_is_reported(tmp_path):
    loc = str(tmp_path)
    write_merge_example(loc)
    c = plan_one(loc, "minor", C, compactor_snapshot(2))
    shutil.rmtree(tmp_path / "delta_0000002_0000002_0000")
    (res,) = run_inprocess(c).compactions
    assert res.status == JobStatus.FAILED and "plan the compaction again" in res.error


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_a_data_file_deleted_after_planning_fails_the_compaction_naming_it(tmp_path, kind):
    """Found by the reliability suite: a bucket file deleted behind the system's back between planning and the job
    used to be compacted away silently (the output simply lacked its rows). The plan carries the listed data files;
    the job fails naming the missing one and writes nothing."""
    loc = str(tmp_path)
    write_merge_example(loc)
    c = plan_one(loc, kind, C, compactor_snapshot(2))
    assert "delta_0000001_0000001_0000/bucket_00000" in c.steps[-1].input_files
    assert CompactionPlan.from_json(CompactionPlan((c,)).to_json()).compactions[0] == c
    (tmp_path / "delta_0000001_0000001_0000" / "bucket_00000").unlink()
    (res,) = run_inprocess(c).compactions
    assert res.status == JobStatus.FAILED and res.outputs == []
    assert "data files ['delta_0000001_0000001_0000/bucket_00000']" in res.error and loc in res.error
    assert not [d for d in acid_dirs(loc) if d.endswith(f"_v{C:07d}")]


def test_partial_minors_then_major(tmp_path):
    loc = str(tmp_path)
    for w in range(1, 8):
        write_statement(loc, w, 0, EMP, inserts=pa.table({"id": pa.array([w], pa.int32()), "name": [f"n{w}"],
                                                          "salary": pa.array([w], pa.int32())}, schema=EMP))
    before = rows_with_ids(loc, snapshot(7))
    c = plan_one(loc, "major", 30, compactor_snapshot(7), max_num_delta=3)
    assert len(c.steps) == 3
    (res,) = run_inprocess(c).compactions
    assert res.status == JobStatus.SUCCEEDED, res.error
    # the partial minors wrote only insert deltas; the final step read them, not the missing delete deltas
    assert res.outputs == ["delta_0000001_0000003_v0000030", "delta_0000004_0000006_v0000030",
                           "base_0000007_v0000030"]
    assert res.steps[2].inputs == ["delta_0000001_0000003_v0000030", "delta_0000004_0000006_v0000030",
                                   "delta_0000007_0000007_0000"]
    assert rows_with_ids(loc, snapshot(7)) == before


# ---------------------------------------------------------------------------------------------------
# Random histories

_OPS = st.sampled_from(["insert", "update", "delete", "merge"])
_STATEMENT = st.tuples(_OPS, st.integers(1, 4))
_TXN = st.tuples(st.sampled_from(["committed", "committed", "committed", "aborted"]),
                 st.lists(_STATEMENT, min_size=1, max_size=3))


def _write_history(loc: str, txns, buckets: int, draw_index) -> list[int]:
    """Write the history; returns the aborted write ids. Rows: (id, name, salary), bucket = id % buckets."""
    committed: dict[int, tuple] = {}  # id -> (row id triple, name, salary)
    next_key = 0
    aborted: list[int] = []
    for w, (status, statements) in enumerate(txns, start=1):
        working = dict(committed)
        for s, (op, n) in enumerate(statements):
            inserts, deletes = [], []
            if op in ("update", "delete", "merge") and working:
                keys = sorted(working)
                for k in [keys[draw_index(len(keys)) ] for _ in range(n)]:
                    if k in working and all(k != d[0] for d in deletes):
                        deletes.append((k, working[k][0]))
                        if op != "delete":
                            inserts.append((k, f"u{w}.{s}", working[k][2] + 1))
            if op in ("insert", "merge"):
                for _ in range(n):
                    inserts.append((next_key, f"i{w}.{s}", next_key * 10))
                    next_key += 1
            for k, _rid in deletes:
                working.pop(k)
            ins_table = pa.table({"id": pa.array([r[0] for r in inserts], pa.int32()),
                                  "name": [r[1] for r in inserts],
                                  "salary": pa.array([r[2] for r in inserts], pa.int32())}, schema=EMP)
            del_table = pa.table({"originalTransaction": pa.array([d[1][0] for d in deletes], pa.int64()),
                                  "bucket": pa.array([d[1][1] for d in deletes], pa.int32()),
                                  "rowId": pa.array([d[1][2] for d in deletes], pa.int64())})
            write_statement(loc, w, s, EMP, inserts=ins_table if inserts else None,
                            deletes=del_table if deletes else None,
                            bucket_of=lambda t: t["id"].to_numpy() % buckets)
            per_bucket: dict[int, int] = {}
            for k, name, salary in inserts:  # write_statement numbers rows per bucket file from 0, in order
                b = k % buckets
                working[k] = ((w, bucket_codec.encode(b, s), per_bucket.get(b, 0)), name, salary)
                per_bucket[b] = per_bucket.get(b, 0) + 1
        if status == "committed":
            committed = working
        else:
            aborted.append(w)
    return aborted


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(txns=st.lists(_TXN, min_size=1, max_size=7), buckets=st.integers(1, 3), open_tail=st.integers(0, 2),
       max_num_delta=st.sampled_from([2, 3, 500]), data=st.data())
def test_random_histories_read_the_same_after_minor_and_major(tmp_path_factory, txns, buckets, open_tail,
                                                               max_num_delta, data):
    root = tmp_path_factory.mktemp("h")
    loc = str(root / "t")
    (root / "t").mkdir()
    draw_index = lambda n: data.draw(st.integers(0, n - 1))  # noqa: E731
    aborted = _write_history(loc, txns, buckets, draw_index)
    top = len(txns)
    first_open = max(1, top - open_tail + 1) if open_tail else top + 1
    open_ids = [w for w in range(first_open, top + 1) if w not in aborted]
    wil = compactor_snapshot(top, aborted=aborted, open_=open_ids)
    snaps = [snapshot(h, aborted=[a for a in aborted if a <= h]) for h in range(wil.high_watermark, top + 1)]
    before = [rows_with_ids(loc, s, EMP) for s in snaps]
    pristine = str(root / "pristine")
    shutil.copytree(loc, pristine)

    from airflow_acid.compactor.planner import compose_for_directory
    for txn, ctype in ((100, "minor"), (101, "major")):
        c = compose_for_directory(loc, wil, txn, ctype, compaction_id=ctype, row_schema=EMP_ORC, max_num_delta=max_num_delta)
        if not hasattr(c, "steps"):
            continue  # nothing to compact (Hive's isEnoughToCompact)
        (res,) = execute_plan(CompactionPlan((c,))).compactions
        assert res.status == JobStatus.SUCCEEDED, res.error
        for out in res.outputs:
            check_acid_output(loc, out)
            for f in Path(loc, out).glob("bucket_*"):  # aborted and above-HWM events are gone for good
                events = open_orc_file(str(f)).read()
                ids = set(events.column("currentTransaction").to_pylist())
                assert not ids & set(aborted) and max(ids) <= wil.high_watermark
        assert [rows_with_ids(loc, s, EMP) for s in snaps] == before, f"after {ctype}"
        assert not any(p.name.startswith("_tmp") for p in Path(loc).iterdir())
    # nothing the compactions did touched the inputs
    for p in Path(pristine).rglob("bucket_*"):
        assert (Path(loc) / p.relative_to(pristine)).read_bytes() == p.read_bytes()
    assert read_acid_table(loc, snapshot(top, aborted=aborted), schema=EMP).num_rows == len(before[-1])


def test_events_of_aborted_write_ids_inside_multi_write_id_deltas_are_dropped(tmp_path):
    """A streaming delta spanning write ids 1-3 and its delete twin where write id 2 aborted
    (docs/hive-acid.md#compaction-output-rows, docs/hive-acid.md#minor-and-major)."""
    from airflow_acid.acid.event_schema import delete_events, insert_events
    from airflow_acid.acid.event_writer import write_event_file

    loc = str(tmp_path)
    b0 = bucket_codec.encode(0, 0)

    def rows(ids):
        return pa.table({"id": pa.array(ids, pa.int32()), "name": [f"n{i}" for i in ids],
                         "salary": pa.array(ids, pa.int32())}, schema=EMP)
    events = pa.concat_tables([insert_events(rows([10, 11, 12]), 1, b0), insert_events(rows([20, 21]), 2, b0),
                               insert_events(rows([30, 31]), 3, b0)])
    write_event_file(f"{loc}/delta_0000001_0000003", 0, events, row_schema=EMP)
    deletes = pa.concat_tables([delete_events([(1, b0, 0)], 2, EMP), delete_events([(1, b0, 1)], 3, EMP)])
    write_event_file(f"{loc}/delete_delta_0000001_0000003", 0, deletes, row_schema=EMP)
    write_statement(loc, 4, 0, EMP, inserts=rows([40]))
    snap = snapshot(4, aborted=[2])
    before = rows_with_ids(loc, snap)
    assert [r[3] for r in before] == [10, 12, 30, 31, 40]

    (res,) = run_inprocess(plan_one(loc, "minor", 50, compactor_snapshot(4, aborted=[2]))).compactions
    assert res.outputs == ["delta_0000001_0000004_v0000050", "delete_delta_0000001_0000004_v0000050"]
    kept = open_orc_file(f"{loc}/delta_0000001_0000004_v0000050/bucket_00000").read()
    assert kept.column("row").combine_chunks().field("id").to_pylist() == [10, 11, 12, 30, 31, 40]
    dels = open_orc_file(f"{loc}/delete_delta_0000001_0000004_v0000050/bucket_00000").read()
    assert [(r["originalTransaction"], r["rowId"], r["currentTransaction"]) for r in dels.to_pylist()] == [(1, 1, 3)]
    assert rows_with_ids(loc, snap) == before

    (res,) = run_inprocess(plan_one(loc, "major", 51, compactor_snapshot(4, aborted=[2]))).compactions
    base = open_orc_file(f"{loc}/base_0000004_v0000051/bucket_00000").read()
    assert base.column("row").combine_chunks().field("id").to_pylist() == [10, 12, 30, 31, 40]
    assert rows_with_ids(loc, snap) == before
