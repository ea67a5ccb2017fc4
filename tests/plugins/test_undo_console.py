"""The console's undo action (issue 30 item 2): only a logged-in user allowed to request compactions may undo one,
through a same-origin JSON request; a refusal is an answer with its reason. On SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import os

from airflow_acid.acid.codes import CompactionState, TxnState


def test_undo_needs_an_authorised_user_and_says_why_not(clients, scene, monkeypatch):
    monkeypatch.setenv("AIRFLOW__ACID__CLEANER_RETENTION", "1h")  # read when the console opens the warehouse
    url = f"/acid/api/compactions/{scene.compacted_id}/undo"
    assert clients.anonymous.post(url, json={}).status_code == 401
    refused = clients.viewer.post(url, json={})
    assert (refused.status_code, refused.json()) == (403, {"detail": "Forbidden"})
    api = clients.admin
    assert api.post(url, data={"x": "1"}).status_code == 415  # CSRF: JSON only, never cross-site
    assert api.post(url, json={}, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert api.post(url, json={}, headers={"Origin": "https://evil.example"}).status_code == 403
    ms = scene.warehouse.metastore
    assert ms.compactions.get(scene.compacted_id).state is CompactionState.READY_FOR_CLEANING

    queued = api.post(f"/acid/api/compactions/{scene.queued_id}/undo", json={})
    assert queued.status_code == 200 and queued.json() == {
        "compaction_id": scene.queued_id, "undone": False, "removed": [], "waiting_for": [],
        "message": f"compaction {scene.queued_id} is 'initiated': only a 'ready for cleaning' compaction can be undone"}
    assert api.post("/acid/api/compactions/9999/undo", json={}).status_code == 404
    assert api.post("/acid/api/compactions/0/undo", json={}).status_code == 422

    before = sorted(tuple(r.values()) for r in scene.warehouse.read("sales").to_pylist())
    done = api.post(url, json={})
    assert done.status_code == 200, done.text
    answer = done.json()
    assert answer["undone"] is True and answer["waiting_for"] == [], answer
    info = ms.compactions.get(scene.compacted_id)
    assert [os.path.basename(p) for p in answer["removed"]] == [f"base_0000003_v{info.txn_id:07d}"]
    assert info.state is CompactionState.ABORTED and info.error_message.startswith("Undone by ui:admin")
    assert ms.txns.txn_state(info.txn_id) is TxnState.ABORTED
    assert sorted(tuple(r.values()) for r in scene.warehouse.read("sales").to_pylist()) == before
    (row,) = api.get(f"/acid/api/compactions?compactionid={scene.compacted_id}&table=sales&state=aborted").json()[
        "compactions"]
    assert row["compactionid"] == scene.compacted_id and row["errormessage"].startswith("Undone by ui:admin")
    page = api.get("/acid/compactions")
    assert page.status_code == 200 and "data-acid-undo" in page.text
    again = api.post(url, json={}).json()
    assert (again["undone"], again["message"]) == (False, f"compaction {scene.compacted_id} is already undone")
