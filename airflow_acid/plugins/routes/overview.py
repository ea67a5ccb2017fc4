"""The console's front page (queue, transaction and lock counts, table health at a glance, the request form) and
the view shown on each DAG's page: what that ACID DAG works on (queue, cleanup backlog, transactions)."""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from airflow_acid.acid.codes import CompactionState
from airflow_acid.plugins import ACID_DAG_IDS
from airflow_acid.plugins.access import get_warehouse
from airflow_acid.plugins.dag_state import SCHEDULED_DAG_IDS, dag_states
from airflow_acid.plugins.routes import WarehouseDep
from airflow_acid.plugins.routes.compactions import CompactionFilters, queue_and_history, views
from airflow_acid.plugins.routes.health import HealthFilters
from airflow_acid.plugins.routes.transactions import txn_dict
from airflow_acid.plugins.security import authenticated, user_may_request
from airflow_acid.plugins.summary import cleanup_blockers, overview
from airflow_acid.plugins.templating import render

RECENT = 20

router = APIRouter(dependencies=[authenticated])


@router.get("/api/overview")
def overview_json(filters: Annotated[HealthFilters, Query()], warehouse: WarehouseDep) -> dict[str, Any]:
    """Counts (queue by state, failures, transactions, locks), per-table health totals, and whether the ACID DAGs
    are paused and when each runs next."""
    return {**overview(warehouse, filters.database), "dags": [s.to_dict() for s in dag_states()]}


@router.get("/", response_class=HTMLResponse)
def overview_page(request: Request, user: GetUserDep, filters: Annotated[HealthFilters, Query()],
                  warehouse: WarehouseDep) -> HTMLResponse:
    queue, _ = queue_and_history(warehouse, CompactionFilters(database=filters.database, limit=1))
    return render(request, "overview.html", {
        **overview(warehouse, filters.database), "queue_rows": views(request, queue[:RECENT]),
        "queue_total": len(queue), "dags": dag_states(),
        "may_request": user_may_request(request, user), "request_defaults": {"database": filters.database}})


@router.get("/dag/{dag_id}", response_class=HTMLResponse)
def dag_page(request: Request, user: GetUserDep, dag_id: str) -> HTMLResponse:
    """The "ACID" tab of a DAG page (Airflow 3.3 shows it on every DAG; only the acid_* DAGs get content, and only
    they open the metastore)."""
    context: dict[str, Any] = {"dag_id": dag_id, "acid_dag": dag_id in ACID_DAG_IDS}
    if not context["acid_dag"]:
        return render(request, "dag.html", context)
    context["dags"] = dag_states((dag_id,) if dag_id in SCHEDULED_DAG_IDS else ("acid_compaction",))
    warehouse = get_warehouse(request)
    ms = warehouse.metastore
    if dag_id in ("acid_compaction", "acid_manual_compaction"):
        queue, history = queue_and_history(warehouse, CompactionFilters(limit=RECENT))
        context["queue_rows"] = views(request, [r for r in queue
                                                if r.state != CompactionState.READY_FOR_CLEANING.display])
        context["history_rows"] = views(request, history)
    if dag_id == "acid_manual_compaction":
        context["may_request"] = user_may_request(request, user)
        context["request_defaults"] = {}
    elif dag_id == "acid_cleanup":
        ready = ms.compactions.show_compactions(state=CompactionState.READY_FOR_CLEANING)
        context["cleanup_rows"] = views(request, ready)
        context["blockers"], context["blocker_notes"] = cleanup_blockers(warehouse, ready)
        context["transactions"] = [txn_dict(t) for t in ms.txns.show_transactions()]
    elif dag_id == "acid_housekeeping":
        context["transactions"] = [txn_dict(t) for t in ms.txns.show_transactions()]
        context["locks"] = ms.locks.show_locks(extended=True)
    return render(request, "dag.html", context)
