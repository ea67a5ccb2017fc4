"""The console's front page (queue, transaction and lock counts, table health at a glance, the request form) and
the view shown on each DAG's page: what that ACID DAG works on (queue, cleanup backlog, transactions)."""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from airflow_acid.metastore.codes import CompactionState
from airflow_acid.plugins import ACID_DAG_IDS
from airflow_acid.plugins.access import get_warehouse
from airflow_acid.plugins.routes import WarehouseDep
from airflow_acid.plugins.routes.health import HealthFilters
from airflow_acid.plugins.routes.transactions import txn_dict
from airflow_acid.plugins.security import authenticated, user_may_request
from airflow_acid.plugins.summary import cleanup_blockers, overview
from airflow_acid.plugins.templating import render

RECENT = 20

router = APIRouter(dependencies=[authenticated])


@router.get("/api/overview")
def overview_json(filters: Annotated[HealthFilters, Query()], warehouse: WarehouseDep) -> dict[str, Any]:
    """Counts (queue by state, failures, transactions, locks) and per-table health totals."""
    return overview(warehouse, filters.database)


@router.get("/", response_class=HTMLResponse)
def overview_page(request: Request, user: GetUserDep, filters: Annotated[HealthFilters, Query()],
                  warehouse: WarehouseDep) -> HTMLResponse:
    compactions = warehouse.metastore.compactions
    active = sorted((r for state in CompactionState if state.is_queued
                     for r in compactions.show_compactions(db=filters.database, state=state)),
                    key=lambda r: r.compactionid, reverse=True)
    return render(request, "overview.html", {
        **overview(warehouse, filters.database), "queue_rows": active[:RECENT],
        "may_request": user_may_request(request, user), "request_defaults": {"database": filters.database}})


@router.get("/dag/{dag_id}", response_class=HTMLResponse)
def dag_page(request: Request, user: GetUserDep, dag_id: str) -> HTMLResponse:
    """The "ACID" tab of a DAG page (Airflow 3.3 shows it on every DAG; only the acid_* DAGs get content, and only
    they open the metastore)."""
    context: dict[str, Any] = {"dag_id": dag_id, "acid_dag": dag_id in ACID_DAG_IDS}
    if not context["acid_dag"]:
        return render(request, "dag.html", context)
    warehouse = get_warehouse(request)
    ms = warehouse.metastore
    if dag_id in ("acid_compaction", "acid_manual_compaction"):
        rows = ms.compactions.show_compactions(limit=200)
        context["queue_rows"] = [r for r in rows if r.state in ("initiated", "working")]
        context["history_rows"] = [r for r in rows if r.state not in ("initiated", "working")][:RECENT]
    if dag_id == "acid_manual_compaction":
        context["may_request"] = user_may_request(request, user)
        context["request_defaults"] = {}
    elif dag_id == "acid_cleanup":
        context["cleanup_rows"] = ms.compactions.show_compactions(state=CompactionState.READY_FOR_CLEANING)
        context["blockers"], context["blocker_notes"] = cleanup_blockers(warehouse, context["cleanup_rows"])
        context["transactions"] = [txn_dict(t) for t in ms.txns.show_transactions()]
    elif dag_id == "acid_housekeeping":
        context["transactions"] = [txn_dict(t) for t in ms.txns.show_transactions()]
        context["locks"] = ms.locks.show_locks(extended=True)
    return render(request, "dag.html", context)
