"""A SHOW COMPACTIONS row as the console shows it: its columns plus what an operator needs beside them — who asked
for it, how long the job ran and how long cleaning took (SHOW COMPACTIONS' one duration runs until cleaning ends),
the Spark application with a link to the Spark UI/history server (``[acid] spark_ui_url``) and the Airflow task
instance that ran it, with its state and a link to its log."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from airflow_acid.acid.codes import CompactionState
from airflow_acid.config.acid_config import AcidConfig
from airflow_acid.metastore.compactions import ShowCompactionsRow
from airflow_acid.metastore.runs import TaskIdentity

SPARK_APP_PREFIXES = ("app-", "local-", "application_", "spark-", "driver-")
"""How Spark application ids start (standalone, local, YARN, Kubernetes); CQ_HADOOP_JOB_ID holds the job name until
the application has started."""

REQUESTERS = {"ui": "console", "dag": "DAG run", "cli": "command line", "manual": "DAG run", "initiator": "Initiator"}


def task_log_url(airflow_base: str, task: TaskIdentity) -> str:
    """The Airflow UI page of a task instance try (its log), as Airflow's own ``TaskInstance.log_url`` builds it."""
    mapped = f"/mapped/{task.map_index}" if task.map_index >= 0 else ""
    return (f"{airflow_base}/dags/{quote(task.dag_id, safe='')}/runs/{quote(task.run_id, safe='')}/tasks/"
            f"{quote(task.task_id, safe='')}{mapped}?try_number={task.try_number}")


def requester(host: str | None, who: str | None) -> dict[str, str | None]:
    """SHOW COMPACTIONS' initiator host and id in words: ``<host>-ui:<user>`` → the user, through the console, on the
    host; ``<host>-initiator`` → the Initiator."""
    kind, sep, user = (who or "").partition(":")
    if not sep:
        kind, user = who or "", ""
    via = REQUESTERS.get(kind)
    if via is None:
        return {"who": who or host or None, "via": None, "host": host}
    return {"who": user or (via if kind in ("initiator", "manual") else None), "via": via, "host": host}


@dataclass
class CompactionView:
    """One row with what the console adds; every SHOW COMPACTIONS column reads through (``view.state``)."""

    row: ShowCompactionsRow
    task_state: str | None = None
    task_url: str | None = None
    spark_url: str | None = None
    now_ms: int = 0

    def __getattr__(self, name: str) -> Any:
        if name == "row":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.row, name)

    @property
    def task(self) -> TaskIdentity | None:
        r = self.row
        if not (r.dagid and r.runid and r.taskid):
            return None
        return TaskIdentity(r.dagid, r.runid, r.taskid, -1 if r.mapindex is None else r.mapindex, r.trynumber or 1)

    @property
    def app_id(self) -> str | None:
        """The Spark application: the recorded figure, else the queue row's job id once it is an application id."""
        r = self.row
        if r.sparkappid:
            return r.sparkappid
        job = r.hadoopjobid or ""
        return job if job.startswith(SPARK_APP_PREFIXES) else None

    @property
    def job_ms(self) -> int | None:
        """How long the compaction job ran: the Worker's wall time (claim to commit) when recorded, else start to
        commit (or to the end, for a run that never committed; still running: to now)."""
        r = self.row
        if r.wallseconds is not None:
            return int(r.wallseconds * 1000)
        if r.starttime is None:
            return None
        if r.committime is not None:
            return max(0, r.committime - r.starttime)
        if r.state == CompactionState.WORKING.display:
            return max(0, self.now_ms - r.starttime)
        end = r.starttime + r.duration if r.duration is not None else None
        return None if end is None else max(0, end - r.starttime)

    @property
    def job_running(self) -> bool:
        return self.row.state == CompactionState.WORKING.display

    @property
    def clean_ms(self) -> int | None:
        """How long cleaning took after the commit (succeeded), or has waited so far (ready for cleaning)."""
        r = self.row
        if r.committime is None:
            return None
        if r.state == CompactionState.READY_FOR_CLEANING.display:
            return max(0, self.now_ms - r.committime)
        if r.starttime is not None and r.duration is not None:
            return max(0, r.starttime + r.duration - r.committime)
        return None

    @property
    def cleaning_pending(self) -> bool:
        return self.row.state == CompactionState.READY_FOR_CLEANING.display

    @property
    def requester(self) -> dict[str, str | None]:
        return requester(self.row.initiatorhost, self.row.initiatorid)

    @property
    def has_figures(self) -> bool:
        return self.row.bytesin is not None or self.row.filesin is not None

    def links(self) -> dict[str, Any]:
        """For the JSON API: the task instance, its state and log, the Spark application and its UI."""
        task = self.task
        return {"task": None if task is None else {**task.__dict__, "state": self.task_state, "log_url": self.task_url},
                "spark_app_id": self.app_id, "spark_ui_url": self.spark_url,
                "requester": self.requester, "job_ms": self.job_ms, "clean_ms": self.clean_ms}


def compaction_views(rows: Iterable[ShowCompactionsRow], airflow_base: str, config: AcidConfig,
                     with_task_states: bool = True) -> list[CompactionView]:
    """``rows`` with their links and, from Airflow's database, the state of the task instances that ran them."""
    from airflow_acid.plugins.dag_state import task_states

    now = int(time.time() * 1000)
    views = [CompactionView(r, now_ms=now) for r in rows]
    tasks = [t for v in views if (t := v.task) is not None]
    states = task_states(tasks) if with_task_states and tasks else {}
    for v in views:
        task = v.task
        if task is not None:
            v.task_url = task_log_url(airflow_base, task)
            v.task_state = states.get(task)
        v.spark_url = config.spark_ui_link(v.app_id)
    return views


def by_id(views: Sequence[CompactionView]) -> dict[int, CompactionView]:
    return {v.row.compactionid: v for v in views}
