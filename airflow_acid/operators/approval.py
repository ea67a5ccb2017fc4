"""The tasks of the ``acid_approved_action`` DAG (``[acid] action_approval = hitl``): describe the action for the
approver, then act in the approver's name once Airflow's ApprovalOperator says Approve. The services (and the
compactor behind them) are imported when a task runs, so the DAG file stays cheap to parse."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow_acid.hooks.metastore import AcidMetastoreHook

log = logging.getLogger(__name__)


def describe_request(conf: Mapping[str, Any], conn_id: str = AcidMetastoreHook.default_conn_name) -> dict[str, str]:
    """The approval's ``subject`` and ``body`` (the consequences the console's dialog lists) for a run's conf."""
    from airflow_acid.services.approved_action import ApprovalRequest, approval_body, consequences

    request = ApprovalRequest.from_conf(conf)
    lines = consequences(AcidMetastoreHook(conn_id).get_metastore(), request)
    return {"subject": request.subject, "body": approval_body(lines)}


def act_on_answer(conf: Mapping[str, Any], answer: Mapping[str, Any] | None,
                  conn_id: str = AcidMetastoreHook.default_conn_name) -> dict[str, Any]:
    """Do the run's action when ``answer`` (the ApprovalOperator's result: ``chosen_options``,
    ``responded_by_user``) approves it, in the approver's name; nothing otherwise. An approved action the metastore
    refuses (its state changed meanwhile) fails the task with the reason."""
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_acid.services.approved_action import ApprovalRequest, act_on_approval

    request = ApprovalRequest.from_conf(conf)
    answer = answer or {}
    user = answer.get("responded_by_user") or {}
    approver = user.get("name") or user.get("id") if isinstance(user, Mapping) else None
    done = act_on_approval(AcidMetastoreHook(conn_id).get_metastore(), request,
                           list(answer.get("chosen_options") or []), approver)
    if done.result is not None and not done.acted:
        log.error("%s", done.message)
        raise AirflowFailException(done.message)
    log.info("%s", done.message)
    return done.to_dict()
