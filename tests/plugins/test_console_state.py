"""What the console tells about the state of the system (issue 31): per compaction the recorded run figures, the
Airflow task instance that ran it (link to its log) and its Spark application (link to the Spark UI through
``[acid] spark_ui_url``), who asked for it, job time apart from cleaning time; sorting and an enqueue-date range on
the queue and history (pages and JSON); whether the ACID DAGs are paused and when they run next; the Why page in
plain words."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from airflow_acid.plugins.compaction_view import requester, task_log_url
from airflow_acid.plugins.dag_state import DagState
from airflow_acid.plugins.formats import percent, size
from tests.plugins.console_support import SPARK_APP_ID, TASK

LOG_URL = "/dags/acid_compaction/runs/scheduled__2024-01-02T00%3A00%3A00%2B00%3A00/tasks/compact/mapped/0?try_number=1"
SPARK_URL = f"http://spark-history.example:18080/history/{SPARK_APP_ID}/jobs/"


def test_one_unit_system_and_percentages_that_never_hide_a_difference():
    assert [size(n) for n in (818, 819, 1536, 3 * 1024 ** 2, 5 * 1024 ** 4)] == [
        "818 B", "819 B", "1.5 KiB", "3.0 MiB", "5.0 TiB"]
    assert [percent(r) for r in (819 / 818, 0.25, 0.05, 0.0004, 0.0, None)] == [
        "100%", "25%", "5.0%", "<0.1%", "0%", ""]


def test_requesters_and_log_links_read_as_people_expect():
    assert requester("web1", "ui:alice") == {"who": "alice", "via": "console", "host": "web1"}
    assert requester("sched", "dag:bob") == {"who": "bob", "via": "DAG run", "host": "sched"}
    assert requester("sched", "initiator") == {"who": "Initiator", "via": "Initiator", "host": "sched"}
    assert requester("hs2", "42") == {"who": "42", "via": None, "host": "hs2"}  # Hive's thread id
    assert requester(None, None) == {"who": None, "via": None, "host": None}
    assert task_log_url("/af", TASK) == "/af" + LOG_URL
    unmapped = TASK.__class__("acid_manual_compaction", "manual__x", "compact", -1, 2)
    assert task_log_url("", unmapped) == "/dags/acid_manual_compaction/runs/manual__x/tasks/compact?try_number=2"


def test_dag_state_sentences():
    when = datetime(2026, 11, 27, 12, 30, tzinfo=UTC)
    assert DagState("acid_compaction", True, True, when).describe() == (
        "acid_compaction is paused: it runs no more until you unpause it")
    assert DagState("acid_cleanup", True, False, when).describe() == "acid_cleanup runs next at 2026-11-27 12:30:00 UTC"
    assert "dag-processor" in DagState("acid_housekeeping", False).describe()
    assert DagState("acid_cleanup", True, False, when).to_dict()["next_run"] == "2026-11-27T12:30:00+00:00"


def test_figures_task_and_spark_links_in_json_and_pages(clients, scene):
    api = clients.viewer
    rows = {r["compactionid"]: r for r in api.get("/acid/api/compactions").json()["compactions"]}
    done = rows[scene.compacted_id]
    assert (done["dagid"], done["runid"], done["taskid"], done["mapindex"], done["trynumber"]) == (
        TASK.dag_id, TASK.run_id, TASK.task_id, 0, 1)
    assert done["filesin"] and done["bytesin"] and done["rowsout"] and done["deltasbefore"] == 3
    links = done["links"]
    assert links["task"]["log_url"] == LOG_URL and links["task"]["state"] is None  # no such run in Airflow's DB
    assert (links["spark_app_id"], links["spark_ui_url"]) == (SPARK_APP_ID, SPARK_URL)
    assert links["job_ms"] == int(done["wallseconds"] * 1000) and links["clean_ms"] >= 0  # waits for cleaning
    queued = rows[scene.queued_id]["links"]
    assert queued["task"] is None and queued["spark_app_id"] is None and queued["job_ms"] is None

    page = clients.admin.get("/acid/compactions").text
    details = page[page.index(f'id="queue-{scene.compacted_id}-details"'):]
    details = details[:details.index("</tr>")]
    assert f'href="{LOG_URL}"' in details and f'href="{SPARK_URL}"' in details
    assert "acid_compaction › compact [0] · try 1" in details and "Deltas</dt><dd>3 → 0" in details
    assert re.search(r"Bytes</dt><dd>[\d.]+ (B|KiB) → [\d.]+ (B|KiB)</dd>", details)
    assert "waiting" in page  # the cleaning column of a 'ready for cleaning' row
    for path in ("/acid/", "/acid/tables/default/sales", "/acid/dag/acid_compaction"):
        assert 'aria-controls="' in clients.admin.get(path).text, path  # every compaction table has the details


def test_sorting_and_an_enqueue_date_range(clients, scene):
    api = clients.viewer
    ids = sorted([scene.compacted_id, scene.queued_id])
    ascending = api.get("/acid/api/compactions?order_by=compactionid%20asc").json()["compactions"]
    assert [r["compactionid"] for r in ascending] == ids
    today = datetime.now(UTC).date()
    tomorrow, yesterday = today + timedelta(days=1), today - timedelta(days=1)

    def ids_between(query: str) -> list[int]:
        return sorted(r["compactionid"] for r in api.get(f"/acid/api/compactions?{query}").json()["compactions"])

    assert ids_between(f"enqueued_from={today}&enqueued_to={today}") == ids  # "to" a date: the whole day
    assert ids_between(f"enqueued_from={tomorrow}") == [] and ids_between(f"enqueued_to={yesterday}") == []
    assert ids_between(f"enqueued_from={today}T00:00&enqueued_to={tomorrow}T00:00") == ids
    bad = api.get("/acid/api/compactions?enqueued_from=last%20week")
    assert bad.status_code == 400 and "'last week' is not a date" in bad.json()["detail"]

    page = clients.admin.get(f"/acid/compactions?order_by=compactionid%20asc&enqueued_from={today}").text
    assert 'aria-sort="ascending"' in page and f'value="{today}"' in page
    assert "order_by=compactionid+desc" in page  # clicking the sorted header again turns the order round
    queue = page[page.index('id="queue-table"'):page.index('id="history"')]
    assert [int(i) for i in re.findall(r'<tbody class="compaction" id="queue-(\d+)"', queue)] == ids
    assert clients.admin.get("/acid/compactions?enqueued_to=soon").status_code == 400


def test_dag_state_is_shown_and_served(clients, scene):
    dags = clients.viewer.get("/acid/api/overview").json()["dags"]
    assert [d["dag_id"] for d in dags] == ["acid_compaction", "acid_cleanup", "acid_housekeeping"]
    assert all(d["known"] is False and "dag-processor" in d["summary"] for d in dags)  # never parsed here
    assert [d["dag_id"] for d in clients.viewer.get("/acid/api/plan").json()["dags"]] == [d["dag_id"] for d in dags]
    queued = clients.admin.post("/acid/api/compactions", json={"table": "sales", "partition": "ds=2024-01-02",
                                                               "type": "major"}).json()
    assert [d["dag_id"] for d in queued["dags"]] == ["acid_compaction"]
    for path in ("/acid/", "/acid/plan", "/acid/dag/acid_cleanup"):
        assert 'class="dag-status"' in clients.viewer.get(path).text and "not parsed yet" in clients.viewer.get(
            path).text, path


@pytest.mark.parametrize("empty_db_url", ["sqlite"], indirect=True)
def test_why_pages_say_it_in_words(clients, scene):
    why = clients.viewer.get("/acid/tables/default/sales/why?partition=ds%3D2024-01-01").text
    queued = why[why.index("<dt>Queued</dt>"):why.index("<dt>Thresholds say</dt>")]
    assert f"MAJOR compaction {scene.compacted_id}" in queued and "ready for cleaning</span>" in queued
    assert "None" not in re.sub(r"<[^>]+>", " ", why) and "would_clean" not in why and "_" not in queued
    customers = clients.viewer.get("/acid/tables/default/customers/why").text
    assert "already queued" in customers and "initiated</span>" in customers
    # one unit system: the thresholds' reasons and the Next run page write sizes as the tables do, never raw bytes
    plan = clients.viewer.get("/acid/plan").text
    assert "current delta(s) of" in why + customers + plan
    for page in (why, customers, plan):
        assert not re.search(r"\d bytes", page), re.findall(r".{60}\d bytes.{20}", page)
