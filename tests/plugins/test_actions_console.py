"""The console's actions (issue 31 item 3) through Airflow's real authentication: abort and requeue a compaction,
see what a transaction blocks and abort it — allowed to the admin, refused to a viewer (403, and no buttons), JSON
same-origin requests only (CSRF), each recorded in Airflow's audit log with the user. On SQLite, PostgreSQL and
MariaDB."""

from __future__ import annotations

import json

import pytest

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


# --- [acid] action_approval = hitl: the aborts wait for Airflow's human-in-the-loop approval ----------------------


def _sync_approval_dag() -> None:
    """Put acid_approved_action in this module's Airflow database, as the dag-processor would."""
    from pathlib import Path

    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    DagBundlesManager().sync_bundles_to_db()
    dags = Path(__file__).resolve().parents[2] / "dags"
    bag = DagBag(dag_folder=str(dags / "acid_approved_action.py"))
    assert bag.import_errors == {}
    sync_bag_to_db(bag, "dags-folder", None)


def _approval_dag_known() -> bool:
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        return session.get(DagModel, "acid_approved_action") is not None


def _approval_runs() -> list[tuple[str, dict, str | None]]:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(select(DagRun.run_id, DagRun.conf, DagRun.triggering_user_name)
                               .where(DagRun.dag_id == "acid_approved_action").order_by(DagRun.id)).all()
    return [(run_id, conf, who) for run_id, conf, who in rows]


def test_with_hitl_approval_the_aborts_trigger_an_approval_run_and_change_nothing(clients, scene, monkeypatch):
    monkeypatch.setenv("AIRFLOW__ACID__ACTION_APPROVAL", "hitl")
    api, ms = clients.admin, scene.warehouse.metastore
    if not _approval_dag_known():  # the first database of the module: Airflow has not parsed the DAG yet
        missing = api.post(f"/acid/api/compactions/{scene.queued_id}/abort", json={})
        assert missing.status_code == 409 and "acid_approved_action" in missing.json()["detail"]
        assert ms.compactions.get(scene.queued_id).state is CompactionState.INITIATED
        _sync_approval_dag()
    before = len(_approval_runs())

    done = api.post(f"/acid/api/compactions/{scene.queued_id}/abort", json={})
    assert done.status_code == 200, done.text
    answer = done.json()
    assert (answer["aborted"], answer["awaiting_approval"], answer["dag_id"]) == (False, True, "acid_approved_action")
    assert answer["run_url"] == f"/dags/acid_approved_action/runs/{answer['run_id']}"
    assert "awaiting approval" in answer["message"]
    assert ms.compactions.get(scene.queued_id).state is CompactionState.INITIATED  # nothing done yet
    runs = _approval_runs()
    assert len(runs) == before + 1
    assert runs[-1] == (answer["run_id"], {"action": "abort_compaction", "target_id": scene.queued_id,
                                           "requested_by": "ui:admin"}, "admin")
    assert _audit("acid_abort_compaction")[-1] == ("admin", {"compaction_id": str(scene.queued_id), "method": "POST"})

    txn = api.post(f"/acid/api/transactions/{scene.open_txn}/abort", json={}).json()
    assert txn["awaiting_approval"] is True and txn["target_id"] == scene.open_txn
    assert ms.txns.txn_state(scene.open_txn) is TxnState.OPEN
    assert _approval_runs()[-1][1]["action"] == "abort_transaction"
    # an unknown id is still a 404, a closed transaction refused at once: no run for them
    assert api.post("/acid/api/compactions/9999/abort", json={}).status_code == 404
    closed = api.post(f"/acid/api/transactions/{scene.aborted_txn}/abort", json={}).json()
    assert closed["aborted"] is False and "nothing to abort" in closed["message"]
    assert len(_approval_runs()) == before + 2
    # requeue is not destructive: it still acts at once; a viewer is still refused
    assert "awaiting_approval" not in api.post(f"/acid/api/compactions/{scene.queued_id}/requeue", json={}).json()
    assert clients.viewer.post(f"/acid/api/compactions/{scene.queued_id}/abort", json={}).status_code == 403
    assert clients.viewer.post(f"/acid/api/transactions/{scene.open_txn}/abort", json={}).status_code == 403
    assert len(_approval_runs()) == before + 2


def test_a_bad_action_approval_value_is_refused(clients, scene, monkeypatch):
    monkeypatch.setenv("AIRFLOW__ACID__ACTION_APPROVAL", "maybe")
    refused = clients.admin.post(f"/acid/api/compactions/{scene.queued_id}/abort", json={})
    assert refused.status_code == 400 and "action_approval='maybe': must be off or hitl" in refused.text, refused.text
    assert scene.warehouse.metastore.compactions.get(scene.queued_id).state is CompactionState.INITIATED


def test_the_approval_lists_the_consequences_and_act_follows_the_answer(scene):
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_acid.operators.approval import act_on_answer, describe_request

    ms = scene.warehouse.metastore
    conf = {"action": "abort_compaction", "target_id": scene.queued_id, "requested_by": "ui:admin"}
    shown = describe_request(conf)
    assert shown["subject"] == f"Abort compaction {scene.queued_id}? (asked by ui:admin)"
    assert f"- MAJOR compaction {scene.queued_id} of default.customers ('initiated'): take it off the queue" in \
        shown["body"]
    txn_body = describe_request({"action": "abort_transaction", "target_id": scene.open_txn})["body"]
    assert f"the cleanup of compaction {scene.compacted_id} of default.sales/ds=2024-01-01 no longer waits" in txn_body

    rejected = act_on_answer(conf, {"chosen_options": ["Reject"], "responded_by_user": {"id": "2", "name": "bob"}})
    assert rejected["acted"] is False and "not approved (Reject by bob): nothing was done" in rejected["message"]
    assert act_on_answer(conf, None)["acted"] is False
    assert ms.compactions.get(scene.queued_id).state is CompactionState.INITIATED

    approved = act_on_answer(conf, {"chosen_options": ["Approve"], "responded_by_user": {"id": "2", "name": "bob"}})
    assert approved["acted"] is True and approved["approver"] == "bob"
    info = ms.compactions.get(scene.queued_id)
    assert info.state is CompactionState.ABORTED and "By hitl:bob (asked by ui:admin)" in info.error_message
    with pytest.raises(AirflowFailException, match="it was 'aborted'|is 'aborted'|aborted"):  # state changed since
        act_on_answer(conf, {"chosen_options": ["Approve"], "responded_by_user": {"id": "2", "name": "bob"}})

    txn = act_on_answer({"action": "abort_transaction", "target_id": scene.open_txn, "requested_by": "ui:admin"},
                        {"chosen_options": ["Approve"], "responded_by_user": {"id": "3", "name": "carol"}})
    assert txn["acted"] is True and "aborted by hitl:carol (asked by ui:admin)" in txn["message"]
    assert ms.txns.txn_state(scene.open_txn) is TxnState.ABORTED
    with pytest.raises(ValueError, match="'drop_table' is not an action that waits for approval"):
        act_on_answer({"action": "drop_table", "target_id": 1}, {"chosen_options": ["Approve"]})
