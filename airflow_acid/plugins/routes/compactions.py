"""The compaction queue and history (SHOW COMPACTIONS with its filters and Hive's 20 columns), compaction
requests (ALTER TABLE … COMPACT), queued directly in the metastore by :func:`request_compaction`, and undoing a
compaction inside its delayed-cleanup window (:func:`undo_compaction`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.airflow_config import acid_config
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.compactions import ShowCompactionsRow, order_rows
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.plugins.audit import audited
from airflow_acid.plugins.compaction_view import CompactionView, compaction_views
from airflow_acid.plugins.dag_state import dag_states
from airflow_acid.plugins.routes import Filters, WarehouseDep
from airflow_acid.plugins.security import authenticated, csrf_protected, may_request_compaction, user_may_request
from airflow_acid.plugins.templating import render, roots
from airflow_acid.pycompat import UTC
from airflow_acid.services import request_compaction, requester_id, undo_compaction

STATES = [s.display for s in CompactionState]
TYPES = [t.display.lower() for t in CompactionType]
SORTABLE = ("compactionid", "dbname", "partname", "type", "state", "enqueuetime", "starttime", "duration",
            "initiatorid", "bytesin", "coreseconds", "wallseconds")
"""Columns whose header sorts the queue and history (SHOW COMPACTIONS names)."""
ORDERS = {"": "most recently active", "compactionid desc": "id, newest first", "compactionid asc": "id, oldest first",
          "enqueuetime desc": "enqueued, latest first", "enqueuetime asc": "enqueued, earliest first",
          "starttime desc": "started, latest first", "duration desc": "longest first",
          "wallseconds desc": "longest job first", "bytesin desc": "most bytes read first",
          "coreseconds desc": "most core-seconds first", "state asc": "state"}
"""The order select's choices (any SHOW COMPACTIONS column works in the URL and the JSON API)."""

router = APIRouter(dependencies=[authenticated])


class CompactionFilters(Filters):
    """SHOW COMPACTIONS [DATABASE db] [tbl [PARTITION (…)]] [POOL p] [TYPE t] [STATUS s] … ORDER BY … LIMIT n, and
    an enqueue-time range."""

    database: str | None = None
    table: str | None = None
    partition: str | None = None
    state: str | None = Field(None, description=f"one of {', '.join(STATES)}")
    type: str | None = Field(None, description="major, minor, …")
    pool: str | None = None
    order_by: str | None = Field(None, description="SHOW COMPACTIONS columns, e.g. 'enqueuetime desc, compactionid' "
                                                   "(default: most recently active first)")
    enqueued_from: str | None = Field(None, description="enqueued at or after this UTC date or time, ISO 8601 "
                                                        "(2026-11-27 or 2026-11-27T10:00)")
    enqueued_to: str | None = Field(None, description="enqueued before the end of this UTC date (2026-11-27), or "
                                                      "before this UTC time (2026-11-27T18:00)")
    limit: int = Field(200, ge=1, le=10_000)

    @property
    def enqueued_range(self) -> tuple[int | None, int | None]:
        """(from, to) in epoch ms: from inclusive, to exclusive (a date ``to`` means the end of that day)."""
        return (time_range_ms(self.enqueued_from, end=False) if self.enqueued_from else None,
                time_range_ms(self.enqueued_to, end=True) if self.enqueued_to else None)


class CompactionRequestBody(BaseModel):
    """ALTER TABLE ``database``.``table`` [PARTITION (``partition``)] COMPACT ``type``."""

    database: str = Field("default", min_length=1, max_length=128)
    table: str = Field(..., min_length=1, max_length=256)
    partition: str | None = Field(None, description="Hive partition name, e.g. ds=2024-01-01 (empty: whole table)")
    type: Literal["minor", "major"] = "major"
    queue_anyway: bool = Field(False, description="queue even what the Worker would refuse (nothing to compact), as "
                                                  "Hive does; by default such a request is not queued")


def time_range_ms(text: str, *, end: bool) -> int:
    """An ISO 8601 UTC date or date-time as epoch ms; a bare date as the end of the range (``end``) means the start
    of the next day. InvalidInputError (400) naming the value otherwise."""
    value = text.strip()
    try:
        if len(value) == 10:
            day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
            return int(((day + timedelta(days=1)) if end else day).timestamp() * 1000)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(f"{text!r} is not a date (2026-11-27) or a date and time (2026-11-27T10:00), "
                                "UTC") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def show_compactions(warehouse: AcidWarehouse, f: CompactionFilters) -> list[ShowCompactionsRow]:
    since, until = f.enqueued_range
    return warehouse.metastore.compactions.show_compactions(
        db=f.database, table=f.table, partition=f.partition, state=f.state, type=f.type, pool=f.pool,
        order_by=f.order_by, limit=f.limit, enqueued_from=since, enqueued_to=until)


def queue_and_history(warehouse: AcidWarehouse, f: CompactionFilters
                      ) -> tuple[list[ShowCompactionsRow], list[ShowCompactionsRow]]:
    """(every queued row, the newest ``f.limit`` history rows) matching ``f``, newest first or in ``f.order_by``.

    Asked state by state: Hive's default order puts rows that never started last, so one limited query could
    drop 'initiated' rows behind a long history.
    """
    wanted = CompactionState.parse(f.state) if f.state else None
    since, until = f.enqueued_range
    queue: list[ShowCompactionsRow] = []
    history: list[ShowCompactionsRow] = []
    for state in CompactionState:
        if wanted is not None and state is not wanted:
            continue
        rows = warehouse.metastore.compactions.show_compactions(
            db=f.database, table=f.table, partition=f.partition, state=state, type=f.type, pool=f.pool,
            order_by=f.order_by or "compactionid desc", limit=None if state.is_queued else f.limit,
            enqueued_from=since, enqueued_to=until)
        (queue if state.is_queued else history).extend(rows)
    if f.order_by:
        return order_rows(queue, f.order_by), order_rows(history, f.order_by)[: f.limit]
    by_id = attrgetter("compactionid")
    return sorted(queue, key=by_id, reverse=True), sorted(history, key=by_id, reverse=True)[: f.limit]


def views(request: Request, rows: Iterable[ShowCompactionsRow]) -> list[CompactionView]:
    """Rows as the pages show them: requester, job and cleaning time, Spark and Airflow task links and states."""
    _, airflow_base = roots(request)
    return compaction_views(rows, airflow_base, acid_config())


def sort_links(request: Request, order_by: str | None) -> dict[str, dict[str, str | None]]:
    """For each sortable column: the page's URL ordered by it (descending first, the other way when it is the
    current order) and the current direction, for the clickable headers."""
    current = (order_by or "").strip().lower().split()
    links: dict[str, dict[str, str | None]] = {}
    for column in SORTABLE:
        direction = current[1] if len(current) == 2 and current[0] == column else (
            "asc" if current == [column] else None)
        wanted = "asc" if direction == "desc" else "desc"
        query = {k: v for k, v in request.query_params.items() if k != "order_by"}
        links[column] = {"href": f"?{urlencode({**query, 'order_by': f'{column} {wanted}'})}", "dir": direction}
    return links


def initiator_id(user: str) -> str:
    """``<host>-ui:<user>``: SHOW COMPACTIONS splits it into initiator host and id, naming who asked."""
    return requester_id("ui", user)


@router.get("/api/compactions")
def compactions_json(request: Request, filters: Annotated[CompactionFilters, Query()],
                     warehouse: WarehouseDep) -> dict[str, Any]:
    """SHOW COMPACTIONS as JSON: Hive's column names, times in epoch ms, most recently active first (or
    ``order_by``), within the enqueue-time range; ``links`` of each row: the Airflow task instance that ran it (state,
    log URL), the Spark application and its UI, the requester, job and cleaning time (ms)."""
    rows = show_compactions(warehouse, filters)
    return {"columns": ShowCompactionsRow.columns(),
            "compactions": [{**asdict(v.row), "links": v.links()} for v in views(request, rows)]}


@router.post("/api/compactions", dependencies=[may_request_compaction, csrf_protected])
def request_compaction_json(body: CompactionRequestBody, user: GetUserDep, warehouse: WarehouseDep) -> dict[str, Any]:
    """Queue a compaction; ``accepted`` is false when Hive's rules refused it or the Worker would refuse it (nothing
    to compact; ``queue_anyway`` queues it regardless) — the messages say why."""
    results = request_compaction(warehouse, f"{body.database}.{body.table}", (body.partition or "").strip() or None,
                                 body.type, initiator_id=initiator_id(user.get_name()),
                                 queue_anyway=body.queue_anyway)
    return {"accepted": any(r.compaction_id is not None for r in results), "results": [r.to_dict() for r in results],
            "dags": [s.to_dict() for s in dag_states(("acid_compaction",))]}


@router.post("/api/compactions/{compaction_id}/undo",
             dependencies=[may_request_compaction, csrf_protected, audited("undo_compaction")])
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
        "filters": filters, "states": STATES, "types": TYPES, "orders": ORDERS, "queue": views(request, queue),
        "history": views(request, history), "sort": sort_links(request, filters.order_by),
        "dags": dag_states(), "may_request": user_may_request(request, user), "request_defaults": filters})
