"""The doctor's page (docs/operations.md#the-doctor): the findings of :mod:`airflow_acid.services.doctor`, with
the paused-DAG check only the console can make (it sees Airflow's database). Reading is open to every logged-in
user; applying a fix is an action like the others (:mod:`.actions`): it needs the permissions of both abort
actions, a same-origin JSON request, and is recorded in Airflow's audit log."""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from airflow_acid.metastore.store import Metastore
from airflow_acid.plugins.audit import audited
from airflow_acid.plugins.dag_state import dag_states, paused
from airflow_acid.plugins.routes import WarehouseDep
from airflow_acid.plugins.routes.actions import ui_user
from airflow_acid.plugins.security import authenticated, csrf_protected, may_abort_transaction, may_request_compaction
from airflow_acid.plugins.templating import render
from airflow_acid.services.doctor import COMPACTION_DAG_ID, Finding, apply_fix, diagnose

router = APIRouter(dependencies=[authenticated])

FindingId = Annotated[str, Query(min_length=3, max_length=200, description="the finding's id, e.g. stuck-working:cq=12")]


def paused_dags() -> set[str]:
    """The ACID DAGs Airflow has paused (unknown ones count as not paused)."""
    return {s.dag_id for s in paused(dag_states((COMPACTION_DAG_ID,)))}


def findings(metastore: Metastore) -> list[Finding]:
    return diagnose(metastore, paused_dags=paused_dags())


@router.get("/api/doctor")
def doctor_json(warehouse: WarehouseDep) -> dict[str, Any]:
    """Every finding (``airflow-acid doctor --json`` plus the paused-DAG check). Reads only."""
    return {"findings": [f.to_dict() for f in findings(warehouse.metastore)]}


@router.post("/api/doctor/fix",
             dependencies=[may_request_compaction, may_abort_transaction, csrf_protected, audited("doctor_fix")])
def doctor_fix_json(finding: FindingId, user: GetUserDep, warehouse: WarehouseDep) -> dict[str, Any]:
    """Apply the fix of finding ``finding`` as found now; ``applied`` is false with the reason when it has no
    automatic fix or the action refused; an id the doctor does not find now is a 404."""
    return apply_fix(warehouse.metastore, finding, user=ui_user(user), paused_dags=paused_dags()).to_dict()


@router.get("/doctor", response_class=HTMLResponse)
def doctor_page(request: Request, warehouse: WarehouseDep) -> HTMLResponse:
    return render(request, "doctor.html", {"findings": [f.to_dict() for f in findings(warehouse.metastore)]})
