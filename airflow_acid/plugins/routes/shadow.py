"""The shadow report in the console: per table/partition over a time range, airflow-acid's recorded decisions beside
what Hive's compactor did (the same report as ``airflow-acid shadow report``). Reads only."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from airflow_acid.airflow_config import acid_config
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.plugins.routes import WarehouseDep
from airflow_acid.plugins.security import authenticated
from airflow_acid.plugins.templating import render
from airflow_acid.services.shadow import shadow_report

router = APIRouter(dependencies=[authenticated])


def shadow_dict(warehouse: AcidWarehouse, since: int | None, until: int | None) -> dict[str, Any]:
    """The report of [since, until] (epoch ms; default the last 7 days) as JSON, with the configured mode."""
    report = shadow_report(warehouse.metastore, since, until)
    return {**report.to_dict(), "mode": acid_config().mode}


@router.get("/api/shadow")
def shadow_json(warehouse: WarehouseDep, since: int | None = Query(None, description="epoch ms"),
                until: int | None = Query(None, description="epoch ms")) -> dict[str, Any]:
    """airflow-acid's decisions compared with Hive's compactor, per table/partition, with the counts per category."""
    return shadow_dict(warehouse, since, until)


@router.get("/shadow", response_class=HTMLResponse)
def shadow_page(request: Request, warehouse: WarehouseDep, since: int | None = None,
                until: int | None = None) -> HTMLResponse:
    return render(request, "shadow.html", {"report": shadow_dict(warehouse, since, until)})
