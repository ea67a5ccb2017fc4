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
