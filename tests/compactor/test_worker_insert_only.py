"""Insert-only (MM) tables through the Worker and the Cleaner on SQLite, PostgreSQL and MariaDB: MAJOR writes
``base_H_vC``, MINOR ``delta_m_H_vC``, both of plain ORC files (no ACID columns, no ``_orc_acid_version``); aborted
deltas are never inputs; reads are identical before compaction, after it and after cleaning."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.orc as po
import pytest

from airflow_acid.acid.codes import CompactionState
from airflow_acid.acid.event_reader import FileFormat, open_orc_file
from airflow_acid.acid.names import ORC_ACID_VERSION_FILE
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.committer import verify_output
from airflow_acid.compactor.errors import OutputVerificationError
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.planner import compose_for_directory
from airflow_acid.compactor.worker import Worker
from airflow_acid.job.result import CompactionResult, JobStatus
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import (
    COLUMNS,
    acid_dirs,
    enqueue,
    hidden_dirs,
    rows,
)

PART = {"ds": "2024-01-01"}


def _mm_history(wh, table: str, partition: dict | None) -> None:
    """Write ids 1-2 committed, 3 aborted (its files left behind), 4 committed with two statements."""
    for i in range(2):
        with wh.transaction() as t:
            t.insert(table, [{"id": i * 10 + j, "name": f"n{i}{j}"} for j in range(3)], partition)
    crashed = wh.transaction()  # a writer that wrote its delta and aborted without removing it
    crashed.insert(table, [{"id": 900, "name": "aborted"}, {"id": 901, "name": "aborted"}], partition)
    crashed._written.clear()
    crashed.abort()
    with wh.transaction() as t:
        t.insert(table, [{"id": 40, "name": "first statement"}], partition)
        t.insert(table, [{"id": 41, "name": "second statement"}], partition)


def _location(wh, table: str, partition: dict | None) -> str:
    info = wh.table(table)
    if partition is None:
        return info.location
    spec = ",".join(f"{k}={v}" for k, v in partition.items())
    return wh.metastore.catalog.get_partition(info.database, info.name, spec).location


def _plain_rows(location: str, directory: str) -> list[str]:
    """The ``name`` column of the directory's files, each checked to be a plain ORC file."""
    out = []
    for name in sorted(os.listdir(os.path.join(location, directory))):
        assert name.endswith("_0") and name[:6].isdigit(), name
        f = open_orc_file(os.path.join(location, directory, name), expect=FileFormat.ORIGINAL)
        assert f.format is FileFormat.ORIGINAL and f.file_schema.names == [c for c, _ in COLUMNS]
        assert not [k for k in f.user_metadata if k.startswith("hive.acid.")]
        out += f.read().column("name").to_pylist()
    return out


@pytest.mark.parametrize("partition", [None, PART], ids=["unpartitioned", "partitioned"])
def test_insert_only_major_then_minor_then_clean(wh, partition):
    table = "db.mm"
    wh.create_table(table, COLUMNS, transactional_properties="insert_only",
                    partition_by=[("ds", "string")] if partition else None)
    _mm_history(wh, table, partition)
    loc = _location(wh, table, partition)
    before = rows(wh, table)
    part = "ds=2024-01-01" if partition else None

    enqueue(wh, "major", table, part)
    worker = Worker(wh.metastore, runner=LocalRunner(), host="w1")
    major = worker.run_next()
    assert major.status == WorkerStatus.COMPACTED, major
    base = f"base_0000004_v{major.txn_id:07d}"
    assert major.outputs == (base,) and (major.rows_in, major.rows_out) == (8, 8)
    assert hidden_dirs(loc) == [] and not os.path.exists(os.path.join(loc, base, ORC_ACID_VERSION_FILE))
    # Union in order: write id 1, 2, then statement 0 and 1 of write id 4; the aborted rows are not there.
    assert _plain_rows(loc, base) == ["n00", "n01", "n02", "n10", "n11", "n12", "first statement", "second statement"]
    assert rows(wh, table) == before
    assert [e.status for e in Cleaner(wh.metastore).run_cycle().entries] == ["cleaned"]
    assert acid_dirs(loc) == [base]  # the aborted delta went too
    assert rows(wh, table) == before

    with wh.transaction() as t:
        t.insert(table, [{"id": 50, "name": "w5"}], partition)
    with wh.transaction() as t:
        t.insert(table, [{"id": 60, "name": "w6"}], partition)
    before = rows(wh, table)
    enqueue(wh, "minor", table, part)
    minor = worker.run_next()
    assert minor.status == WorkerStatus.COMPACTED, minor
    delta = f"delta_0000005_0000006_v{minor.txn_id:07d}"
    assert minor.outputs == (delta,) and _plain_rows(loc, delta) == ["w5", "w6"]
    assert rows(wh, table) == before

    assert [e.status for e in Cleaner(wh.metastore).run_cycle().entries] == ["cleaned"]
    assert acid_dirs(loc) == [base, delta]
    assert rows(wh, table) == before
    shown = {r.compactionid: r.state for r in wh.metastore.compactions.show_compactions()}
    assert sorted(shown.values()) == ["succeeded", "succeeded"]


def test_insert_only_minor_skips_aborted_and_major_reads_the_compacted_delta(sqlite_wh):
    wh = sqlite_wh
    wh.create_table("db.mm", COLUMNS, transactional_properties="insert_only")
    _mm_history(wh, "db.mm", None)
    before = rows(wh, "db.mm")
    enqueue(wh, "minor", "db.mm")
    worker = Worker(wh.metastore, runner=LocalRunner())
    minor = worker.run_next()
    assert minor.outputs == (f"delta_0000001_0000004_v{minor.txn_id:07d}",) and minor.rows_out == 8
    with wh.transaction() as t:
        t.insert("db.mm", [{"id": 50, "name": "w5"}])
    expected = before + [(50, "w5")]
    enqueue(wh, "major", "db.mm")  # the minor's row is still 'ready for cleaning': its output is the input now
    Cleaner(wh.metastore).run_cycle()
    major = worker.run_next()
    assert major.status == WorkerStatus.COMPACTED and major.outputs == (f"base_0000005_v{major.txn_id:07d}",)
    assert sorted(rows(wh, "db.mm")) == sorted(expected)
    Cleaner(wh.metastore).run_cycle()
    assert acid_dirs(wh.table("db.mm").location) == [major.outputs[0]]
    assert sorted(rows(wh, "db.mm")) == sorted(expected)


class _DroppingRunner(LocalRunner):
    """Runs the plan, then overwrites the first output file with one forged row: the result still claims the
    real rows, so only the check against the plan's inputs can notice."""

    def run(self, plan, *, job_name, spark_conf):
        result = super().run(plan, job_name=job_name, spark_conf=spark_conf)
        (c,) = plan.compactions
        out = os.path.join(c.location, c.final_outputs[0])
        victim = sorted(os.listdir(out))[0]
        table = pa.table({"id": pa.array([1], pa.int32()), "name": ["forged"]})
        po.write_table(table, os.path.join(out, victim))  # one row instead of the real ones
        return result


def test_insert_only_output_with_lost_rows_fails_verification(sqlite_wh):
    wh = sqlite_wh
    wh.create_table("db.mm", COLUMNS, transactional_properties="insert_only")
    _mm_history(wh, "db.mm", None)
    before = rows(wh, "db.mm")
    cq = enqueue(wh, "major", "db.mm")
    outcome = Worker(wh.metastore, runner=_DroppingRunner()).run_next()
    assert outcome.status == WorkerStatus.FAILED and "rows" in outcome.message, outcome
    assert wh.metastore.compactions.get(cq).state is CompactionState.FAILED
    assert [d for d in acid_dirs(wh.table("db.mm").location) if d.startswith("base_")] == []
    assert rows(wh, "db.mm") == before


def test_verification_refuses_acid_files_in_an_insert_only_output(sqlite_wh):
    """A full-ACID engine's output for an MM plan (bucket_N with ACID columns) never commits."""
    wh = sqlite_wh
    wh.create_table("db.mm", COLUMNS, transactional_properties="insert_only")
    _mm_history(wh, "db.mm", None)
    wh.create_table("db.acid", COLUMNS)
    with wh.transaction() as t:
        t.insert("db.acid", [{"id": 1, "name": "a"}])
    loc = wh.table("db.mm").location
    wil = ValidCompactorWriteIdList.from_reader(ValidReaderWriteIdList(table="db.mm", high_watermark=4, aborted=(3,)))
    plan = compose_for_directory(loc, wil, 99, "major", compaction_id="1", insert_only=True)
    os.makedirs(os.path.join(loc, plan.final_outputs[0]))
    acid_file = os.path.join(wh.table("db.acid").location, "delta_0000001_0000001_0000", "bucket_00000")
    os.link(acid_file, os.path.join(loc, plan.final_outputs[0], "000000_0"))
    result = CompactionResult("1", loc, "major", JobStatus.SUCCEEDED, rows_out=1, files=1,
                              outputs=[plan.final_outputs[0]])
    with pytest.raises(OutputVerificationError, match="original"):
        verify_output(plan, result, wh.metastore.snapshots.valid_txn_list())
