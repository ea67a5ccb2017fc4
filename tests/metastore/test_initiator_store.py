"""The Initiator's lookups on the compaction queue: the current compaction of a table/partition, consecutive
failures and the skip reason they give (recorded as 'did not initiate'), and revoking timed-out or local workers."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.metastore.compactions import CompactionQueue
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.initiator_store import InitiatorStore
from airflow_acid.metastore.schema import COMPLETED_COMPACTIONS
from tests.metastore.queue_support import update_queue_row

MINOR = CompactionType.MINOR


@pytest.fixture
def queue(db) -> CompactionQueue:
    return CompactionQueue(db, MetastoreConf(opentxn_timeout_ms=0))


@pytest.fixture
def initiator(db) -> InitiatorStore:
    return InitiatorStore(db, MetastoreConf(opentxn_timeout_ms=0))


def test_revoke_timed_out_and_local_workers(db, queue, initiator):
    ids = [queue.enqueue("d", "t", f"ds={i}", highest_write_id_now=0).id for i in range(3)]
    queue.claim_next("hostA-1")
    queue.claim_next("hostA-2")
    queue.claim_next("hostB_x-1")
    update_queue_row(db, ids[0], CQ_START=1)  # claimed long ago
    assert initiator.revoke_timed_out_workers(3600) == [ids[0]]
    assert queue.get(ids[0]).state is CompactionState.INITIATED and queue.get(ids[0]).worker_id is None
    assert initiator.revoke_from_local_workers("hostA") == [ids[1]]
    assert initiator.revoke_from_local_workers("hostB%") == []  # LIKE wildcards are taken literally
    assert initiator.revoke_from_local_workers("hostB_") == [ids[2]]


def test_initiator_lookups_current_and_consecutive_failures(db):
    conf = MetastoreConf(failed_compacts_threshold=2, failed_retry_time_s=3600)
    queue, initiator = CompactionQueue(db, conf), InitiatorStore(db, conf)
    assert initiator.initiator_skip_reason("d", "t", "ds=1") is None
    current = queue.enqueue("d", "t", "ds=1", highest_write_id_now=0)
    assert initiator.current_compaction("d", "t", "ds=1").id == current.id
    assert initiator.current_compaction("d", "t", None) is None  # NULL partition matches only NULL
    assert "already 'initiated'" in initiator.initiator_skip_reason("d", "t", "ds=1")
    queue.claim_next("n-1")
    queue.mark_failed(current.id, "boom")
    assert initiator.failing_since("d", "t", "ds=1") is None  # one failure is below the threshold
    second = queue.enqueue("d", "t", "ds=1", highest_write_id_now=0)
    queue.claim_next("n-1")
    queue.mark_failed(second.id, "boom again")
    assert initiator.failing_since("d", "t", "ds=1") is not None
    reason = initiator.initiator_skip_reason("d", "t", "ds=1", MINOR, initiator_id="init-1")
    assert reason.startswith("Compaction is not initiated since last 2 consecutive compaction attempts failed")
    recorded = queue.show_compactions(state="did not initiate")
    assert [(r.partname, r.type, r.errormessage) for r in recorded] == [("ds=1", "MINOR", reason)]
    # after the retry time the entity is eligible again
    db.run(lambda c: c.execute(sa.update(COMPLETED_COMPACTIONS).values(CC_ENQUEUE_TIME=1)))
    assert initiator.initiator_skip_reason("d", "t", "ds=1") is None
    # a success between failures resets the count
    db.run(lambda c: c.execute(sa.update(COMPLETED_COMPACTIONS).where(COMPLETED_COMPACTIONS.c.CC_ID == current.id)
                               .values(CC_STATE="s")))
    db.run(lambda c: c.execute(sa.update(COMPLETED_COMPACTIONS).values(CC_ENQUEUE_TIME=10 ** 13)))
    assert initiator.failing_since("d", "t", "ds=1") is None


def _ctc_rows(db, rows: list[tuple[str, str | None, int]]) -> None:
    """COMPLETED_TXN_COMPONENTS rows (table, partition, CTC_TIMESTAMP) of database ``d``, one txn each."""
    from airflow_acid.metastore.schema import COMPLETED_TXN_COMPONENTS
    with db.begin() as conn:
        conn.execute(sa.insert(COMPLETED_TXN_COMPONENTS), [
            {"CTC_TXNID": i + 1, "CTC_DATABASE": "d", "CTC_TABLE": t, "CTC_PARTITION": p, "CTC_TIMESTAMP": ts,
             "CTC_WRITEID": i + 1, "CTC_UPDATE_DELETE": "N"} for i, (t, p, ts) in enumerate(rows)])


@pytest.mark.parametrize("batch", [1, 2, 3, 1000])
def test_streamed_candidates_are_the_window_in_batches(db, initiator, batch):
    """Every table/partition with a commit in the window exactly once, with its latest commit, in batches of at most
    ``batch`` (a table-level row, several commits of one partition, an entity outside the window)."""
    _ctc_rows(db, [("t", "p=1", 100), ("t", "p=1", 300), ("t", "p=2", 200), ("u", None, 250), ("t", "p=3", 50),
                   ("a", "x=%2F", 400), ("u", None, 90)])
    batches = list(initiator.stream_write_candidates(100, batch))
    assert batches and all(0 < len(b) <= batch for b in batches)
    found = [(c.table, c.partition, c.last_commit_ms) for b in batches for c in b]
    assert sorted(found, key=str) == sorted([("t", "p=1", 300), ("t", "p=2", 200), ("u", None, 250),
                                             ("a", "x=%2F", 400)], key=str)
    everything = {(c.table, c.partition) for b in initiator.stream_write_candidates(None, batch) for c in b}
    assert everything == {("t", "p=1"), ("t", "p=2"), ("t", "p=3"), ("u", None), ("a", "x=%2F")}
    assert list(initiator.stream_write_candidates(1000, batch)) == []


def test_renew_lease_only_for_its_holder(initiator):
    assert initiator.acquire_lease("Initiator", "me", 60_000).acquired
    assert initiator.renew_lease("Initiator", "me", 60_000)
    assert not initiator.renew_lease("Initiator", "someone else", 60_000)
    initiator.release_lease("Initiator", "me")
    assert not initiator.renew_lease("Initiator", "me", 60_000)
