"""The plan dry run in the console: what the next Initiator cycle would queue and what the Worker would run, in the
order of the next compaction run within the ``[acid]`` budgets, with each plan's inputs, outputs, bytes and
estimated core-seconds. Reads only (the same dry run as ``airflow-acid plan``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from airflow_acid.airflow_config import acid_config
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.plugins.dag_state import dag_states
from airflow_acid.plugins.routes import WarehouseDep
from airflow_acid.plugins.security import authenticated
from airflow_acid.plugins.templating import render
from airflow_acid.services.reports import next_run

router = APIRouter(dependencies=[authenticated])


def next_run_dict(warehouse: AcidWarehouse) -> dict[str, Any]:
    """The dry run as a JSON-friendly dict: would_queue, declined, plans (in running order)."""
    return next_run(warehouse.metastore, acid_config().budgets, filesystem=warehouse.filesystem).to_xcom()


@router.get("/api/plan")
def plan_json(warehouse: WarehouseDep) -> dict[str, Any]:
    """Dry run of the next Initiator cycle and compaction run; writes nothing. ``dags``: whether the ACID DAGs are
    paused and when each runs next (the dry run happens only when acid_compaction runs)."""
    return {**next_run_dict(warehouse), "dags": [s.to_dict() for s in dag_states()]}


@router.get("/plan", response_class=HTMLResponse)
def plan_page(request: Request, warehouse: WarehouseDep) -> HTMLResponse:
    return render(request, "plan.html", {"plan": next_run_dict(warehouse), "dags": dag_states()})
