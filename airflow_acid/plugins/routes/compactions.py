"""The compaction queue and history (SHOW COMPACTIONS with its filters and Hive's 20 columns), compaction
requests (ALTER TABLE … COMPACT), queued directly in the metastore by :func:`request_compaction`, and undoing a
compaction inside its delayed-cleanup window (:func:`undo_compaction`)."""

from __future__ import annotations

from dataclasses import asdict
from operator import attrgetter
from typing import Annotated, Any, Literal

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.compactions import ShowCompactionsRow
from airflow_acid.plugins.routes import Filters, WarehouseDep
from airflow_acid.plugins.security import authenticated, csrf_protected, may_request_compaction, user_may_request
from airflow_acid.plugins.templating import render
from airflow_acid.services import request_compaction, requester_id, undo_compaction

STATES = [s.display for s in CompactionState]
TYPES = [t.display.lower() for t in CompactionType]

router = APIRouter(dependencies=[authenticated])


class CompactionFilters(Filters):
    """SHOW COMPACTIONS [DATABASE db] [tbl [PARTITION (…)]] [POOL p] [TYPE t] [STATUS s] … LIMIT n."""

    database: str | None = None
    table: str | None = None
    partition: str | None = None
    state: str | None = Field(None, description=f"one of {', '.join(STATES)}")
    type: str | None = Field(None, description="major, minor, …")
    pool: str | None = None
    order_by: str | None = Field(None, description="SHOW COMPACTIONS columns, e.g. 'enqueuetime desc, compactionid' "
                                                   "(default: most recently active first)")
    limit: int = Field(200, ge=1, le=10_000)


class CompactionRequestBody(BaseModel):
    """ALTER TABLE ``database``.``table`` [PARTITION (``partition``)] COMPACT ``type``."""

    database: str = Field("default", min_length=1, max_length=128)
    table: str = Field(..., min_length=1, max_length=256)
    partition: str | None = Field(None, description="Hive partition name, e.g. ds=2024-01-01 (empty: whole table)")
    type: Literal["minor", "major"] = "major"
    queue_anyway: bool = Field(False, description="queue even what the Worker would refuse (nothing to compact), as "
                                                  "Hive does; by default such a request is not queued")


def show_compactions(warehouse: AcidWarehouse, f: CompactionFilters) -> list[ShowCompactionsRow]:
    return warehouse.metastore.compactions.show_compactions(
        db=f.database, table=f.table, partition=f.partition, state=f.state, type=f.type, pool=f.pool,
        order_by=f.order_by, limit=f.limit)


def queue_and_history(warehouse: AcidWarehouse, f: CompactionFilters
                      ) -> tuple[list[ShowCompactionsRow], list[ShowCompactionsRow]]:
    """(every queued row, the newest ``f.limit`` history rows) matching ``f``, newest first.

    Asked state by state: Hive's default order puts rows that never started last, so one limited query could
    drop 'initiated' rows behind a long history.
    """
    wanted = CompactionState.parse(f.state) if f.state else None
    queue: list[ShowCompactionsRow] = []
    history: list[ShowCompactionsRow] = []
    for state in CompactionState:
        if wanted is not None and state is not wanted:
            continue
        rows = warehouse.metastore.compactions.show_compactions(
            db=f.database, table=f.table, partition=f.partition, state=state, type=f.type, pool=f.pool,
            order_by="compactionid desc", limit=None if state.is_queued else f.limit)
        (queue if state.is_queued else history).extend(rows)
    by_id = attrgetter("compactionid")
    return sorted(queue, key=by_id, reverse=True), sorted(history, key=by_id, reverse=True)[: f.limit]


def initiator_id(user: str) -> str:
    """``<host>-ui:<user>``: SHOW COMPACTIONS splits it into initiator host and id, naming who asked."""
    return requester_id("ui", user)


@router.get("/api/compactions")
def compactions_json(filters: Annotated[CompactionFilters, Query()], warehouse: WarehouseDep) -> dict[str, Any]:
    """SHOW COMPACTIONS as JSON: Hive's column names, times in epoch ms, most recently active first."""
    rows = show_compactions(warehouse, filters)
    return {"columns": ShowCompactionsRow.columns(), "compactions": [asdict(r) for r in rows]}


@router.post("/api/compactions", dependencies=[may_request_compaction, csrf_protected])
def request_compaction_json(body: CompactionRequestBody, user: GetUserDep, warehouse: WarehouseDep) -> dict[str, Any]:
    """Queue a compaction; ``accepted`` is false when Hive's rules refused it or the Worker would refuse it (nothing
    to compact; ``queue_anyway`` queues it regardless) — the messages say why."""
    results = request_compaction(warehouse, f"{body.database}.{body.table}", (body.partition or "").strip() or None,
                                 body.type, initiator_id=initiator_id(user.get_name()),
                                 queue_anyway=body.queue_anyway)
    return {"accepted": any(r.compaction_id is not None for r in results), "results": [r.to_dict() for r in results]}


@router.post("/api/compactions/{compaction_id}/undo", dependencies=[may_request_compaction, csrf_protected])
def undo_compaction_json(compaction_id: Annotated[int, Path(ge=1)], user: GetUserDep,
                         warehouse: WarehouseDep) -> dict[str, Any]:
    """Undo a 'ready for cleaning' compaction inside its window; ``undone`` is false with the reason when refused
    (docs/operations.md#undoing-a-compaction). Allowed to the users who may request a compaction."""
    return undo_compaction(warehouse, compaction_id, user=f"ui:{user.get_name()}").to_dict()


@router.get("/compactions", response_class=HTMLResponse)
def compactions_page(request: Request, user: GetUserDep, filters: Annotated[CompactionFilters, Query()],
                     warehouse: WarehouseDep) -> HTMLResponse:
    queue, history = queue_and_history(warehouse, filters)
    return render(request, "compactions.html", {
        "filters": filters, "states": STATES, "types": TYPES, "queue": queue, "history": history,
        "may_request": user_may_request(request, user), "request_defaults": filters})
