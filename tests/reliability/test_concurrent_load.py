"""Model-based concurrency (issue 9): writer processes (insert/update/delete/merge, some aborting, some SIGKILLed),
readers holding snapshots for random durations, the Initiator, a Spark compaction Worker, the Cleaner and the
HouseKeeper, all at once for AIRFLOW_ACID_RELIABILITY_SECONDS, on SQLite and on PostgreSQL. Every read must equal
the reference model at the reader's snapshot and keep its files until it closes; at the end, after a MAJOR
compaction of everything and cleaning, the tables equal the model and no obsolete or aborted directory remains.

The quick tests below show the checks can fail: a hand-made wrong read, a Cleaner that ignores open readers and a
reader that skips delete events are all flagged.

Run: ``./dev test tests/reliability/test_concurrent_load.py`` (CI size, 20 s per backend);
``AIRFLOW_ACID_RELIABILITY_SECONDS=120 ./dev test tests/reliability/test_concurrent_load.py`` for a longer run.
Writer logs and the journal stay in the test's tmp_path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.delete_events import DeleteEvents
from airflow_acid.acid.writeids import LONG_MAX
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.snapshots import Snapshots
from airflow_acid.spark.runners import LocalRunner, SessionRunner
from tests.backends import backends, server_database
from tests.reliability.actors import MARKERS, TABLE, Writer, WriterConfig, create_tables
from tests.reliability.conftest import RUN_SECONDS
from tests.reliability.load_checks import Reference, check_held_read
from tests.reliability.load_run import LoadRun, LoadSettings
from tests.reliability.model import (
    Journal,
    Model,
    Outcome,
    UnresolvedIntent,
    as_rows,
    delete_op,
    describe_difference,
    insert_op,
    merge_op,
    update_op,
)

LOAD_BACKENDS = backends("sqlite", "postgresql")


@pytest.fixture(params=LOAD_BACKENDS)
def load_db_url(request, tmp_path):
    """A fresh metastore database on SQLite or PostgreSQL (the two backends the load runs against)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'metastore.db'}"
        return
    url, drop = server_database(request.param)
    try:
        yield url
    finally:
        drop()


@pytest.mark.slow
def test_concurrent_load_matches_the_model(load_db_url, tmp_path, spark, reliability_summary, request):
    mismatches_before = len(reliability_summary.mismatches)
    run = LoadRun(load_db_url, tmp_path, SessionRunner(spark), reliability_summary, LoadSettings(seconds=RUN_SECONDS))
    figures = run.run()
    backend = request.node.callspec.params["load_db_url"]
    reliability_summary.run(name="concurrent_load", backend=backend, seconds=RUN_SECONDS, **figures)
    assert not run.errors, "\n\n".join(run.errors)
    assert reliability_summary.mismatches[mismatches_before:] == []
    assert figures.get("transactions_committed", 0) > 0 and figures.get("reads_checked", 0) > 0, figures
    assert figures.get("final_compactions", 0) > 0, figures


# --- the checks can fail ---------------------------------------------------------------------------------------


def test_model_flags_wrong_reads(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    def intent(txn: int, slot: int, *ops: tuple) -> dict:
        return {"kind": "intent", "txn": txn, "writer": f"writer{slot}", "slot": slot, "ops": list(ops)}

    records = [
        intent(5, 1, insert_op([(1, "i5", 5, "p0"), (2, "i5", 5, "p1")])),
        {"kind": "committed", "txn": 5},
        intent(7, 1, update_op([1], "u7", 7), delete_op([2]), merge_op([(2, "m7", 7, "p2"), (1, "m7", 7, "p2")])),
        {"kind": "committed", "txn": 7},
        intent(8, 2, insert_op([(3, "i8", 8, "p0")])),
        {"kind": "aborted", "txn": 8, "why": "write_conflict"},
        intent(9, 2, insert_op([(4, "i9", 9, "p0")])),
    ]
    for r in records:
        journal.append(r)
    model = Model()
    model.feed(journal.records()[0])
    journal.close()

    at_6 = model.table_at(lambda t: t <= 6)
    assert at_6 == as_rows({1: ("i5", 5, "p0"), 2: ("i5", 5, "p1")})
    right = model.table_at(lambda t: t <= 8)
    assert right == as_rows({1: ("m7", 7, "p0"), 2: ("m7", 7, "p2")})  # merged rows keep their partition
    assert describe_difference(right, model.table_at(lambda t: t <= 8)) == "equal"
    wrong_reads = {
        "stale version": at_6,
        "lost update": as_rows({1: ("u7", 7, "p0"), 2: ("m7", 7, "p2")}),
        "aborted txn visible": right + as_rows({3: ("i8", 8, "p0")}),
        "duplicate row": right + as_rows({1: ("m7", 7, "p0")}),
        "deleted row back": right - as_rows({2: ("m7", 7, "p2")}),
    }
    for what, read in wrong_reads.items():
        assert read != right, what
        assert describe_difference(read, right) != "equal", what
    with pytest.raises(UnresolvedIntent) as unresolved:
        model.table_at(lambda t: t <= 9)
    assert unresolved.value.txn == 9
    model.settle(9, Outcome.ABORTED)
    assert model.table_at(lambda t: t <= 9) == right
    assert model.markers_at(lambda t: True) == {(5, 1): 1, (7, 1): 1}
    with pytest.raises(AssertionError, match="both"):
        model.settle(9, Outcome.COMMITTED)


def _small_history(url: str, root: Path, transactions: int = 8) -> tuple[AcidWarehouse, Reference]:
    """Tables and a few journaled writer transactions, written in this process by a real (seeded) Writer."""
    wh = AcidWarehouse(Metastore(url).init(), root / "wh", init=False, host="load-test")
    create_tables(wh)
    journal = Journal(root / "journal.jsonl")
    writer = Writer(WriterConfig(slot=1, metastore_url=url, warehouse=str(root / "wh"), journal=str(journal.path),
                                 stop_file=str(root / "stop"), seed=3, abort_rate=0.0))
    for _ in range(transactions):
        writer.one_transaction()
    writer.wh.metastore.close()
    reference = Reference(wh, journal)
    kinds = {op[0] for i in reference.refresh().intents.values() for op in i.ops}
    assert {"update", "delete"} <= kinds, kinds  # the seed gives a history with delete events
    return wh, reference


def _compact_everything(wh: AcidWarehouse) -> None:
    """A MAJOR compaction of every partition (in-process engine, no Spark); at least one has work."""
    for p in wh.list_partitions(TABLE):
        wh.metastore.compactions.enqueue("load", "t", p.name, CompactionType.MAJOR)
    worker = Worker(wh.metastore, runner=LocalRunner())
    statuses = []
    while (outcome := worker.run_next()) is not None:
        statuses.append(outcome.status)
        assert outcome.succeeded or outcome.status == WorkerStatus.REFUSED, outcome.message
    assert WorkerStatus.COMPACTED in statuses


def test_check_flags_a_cleaner_that_ignores_open_readers(load_db_url, tmp_path, monkeypatch):
    wh, reference = _small_history(load_db_url, tmp_path)
    cleaner = Cleaner(wh.metastore)

    def compact_and_clean() -> None:
        _compact_everything(wh)
        for _ in range(3):  # rows of one partition are cleaned oldest first, one per cycle
            cleaner.run_cycle()

    honest = check_held_read(wh, reference, TABLE, compact_and_clean)
    assert honest.problems == [] and honest.selected_files > 0 and honest.rows > 0

    with wh.transaction() as txn:  # more deltas, so that there is something new to compact
        txn.insert(TABLE, [{"k": 99, "v": "x", "w": txn.txn_id, "p": "p0"}])
        reference.journal.append({"kind": "intent", "txn": txn.txn_id, "writer": "test", "slot": 0,
                                  "ops": [insert_op([(99, "x", txn.txn_id, "p0")])]})
    reference.journal.append({"kind": "committed", "txn": txn.txn_id})
    monkeypatch.setattr(Snapshots, "min_open_txn_id", lambda self: LONG_MAX)
    monkeypatch.setattr(Snapshots, "cleaner_watermark", lambda self: LONG_MAX)
    broken = check_held_read(wh, reference, TABLE, compact_and_clean)
    assert any("deleted before it closed" in p for p in broken.problems), broken.problems
    wh.metastore.close()
    reference.journal.close()


def test_check_flags_a_reader_that_skips_delete_events(load_db_url, tmp_path, monkeypatch):
    wh, reference = _small_history(load_db_url, tmp_path)
    assert check_held_read(wh, reference, TABLE, lambda: None).problems == []
    assert check_held_read(wh, reference, MARKERS, lambda: None).problems == []
    monkeypatch.setattr(DeleteEvents, "filter", lambda self: None)
    problems = check_held_read(wh, reference, TABLE, lambda: None).problems
    assert len(problems) == 1 and "differs from the model" in problems[0] and "unexpected" in problems[0], problems
    wh.metastore.close()
    reference.journal.close()
