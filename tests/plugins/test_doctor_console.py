"""The doctor's console page and API (issue 33 item 3) through Airflow's real authentication: every logged-in user
reads the findings, a viewer cannot fix (403, and no buttons), the admin applies a fix (same-origin JSON, recorded
in Airflow's audit log); the paused-DAG check, which only the console can make. On SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import json

import sqlalchemy as sa

from airflow_acid.plugins.dag_state import DagState
from airflow_acid.plugins.routes import doctor as doctor_routes
from tests.services.doctor_support import Planter


def _audit(event: str) -> list[tuple[str, dict]]:
    from airflow.models.log import Log
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(select(Log.owner, Log.extra).where(Log.event == event).order_by(Log.id)).all()
    return [(owner, json.loads(extra)) for owner, extra in rows]


def test_viewer_reads_admin_fixes(clients, scene, empty_db_url):
    engine = sa.create_engine(empty_db_url)
    try:
        assert clients.viewer.get("/acid/api/doctor").json() == {"findings": []}
        orphan = Planter(engine).queue("default", "dropped_table", "i")
        finding_id = f"orphan-queue-row:cq={orphan}"
        seen = clients.viewer.get("/acid/api/doctor")
        assert seen.status_code == 200
        assert [(f["id"], f["compaction_ids"]) for f in seen.json()["findings"]] == [(finding_id, [orphan])]
        page = clients.viewer.get("/acid/doctor")
        assert page.status_code == 200 and finding_id in page.text and "data-acid-action" not in page.text
        url = "/acid/api/doctor/fix"
        refused = clients.viewer.post(url, params={"finding": finding_id}, json={})
        assert (refused.status_code, refused.json()) == (403, {"detail": "Forbidden"})
        assert clients.anonymous.post(url, params={"finding": finding_id}, json={}).status_code == 401
        assert clients.admin.post(url, params={"finding": finding_id}, json={},
                                  headers={"Origin": "https://evil.example"}).status_code == 403
        assert [f["id"] for f in clients.viewer.get("/acid/api/doctor").json()["findings"]] == [finding_id]

        admin_page = clients.admin.get("/acid/doctor").text
        assert f'data-acid-action="doctor-fix" data-id="{finding_id}"' in admin_page
        assert '/doctor" aria-current="page">Doctor</a>' in admin_page
        before = len(_audit("acid_doctor_fix"))
        done = clients.admin.post(url, params={"finding": finding_id}, json={})
        assert done.status_code == 200, done.text
        assert done.json() == {"finding_id": finding_id, "applied": True,
                               "message": f"queue row {orphan} is deleted"}
        assert len(_audit("acid_doctor_fix")) == before + 1 and _audit("acid_doctor_fix")[-1][0] == "admin"
        assert clients.viewer.get("/acid/api/doctor").json() == {"findings": []}
        assert clients.admin.post(url, params={"finding": finding_id}, json={}).status_code == 404
    finally:
        engine.dispose()


def test_initiated_compactions_behind_a_paused_dag(clients, scene, monkeypatch):
    monkeypatch.setattr(doctor_routes, "dag_states",
                        lambda ids: [DagState(dag_id, known=True, paused=True) for dag_id in ids])
    (finding,) = clients.viewer.get("/acid/api/doctor").json()["findings"]
    assert finding["id"] == "paused-dag:acid_compaction" and scene.queued_id in finding["compaction_ids"]
    assert "unpause" in finding["advice"]
