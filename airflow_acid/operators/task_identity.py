"""The Airflow task instance an operator runs in, as the plain :class:`TaskIdentity` the Worker records with each
compaction it runs (the console links a compaction to that task's log)."""

from __future__ import annotations

from typing import Any

from airflow_acid.metastore.runs import TaskIdentity


def task_identity(context: Any) -> TaskIdentity | None:
    """DAG, run, task, map index and try of the context's task instance; None outside a task (``execute({})``)."""
    ti = (context or {}).get("ti")
    dag_id, run_id, task_id = (getattr(ti, name, None) for name in ("dag_id", "run_id", "task_id"))
    if not (isinstance(dag_id, str) and isinstance(run_id, str) and isinstance(task_id, str)):
        return None
    map_index = getattr(ti, "map_index", None)
    try_number = getattr(ti, "try_number", None)
    return TaskIdentity(dag_id, run_id, task_id, map_index if isinstance(map_index, int) else -1,
                        try_number if isinstance(try_number, int) and try_number > 0 else 1)
