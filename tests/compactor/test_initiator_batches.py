"""An Initiator cycle streamed in batches (metastore.compactor.fetch.size candidates at a time) decides exactly what
one pass over every candidate decides: batch sizes 1, 2 and many give the same outcomes, types and reasons, list the
same directories once each, never list a partition without new writes, and queue and record every decision."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_acid.acid.codes import CompactionType
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.metastore.initiator_store import INITIATOR_MUTEX, Outcome
from tests.compactor.initiator_support import CONF, CountingFileSystem, insert_rows, synthetic_write

THRESHOLD = {"compactorthreshold.hive.compactor.delta.num.threshold": "2"}


def _scenario(wh) -> dict[str, str]:
    """A cycle's worth of every kind of candidate; returns the partition locations of table p.

    Before the first cycle: p/d=0 (then queued by it) and p/d=6 (written, decided, never written again). After it:
    new writes to p/d=0 (already queued: skipped), p/d=1..3 (3 deltas: MINOR), p/d=4..5 (1 delta: not needed),
    u (3 deltas, no base: MAJOR), off (no_auto_compaction: skipped), and a 'did not initiate' history row for p/d=6
    (a retry candidate without new writes)."""
    ms = wh.metastore
    wh.create_table("p", [("id", "int")], partition_by=[("d", "string")], properties=THRESHOLD)
    locations = {}
    for i in range(7):
        part = ms.catalog.add_partition("default", "p", {"d": str(i)})
        locations[part.name] = part.location
    for part in ("d=0", "d=6"):
        synthetic_write(ms, locations[part], "default", "p", part, kind="base", size=1000)
        for _ in range(3):
            synthetic_write(ms, locations[part], "default", "p", part)
    first = Initiator(ms, CONF, host="inithost").run_cycle()
    assert [r.partition for r in first.queued] == ["d=0", "d=6"]
    ms.compactions.mark_failed(first.queued[1].compaction_id, "failed on purpose")  # d=6: nothing is running
    synthetic_write(ms, locations["d=0"], "default", "p", "d=0")
    for i in range(1, 6):
        synthetic_write(ms, locations[f"d={i}"], "default", "p", f"d={i}", kind="base", size=1000)
        for _ in range(3 if i <= 3 else 1):
            synthetic_write(ms, locations[f"d={i}"], "default", "p", f"d={i}")
    wh.create_table("u", [("id", "int")])
    insert_rows(wh, "u", 3)
    wh.create_table("off", [("id", "int")], properties={"no_auto_compaction": "true"})
    insert_rows(wh, "off", 3)
    ms.initiator.record_did_not_initiate("default", "p", "d=6", CompactionType.MAJOR, "retry me")
    return locations


def _decisions(report) -> dict[tuple[str, str | None], tuple[str, str | None, str]]:
    return {(r.table, r.partition): (r.outcome.display if r.outcome is not Outcome.WOULD_QUEUE else "would queue",
                                     r.type.display if r.type else None, r.reason) for r in report.results}


def test_batches_of_any_size_decide_and_list_the_same(wh):
    ms = wh.metastore
    _scenario(wh)
    seen = {}
    for batch in (1, 2, 1000):
        fs = CountingFileSystem()
        report = Initiator(ms, dataclasses.replace(CONF, compactor_fetch_size=batch), host="inithost",
                           filesystem=fs).preview()
        seen[batch] = (_decisions(report), sorted(fs.listed), report.candidates, report.listings)
    assert seen[1] == seen[2] == seen[1000]
    decisions, listed, candidates, listings = seen[1000]
    assert candidates == 9 and listings == len(listed) == 7  # p/d=0 skipped before listing, 'off' too
    assert decisions[("p", "d=0")][0] == "skipped" and "already 'initiated'" in decisions[("p", "d=0")][2]
    # p/d=6: no new writes, but its last compaction failed: looked at again (3 deltas: MINOR)
    assert {k for k, v in decisions.items() if v[0] == "would queue"} == {("p", f"d={i}") for i in (1, 2, 3, 6)}
    assert decisions[("p", "d=4")][0] == decisions[("p", "d=5")][0] == decisions[("u", None)][0] == "not needed"
    assert decisions[("off", None)][0] == "skipped"


@pytest.mark.parametrize("batch", [1, 2])
def test_a_batched_cycle_queues_and_records_what_one_pass_previews(wh, batch):
    ms = wh.metastore
    _scenario(wh)
    preview = _decisions(Initiator(ms, CONF, host="inithost").preview())
    fs = CountingFileSystem()
    report = Initiator(ms, dataclasses.replace(CONF, compactor_fetch_size=batch), host="inithost",
                       filesystem=fs).run_cycle()
    assert not report.truncated and report.next_last_checked_ms == report.started_ms
    assert {(r.table, r.partition) for r in report.queued} == {k for k, v in preview.items() if v[0] == "would queue"}
    assert len(fs.listed) == len(set(fs.listed)) == report.listings
    stored = {(d.table, d.partition): d.outcome for d in ms.initiator.decisions(database="default")}
    assert {k: stored[k] for k in preview} == {(r.table, r.partition): r.outcome for r in report.results}
    ids = [r.compaction_id for r in sorted(report.queued, key=lambda r: (r.table, r.partition or ""))]
    assert ids == sorted(ids)  # queued in candidate order
    assert ms.initiator.last_checked(INITIATOR_MUTEX) == report.started_ms


def test_a_cycle_whose_lease_was_taken_over_stops_and_keeps_the_window(wh, monkeypatch):
    ms = wh.metastore
    _scenario(wh)
    initiator = Initiator(ms, dataclasses.replace(CONF, compactor_fetch_size=2), host="inithost")
    before = ms.initiator.last_checked(INITIATOR_MUTEX)
    monkeypatch.setattr(initiator.store, "renew_lease", lambda *a, **k: False)
    report = initiator.run_cycle()
    assert report.truncated and "lease expired" in report.message
    assert 0 < len(report.results) <= 2  # the first batch was decided, queued and recorded; nothing after it
    assert ms.initiator.last_checked(INITIATOR_MUTEX) == before  # the next cycle looks at the same window again
