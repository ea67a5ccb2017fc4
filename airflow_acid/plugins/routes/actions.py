"""Actions behind Airflow permissions (docs/operations.md#acting-on-compactions-and-transactions): abort a
compaction, requeue a failed or refused one, and abort a transaction after seeing what it blocks. Each state-changing
route needs the permission (:mod:`..security`), a same-origin JSON request (CSRF) and is recorded in Airflow's audit
log (:mod:`..audit`); the work is done by :mod:`airflow_acid.services.actions`, as for the CLI. A refusal is a 200
answer with the reason, as for undo; an unknown id is a 404. With ``[acid] action_approval = hitl`` the two aborts
do not act: they trigger an approval run (:mod:`..approval`) and answer ``awaiting_approval`` with its link."""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Path, Request

from airflow_acid.airflow_config import acid_config
from airflow_acid.config.acid_config import APPROVAL_HITL
from airflow_acid.plugins.approval import request_approval
from airflow_acid.plugins.audit import audited
from airflow_acid.plugins.routes import WarehouseDep
from airflow_acid.plugins.routes.compactions import initiator_id
from airflow_acid.plugins.security import authenticated, csrf_protected, may_abort_transaction, may_request_compaction
from airflow_acid.plugins.templating import roots
from airflow_acid.services import abort_compaction, abort_transaction, requeue_compaction, transaction_blocking
from airflow_acid.services.approved_action import ABORT_COMPACTION, ABORT_TRANSACTION, ApprovalRequest

router = APIRouter(dependencies=[authenticated])

CompactionId = Annotated[int, Path(ge=1, description="the compaction id (SHOW COMPACTIONS' compactionid)")]
TxnId = Annotated[int, Path(ge=1, description="the transaction id (SHOW TRANSACTIONS' txnid)")]


def ui_user(user: BaseUser) -> str:
    """How the metastore names a console user (``ui:<name>``, as undo does)."""
    return f"ui:{user.get_name()}"


def _approval_needed() -> bool:
    return acid_config().action_approval == APPROVAL_HITL


def _awaiting_approval(request: Request, user: BaseUser, action: str, target_id: int) -> dict[str, Any]:
    """Under ``action_approval = hitl``: trigger the approval run instead of acting; its answer."""
    return request_approval(ApprovalRequest(action, target_id, ui_user(user)), user_name=user.get_name(),
                            airflow_base=roots(request)[1])


@router.post("/api/compactions/{compaction_id}/abort",
             dependencies=[may_request_compaction, csrf_protected, audited("abort_compaction")])
def abort_compaction_json(compaction_id: CompactionId, user: GetUserDep, warehouse: WarehouseDep,
                          request: Request) -> dict[str, Any]:
    """Abort an 'initiated' or 'working' compaction (a working one's Spark job can then never commit);
    ``aborted`` is false with the reason otherwise. Allowed to the users who may request a compaction."""
    if _approval_needed():
        warehouse.metastore.compactions.get(compaction_id)  # an unknown id is still a 404, before any run
        return _awaiting_approval(request, user, ABORT_COMPACTION, compaction_id)
    return abort_compaction(warehouse.metastore, compaction_id, user=ui_user(user)).to_dict()


@router.post("/api/compactions/{compaction_id}/requeue",
             dependencies=[may_request_compaction, csrf_protected, audited("requeue_compaction")])
def requeue_compaction_json(compaction_id: CompactionId, user: GetUserDep, warehouse: WarehouseDep) -> dict[str, Any]:
    """Queue a 'failed' or 'refused' compaction again (same table/partition, type, pool, properties) under Hive's
    duplicate rules; ``requeued`` is false with the reason otherwise, ``new_compaction_id`` names the new row."""
    return requeue_compaction(warehouse.metastore, compaction_id,
                              initiator_id=initiator_id(user.get_name())).to_dict()


@router.get("/api/transactions/{txn_id}/blocking")
def transaction_blocking_json(txn_id: TxnId, warehouse: WarehouseDep) -> dict[str, Any]:
    """What transaction ``txn_id`` blocks — cleanups waiting for it, its locks and the locks waiting behind them,
    the compaction it belongs to — what it writes, and what aborting it does (``consequences``). Reads only."""
    return transaction_blocking(warehouse.metastore, txn_id).to_dict()


@router.post("/api/transactions/{txn_id}/abort",
             dependencies=[may_abort_transaction, csrf_protected, audited("abort_transaction")])
def abort_transaction_json(txn_id: TxnId, user: GetUserDep, warehouse: WarehouseDep,
                           request: Request) -> dict[str, Any]:
    """Abort an open transaction; ``released`` says what it blocked. ``aborted`` is false with the reason when it is
    not open. Allowed to the users with edit access to ``acid_housekeeping``."""
    if _approval_needed():
        impact = transaction_blocking(warehouse.metastore, txn_id)  # unknown: 404; not open: refused, no run
        if not impact.is_open:
            return {"txn_id": txn_id, "aborted": False, "message": impact.consequences[0]}
        return _awaiting_approval(request, user, ABORT_TRANSACTION, txn_id)
    return abort_transaction(warehouse.metastore, txn_id, user=ui_user(user)).to_dict()
