"""What a compaction or request task tells about its outcome beyond its state: one sentence per compaction pushed
as XCom ``acid_outcome`` (the plugin's run-notes listener turns them into the DAG run's note: a task cannot write
its run's note itself in Airflow 3.3), and who triggered the run (the requester of a manual compaction)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context

from airflow_acid.compactor.messages import OUTCOME_XCOM_KEY


def record_outcome(context: Context | None, lines: Sequence[str], log: Any) -> None:
    """Push ``lines`` as the task's ``acid_outcome`` XCom (nothing outside a running task, e.g. in unit tests that
    call ``execute({})``). Never fails the task: the outcome is also in the log and in SHOW COMPACTIONS."""
    ti: Any = (context or {}).get("ti")
    if ti is None or not lines:
        return
    try:
        ti.xcom_push(key=OUTCOME_XCOM_KEY, value=list(lines))
    except Exception:  # a note is a help, never a reason to fail the task
        log.warning("could not record the outcome for the DAG run's note: %s", "; ".join(lines), exc_info=True)


def triggering_user(context: Context | None) -> str | None:
    """The Airflow user who triggered this DAG run (``dag_run.triggering_user_name``, Airflow 3), or None for a
    scheduled run or one started without a user (``airflow tasks test``)."""
    dag_run: Any = (context or {}).get("dag_run")
    user = getattr(dag_run, "triggering_user_name", None)
    return str(user) if user else None
