"""Transactions and locks: SHOW TRANSACTIONS (open and aborted) and SHOW LOCKS EXTENDED [db [table [partition]]] —
the open transactions are what hold cleanup back, the locks what keeps writers waiting."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.locks import ShowLocksRow
from airflow_acid.metastore.txns import TxnInfo
from airflow_acid.plugins.routes import Filters, WarehouseDep
from airflow_acid.plugins.security import authenticated
from airflow_acid.plugins.templating import render

router = APIRouter(dependencies=[authenticated])


class LockFilters(Filters):
    """SHOW LOCKS [db | table [PARTITION (…)]]."""

    database: str | None = None
    table: str | None = None
    partition: str | None = None


def txn_dict(txn: TxnInfo) -> dict[str, Any]:
    """A SHOW TRANSACTIONS row with its codes spelled out."""
    return {**asdict(txn), "state": txn.state.display, "txn_type": txn.txn_type.name}


def show_locks(warehouse: AcidWarehouse, f: LockFilters) -> list[ShowLocksRow]:
    return warehouse.metastore.locks.show_locks(f.database, f.table, f.partition, extended=True)


@router.get("/api/transactions")
def transactions_json(warehouse: WarehouseDep) -> dict[str, Any]:
    """SHOW TRANSACTIONS: open and aborted transactions by id (times in epoch ms)."""
    return {"transactions": [txn_dict(t) for t in warehouse.metastore.txns.show_transactions()]}


@router.get("/api/locks")
def locks_json(filters: Annotated[LockFilters, Query()], warehouse: WarehouseDep) -> dict[str, Any]:
    """SHOW LOCKS EXTENDED: every lock with its state, what blocks it, and its heartbeat."""
    return {"columns": list(ShowLocksRow.COLUMNS), "locks": [asdict(r) for r in show_locks(warehouse, filters)]}


@router.get("/transactions", response_class=HTMLResponse)
def transactions_page(request: Request, filters: Annotated[LockFilters, Query()],
                      warehouse: WarehouseDep) -> HTMLResponse:
    return render(request, "transactions.html", {
        "transactions": [txn_dict(t) for t in warehouse.metastore.txns.show_transactions()],
        "locks": show_locks(warehouse, filters), "filters": filters})
