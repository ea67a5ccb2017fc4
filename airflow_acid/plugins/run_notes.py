"""The DAG run's note from its tasks' outcomes: when a run ends, the ``acid_outcome`` XComs its compaction and
request tasks pushed (``compaction 12 of demo.sales/ds=2024-01-02: refused — …``) become its note, shown in the
Grid view and returned by the REST API (``GET /api/v2/dags/{dag_id}/dagRuns/{run_id}`` → ``note``).

Airflow 3.3 gives a running task no way to set its run's note (the task SDK has no database access and the
execution API no note endpoint), so this is a listener: the scheduler (or ``airflow dags test``) calls it with the
run it just finished. A note someone already wrote is kept.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.listeners import hookimpl

from airflow_acid.compactor.messages import OUTCOME_XCOM_KEY

log = logging.getLogger(__name__)

MAX_NOTE_CHARS = 1000  # the UI shows notes as markdown; a batch of hundreds of rows is summarised


def outcome_note(lines: list[str]) -> str | None:
    """The note text: the outcome lines in order, cut at :data:`MAX_NOTE_CHARS` with the count left out."""
    if not lines:
        return None
    note, shown = "", 0
    for line in lines:
        candidate = f"{note}\n{line}" if note else line
        if len(candidate) > MAX_NOTE_CHARS:
            break
        note, shown = candidate, shown + 1
    if shown < len(lines):
        note += f"\n… and {len(lines) - shown} more (see the task logs)"
    return note


def _outcome_lines(dag_run: Any, session: Any) -> list[str]:
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    rows = session.scalars(select(XComModel).where(XComModel.dag_id == dag_run.dag_id,
                                                   XComModel.run_id == dag_run.run_id,
                                                   XComModel.key == OUTCOME_XCOM_KEY)
                           .order_by(XComModel.timestamp, XComModel.task_id, XComModel.map_index)).all()
    lines: list[str] = []
    for row in rows:
        value = XComModel.deserialize_value(row)
        lines += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return lines


def write_outcome_note(dag_run: Any) -> None:
    """Set the run's note from its outcome XComs (no XCom, or a note already there: nothing changes). The scheduler
    hands over a run bound to its session (the note is committed with the run's new state); ``airflow dags test``
    a detached one, which is then loaded in a session of its own."""
    from sqlalchemy.orm import object_session

    session = object_session(dag_run)
    if session is not None:
        _write_note(dag_run, session)
        return
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as own:
        run = own.get(DagRun, dag_run.id)
        if run is not None:
            _write_note(run, own)


def _write_note(dag_run: Any, session: Any) -> None:
    if dag_run.note:
        return
    note = outcome_note(_outcome_lines(dag_run, session))
    if note:
        dag_run.note = note
        log.info("note of %s %s: %s", dag_run.dag_id, dag_run.run_id, note)


class RunNotesListener:
    """Airflow listener: :func:`write_outcome_note` when a DAG run succeeds or fails."""

    @hookimpl
    def on_dag_run_success(self, dag_run: Any, msg: str) -> None:
        self._note(dag_run)

    @hookimpl
    def on_dag_run_failed(self, dag_run: Any, msg: str) -> None:
        self._note(dag_run)

    @staticmethod
    def _note(dag_run: Any) -> None:
        try:
            write_outcome_note(dag_run)
        except Exception:  # a listener must never break the scheduler's loop
            log.exception("could not write the outcome note of DAG run %s", getattr(dag_run, "run_id", "?"))


run_notes_listener = RunNotesListener()
