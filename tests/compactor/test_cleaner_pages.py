"""The Cleaner's batched page: a page of many rows cleaned with the metastore work batched (one transaction per
step for the whole page) leaves exactly the directories and metastore rows that cleaning the rows one by one
leaves; a delete that fails (raising, or silently leaving a directory) keeps that row 'ready for cleaning' and
the others are cleaned."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionState, CompactionType, OperationType, TxnType
from airflow_acid.acid.fs import Storage
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.cleaning import CleaningStore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import now_ms
from airflow_acid.metastore.schema import (
    COMPACTION_QUEUE,
    COMPLETED_COMPACTIONS,
    COMPLETED_TXN_COMPONENTS,
    NEXT_COMPACTION_QUEUE_ID,
    TXN_COMPONENTS,
)

DB = "db"
WHO = {"user": "test", "host": "test"}
PARTITIONS = 12
CQ, CC = COMPACTION_QUEUE, COMPLETED_COMPACTIONS


def _seed(ms: Metastore, root: Path, table: str, first_id: int) -> dict[str, str]:
    """A partitioned table of PARTITIONS partitions, each with a committed base (write id 1), a committed delta
    (2), an aborted delta (3) and a major compaction's base_0000003_vC 'ready for cleaning'. Partition 0 carries
    no_cleanup; partition 1 also has an abort-cleanup retry row; partitions 2–3 have an aborted txn with exact
    uncompacted write ids above the compaction (write id 4, delta kept); partition 4 has a second ready row with
    a higher write id (cleaned after the first). Returns partition name → location."""
    ms.catalog.create_table(DB, table, [("id", "int")], partition_keys=[("d", "string")],
                            properties={"transactional": "true"})
    names = [f"d={i:02d}" for i in range(PARTITIONS)]
    locations = {n: ms.catalog.add_partition(DB, table, {"d": n[2:]}).location for n in names}
    ms.catalog.alter_partition_params(DB, table, names[0], {"no_cleanup": "true"})
    for _ in range(2):  # write ids 1 and 2, committed: COMPLETED_TXN_COMPONENTS
        txn = ms.txns.open_txn(**WHO)
        ms.txns.add_write_components(txn, DB, table, names, OperationType.INSERT)
        ms.txns.commit(txn)
    aborted = ms.txns.open_txn(**WHO)  # write id 3, aborted: TXN_COMPONENTS
    ms.txns.add_write_components(aborted, DB, table, names, OperationType.INSERT)
    ms.txns.abort(aborted)
    late = ms.txns.open_txn(**WHO)  # write id 4, aborted, above the compaction
    ms.txns.add_write_components(late, DB, table, names[2:4], OperationType.INSERT)
    ms.txns.abort(late)
    compactor = ms.txns.open_txn(**WHO, txn_type=TxnType.COMPACTION)
    ms.txns.commit(compactor)
    for n, loc in locations.items():
        dirs = ["base_0000001", "delta_0000002_0000002_0000", "delta_0000003_0000003_0000",
                f"base_0000003_v{compactor:07d}"]
        if n in names[2:4]:
            dirs.append("delta_0000004_0000004_0000")
        for d in dirs:
            os.makedirs(os.path.join(loc, d), exist_ok=True)
            Path(loc, d, "bucket_00000").write_bytes(b"x")
    with ms.db.begin() as conn:
        now = now_ms(conn)
        rows = [{"CQ_ID": first_id + i, "CQ_DATABASE": DB, "CQ_TABLE": table, "CQ_PARTITION": n,
                 "CQ_STATE": CompactionState.READY_FOR_CLEANING.value, "CQ_TYPE": CompactionType.MAJOR.value,
                 "CQ_HIGHEST_WRITE_ID": 3, "CQ_TXN_ID": compactor, "CQ_NEXT_TXN_ID": compactor + 1,
                 "CQ_COMMIT_TIME": now - 3_600_000, "CQ_RETRY_RETENTION": 0} for i, n in enumerate(names)]
        rows.append({**rows[4], "CQ_ID": first_id + 50, "CQ_HIGHEST_WRITE_ID": 4})
        rows.append({**rows[1], "CQ_ID": first_id + 60, "CQ_TYPE": CompactionType.ABORT_TXN_CLEANUP.value,
                     "CQ_HIGHEST_WRITE_ID": None, "CQ_TXN_ID": None, "CQ_NEXT_TXN_ID": None,
                     "CQ_RETRY_RETENTION": 1_000})
        conn.execute(sa.insert(CQ), rows)
        conn.execute(sa.delete(NEXT_COMPACTION_QUEUE_ID))
        conn.execute(sa.insert(NEXT_COMPACTION_QUEUE_ID).values(NCQ_NEXT=first_id + 100))
    return locations


def _outcome(ms: Metastore, table: str, locations: dict[str, str], first_id: int) -> dict[str, list]:
    """Everything the Cleaner may change for ``table``, with ids relative to its first row."""
    ctc, tc = COMPLETED_TXN_COMPONENTS, TXN_COMPONENTS

    def work(conn) -> dict[str, list]:
        return {
            "queue": sorted((r.CQ_ID - first_id, r.CQ_PARTITION, r.CQ_STATE, r.CQ_TYPE, r.CQ_CLEANER_START is not None
                             and r.CQ_CLEANER_START > 0) for r in conn.execute(sa.select(CQ).where(CQ.c.CQ_TABLE == table))),
            "history": sorted((r.CC_ID - first_id, r.CC_PARTITION, r.CC_STATE) for r in conn.execute(
                sa.select(CC).where(CC.c.CC_TABLE == table))),
            "completed_components": sorted(tuple(r) for r in conn.execute(
                sa.select(ctc.c.CTC_PARTITION, ctc.c.CTC_WRITEID).where(ctc.c.CTC_TABLE == table))),
            "txn_components": sorted(tuple(r) for r in conn.execute(
                sa.select(tc.c.TC_PARTITION, tc.c.TC_WRITEID).where(tc.c.TC_TABLE == table))),
        }

    result = ms.db.run(work)
    result["directories"] = sorted(re.sub(r"_v\d+$", "_vC", f"{n}/{d}")  # each table has its compactor txn
                                   for n, loc in locations.items() for d in os.listdir(loc))
    return result


@pytest.fixture
def ms(empty_db_url, tmp_path):
    with Metastore(empty_db_url, MetastoreConf(opentxn_timeout_ms=0, compactor_fetch_size=1000)).init() as store:
        store.catalog.create_database(DB, str(tmp_path / "warehouse"))
        yield store


def _row_by_row(store: CleaningStore, cleaned) -> set[int]:
    """The reference: Hive's markCleaned, one transaction per row."""
    for cq_id, exact in cleaned.items():
        store.mark_cleaned(cq_id, aborted_write_ids=exact)
    return set(cleaned)


def test_a_page_of_many_rows_is_cleaned_exactly_as_one_by_one(ms, tmp_path, monkeypatch):
    single = _seed(ms, tmp_path, "single", 1000)
    batched = _seed(ms, tmp_path, "batched", 2000)
    one_by_one = Cleaner(ms, MetastoreConf(opentxn_timeout_ms=0, compactor_fetch_size=1))
    statuses_single = []
    with monkeypatch.context() as patch:  # one row at a time, through the per-row metastore calls
        patch.setattr(CleaningStore, "mark_many_cleaned", _row_by_row)
        patch.setattr(CleaningStore, "mark_cleaner_starts",
                      lambda store, ids: [store.mark_cleaner_start(i) for i in ids] and None)
        for _ in range(2):  # the second pass cleans partition 4's later row
            for cq_id in sorted(ms.db.run(lambda c: list(c.execute(sa.select(CQ.c.CQ_ID).where(
                    CQ.c.CQ_TABLE == "single", CQ.c.CQ_TYPE != CompactionType.ABORT_TXN_CLEANUP.value)).scalars()))):
                statuses_single.append(one_by_one.clean(cq_id).status)
    page = Cleaner(ms, ms.conf)
    statuses_batched = []
    for _ in range(2):
        report = page.run_cycle()
        statuses_batched += [e.status for e in report.entries if e.entity.startswith(f"{DB}.batched")]
    assert sorted(s for s in statuses_single if s is not CleanerStatus.WAITING) \
        == sorted(statuses_batched) == sorted([CleanerStatus.CLEANED] * (PARTITIONS) + [CleanerStatus.REFUSED])
    expected, got = _outcome(ms, "single", single, 1000), _outcome(ms, "batched", batched, 2000)
    assert got == expected
    # what the rows say: the obsolete and aborted directories went, the compaction's base and the later delta stay
    kept = [d for d in got["directories"] if d.startswith("d=05/")]
    assert kept == ["d=05/base_0000003_vC"]
    assert {"d=02/delta_0000004_0000004_0000", "d=00/base_0000001"} <= set(got["directories"])
    assert [r for r in got["queue"] if r[3] == CompactionType.ABORT_TXN_CLEANUP.value] == []
    assert sorted(p for p, w in got["txn_components"]) == ["d=00", "d=02", "d=03"]


@pytest.mark.parametrize("failure", ["raises", "silent"])
def test_a_failed_delete_leaves_its_row_ready_and_the_others_cleaned(ms, tmp_path, monkeypatch, failure):
    locations = _seed(ms, tmp_path, "t", 1)
    broken = locations["d=07"]
    original = Storage.delete_paths

    def delete_paths(storage: Storage, relatives, listing=None):
        if storage.root.rstrip("/") == broken.rstrip("/"):
            if failure == "raises":
                raise PermissionError(f"permission denied: {broken}")
            return []  # a delete that reports nothing and removes nothing
        return original(storage, relatives, listing)

    monkeypatch.setattr(Storage, "delete_paths", delete_paths)
    report = Cleaner(ms, ms.conf).run_cycle()
    by_entity = {e.entity: e for e in report.entries}
    assert by_entity[f"{DB}.t/d=07"].status is CleanerStatus.RETRY
    assert "d=07" in (by_entity[f"{DB}.t/d=07"].message or "")
    cleaned = sorted(e.entity for e in report.entries if e.status is CleanerStatus.CLEANED)
    assert cleaned == sorted(f"{DB}.t/d={i:02d}" for i in range(1, PARTITIONS) if i != 7)
    queue = ms.db.run(lambda c: {r.CQ_PARTITION: r for r in c.execute(sa.select(CQ).where(
        CQ.c.CQ_TYPE != CompactionType.ABORT_TXN_CLEANUP.value, CQ.c.CQ_ID < 50))})
    assert sorted(queue) == ["d=07"]  # d=00 (no_cleanup) went to the history as refused
    assert queue["d=07"].CQ_STATE == CompactionState.READY_FOR_CLEANING.value and queue["d=07"].CQ_RETRY_RETENTION > 0
    assert os.path.isdir(os.path.join(broken, "base_0000001"))
    assert not os.path.exists(os.path.join(locations["d=06"], "base_0000001"))
