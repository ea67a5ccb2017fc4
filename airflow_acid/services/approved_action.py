"""Destructive console actions approved through Airflow's human-in-the-loop (``[acid] action_approval = hitl``,
docs/operations.md#approval-by-a-second-person): what the approver is shown — the consequences the console's
dialog lists — and the action done in the approver's name once approved. No Airflow imports: the
``acid_approved_action`` DAG gives the metastore and the approval's answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from airflow_acid.acid.codes import CompactionState
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.metastore.store import Metastore
from airflow_acid.services.actions import abort_compaction, abort_transaction, transaction_blocking

ABORT_COMPACTION = "abort_compaction"
ABORT_TRANSACTION = "abort_transaction"
APPROVABLE = (ABORT_COMPACTION, ABORT_TRANSACTION)
"""The actions that wait for approval under ``action_approval = hitl`` (requeue and undo are not destructive)."""
APPROVE = "Approve"
"""The option of Airflow's ApprovalOperator that approves."""
LATER = ("the Initiator may queue it again at its next cycle while its thresholds say so (set no_auto_compaction on "
         "the table to stop that)")


@dataclass(frozen=True)
class ApprovalRequest:
    """One action waiting for approval: the ``acid_approved_action`` run's conf."""

    action: str
    target_id: int
    requested_by: str
    """The console user who asked (``ui:<name>``)."""

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> ApprovalRequest:
        """Read a run's conf; ValueError naming the field when it is not an approvable action."""
        action = str(conf.get("action", ""))
        if action not in APPROVABLE:
            raise ValueError(f"action {action!r} is not an action that waits for approval; use one of "
                             f"{', '.join(APPROVABLE)}")
        try:
            target_id = int(conf.get("target_id", 0))
        except (TypeError, ValueError):
            target_id = 0
        if target_id < 1:
            raise ValueError(f"target_id {conf.get('target_id')!r} must be a positive compaction or transaction id")
        return cls(action, target_id, str(conf.get("requested_by") or "unknown"))

    def to_conf(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def subject(self) -> str:
        what = "compaction" if self.action == ABORT_COMPACTION else "transaction"
        return f"Abort {what} {self.target_id}? (asked by {self.requested_by})"


def consequences(metastore: Metastore, request: ApprovalRequest) -> list[str]:
    """What approving ``request`` does, one sentence each: the text of the console's confirmation dialog."""
    if request.action == ABORT_TRANSACTION:
        return transaction_blocking(metastore, request.target_id).consequences
    info = metastore.compactions.get(request.target_id)
    entity = entity_name(info.database, info.table, info.partition)
    if info.state not in (CompactionState.INITIATED, CompactionState.WORKING):
        return [f"{info.type.display} compaction {info.id} of {entity} is '{info.state.display}': it can no longer "
                "be aborted, approving does nothing"]
    first = ("abort its compactor transaction: the running Spark job can never commit, and its output is discarded "
             "when the job ends") if info.state is CompactionState.WORKING else \
        "take it off the queue before any worker runs it"
    return [f"{info.type.display} compaction {info.id} of {entity} ('{info.state.display}'): {first}",
            "move it to the history as 'aborted', with the approver's name", LATER]


def approval_body(lines: Sequence[str]) -> str:
    """The approval task's body (Markdown): the consequences as a list."""
    return "Approving does this:\n\n" + "\n".join(f"- {line}" for line in lines)


@dataclass(frozen=True)
class ApprovedActionResult:
    """What the ``act`` task did."""

    action: str
    target_id: int
    acted: bool
    message: str
    approver: str | None = None
    result: dict[str, Any] | None = None
    """The action's own answer (as the console's route returns it)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def act_on_approval(metastore: Metastore, request: ApprovalRequest, chosen_options: Sequence[str],
                    approver: str | None) -> ApprovedActionResult:
    """Do ``request`` in the approver's name (``hitl:<approver>``, naming who asked) when ``chosen_options`` is
    Approve; otherwise nothing, saying who rejected it."""
    if list(chosen_options) != [APPROVE]:
        return ApprovedActionResult(request.action, request.target_id, False,
                                    f"{request.subject} was not approved ({', '.join(chosen_options) or 'no answer'} "
                                    f"by {approver or 'nobody'}): nothing was done", approver)
    if not approver:
        return ApprovedActionResult(request.action, request.target_id, False,
                                    f"{request.subject}: the approval names no user, so nothing was done")
    user = f"hitl:{approver} (asked by {request.requested_by})"
    if request.action == ABORT_COMPACTION:
        answer = abort_compaction(metastore, request.target_id, user=user).to_dict()
    else:
        answer = abort_transaction(metastore, request.target_id, user=user).to_dict()
    return ApprovedActionResult(request.action, request.target_id, bool(answer["aborted"]),
                                f"approved by {approver}: {answer['message']}", approver, answer)


__all__ = ["ABORT_COMPACTION", "ABORT_TRANSACTION", "APPROVABLE", "APPROVE", "ApprovalRequest",
           "ApprovedActionResult", "act_on_approval", "approval_body", "consequences"]
