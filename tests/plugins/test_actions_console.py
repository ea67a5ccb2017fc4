"""The console's actions (issue 31 item 3) through Airflow's real authentication: abort and requeue a compaction,
see what a transaction blocks and abort it — allowed to the admin, refused to a viewer (403, and no buttons), JSON
same-origin requests only (CSRF), each recorded in Airflow's audit log with the user. On SQLite, PostgreSQL and
MariaDB."""

from __future__ import annotations

import json

from airflow_acid.acid.codes import CompactionState, CompactionType, TxnState

ACTIONS = ["abort", "requeue"]


def _audit(event: str) -> list[tuple[str, dict]]:
    """(owner, extra) of the audit-log rows of ``event``, oldest first."""
    from airflow.models.log import Log
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(select(Log.owner, Log.extra).where(Log.event == event).order_by(Log.id)).all()
    return [(owner, json.loads(extra)) for owner, extra in rows]


def test_only_allowed_users_act_and_only_same_origin_json(clients, scene):
    urls = [f"/acid/api/compactions/{scene.queued_id}/{a}" for a in ACTIONS] + [
        f"/acid/api/transactions/{scene.open_txn}/abort"]
    for url in urls:
        assert clients.anonymous.post(url, json={}).status_code == 401, url
        refused = clients.viewer.post(url, json={})
        assert (refused.status_code, refused.json()) == (403, {"detail": "Forbidden"}), url
        api = clients.admin
        assert api.post(url, data={"x": "1"}).status_code == 415, url
        assert api.post(url, json={}, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403, url
        assert api.post(url, json={}, headers={"Origin": "https://evil.example"}).status_code == 403, url
    ms = scene.warehouse.metastore
    assert ms.compactions.get(scene.queued_id).state is CompactionState.INITIATED
    assert ms.txns.txn_state(scene.open_txn) is TxnState.OPEN
    assert clients.viewer.get(f"/acid/api/transactions/{scene.open_txn}/blocking").status_code == 200  # reading


def test_abort_and_requeue_a_compaction(clients, scene):
    api, ms = clients.admin, scene.warehouse.metastore
    before = len(_audit("acid_abort_compaction"))
    done = api.post(f"/acid/api/compactions/{scene.queued_id}/abort", json={})
    assert done.status_code == 200, done.text
    assert done.json() == {"compaction_id": scene.queued_id, "aborted": True, "was": "initiated", "txn_id": None,
                           "message": f"MAJOR compaction {scene.queued_id} of default.customers is aborted (it was "
                                      "'initiated'); no worker will run it"}
    info = ms.compactions.get(scene.queued_id)
    assert info.state is CompactionState.ABORTED and "By ui:admin, while 'initiated'" in info.error_message
    audit = _audit("acid_abort_compaction")
    assert len(audit) == before + 1
    owner, extra = audit[-1]
    assert owner == "admin" and extra == {"compaction_id": str(scene.queued_id), "method": "POST"}

    refused = api.post(f"/acid/api/compactions/{scene.compacted_id}/abort", json={}).json()
    assert refused["aborted"] is False and "undo it instead" in refused["message"]
    assert api.post("/acid/api/compactions/9999/abort", json={}).status_code == 404
    assert api.post("/acid/api/compactions/0/abort", json={}).status_code == 422

    not_failed = api.post(f"/acid/api/compactions/{scene.queued_id}/requeue", json={}).json()
    assert not_failed == {"compaction_id": scene.queued_id, "requeued": False, "new_compaction_id": None,
                          "message": f"compaction {scene.queued_id} of default.customers is 'aborted': only a "
                                     "'failed' or 'refused' compaction can be requeued"}
    failed = ms.compactions.enqueue("default", "sales", "ds=2024-01-02", CompactionType.MINOR).id
    ms.compactions.mark_failed(failed, "boom")
    again = api.post(f"/acid/api/compactions/{failed}/requeue", json={}).json()
    assert again["requeued"] is True, again
    new = ms.compactions.get(again["new_compaction_id"])
    assert (new.state, new.type, new.partition) == (CompactionState.INITIATED, CompactionType.MINOR, "ds=2024-01-02")
    assert new.initiator_id.endswith("-ui:admin")
    assert _audit("acid_requeue_compaction")[-1] == ("admin", {"compaction_id": str(failed), "method": "POST"})


def test_see_what_a_transaction_blocks_then_abort_it(clients, scene):
    api, ms = clients.admin, scene.warehouse.metastore
    blocking = api.get(f"/acid/api/transactions/{scene.open_txn}/blocking").json()
    assert (blocking["txn_id"], blocking["state"], blocking["user"]) == (scene.open_txn, "OPEN", "analyst")
    assert [c["compaction_id"] for c in blocking["cleanings"]] == [scene.compacted_id]
    assert [(lk["resource"], lk["lock_type"]) for lk in blocking["locks"]] == [("default.customers", "SHARED_READ")]
    assert f"the cleanup of compaction {scene.compacted_id} of default.sales/ds=2024-01-01 no longer waits for it" in \
        blocking["consequences"]
    assert api.get("/acid/api/transactions/99999/blocking").status_code == 404

    done = api.post(f"/acid/api/transactions/{scene.open_txn}/abort", json={})
    assert done.status_code == 200, done.text
    answer = done.json()
    assert answer["aborted"] is True and answer["message"] == (
        f"transaction {scene.open_txn} (analyst@bi-host) is aborted by ui:admin; released 1 cleanup(s), 1 lock(s)")
    assert answer["released"]["cleanings"][0]["compaction_id"] == scene.compacted_id
    assert ms.txns.txn_state(scene.open_txn) is TxnState.ABORTED
    assert _audit("acid_abort_transaction")[-1] == ("admin", {"txn_id": str(scene.open_txn), "method": "POST"})
    again = api.post(f"/acid/api/transactions/{scene.open_txn}/abort", json={}).json()
    assert (again["aborted"], again["message"]) == (False, f"transaction {scene.open_txn} is aborted: there is "
                                                           "nothing to abort")


def test_buttons_only_for_users_who_may_act(clients, scene):
    pages = ["/acid/compactions", "/acid/transactions", "/acid/tables/default/sales", "/acid/",
             "/acid/dag/acid_housekeeping"]
    for path in pages:
        seen = clients.viewer.get(path)
        assert seen.status_code == 200 and "data-acid-action" not in seen.text and "acid-confirm" not in seen.text, \
            path
    compactions = clients.admin.get("/acid/compactions").text
    assert f'data-acid-action="abort-compaction" data-id="{scene.queued_id}"' in compactions
    assert f'data-acid-action="undo-compaction" data-id="{scene.compacted_id}"' in compactions
    assert 'id="acid-confirm"' in compactions
    txns = clients.admin.get("/acid/transactions").text
    assert f'data-acid-action="abort-transaction" data-id="{scene.open_txn}"' in txns
    assert f'data-acid-action="abort-transaction" data-id="{scene.aborted_txn}"' not in txns  # already aborted
    assert 'data-acid-action="undo-compaction"' in clients.admin.get("/acid/tables/default/sales").text
    assert clients.admin.get("/acid/static/actions.js").status_code == 200
