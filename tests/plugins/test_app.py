"""The ACID console through FastAPI's TestClient with Airflow's real authentication (SimpleAuthManager tokens):
who may do what, the JSON of every route on SQLite, PostgreSQL and MariaDB, the pages, and clear errors."""

from __future__ import annotations

import json
import re

import pytest

from airflow_acid.metastore.compactions import ShowCompactionsRow
from tests.plugins.console_support import acid_connection

GET_JSON = ["/acid/api/overview", "/acid/api/compactions", "/acid/api/transactions", "/acid/api/locks",
            "/acid/api/health", "/acid/api/health/default/sales", "/acid/api/why/default/customers", "/acid/api/plan"]
PAGES = ["/acid/", "/acid/compactions", "/acid/transactions", "/acid/plan", "/acid/tables/default/sales",
         "/acid/tables/default/sales/why?partition=ds%3D2024-01-01", "/acid/dag/acid_compaction",
         "/acid/dag/acid_manual_compaction", "/acid/dag/acid_cleanup", "/acid/dag/acid_housekeeping",
         "/acid/dag/some_other_dag", "/acid/static/acid.css", "/acid/static/acid.js", "/acid/static/acid.svg"]
REQUEST = {"database": "default", "table": "sales", "partition": "ds=2024-01-01", "type": "minor"}


def test_every_route_needs_an_airflow_login(clients):
    for path in GET_JSON:
        answer = clients.anonymous.get(path)
        assert (answer.status_code, answer.json()) == (401, {"detail": "Not authenticated"}), path
    for path in PAGES:  # a browser without a session goes to Airflow's login page and comes back
        answer = clients.anonymous.get(path, follow_redirects=False)
        assert answer.status_code == 303, path
        assert answer.headers["location"].startswith("/auth/login?next=%2Facid%2F"), path
    assert clients.anonymous.post("/acid/api/compactions", json=REQUEST).status_code == 401
    forged = clients.anonymous.get("/acid/api/compactions", headers={"Authorization": "Bearer not-a-jwt"})
    assert forged.status_code == 403


def test_a_viewer_may_look_but_not_request(clients):
    assert clients.viewer.get("/acid/static/acid.js").status_code == 200
    refused = clients.viewer.post("/acid/api/compactions", json=REQUEST)
    assert (refused.status_code, refused.json()) == (403, {"detail": "Forbidden"})


def test_json_of_every_route(clients, scene):
    for path in GET_JSON:
        assert clients.viewer.get(path).status_code == 200, path
    api = clients.admin

    shown = api.get("/acid/api/compactions").json()
    assert shown["columns"] == ShowCompactionsRow.columns() and len(ShowCompactionsRow.hive_columns()) == 20
    rows = {r["compactionid"]: r for r in shown["compactions"]}
    assert set(rows) == {scene.compacted_id, scene.queued_id}
    wanted = ("dbname", "tabname", "partname", "type", "state", "workerhost", "poolname")
    assert tuple(rows[scene.queued_id][k] for k in wanted) == (
        "default", "customers", None, "MAJOR", "initiated", None, "default")
    assert tuple(rows[scene.compacted_id][k] for k in wanted) == (
        "default", "sales", "ds=2024-01-01", "MAJOR", "ready for cleaning", None, "default")
    assert rows[scene.compacted_id]["txnid"] and rows[scene.compacted_id]["hightestwriteid"] == 4
    assert [r["compactionid"] for r in api.get("/acid/api/compactions?table=sales").json()["compactions"]] == [
        scene.compacted_id]
    assert [r["compactionid"] for r in api.get(
        "/acid/api/compactions?database=default&state=initiated&type=major").json()["compactions"]] == [scene.queued_id]
    ordered = api.get("/acid/api/compactions?order_by=compactionid%20desc").json()["compactions"]
    assert [r["compactionid"] for r in ordered] == sorted(rows, reverse=True)
    assert api.get("/acid/api/compactions?order_by=nonsense").status_code == 400
    bad = api.get("/acid/api/compactions?state=sleeping")
    assert bad.status_code == 400 and "unknown compaction state 'sleeping'" in bad.json()["detail"]

    txns = {t["txnid"]: t for t in api.get("/acid/api/transactions").json()["transactions"]}
    assert txns[scene.open_txn] | {"startedtime": 0, "lastheartbeattime": 0} == {
        "txnid": scene.open_txn, "state": "OPEN", "startedtime": 0, "lastheartbeattime": 0, "user": "analyst",
        "host": "bi-host", "txn_type": "DEFAULT", "agent_info": "dashboard", "meta_info": None}
    assert txns[scene.aborted_txn]["state"] == "ABORTED" and txns[scene.aborted_txn]["meta_info"] == "ABORT_USER"

    (lock,) = api.get("/acid/api/locks?database=default&table=customers").json()["locks"]
    assert (lock["database"], lock["table"], lock["lock_state"], lock["lock_type"], lock["transaction_id"]) == (
        "default", "customers", "ACQUIRED", "SHARED_READ", scene.open_txn)
    assert api.get("/acid/api/locks?table=sales").json()["locks"] == []

    health = {(p["table"], p["partition"]): p for p in api.get("/acid/api/health").json()["partitions"]}
    assert set(health) == {("customers", None), ("sales", "ds=2024-01-01"), ("sales", "ds=2024-01-02")}
    compacted = health[("sales", "ds=2024-01-01")]
    assert compacted["base_write_id"] is not None and (compacted["deltas"], compacted["obsolete_dirs"]) == (2, 3)
    assert compacted["delta_bytes"] > 0 and compacted["delta_base_ratio"] == compacted["delta_bytes"] / compacted[
        "base_bytes"]
    assert compacted["current_compaction"] == f"MAJOR compaction {scene.compacted_id} ready for cleaning"
    assert health[("customers", None)]["current_compaction"] == f"MAJOR compaction {scene.queued_id} initiated"
    assert (health[("customers", None)]["deltas"], health[("customers", None)]["delta_base_ratio"]) == (2, None)
    assert health[("sales", "ds=2024-01-02")]["aborted_txns"] == 1

    table = api.get("/acid/api/health/default/sales").json()
    assert (table["table"], table["partitioned_by"], table["thresholds"]) == (
        "default.sales", ["ds"], {"delta_num_threshold": 10, "delta_pct_threshold": 0.1})
    assert [(p["partition"], p["deltas"]) for p in table["partitions"]] == [("ds=2024-01-01", 2), ("ds=2024-01-02", 1)]
    assert api.get("/acid/api/health/default/nope").status_code == 404

    why = api.get("/acid/api/why/default/customers").json()
    assert why["current_compaction"]["id"] == scene.queued_id and why["current_compaction"]["state"] == "initiated"
    assert any(f"compaction {scene.queued_id}" in s and "queued" in s for s in why["summary"])
    blocked = api.get("/acid/api/why/default/sales?partition=ds%3D2024-01-01").json()
    assert blocked["partition"] == "ds=2024-01-01" and blocked["evaluation"]["delta_count"] == 2
    assert [(b["compaction_id"], b["txn_id"], b["user"]) for b in blocked["cleanup_blockers"]] == [
        (scene.compacted_id, scene.open_txn, "analyst")]
    assert any(s.startswith("Cleanup is blocked") for s in blocked["summary"])
    needs_partition = api.get("/acid/api/why/default/sales")
    assert needs_partition.status_code == 400 and "name one partition" in needs_partition.json()["detail"]

    overview = api.get("/acid/api/overview").json()
    assert overview["queue"] == {"initiated": 1, "working": 0, "ready for cleaning": 1}
    assert (overview["transactions"], overview["locks"], overview["failed"]) == (
        {"open": 1, "aborted": 1}, {"acquired": 1, "waiting": 0}, 0)
    assert {(t["table"], t["partitions"], t["deltas"], t["obsolete_dirs"], t["aborted_txns"])
            for t in overview["tables"]} == {("customers", 1, 2, 0, 0), ("sales", 2, 3, 3, 1)}


def test_request_compaction_queues_or_says_why_not(clients, scene):
    api = clients.admin
    first = api.post("/acid/api/compactions", json=REQUEST)
    assert first.status_code == 200 and first.json()["accepted"] is True
    (queued,) = first.json()["results"]
    assert (queued["partition"], queued["type"], queued["state"]) == ("ds=2024-01-01", "MINOR", "initiated")
    (row,) = api.get("/acid/api/compactions?table=sales&state=initiated").json()["compactions"]
    assert (row["compactionid"], row["partname"], row["type"]) == (queued["compaction_id"], "ds=2024-01-01", "MINOR")
    assert row["initiatorid"] == "ui:admin"  # SHOW COMPACTIONS names the console and the Airflow user

    again = api.post("/acid/api/compactions", json=REQUEST).json()
    assert again["accepted"] is False
    assert again["results"][0]["message"] == (f"Compaction is already scheduled with state='initiated' and "
                                              f"id={queued['compaction_id']}")
    whole_table = api.post("/acid/api/compactions", json={"table": "sales"}).json()  # Hive 4: thresholds decide
    assert whole_table["accepted"] is False
    per_partition = {r["partition"]: (r["state"], r["message"]) for r in whole_table["results"]}
    assert per_partition["ds=2024-01-01"][0] == "refused" and "already scheduled" in per_partition["ds=2024-01-01"][1]
    assert per_partition["ds=2024-01-02"][0] == "not needed"
    assert "hive.compactor.delta.num.threshold=10" in per_partition["ds=2024-01-02"][1]

    assert api.post("/acid/api/compactions", json={**REQUEST, "table": "nope"}).status_code == 404
    missing = api.post("/acid/api/compactions", json={**REQUEST, "partition": "ds=2030-01-01"})
    assert missing.status_code == 404 and "partition ds=2030-01-01" in missing.json()["detail"]
    assert api.post("/acid/api/compactions", json={**REQUEST, "type": "rebalance"}).status_code == 422
    # CSRF: only JSON, and never from another site
    form = api.post("/acid/api/compactions", data=REQUEST)
    assert form.status_code == 415
    cross = api.post("/acid/api/compactions", json=REQUEST, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    other_origin = api.post("/acid/api/compactions", json=REQUEST, headers={"Origin": "https://evil.example"})
    assert other_origin.status_code == 403
    same_origin = api.post("/acid/api/compactions", headers={"Origin": "http://testserver",
                                                             "Sec-Fetch-Site": "same-origin"},
                           content=json.dumps({"table": "customers"}))
    assert same_origin.status_code == 415  # no JSON content type: refused before anything is queued
    assert {r["compactionid"] for r in api.get("/acid/api/compactions").json()["compactions"]} == {
        scene.compacted_id, scene.queued_id, queued["compaction_id"]}


@pytest.mark.parametrize("empty_db_url", ["sqlite"], indirect=True)
def test_pages(clients, scene):
    page = clients.admin.get("/acid/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'href="/acid/static/acid.css"' in page.text and 'href="/acid/tables/default/sales"' in page.text
    assert '<span class="badge s-initiated">initiated</span>' in page.text
    assert "<fieldset >" in page.text or "<fieldset>" in page.text  # admin: the request form is enabled
    viewer_page = clients.viewer.get("/acid/").text
    assert "<fieldset disabled>" in viewer_page and "may not run <code>acid_manual_compaction</code>" in viewer_page

    table = clients.admin.get("/acid/tables/default/sales?partition=ds%3D2024-01-02").text
    assert table.count('<svg class="chart"') == 3 and "Bytes read → written per run" in table
    assert "threshold 10" in table and "Compactions over time" in table
    assert 'name="partition" value="ds=2024-01-02"' in table  # the row's "compact…" link fills in the form
    why = clients.admin.get("/acid/tables/default/sales/why?partition=ds%3D2024-01-01").text
    assert "default.sales/ds=2024-01-01" in why and "Looking at the directory now" in why

    history = clients.admin.get("/acid/compactions?state=initiated").text
    assert re.search(r'<option selected>initiated</option>', history)
    queue = clients.admin.get("/acid/compactions?limit=1").text  # the limit cuts the history, never the queue
    assert "ready for cleaning</span>" in queue and "initiated</span>" in queue
    assert "Transactions" in clients.admin.get("/acid/transactions").text
    assert "not compact ACID tables" in clients.admin.get("/acid/dag/some_other_dag").text
    cleanup = clients.admin.get("/acid/dag/acid_cleanup").text
    assert "Ready for cleaning" in cleanup and "What blocks cleanup" in cleanup
    assert re.search(rf'<td class="num">{scene.open_txn}</td><td>analyst</td>', cleanup)

    missing = clients.admin.get("/acid/tables/default/nope")
    assert missing.status_code == 404 and "table default.nope does not exist" in missing.text
    assert "<title>Error 404" in missing.text


def test_an_unusable_metastore_is_a_clear_503(clients, tmp_path, monkeypatch):
    empty = tmp_path / "empty.db"  # a database without the metastore schema
    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", acid_connection(f"sqlite:///{empty}", tmp_path))
    answer = clients.admin.get("/acid/api/compactions")
    assert answer.status_code == 503
    assert "has no schema yet" in answer.json()["detail"] and "airflow-acid init" in answer.json()["detail"]
    page = clients.admin.get("/acid/compactions")
    assert page.status_code == 503 and "The ACID metastore cannot be read" in page.text

    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", json.dumps({"conn_type": "postgres"}))
    unconfigured = clients.admin.get("/acid/api/transactions")
    assert unconfigured.status_code == 503 and "names no metastore database" in unconfigured.json()["detail"]


def test_plan_dry_run_in_the_console_writes_nothing(clients, scene):
    from tests.compactor.test_dry_run import metastore_fingerprint

    ms = scene.warehouse.metastore
    before = metastore_fingerprint(ms)
    plan = clients.viewer.get("/acid/api/plan").json()
    page = clients.viewer.get("/acid/plan").text
    assert metastore_fingerprint(ms) == before
    waiting = [p for p in plan["plans"] if p["compaction_id"] == scene.queued_id]
    assert waiting and waiting[0]["steps"] and waiting[0]["estimate"]["bytes_in"] > 0 and waiting[0]["admitted"]
    assert "The Worker would run, in this order" in page and 'id="run-order"' in page


def test_request_the_worker_would_refuse_is_not_queued_unless_asked(clients, scene):
    """The console checks what the Worker would refuse before queueing (a MINOR of one delta): not queued, with the
    Worker's reason; ``queue_anyway`` queues it as Hive does, recorded as the console's user."""
    wh = scene.warehouse
    wh.create_table("one_delta", [("id", "int")])
    with wh.transaction() as txn:
        txn.insert("one_delta", [(1,)])
    body = {"database": "default", "table": "one_delta", "type": "minor"}
    refused = clients.admin.post("/acid/api/compactions", json=body).json()
    assert refused["accepted"] is False
    [result] = refused["results"]
    assert (result["state"], result["compaction_id"]) == ("not queued", None)
    assert "minor compaction needs more than one current delta; found 1" in result["message"]
    assert clients.admin.get("/acid/api/compactions?table=one_delta").json()["compactions"] == []

    anyway = clients.admin.post("/acid/api/compactions", json={**body, "queue_anyway": True}).json()
    assert anyway["accepted"] is True
    [row] = clients.admin.get("/acid/api/compactions?table=one_delta").json()["compactions"]
    assert (row["state"], row["type"], row["initiatorid"]) == ("initiated", "MINOR", "ui:admin")
