"""Whether the ACID DAGs are paused and when each runs next, from Airflow's own models (the console runs inside the
API server, which has the Airflow database): a queued compaction stays 'initiated' while acid_compaction is
paused, and the console says so instead of letting an operator wait. Also the state of the Airflow task instance
that ran a compaction (recorded with its run figures), so a compaction's page shows what Airflow shows."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_acid.metastore.runs import TaskIdentity
from airflow_acid.pycompat import UTC

log = logging.getLogger(__name__)

SCHEDULED_DAG_IDS = ("acid_compaction", "acid_cleanup", "acid_housekeeping")
"""The DAGs whose schedule keeps the tables healthy (acid_manual_compaction runs only when triggered)."""

ROLE = {"acid_compaction": "runs queued compactions", "acid_cleanup": "deletes what compactions replaced",
        "acid_housekeeping": "aborts dead transactions, purges history"}


@dataclass(frozen=True)
class DagState:
    """One DAG as the scheduler sees it; ``known`` False: not in Airflow's database (never parsed)."""

    dag_id: str
    known: bool
    paused: bool | None = None
    next_run: datetime | None = None
    """When the scheduler creates the next run (``next_dagrun_create_after``); None: no scheduled run."""
    schedule: str | None = None
    """The timetable in words (``*/5 * * * *``, ``None``)."""
    error: str | None = None
    """Why Airflow's database could not be read."""

    @property
    def role(self) -> str:
        return ROLE.get(self.dag_id, "")

    def describe(self) -> str:
        """One sentence: paused, next run, or why it is not known."""
        if self.error:
            return f"{self.dag_id}: state unknown ({self.error})"
        if not self.known:
            return f"{self.dag_id} is not in Airflow's database (has the dag-processor parsed the DAGs folder?)"
        if self.paused:
            return f"{self.dag_id} is paused: it runs no more until you unpause it"
        if self.next_run is None:
            return f"{self.dag_id} has no scheduled run"
        return f"{self.dag_id} runs next at {self.next_run.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"

    def to_dict(self) -> dict[str, Any]:
        return {"dag_id": self.dag_id, "known": self.known, "paused": self.paused,
                "next_run": self.next_run.astimezone(UTC).isoformat() if self.next_run else None,
                "schedule": self.schedule, "error": self.error, "summary": self.describe()}


def dag_states(dag_ids: Sequence[str] = SCHEDULED_DAG_IDS) -> list[DagState]:
    """The state of each DAG, in the order asked; a database error becomes each DAG's ``error`` (the console's
    pages work without it)."""
    try:
        from airflow.models.dag import DagModel
        from airflow.utils.session import create_session
        from sqlalchemy import select

        with create_session() as session:
            rows = {m.dag_id: m for m in session.scalars(select(DagModel).where(DagModel.dag_id.in_(dag_ids)))}
            return [_state(dag_id, rows.get(dag_id)) for dag_id in dag_ids]
    except Exception as exc:  # noqa: BLE001 - the pages must render without Airflow's state; the reason is shown
        log.warning("ACID console: reading the state of %s from Airflow's database failed: %s", dag_ids, exc)
        return [DagState(dag_id, known=False, error=str(exc).splitlines()[0][:200]) for dag_id in dag_ids]


def _state(dag_id: str, model: Any) -> DagState:
    if model is None or getattr(model, "is_stale", False):
        return DagState(dag_id, known=False)
    return DagState(dag_id, known=True, paused=bool(model.is_paused), next_run=model.next_dagrun_create_after,
                    schedule=model.timetable_summary)


def paused(states: Iterable[DagState]) -> list[DagState]:
    return [s for s in states if s.known and s.paused]


def task_states(tasks: Iterable[TaskIdentity]) -> dict[TaskIdentity, str]:
    """The Airflow state (``success``, ``failed``, …; ``none`` when not run yet) of each task instance that ran a
    compaction; task instances Airflow no longer has (or an unreadable database) are left out."""
    wanted = list(dict.fromkeys(tasks))
    if not wanted:
        return {}
    try:
        from airflow.models.taskinstance import TaskInstance
        from airflow.utils.session import create_session
        from sqlalchemy import and_, or_, select

        found: dict[TaskIdentity, str] = {}
        with create_session() as session:
            clauses = [and_(TaskInstance.dag_id == t.dag_id, TaskInstance.run_id == t.run_id,
                            TaskInstance.task_id == t.task_id, TaskInstance.map_index == t.map_index)
                       for t in wanted]
            rows = session.execute(select(TaskInstance.dag_id, TaskInstance.run_id, TaskInstance.task_id,
                                          TaskInstance.map_index, TaskInstance.state).where(or_(*clauses)))
            by_key = {(r.dag_id, r.run_id, r.task_id, r.map_index): r.state for r in rows}
        for t in wanted:
            key = (t.dag_id, t.run_id, t.task_id, t.map_index)
            if key in by_key:
                state = by_key[key]
                found[t] = str(getattr(state, "value", state) or "none")
        return found
    except Exception as exc:  # noqa: BLE001 - links still work without the states
        log.warning("ACID console: reading task instance states from Airflow's database failed: %s", exc)
        return {}
