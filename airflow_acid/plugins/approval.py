"""``[acid] action_approval = hitl``: a destructive console action does not act but triggers a run of the
``acid_approved_action`` DAG, whose ApprovalOperator (Airflow 3.1+ human-in-the-loop) waits for a second person;
its ``act`` task then acts in the approver's name (docs/operations.md#approval-by-a-second-person). The run is
created through Airflow's own models, as the API server's trigger endpoint does."""

from __future__ import annotations

import importlib.util
from typing import Any

from fastapi import HTTPException, status

from airflow_acid.services.approved_action import ApprovalRequest

APPROVAL_DAG_ID = "acid_approved_action"
HITL_MODULE = "airflow.providers.standard.operators.hitl"


def hitl_missing() -> str | None:
    """Why Airflow's human-in-the-loop cannot be used here (None: it can)."""
    from airflow import __version__ as airflow_version
    from packaging.version import Version

    if Version(airflow_version).release < (3, 1):
        return f"Airflow {airflow_version} has no human-in-the-loop approval (Airflow 3.1+)"
    if importlib.util.find_spec(HITL_MODULE) is None:
        return f"{HITL_MODULE} is not installed (apache-airflow-providers-standard with human-in-the-loop)"
    return None


def request_approval(request: ApprovalRequest, *, user_name: str, airflow_base: str) -> dict[str, Any]:
    """Trigger an ``acid_approved_action`` run for ``request``; the answer says it awaits approval and links the run.
    503 when HITL is unavailable, 409 when Airflow does not have the DAG."""
    missing = hitl_missing()
    if missing:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE,
                            f"[acid] action_approval = hitl, but {missing}: set action_approval = off or upgrade")
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.exceptions import DagNotFound
    from airflow.utils.types import DagRunTriggeredByType

    try:
        run = trigger_dag(APPROVAL_DAG_ID, triggered_by=DagRunTriggeredByType.UI, triggering_user_name=user_name,
                          conf=request.to_conf(), note=request.subject)
    except DagNotFound:
        raise HTTPException(status.HTTP_409_CONFLICT,
                            f"[acid] action_approval = hitl, but Airflow does not have the {APPROVAL_DAG_ID} DAG: "
                            f"put dags/{APPROVAL_DAG_ID}.py in the DAGs folder and unpause it") from None
    if run is None:  # pragma: no cover - trigger_dag returns None only for a DAG it cannot find
        raise HTTPException(status.HTTP_409_CONFLICT, f"Airflow did not create a run of {APPROVAL_DAG_ID}")
    url = f"{airflow_base}/dags/{APPROVAL_DAG_ID}/runs/{run.run_id}"
    return {"action": request.action, "target_id": request.target_id, "aborted": False, "awaiting_approval": True,
            "dag_id": APPROVAL_DAG_ID, "run_id": run.run_id, "run_url": url,
            "message": f"{request.subject}: awaiting approval in Airflow (a second person approves the "
                       f"'approve' task of {APPROVAL_DAG_ID} run {run.run_id}: {url}); nothing is changed until "
                       "then"}
