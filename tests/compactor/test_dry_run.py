"""Plan dry run (issue 19 item 3): what the next Initiator cycle would queue (with reasons) and the Worker's plan
of each (inputs, outputs, bytes, estimated core-seconds) — and nothing written: every metastore table and every
file fingerprinted before and after is identical."""

from __future__ import annotations

import hashlib
import json
import os

import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionType
from airflow_acid.compactor.cost import DEFAULT_BYTES_PER_CORE_SECOND, core_seconds_for
from airflow_acid.compactor.dry_run import dry_run
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.metastore.initiator_store import Outcome
from airflow_acid.metastore.schema import metadata
from tests.compactor.initiator_support import (
    CONF,
    insert_rows,
)

COLUMNS = [("id", "int")]


def metastore_fingerprint(ms) -> str:
    """Every row of every metastore table, in a stable order."""
    digest = hashlib.sha256()
    with ms.db.engine.connect() as conn:
        for table in metadata.sorted_tables:
            rows = conn.execute(sa.select(table)).all()
            digest.update(table.name.encode())
            digest.update(json.dumps(sorted(repr(tuple(r)) for r in rows)).encode())
    return digest.hexdigest()


def files_fingerprint(root) -> list[tuple[str, int, int]]:
    return sorted((os.path.relpath(os.path.join(d, f), root), os.stat(os.path.join(d, f)).st_size,
                   os.stat(os.path.join(d, f)).st_mtime_ns) for d, _, fs in os.walk(root) for f in fs)


def test_dry_run_says_what_would_be_queued_and_planned_and_writes_nothing(wh, tmp_path):
    wh.create_table("db.p", COLUMNS, partition_by=[("ds", "string")])
    wh.create_table("db.u", COLUMNS)
    insert_rows(wh, "db.p", 12, {"ds": "a"})  # over the delta count threshold (10)
    insert_rows(wh, "db.p", 2, {"ds": "b"})   # below it
    insert_rows(wh, "db.u", 3)
    queued = wh.metastore.compactions.enqueue("db", "u", None, CompactionType.MAJOR).id  # waiting already
    ms = wh.metastore
    before = (metastore_fingerprint(ms), files_fingerprint(tmp_path / "wh"))

    report = dry_run(ms, CONF)

    assert (metastore_fingerprint(ms), files_fingerprint(tmp_path / "wh")) == before
    would = {(r.table, r.partition): r for r in report.would_queue}
    assert set(would) == {("p", "ds=a")} and would[("p", "ds=a")].type is CompactionType.MAJOR  # no base yet
    assert "12" in would[("p", "ds=a")].reason  # the decision's reason names the delta count
    declined = {(r.table, r.partition): r.outcome for r in report.initiator.results}
    assert declined[("p", "ds=b")] is Outcome.NOT_NEEDED
    assert declined[("u", None)] is Outcome.SKIPPED  # already queued: the real Initiator would skip it too
    by_name = {p.name: p for p in report.previews}
    waiting, new = by_name["db.u"], by_name["db.p/ds=a"]
    assert waiting.compaction_id == queued and new.compaction_id is None and new.reason
    assert waiting.steps[-1]["type"] == "MAJOR" and len(waiting.steps[-1]["inputs"]) == 3
    assert waiting.steps[-1]["outputs"][0].startswith("base_0000003_v")
    part = os.path.join(tmp_path, "wh", "db.db", "p", "ds=a")
    files = [os.path.join(d, f) for d, _, fs in os.walk(part) for f in fs if f.startswith("bucket_")]
    assert new.estimate.files_in == len(files) == 12 and new.estimate.deltas_before == 12
    assert new.estimate.bytes_in == sum(os.path.getsize(f) for f in files)
    assert new.estimate.deltas_after == 0 and new.estimate.read_amplification_saved == 11  # 12 deltas -> 1 base
    assert new.estimate.core_seconds == core_seconds_for(new.estimate.bytes_in, 12, DEFAULT_BYTES_PER_CORE_SECOND)
    assert json.loads(json.dumps(report.as_dict()))["plans"][0]["estimate"]["bytes_in"] > 0

    # the real cycle then queues exactly what the dry run said
    real = Initiator(ms, CONF).run_cycle()
    assert {(r.table, r.partition) for r in real.queued} == set(would)


def test_initiator_preview_records_nothing_and_takes_no_lease(wh):
    """The Initiator's read-only evaluation (what replaced the dry run's read-only stand-ins): no decision, no
    last-checked time, no queue row, and "refused" where the queue would refuse."""
    wh.create_table("db.u", COLUMNS)
    insert_rows(wh, "db.u", 12)
    ms = wh.metastore
    before = metastore_fingerprint(ms)
    (result,) = Initiator(ms, CONF).preview().results
    assert result.outcome is Outcome.WOULD_QUEUE and result.compaction_id is None
    assert metastore_fingerprint(ms) == before
    ms.compactions.enqueue("db", "u", None, CompactionType.MINOR)  # the entity is busy: the queue would refuse
    before = metastore_fingerprint(ms)
    report = Initiator(ms, CONF).preview()
    assert metastore_fingerprint(ms) == before
    assert [r.outcome for r in report.results] in ([Outcome.SKIPPED], [Outcome.REFUSED])
