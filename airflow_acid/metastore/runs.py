"""Compaction run figures (ACID_COMPACTION_RUNS, airflow-acid's own table): what each compaction read and wrote,
the Spark application that ran it, executor core-seconds and wall time, and the Airflow task instance that ran it,
keyed by the compaction id.

Hive's COMPLETED_COMPACTIONS cannot get new columns (a Hive metastore's schema is Hive's), so the figures live
beside it and SHOW COMPACTIONS joins them in by id. On a Hive metastore the table exists only after
``airflow-acid hive create-extra-tables``; without it nothing is recorded and the columns stay empty.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.flavour import profile_of
from airflow_acid.metastore.schema import ACID_COMPACTION_RUNS, COMPACTION_QUEUE, COMPLETED_COMPACTIONS

ACR = ACID_COMPACTION_RUNS
_CHUNK = 500


@dataclass(frozen=True)
class RunFigures:
    """The figures of one compaction run (None: not known)."""

    files_in: int | None = None
    bytes_in: int | None = None
    rows_in: int | None = None
    files_out: int | None = None
    bytes_out: int | None = None
    rows_out: int | None = None
    deltas_before: int | None = None
    """Delta directories the compaction read (insert and delete deltas)."""
    deltas_after: int | None = None
    """Delta directories it left in their place (0 for a major compaction)."""
    spark_app_id: str | None = None
    core_seconds: float | None = None
    """Executor core-seconds: the run time of the job's tasks times the cores each task holds."""
    wall_seconds: float | None = None
    """From the Worker taking the row to its commit (planning, the job, verification)."""
    digest_in: str | None = None
    """Content digest (``count:sum:xor``, ``acid/digest.py``) of the rows the final step read at the snapshot."""
    digest_out: str | None = None
    """The same of its output files as read back from storage before the commit (equal to ``digest_in``)."""
    dag_id: str | None = None
    """The Airflow task instance that ran the compaction (:class:`TaskIdentity`); recorded when the Worker claims
    the row, so a failed or refused compaction has it too."""
    run_id: str | None = None
    task_id: str | None = None
    map_index: int | None = None
    try_number: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def task(self) -> TaskIdentity | None:
        """The Airflow task instance, when one was recorded."""
        if not (self.dag_id and self.run_id and self.task_id):
            return None
        return TaskIdentity(self.dag_id, self.run_id, self.task_id,
                            -1 if self.map_index is None else self.map_index, self.try_number or 1)


@dataclass(frozen=True)
class TaskIdentity:
    """The Airflow task instance that runs a compaction: DAG, run, task, map index (-1: not mapped) and try. Plain
    values — the metastore knows nothing of Airflow; the operator fills them in from its context."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1
    try_number: int = 1


_COLUMNS = {"files_in": "ACR_FILES_IN", "bytes_in": "ACR_BYTES_IN", "rows_in": "ACR_ROWS_IN",
            "files_out": "ACR_FILES_OUT", "bytes_out": "ACR_BYTES_OUT", "rows_out": "ACR_ROWS_OUT",
            "deltas_before": "ACR_DELTAS_BEFORE", "deltas_after": "ACR_DELTAS_AFTER", "spark_app_id": "ACR_APP_ID",
            "core_seconds": "ACR_CORE_SECONDS", "wall_seconds": "ACR_WALL_SECONDS"}
_DIGEST_COLUMNS = {"digest_in": "ACR_DIGEST_IN", "digest_out": "ACR_DIGEST_OUT"}
"""Added later: a Hive metastore's ACID_COMPACTION_RUNS made by an older release lacks them (not recorded there)."""
_TASK_COLUMNS = {"dag_id": "ACR_DAG_ID", "run_id": "ACR_RUN_ID", "task_id": "ACR_TASK_ID",
                 "map_index": "ACR_MAP_INDEX", "try_number": "ACR_TRY_NUMBER"}
"""Added later still (migration 0006), likewise."""


def _columns(conn: Connection) -> dict[str, str]:
    """The figure columns (without the task's) this database's ACID_COMPACTION_RUNS has."""
    return {**_COLUMNS, **_DIGEST_COLUMNS} if profile_of(conn).run_digest_columns else _COLUMNS


def _read_columns(conn: Connection) -> dict[str, str]:
    """Every column read back: the figures and, where the table has them, the task's."""
    return {**_columns(conn), **(_TASK_COLUMNS if profile_of(conn).run_task_columns else {})}


def _upsert(conn: Connection, cq_id: int, values: dict[str, Any]) -> None:
    """Set ``values`` on the row of ``cq_id``, creating it when missing (the other columns are kept)."""
    if conn.execute(sa.update(ACR).where(ACR.c.ACR_CQ_ID == cq_id).values(**values)).rowcount == 0:
        conn.execute(sa.insert(ACR).values({"ACR_CQ_ID": cq_id, "ACR_RECORDED_AT": now_ms(conn), **values}))


def _figures(row: sa.Row[Any], columns: dict[str, str]) -> RunFigures:
    mapping = row._mapping
    return RunFigures(**{attr: mapping[column] for attr, column in columns.items()})


def delete_figures(conn: Connection, ids: Iterable[int]) -> int:
    """Drop the figures of these compaction ids (the HouseKeeper trimming their history rows); 0 without the table."""
    if not _has_table(conn):
        return 0
    doomed, deleted = list(ids), 0
    for start in range(0, len(doomed), _CHUNK):
        deleted += conn.execute(sa.delete(ACR).where(ACR.c.ACR_CQ_ID.in_(doomed[start:start + _CHUNK]))).rowcount
    return deleted


def delete_orphans(conn: Connection) -> int:
    """Drop figures whose compaction is neither queued nor in the history any more (e.g. trimmed by Hive's own
    housekeeper on a Hive metastore)."""
    if not _has_table(conn):
        return 0
    live = sa.union(sa.select(COMPACTION_QUEUE.c.CQ_ID), sa.select(COMPLETED_COMPACTIONS.c.CC_ID)).subquery()
    return conn.execute(sa.delete(ACR).where(ACR.c.ACR_CQ_ID.not_in(sa.select(live.c[0])))).rowcount


def _has_table(conn: Connection) -> bool:
    return profile_of(conn).runs_table


class RunHistory:
    """Record and read compaction run figures."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    @property
    def recorded(self) -> bool:
        """Whether figures are recorded here (False on a Hive metastore without ACID_COMPACTION_RUNS)."""
        return self.db.profile.runs_table

    def record(self, cq_id: int, figures: RunFigures) -> bool:
        """Store (or replace) the figures of compaction ``cq_id`` (its recorded task is kept); False when this
        metastore does not record them."""
        if not self.recorded:
            return False

        def work(conn: Connection) -> None:
            _upsert(conn, cq_id, {"ACR_RECORDED_AT": now_ms(conn),
                                  **{column: getattr(figures, attr) for attr, column in _columns(conn).items()}})

        self.db.run(work, what=f"record figures of compaction {cq_id}")
        return True

    def record_task(self, cq_id: int, task: TaskIdentity) -> bool:
        """Record the Airflow task instance running compaction ``cq_id`` (a retry's replaces an earlier try's);
        False when this metastore does not record it (a Hive metastore without the columns)."""
        if not self.recorded or not self.db.profile.run_task_columns:
            return False
        values = {"ACR_DAG_ID": task.dag_id[:250], "ACR_RUN_ID": task.run_id[:250], "ACR_TASK_ID": task.task_id[:250],
                  "ACR_MAP_INDEX": task.map_index, "ACR_TRY_NUMBER": task.try_number}
        self.db.run(lambda conn: _upsert(conn, cq_id, values), what=f"record the task of compaction {cq_id}")
        return True

    def get(self, cq_id: int) -> RunFigures | None:
        """The figures of one compaction, or None."""
        return self.many([cq_id]).get(cq_id)

    def many(self, ids: Iterable[int]) -> dict[int, RunFigures]:
        """Figures by compaction id for those of ``ids`` that have any."""
        wanted = sorted(set(int(i) for i in ids))
        if not wanted or not self.recorded:
            return {}

        def work(conn: Connection) -> dict[int, RunFigures]:
            out: dict[int, RunFigures] = {}
            columns = _read_columns(conn)
            selected = [ACR.c.ACR_CQ_ID, *(ACR.c[c] for c in columns.values())]
            for start in range(0, len(wanted), _CHUNK):
                rows = conn.execute(sa.select(*selected).where(ACR.c.ACR_CQ_ID.in_(wanted[start:start + _CHUNK])))
                out.update({int(r.ACR_CQ_ID): _figures(r, columns) for r in rows})
            return out

        return self.db.run(work, what="read compaction run figures")

    def throughput(self, limit: int = 50) -> float | None:
        """Bytes read per executor core-second over the latest ``limit`` recorded runs (None before any run)."""
        if not self.recorded:
            return None

        def work(conn: Connection) -> float | None:
            latest = (sa.select(ACR.c.ACR_BYTES_IN, ACR.c.ACR_CORE_SECONDS)
                      .where(ACR.c.ACR_BYTES_IN > 0, ACR.c.ACR_CORE_SECONDS > 0)
                      .order_by(ACR.c.ACR_CQ_ID.desc()).limit(limit).subquery())
            total_bytes, total_seconds = conn.execute(
                sa.select(sa.func.sum(latest.c.ACR_BYTES_IN), sa.func.sum(latest.c.ACR_CORE_SECONDS))).one()
            return float(total_bytes) / float(total_seconds) if total_bytes and total_seconds else None

        return self.db.run(work, what="read compaction throughput")

    def delete_orphans(self) -> int:
        """:func:`delete_orphans` in its own transaction."""
        if not self.recorded:
            return 0
        return self.db.run(delete_orphans, what="delete orphaned compaction run figures")
