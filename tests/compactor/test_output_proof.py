"""Proof before commit (issue 30 item 1): each compaction unit's rows read at the snapshot must equal its files as
read back from storage. A job whose written file gets one value changed (same row count), or one row dropped and
another duplicated, fails: the row is 'failed' with a message naming the unit, the counts and the differing
digests, the output is gone, readers see the old data and the Cleaner removes nothing — on SQLite, PostgreSQL and
MariaDB. A correct run commits with its digests recorded in the run history and SHOW COMPACTIONS."""

from __future__ import annotations

import datetime
import decimal
import os
import re
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.acid.digest import RowDigest
from airflow_acid.acid.event_reader import open_data_file
from airflow_acid.acid.event_schema import ROW
from airflow_acid.acid.event_writer import FileKind
from airflow_acid.acid.fast_event_writer import write_acid_orc
from airflow_acid.acid.names import parse_dir
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.job.result import PlanResult
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.spark.units import WorkUnit, execute_unit
from tests.compactor.worker_support import acid_dirs, enqueue, hidden_dirs, history, new_table, rows


def _tree(location: str) -> list[str]:
    """Every file under the table directory (relative), to show that nothing changed."""
    out = []
    for root, _, files in os.walk(location):
        out += [os.path.relpath(os.path.join(root, f), location) for f in files]
    return sorted(out)


def _rewrite(storage, unit: WorkUnit, path: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """Replace a written ACID bucket file by ``change`` of its events, written by the real writer (valid file,
    valid ACID metadata: only the content differs)."""
    events = open_data_file(storage, path).read()
    name = os.path.basename(os.path.dirname(path))
    kind = FileKind.BASE if name.startswith("base_") else FileKind.DELTA
    storage.delete_paths([path])
    write_acid_orc(storage, path, change(events), kind=kind, orc=unit.orc)


def change_one_value(events: pa.Table) -> pa.Table:
    """The ``name`` of the first row becomes another string; same rows, same ROW__IDs."""
    row = events.column(ROW).combine_chunks()
    names = row.field("name").to_pylist()
    names[0] = (names[0] or "") + "!"
    changed = pa.StructArray.from_arrays([row.field("id"), pa.array(names, row.field("name").type)],
                                         fields=list(row.type))
    return events.set_column(events.schema.get_field_index(ROW), ROW, changed)


def drop_one_duplicate_another(events: pa.Table) -> pa.Table:
    """Row 1 is gone, row 0 is there twice: the count stays."""
    assert events.num_rows >= 2
    return events.take(pa.array([0, 0] + list(range(2, events.num_rows))))


class TamperingRunner(LocalRunner):
    """The in-process runner whose units get their first written bucket file tampered with after the writer closed
    it (before the unit reads it back), as a faulty writer or store would."""

    def __init__(self, change: Callable[[pa.Table], pa.Table], where: str = "") -> None:
        def tamper(storage, unit: WorkUnit, paths: tuple[str, ...]) -> None:
            targets = [p for p in paths if where in p]
            if targets and not self.tampered:
                self.tampered.append(targets[0])
                _rewrite(storage, unit, targets[0], change)

        super().__init__(run_units=lambda units: [execute_unit(u, after_write=tamper) for u in units])
        self.tampered: list[str] = []


class RecordingRunner(LocalRunner):
    """The in-process runner that keeps the result documents."""

    def __init__(self) -> None:
        super().__init__()
        self.results: list[PlanResult] = []

    def run(self, plan, *, job_name, spark_conf):
        result = super().run(plan, job_name=job_name, spark_conf=spark_conf)
        self.results.append(result)
        return result


def _assert_failed_and_nothing_changed(wh, location: str, outcome, cq: int, before_rows, before_tree) -> None:
    assert outcome.status == WorkerStatus.FAILED, outcome
    message = outcome.message
    assert re.search(r"output check failed for bucket 0 \(step 0, (base|delta|delete_delta)_\d+", message), message
    counts = re.search(r"read (\d+) rows, the written files hold (\d+)", message)
    assert counts and counts.group(1) == counts.group(2), message
    assert "the digests differ" in message, message
    row = wh.metastore.compactions.get(cq)
    assert row.state is CompactionState.FAILED and "the digests differ" in (row.error_message or "")
    assert wh.metastore.txns.txn_state(outcome.txn_id) is TxnState.ABORTED
    assert not [d for d in acid_dirs(location) if (p := parse_dir(d)) and p.visibility_txn_id == outcome.txn_id]
    assert hidden_dirs(location) == []
    assert _tree(location) == before_tree
    assert rows(wh) == before_rows
    report = Cleaner(wh.metastore).run_cycle()
    assert _tree(location) == before_tree, report
    assert rows(wh) == before_rows


@pytest.mark.parametrize("change", [change_one_value, drop_one_duplicate_another], ids=["one-value", "drop-dup"])
def test_tampered_major_output_fails_and_changes_nothing(wh, change):
    info = new_table(wh)
    history(wh)
    before_rows, before_tree = rows(wh), _tree(info.location)
    cq = enqueue(wh, "major")
    runner = TamperingRunner(change)
    outcome = Worker(wh.metastore, runner=runner, host="w1").run_next()
    assert runner.tampered and "base_" in runner.tampered[0]
    _assert_failed_and_nothing_changed(wh, info.location, outcome, cq, before_rows, before_tree)


def test_correct_run_commits_with_digests_recorded(wh):
    info = new_table(wh)
    history(wh)
    before = rows(wh)
    cq = enqueue(wh, "major")
    runner = RecordingRunner()
    outcome = Worker(wh.metastore, runner=runner, host="w1").run_next()
    assert outcome.status == WorkerStatus.COMPACTED, outcome
    assert rows(wh) == before
    (result,) = runner.results
    (compaction,) = result.compactions
    assert compaction.verify == "digest"
    (check,) = compaction.checks
    assert check.unit == "bucket 0" and check.output == f"base_0000005_v{outcome.txn_id:07d}"
    assert check.rows_read == check.rows_written == len(before)
    assert check.read_digest == check.written_digest
    figures = wh.metastore.runs.get(cq)
    assert figures is not None and figures.digest_in == figures.digest_out == check.read_digest
    assert RowDigest.from_text(figures.digest_out).count == len(before)
    shown = [r for r in wh.metastore.compactions.show_compactions(id=cq) if r.compactionid == cq]
    assert shown[0].digestin == shown[0].digestout == check.read_digest
    assert info.location  # the committed base is what readers now read
    assert f"base_0000005_v{outcome.txn_id:07d}" in acid_dirs(info.location)


def test_tampered_minor_delete_delta_fails(sqlite_wh):
    """The delete events of a minor compaction are proven too (ROW__ID and the deleting write id)."""
    wh = sqlite_wh
    info = new_table(wh)
    history(wh)
    with wh.transaction() as t:
        t.delete("db.t", where=pc.field("id") == 2)
    before_rows, before_tree = rows(wh), _tree(info.location)
    cq = enqueue(wh, "minor")
    runner = TamperingRunner(drop_one_duplicate_another, where="delete_delta_")
    outcome = Worker(wh.metastore, runner=runner, host="w1").run_next()
    assert runner.tampered and "delete_delta_" in runner.tampered[0]
    _assert_failed_and_nothing_changed(wh, info.location, outcome, cq, before_rows, before_tree)
    assert "delete_delta_" in outcome.message


def test_tampered_rebalance_fails(sqlite_wh):
    """A rebalance is proven without ROW__IDs (it gives new ones) over all its buckets at once."""
    wh = sqlite_wh
    info = new_table(wh)
    history(wh)
    before_rows, before_tree = rows(wh), _tree(info.location)
    cq = enqueue(wh, "rebalance")
    runner = TamperingRunner(change_one_value)
    outcome = Worker(wh.metastore, runner=runner, host="w1").run_next()
    assert runner.tampered
    _assert_failed_and_nothing_changed(wh, info.location, outcome, cq, before_rows, before_tree)


def test_count_mode_checks_counts_only_and_off_checks_nothing(sqlite_wh):
    """``compaction_verify = count`` misses a changed value (same count) but the job reports no digests; ``off``
    makes no checks at all."""
    wh = sqlite_wh
    new_table(wh)
    history(wh)
    enqueue(wh, "major")
    runner = TamperingRunner(change_one_value)
    outcome = Worker(wh.metastore, runner=runner, host="w1", verify="count").run_next()
    assert outcome.status == WorkerStatus.COMPACTED, outcome
    assert any(r[1] == "n00!" for r in rows(wh))  # what count mode cannot see
    figures = wh.metastore.runs.get(outcome.compaction_id)
    assert figures is not None and figures.digest_in is None and figures.digest_out is None
    with wh.transaction() as t:
        t.insert("db.t", [{"id": 99, "name": "later"}])
    enqueue(wh, "major")
    recording = RecordingRunner()
    outcome = Worker(wh.metastore, runner=recording, host="w1", verify="off").run_next()
    assert outcome.status == WorkerStatus.COMPACTED, outcome
    (result,) = recording.results
    assert [(c.verify, c.checks) for c in result.compactions] == [("off", [])]


def test_count_mode_fails_on_a_lost_row(sqlite_wh):
    wh = sqlite_wh
    info = new_table(wh)
    history(wh)
    before_rows, before_tree = rows(wh), _tree(info.location)
    enqueue(wh, "major")
    runner = TamperingRunner(lambda events: events.slice(1))
    outcome = Worker(wh.metastore, runner=runner, host="w1", verify="count").run_next()
    assert outcome.status == WorkerStatus.FAILED
    assert re.search(r"bucket 0 .*read (\d+) rows, the written files hold (\d+)", outcome.message)
    assert "digests" not in outcome.message
    assert rows(wh) == before_rows and _tree(info.location) == before_tree


TYPED_COLUMNS = [("id", "int"), ("ts", "timestamp"), ("dec", "decimal(20,3)"), ("dbl", "double"), ("flt", "float"),
                 ("flag", "boolean"), ("day", "date"), ("bin", "binary"), ("tags", "array<string>"),
                 ("attrs", "map<string,int>"), ("pt", "struct<x:int,y:string>"), ("code", "char(4)"),
                 ("label", "varchar(8)"), ("big", "bigint"), ("small", "smallint")]


def _typed_row(i: int, ts: datetime.datetime) -> dict:
    return {"id": i, "ts": ts, "dec": decimal.Decimal(f"{i}.125"), "dbl": [0.0, -0.0, float("nan"), 1e300][i % 4],
            "flt": float(i) / 3, "flag": i % 2 == 0, "day": datetime.date(1970 + i, 1, 2), "bin": bytes([i, 0, 255]),
            "tags": [f"t{i}", ""] if i % 3 else None, "attrs": {"k": i}, "pt": {"x": i, "y": None if i % 2 else "y"},
            "code": "ab", "label": f"l{i}", "big": -(1 << 62) + i, "small": -i}


@pytest.mark.parametrize("kind", ["minor", "major", "rebalance"])
def test_every_type_is_proven_through_each_compaction(sqlite_wh, kind):
    """Rows of every Hive type (timestamps outside timestamp[ns]'s range too, NaN and -0.0, NULLs, nested types)
    digest alike when read at the snapshot and when read back from the written files."""
    wh = sqlite_wh
    wh.create_table("db.t", TYPED_COLUMNS)
    stamps = [datetime.datetime(1, 1, 1, 0, 0, 0, 1), datetime.datetime(2024, 2, 29, 12, 0, 0, 999999),
              datetime.datetime(9999, 12, 31, 23, 59, 59), datetime.datetime(1969, 12, 31, 23, 59, 58, 500000)]
    for batch in range(3):
        with wh.transaction() as t:
            t.insert("db.t", [_typed_row(batch * 4 + j, stamps[j]) for j in range(4)])
    with wh.transaction() as t:
        t.delete("db.t", where=pc.field("id") == 5)
    with wh.transaction() as t:
        t.insert("db.t", [{name: (100 if name == "id" else None) for name, _ in TYPED_COLUMNS}])  # NULLs
    before = wh.read("db.t").sort_by("id")
    enqueue(wh, kind)
    runner = RecordingRunner()
    outcome = Worker(wh.metastore, runner=runner, host="w1").run_next()
    assert outcome.status == WorkerStatus.COMPACTED, outcome
    (result,) = runner.results
    checks = result.compactions[0].checks
    assert checks and all(c.read_digest == c.written_digest for c in checks)
    assert sum(c.rows_written for c in checks) == result.compactions[0].rows_out
    assert repr(wh.read("db.t").sort_by("id").to_pylist()) == repr(before.to_pylist())  # repr: NaN equals NaN


def test_checks_travel_in_the_result_document(sqlite_wh):
    """A Spark job hands its result to the Worker as JSON: the checks and the mode survive the trip."""
    wh = sqlite_wh
    new_table(wh)
    history(wh)
    enqueue(wh, "minor")
    runner = RecordingRunner()
    assert Worker(wh.metastore, runner=runner, host="w1").run_next().status == WorkerStatus.COMPACTED
    (result,) = runner.results
    again = PlanResult.from_json(result.to_json())
    assert again.compactions[0].checks == result.compactions[0].checks != []
    assert {c.output.split("_0")[0] for c in again.compactions[0].checks} == {"delta", "delete_delta"}
    assert again.compactions[0].verify == "digest"
