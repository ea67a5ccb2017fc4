"""The Cleaner: readers keep every file they can select until they close, then the directories go; blockers are
named; dry run; no_cleanup; retry back-off; a compaction whose txn aborted after 'ready for cleaning'; aborted
writes cleaned without a compaction; paths outside the location refused; and a property test interleaving readers,
writers, compactions and cleanings that never gives an open reader a FileNotFound or a different result."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import get_acid_state
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus, planned_deletions
from airflow_acid.compactor.errors import CleanerError
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.errors import MetastoreUnavailableError
from airflow_acid.metastore.schema import COMPLETED_TXN_COMPONENTS, TXN_COMPONENTS
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import (
    CONF,
    acid_dirs,
    enqueue,
    history,
    leave_aborted_insert,
    make_warehouse,
    new_table,
    rows,
)


def _snapshot_rows(wh, snap) -> list[tuple]:
    """What an open reader returns, read again now through its own snapshot."""
    table = wh.io.read_partition(snap.info, snap.targets[0], snap.write_ids, snap.txns)
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _selected_files(snap) -> list[Path]:
    """Every file the reader's snapshot selects (base, deltas and their data files)."""
    storage = storage_for(snap.targets[0].location)
    state = get_acid_state(storage.list_files(), snap.write_ids, snap.txns)
    files = [f.path for d in state.deltas for f in d.files]
    if state.base_directory is not None:
        files += [f.path for f in state.base_directory.files]
    return [Path(storage.full_path(p)) for p in files]


def _count(ms, table, *where) -> int:
    return ms.db.run(lambda conn: conn.execute(sa.select(sa.func.count()).select_from(table).where(*where))
                     .scalar_one())


# --- the reader-snapshot rule ----------------------------------------------------------------------------


def test_reader_open_before_commit_keeps_its_files_until_it_closes(wh):
    info = new_table(wh)
    history(wh)
    before = rows(wh)
    ms = wh.metastore
    cleaner = Cleaner(ms)
    reader = wh.read_snapshot(info).__enter__()
    try:
        files = _selected_files(reader)
        cq = enqueue(wh, "major")
        outcome = Worker(ms, runner=LocalRunner()).run_next()
        assert outcome.status == WorkerStatus.COMPACTED
        report = cleaner.run_cycle()
        assert report.entries == [] and [w.compaction_id for w in report.waiting] == [cq]
        blockers = report.waiting[0].blockers
        assert [b.txn_id for b in blockers] == [reader.txn_id] == [b.txn_id for b in cleaner.blockers(cq)]
        assert (blockers[0].user, blockers[0].host) == (wh.user, "testhost") and blockers[0].age_s >= 0
        assert f"transaction {reader.txn_id}" in report.waiting[0].message
        assert all(f.exists() for f in files)
        assert _snapshot_rows(wh, reader) == before
        assert ms.compactions.get(cq).state is CompactionState.READY_FOR_CLEANING
    finally:
        reader.__exit__(None, None, None)
    report = cleaner.run_cycle()
    assert [(e.compaction_id, e.status) for e in report.entries] == [(cq, CleanerStatus.CLEANED)]
    assert acid_dirs(info.location) == [f"base_0000005_v{outcome.txn_id:07d}"]
    assert {d.reason.split(":")[0] for d in report.entries[0].deletions} == {"obsolete"}
    assert ms.compactions.get(cq).state is CompactionState.SUCCEEDED
    assert _count(ms, COMPLETED_TXN_COMPONENTS, COMPLETED_TXN_COMPONENTS.c.CTC_TABLE == "t") == 0
    assert rows(wh) == before
    assert cleaner.blockers(cq) == []


def test_row_waits_while_a_reader_snapshot_still_treats_an_older_txn_as_open(wh):
    """A reader opened after the compaction committed, but while an older txn was open, pins MIN_HISTORY_LEVEL
    below CQ_NEXT_TXN_ID: the row is not ready (its blocker is named) instead of being cleaned incompletely and
    retried every cycle; once the reader closes it is cleaned in one go."""
    info = new_table(wh)
    history(wh)
    ms = wh.metastore
    older = ms.txns.open_txn(user="etl", host="other")  # e.g. a long writer on another table
    cq = enqueue(wh, "major")
    assert Worker(ms, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    reader = wh.read_snapshot(info).__enter__()  # its snapshot treats `older` as open
    try:
        ms.txns.commit(older)
        assert ms.compactions.get(cq).next_txn_id <= ms.snapshots.min_open_txn_id()  # Hive would call it ready
        cleaner = Cleaner(ms)
        report = cleaner.run_cycle()
        assert report.entries == [] and [w.compaction_id for w in report.waiting] == [cq]
        assert reader.txn_id in [b.txn_id for b in report.waiting[0].blockers]
        assert ms.compactions.get(cq).retry_retention in (0, None)  # no failed attempt recorded
    finally:
        reader.__exit__(None, None, None)
    report = Cleaner(ms).run_cycle()
    assert [(e.compaction_id, e.status) for e in report.entries] == [(cq, CleanerStatus.CLEANED)]
    assert ms.compactions.get(cq).state is CompactionState.SUCCEEDED


def test_dry_run_lists_what_and_why_without_changing_anything(sqlite_wh):
    wh = sqlite_wh
    info = new_table(wh)
    history(wh)
    leave_aborted_insert(wh)
    ms = wh.metastore
    cq = enqueue(wh, "minor")
    assert Worker(ms, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    dirs = acid_dirs(info.location)
    report = Cleaner(ms).run_cycle(dry_run=True)
    assert report.dry_run and [e.status for e in report.entries] == [CleanerStatus.WOULD_CLEAN]
    reasons = {d.path: d.reason for d in report.deletions}
    assert reasons["delta_0000006_0000006_0000"] == "aborted: every write id 6-6 was aborted"
    assert reasons["delta_0000001_0000001_0000"].startswith("obsolete: write ids 1-1 are in delta_0000001_0000005_v")
    assert len(reasons) == len(dirs) - 2  # all but the two compacted deltas
    assert acid_dirs(info.location) == dirs
    row = ms.compactions.get(cq)
    assert row.state is CompactionState.READY_FOR_CLEANING and row.cleaner_start is None
    report = Cleaner(ms).run_cycle()
    assert sorted(d.path for d in report.deletions) == sorted(reasons)
    assert acid_dirs(info.location) == sorted(set(dirs) - set(reasons))
    # The aborted write id's TXN_COMPONENTS row went with its directory (markCleaned up to the compacted HWM).
    assert _count(ms, TXN_COMPONENTS, TXN_COMPONENTS.c.TC_TABLE == "t") == 0


@pytest.mark.parametrize("where", ["table", "partition"])
def test_no_cleanup_is_honoured(sqlite_wh, where):
    wh = sqlite_wh
    wh.create_table("db.p", [("id", "int"), ("name", "string")], partition_by=[("k", "int")])
    history(wh, "db.p", {"k": 1})
    ms = wh.metastore
    if where == "table":
        wh.alter_table_properties("db.p", {"no_cleanup": "true"})
    else:
        ms.catalog.alter_partition_params("db", "p", "k=1", {"no_cleanup": "true"})
    cq = enqueue(wh, "major", "db.p", "k=1")
    assert Worker(ms, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    location = ms.catalog.get_partition("db", "p", "k=1").location
    dirs = acid_dirs(location)
    report = Cleaner(ms).run_cycle()
    assert [e.status for e in report.entries] == [CleanerStatus.REFUSED]
    assert "no_cleanup=true" in report.entries[0].message
    assert acid_dirs(location) == dirs
    assert ms.compactions.get(cq).state is CompactionState.REFUSED


def test_failures_back_off_exponentially_then_fail(tmp_path, monkeypatch):
    conf = dataclasses.replace(CONF, cleaner_retry_retention_s=0.2, cleaner_retry_max_attempts=2)
    wh = make_warehouse(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "wh", conf)
    new_table(wh)
    history(wh)
    ms = wh.metastore
    cq = enqueue(wh, "major")
    assert Worker(ms, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED

    def broken(*args, **kwargs):
        raise PermissionError("[Errno 13] Permission denied: 'delta_0000001_0000001_0000'")

    monkeypatch.setattr("airflow_acid.compactor.cleaner.get_acid_state", broken)
    cleaner = Cleaner(ms)
    statuses, retentions = [], []
    for _ in range(3):
        entry = None
        for _ in range(100):  # wait out the retry retention
            report = cleaner.run_cycle()
            if report.entries:
                entry = report.entries[0]
                break
            assert "waits" in report.waiting[0].message
            time.sleep(0.02)
        statuses.append(entry.status)
        if entry.status == CleanerStatus.RETRY:
            retentions.append(ms.compactions.get(cq).retry_retention)
    assert statuses == [CleanerStatus.RETRY, CleanerStatus.RETRY, CleanerStatus.FAILED]
    assert retentions == [200, 400]
    row = ms.compactions.get(cq)
    assert row.state is CompactionState.FAILED and "Permission denied" in row.error_message
    ms.close()


def test_compaction_whose_txn_aborted_after_ready_for_cleaning_fails(sqlite_wh, monkeypatch):
    """HIVE-29572: the worker marked the row compacted, the commit failed, and so did recording the failure."""
    wh = sqlite_wh
    info = new_table(wh)
    history(wh)
    dirs = acid_dirs(info.location)
    ms = wh.metastore
    cq = enqueue(wh, "major")

    def unreachable(*args, **kwargs):
        raise MetastoreUnavailableError("cannot reach the metastore database")

    monkeypatch.setattr(ms.txns, "commit", unreachable)
    monkeypatch.setattr(ms.compactions, "mark_failed", unreachable)
    outcome = Worker(ms, runner=LocalRunner()).run_next()
    monkeypatch.undo()
    assert outcome.status == WorkerStatus.FAILED
    assert ms.compactions.get(cq).state is CompactionState.READY_FOR_CLEANING
    assert ms.txns.txn_state(outcome.txn_id) is TxnState.ABORTED
    report = Cleaner(ms).run_cycle()
    assert [e.status for e in report.entries] == [CleanerStatus.FAILED]
    assert ms.compactions.get(cq).state is CompactionState.FAILED
    assert acid_dirs(info.location) == dirs


def test_aborted_writes_are_cleaned_without_a_compaction(wh):
    info = new_table(wh)
    history(wh, batches=1)
    before = rows(wh)
    ms = wh.metastore
    aborted = [leave_aborted_insert(wh, ids=(900 + i,)) for i in range(3)]
    dirs = acid_dirs(info.location)
    assert Cleaner(ms).clean_aborted() == []  # 3 aborts: below hive.compactor.abortedtxn.threshold (1000)
    cleaner = Cleaner(ms, dataclasses.replace(CONF, abortedtxn_threshold=2))
    dry = cleaner.clean_aborted(dry_run=True)
    assert [e.status for e in dry] == [CleanerStatus.WOULD_CLEAN] and acid_dirs(info.location) == dirs
    assert all(d.reason.startswith("aborted: every write id") for d in dry[0].deletions)
    [entry] = cleaner.run_cycle().abort_cleanups
    assert entry.status == CleanerStatus.CLEANED, entry.message
    assert sorted(d.path for d in entry.deletions) == ["delta_0000004_0000004_0000", "delta_0000005_0000005_0000",
                                                       "delta_0000006_0000006_0000"]
    assert acid_dirs(info.location) == sorted(set(dirs) - {d.path for d in entry.deletions})
    assert _count(ms, TXN_COMPONENTS, TXN_COMPONENTS.c.TC_TXNID.in_(aborted)) == 0
    assert rows(wh) == before


def test_paths_outside_the_location_are_never_deleted(tmp_path):
    loc = tmp_path / "t"
    (loc / "delta_0000001_0000001_0000").mkdir(parents=True)
    (loc / "delta_0000001_0000001_0000" / "bucket_00000").write_bytes(b"")
    storage = storage_for(str(loc))
    from airflow_acid.acid.writeids import ValidReaderWriteIdList
    state = get_acid_state(storage.list_files(), ValidReaderWriteIdList(table="db.t", high_watermark=1))
    for evil in ("../other", "/etc", "a/../../x", ""):
        with pytest.raises(CleanerError, match="not a path inside"):
            planned_deletions(storage, dataclasses.replace(state, obsolete=(evil,)), None)


# --- interleavings ---------------------------------------------------------------------------------------

OPS = st.sampled_from(["insert", "update", "delete", "abort", "open", "close", "minor", "major", "clean", "clean"])


def run_interleaving(wh, ops: list[str]) -> None:
    """Apply ``ops``; after every step each open reader re-reads through its snapshot and must get exactly what it
    got when it opened (a FileNotFound would raise), and a fresh read must equal the model."""
    info = new_table(wh)
    ms = wh.metastore
    worker, cleaner = Worker(ms, runner=LocalRunner()), Cleaner(ms)
    model: dict[int, str] = {}
    readers: list[tuple[object, list[tuple]]] = []
    next_id = 0
    try:
        for step, op in enumerate(ops):
            if op == "insert":
                new = {next_id + j: f"s{step}" for j in range(2)}
                next_id += 2
                with wh.transaction() as t:
                    t.insert("db.t", [{"id": k, "name": v} for k, v in new.items()])
                model.update(new)
            elif op == "update" and model:
                target = min(model)
                with wh.transaction() as t:
                    t.update("db.t", set={"name": f"u{step}"}, where=pc.field("id") == target)
                model[target] = f"u{step}"
            elif op == "delete" and model:
                target = max(model)
                with wh.transaction() as t:
                    t.delete("db.t", where=pc.field("id") == target)
                del model[target]
            elif op == "abort":
                leave_aborted_insert(wh, ids=(100_000 + step,))
            elif op == "open":
                snap = wh.read_snapshot(info).__enter__()
                readers.append((snap, _snapshot_rows(wh, snap)))
            elif op == "close" and readers:
                snap, _ = readers.pop(0)
                snap.__exit__(None, None, None)
            elif op in ("minor", "major"):
                result = ms.compactions.enqueue("db", "t", None, op[:2] == "mi" and "i" or "a")
                if result.accepted:
                    outcome = worker.run_next()
                    assert outcome.status != WorkerStatus.FAILED, outcome.message
            elif op == "clean":
                report = cleaner.run_cycle()
                bad = [e for e in report.entries + report.abort_cleanups
                       if e.status in (CleanerStatus.FAILED, CleanerStatus.RETRY)]
                assert not bad, bad
            for snap, seen in readers:
                assert _snapshot_rows(wh, snap) == seen, f"reader {snap.txn_id} changed after step {step} ({op})"
            assert rows(wh) == sorted(model.items()), f"after step {step} ({op})"
    finally:
        for snap, _ in readers:
            snap.__exit__(None, None, None)
    # Once every reader is gone, every compaction gets cleaned (one row per partition per cycle) and nothing a
    # fresh snapshot calls obsolete is left, except aborted writes below the abort-cleanup thresholds.
    for _ in range(10):
        if not cleaner.run_cycle().entries:
            break
    assert ms.compactions.find(state="r") == []
    with wh.read_snapshot(info) as snap:
        state = get_acid_state(storage_for(info.location).list_files(), snap.write_ids, snap.txns)
    assert state.obsolete == ()
    assert rows(wh) == sorted(model.items())


FIXED = ["insert", "insert", "open", "update", "insert", "abort", "minor", "clean", "open", "delete", "major",
         "clean", "close", "clean", "insert", "minor", "close", "clean", "major", "clean"]


def test_fixed_interleaving_on_every_backend(wh):
    run_interleaving(wh, FIXED)
    location = wh.table("db.t").location
    assert [d.split("_v")[0] for d in acid_dirs(location)] == ["base_0000006", "delta_0000007_0000007_0000"]


@pytest.fixture(scope="module")
def migrated_template(tmp_path_factory):
    path = tmp_path_factory.mktemp("cleaner-template") / "metastore.db"
    with Metastore(f"sqlite:///{path}", CONF) as ms:
        ms.init()
    return path


@settings(max_examples=int(os.environ.get("AIRFLOW_ACID_CLEANER_EXAMPLES", "20")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, min_size=4, max_size=16))
def test_interleavings_never_change_what_an_open_reader_sees(migrated_template, ops):
    root = Path(tempfile.mkdtemp(prefix="cleaner-prop-"))
    try:
        shutil.copy(migrated_template, root / "metastore.db")
        from airflow_acid.client.warehouse import AcidWarehouse
        ms = Metastore(f"sqlite:///{root / 'metastore.db'}", CONF)
        wh = AcidWarehouse(ms, root / "wh", init=False, host="testhost")
        try:
            run_interleaving(wh, ops)
        finally:
            ms.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_stale_spark_staging_directories_go_once_their_txn_is_not_open(wh):
    """A Spark write that died before its commit or abort leaves ``.hive-staging_acid_<txn>`` at the table root:
    the Cleaner removes it once that txn is aborted or committed, never while it is open."""
    info = new_table(wh)
    history(wh)
    root = Path(info.location.removeprefix("file://"))
    dead = leave_aborted_insert(wh)
    running = wh.metastore.txns.open_txn(user="spark", host="driver")
    for txn_id in (dead, running):
        staged = root / f".hive-staging_acid_{txn_id}" / "00000_0" / "_table" / "delta_0000009_0000009_0000"
        staged.mkdir(parents=True)
        (staged / "bucket_00000").write_bytes(b"staged")
    before = rows(wh)
    dry = Cleaner(wh.metastore, dataclasses.replace(CONF, abortedtxn_threshold=0)).run_cycle(dry_run=True)
    assert dry.staging_removed == [] and (root / f".hive-staging_acid_{dead}").exists()
    report = Cleaner(wh.metastore, dataclasses.replace(CONF, abortedtxn_threshold=0)).run_cycle()
    assert [p.rsplit("/", 1)[-1] for p in report.staging_removed] == [f".hive-staging_acid_{dead}"]
    assert not (root / f".hive-staging_acid_{dead}").exists()
    assert (root / f".hive-staging_acid_{running}").exists()  # its txn is still open
    assert rows(wh) == before


# --- one cycle in pages of metastore.compactor.fetch.size ----------------------------------------------------


def test_a_cycle_pages_through_every_ready_row_and_deletes_the_same(wh):
    """Ready rows read a fetch size at a time (1 here): the dry runs with pages of 1 and of 1,000 plan the same
    deletions, and one real cycle with pages of 1 cleans every row and deletes exactly those directories."""
    ms = wh.metastore
    tables = [f"db.t{i}" for i in range(3)]
    locations = {}
    for table in tables:
        locations[table] = new_table(wh, table).location
        history(wh, table, batches=2)
        enqueue(wh, "major", table)
    worker = Worker(ms, runner=LocalRunner())
    for _ in tables:
        assert worker.run_next().status == WorkerStatus.COMPACTED
    before = {table: rows(wh, table) for table in tables}
    plans = {}
    for size in (1, 1000):
        report = Cleaner(ms, dataclasses.replace(CONF, compactor_fetch_size=size)).run_cycle(dry_run=True)
        assert [e.status for e in report.entries] == [CleanerStatus.WOULD_CLEAN] * 3
        plans[size] = sorted(d.url for d in report.deletions)
    assert plans[1] == plans[1000] and plans[1]
    report = Cleaner(ms, dataclasses.replace(CONF, compactor_fetch_size=1)).run_cycle()
    assert [e.status for e in report.entries] == [CleanerStatus.CLEANED] * 3 and report.waiting == []
    assert sorted(d.url for d in report.deletions) == plans[1]
    for table in tables:
        assert [d for d in acid_dirs(locations[table]) if not d.startswith("base_")] == []
        assert rows(wh, table) == before[table]
