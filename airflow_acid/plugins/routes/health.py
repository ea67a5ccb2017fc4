"""Table and partition health (deltas, delta/base ratio, obsolete and aborted directories, where compaction stands)
with its charts, and "why": why a partition was or was not compacted and what blocks its cleanup. The work is done
by :mod:`airflow_acid.services`; this module only serves it."""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.settings import table_thresholds
from airflow_acid.plugins.charts import figures_chart, history_chart, partition_chart
from airflow_acid.plugins.routes import Filters, WarehouseDep
from airflow_acid.plugins.routes.compactions import views
from airflow_acid.plugins.security import authenticated, user_may_request
from airflow_acid.plugins.templating import render
from airflow_acid.services import explain, table_health, warehouse_health

HISTORY_ROWS = 500

router = APIRouter(dependencies=[authenticated])


class HealthFilters(Filters):
    database: str | None = None


class PartitionFilter(Filters):
    partition: str | None = None


def _table_health(warehouse: AcidWarehouse, database: str, table: str) -> dict[str, Any]:
    info = warehouse.transactional_table(f"{database}.{table}")
    thresholds = table_thresholds(warehouse.conf, info.properties, table=info.full_name)
    return {"table": info.full_name, "partitioned_by": [k.name for k in info.partition_keys],
            "location": info.location,
            "thresholds": {"delta_num_threshold": thresholds.delta_num_threshold,
                           "delta_pct_threshold": thresholds.delta_pct_threshold},
            "partitions": [row.to_dict() for row in table_health(warehouse, info.full_name)]}


def _explain(warehouse: AcidWarehouse, database: str, table: str, partition: str | None) -> dict[str, Any]:
    return explain(warehouse, f"{database}.{table}", partition).to_dict()


@router.get("/api/health")
def warehouse_health_json(filters: Annotated[HealthFilters, Query()], warehouse: WarehouseDep) -> dict[str, Any]:
    """Every partition of every transactional table (of ``database``): deltas, ratio, dirs, compaction."""
    return {"partitions": [row.to_dict() for row in warehouse_health(warehouse, filters.database)]}


@router.get("/api/health/{database}/{table}")
def table_health_json(database: str, table: str, warehouse: WarehouseDep) -> dict[str, Any]:
    """One table's partitions, with the Initiator's thresholds for the table."""
    return _table_health(warehouse, database, table)


@router.get("/api/why/{database}/{table}")
def why_json(database: str, table: str, where: Annotated[PartitionFilter, Query()],
             warehouse: WarehouseDep) -> dict[str, Any]:
    """Why (not) compacted, what blocks cleanup: decision, current compaction, cleanup blockers, summary."""
    return _explain(warehouse, database, table, where.partition)


@router.get("/tables/{database}/{table}", response_class=HTMLResponse)
def table_page(request: Request, user: GetUserDep, database: str, table: str,
               where: Annotated[PartitionFilter, Query()], warehouse: WarehouseDep) -> HTMLResponse:
    """The table's health page; ``partition`` pre-fills the request form (the "compact" links of each row)."""
    health = _table_health(warehouse, database, table)
    info_db, info_table = health["table"].split(".", 1)
    history = warehouse.metastore.compactions.show_compactions(db=info_db, table=info_table, limit=HISTORY_ROWS)
    limits = health["thresholds"]
    return render(request, "table.html", {
        **health, "database": info_db, "name": info_table, "history": views(request, history[:50]),
        "partition_chart": partition_chart(health["partitions"], limits["delta_num_threshold"],
                                           limits["delta_pct_threshold"]),
        "history_chart": history_chart(history),
        "figures_chart": figures_chart(history),
        "may_request": user_may_request(request, user),
        "request_defaults": {"database": info_db, "table": info_table, "partition": where.partition}})


@router.get("/tables/{database}/{table}/why", response_class=HTMLResponse)
def why_page(request: Request, database: str, table: str, where: Annotated[PartitionFilter, Query()],
             warehouse: WarehouseDep) -> HTMLResponse:
    return render(request, "why.html", {"why": _explain(warehouse, database, table, where.partition)})
