"""Run history with figures (issue 19 item 4): every compaction records files/bytes/rows in and out, deltas
before/after, executor core-seconds and wall time in ACID_COMPACTION_RUNS; the figures equal the plan's inputs and
the files on disk, SHOW COMPACTIONS shows them after Hive's columns, and the HouseKeeper trims them with the history
rows."""

from __future__ import annotations

import dataclasses
import os

import pytest

from airflow_acid.acid import names
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.compactions import RUN_COLUMNS, ShowCompactionsRow
from airflow_acid.metastore.runs import TaskIdentity
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.statements import parse_statement
from airflow_acid.statements.execute import StatementExecutor
from tests.compactor.worker_support import (
    CONF,
    enqueue,
    history,
    new_table,
)


class _Recording(LocalRunner):
    """The in-process runner, remembering the plans it ran."""

    def __init__(self) -> None:
        super().__init__()
        self.plans: list = []

    def run(self, plan, *, job_name, spark_conf):
        self.plans.append(plan)
        return super().run(plan, job_name=job_name, spark_conf=spark_conf)


def _data_files(location: str, directory: str) -> list[str]:
    """The ORC data files of one directory (bucket files of ACID dirs, ``00000N_0`` of plain ones)."""
    path = os.path.join(location, directory)
    return [os.path.join(path, f) for f in sorted(os.listdir(path))
            if names.is_bucket_file(f) or names.parse_original_file(f) is not None]


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_figures_equal_the_plans_inputs_and_the_files_on_disk(wh, kind):
    info = new_table(wh)
    history(wh)
    cq = enqueue(wh, kind)
    runner = _Recording()
    outcome = Worker(wh.metastore, runner=runner, host="w1").run_next()
    assert outcome is not None and outcome.status is WorkerStatus.COMPACTED, outcome
    (compaction,) = runner.plans[0].compactions
    (step,) = compaction.steps
    inputs = [f for d in ((step.base,) if step.base else ()) + step.deltas for f in _data_files(info.location, d)]
    outputs = [f for d in outcome.outputs for f in _data_files(info.location, d)]
    figures = wh.metastore.runs.get(cq)
    assert figures is not None
    assert figures.files_in == len(inputs) > 0
    assert figures.bytes_in == sum(os.path.getsize(f) for f in inputs)
    assert figures.files_out == len(outputs) == outcome.files
    assert figures.bytes_out == sum(os.path.getsize(f) for f in outputs) == outcome.bytes
    assert (figures.rows_in, figures.rows_out) == (outcome.rows_in, outcome.rows_out)
    assert figures.rows_in >= figures.rows_out > 0
    assert figures.deltas_before == len(step.deltas) == 6  # 3 inserts, the update (delta + delete delta), a delete
    assert figures.deltas_after == (0 if kind == "major" else 2)
    assert figures.core_seconds is not None and figures.core_seconds > 0
    assert figures.wall_seconds is not None and figures.wall_seconds >= figures.core_seconds * 0.5
    assert figures.spark_app_id is None  # the in-process runner is no Spark application
    assert figures.task is None and figures.dag_id is None  # not run by an Airflow task

    (row,) = wh.metastore.compactions.show_compactions(id=cq)
    assert row.filesin == figures.files_in and row.bytesout == figures.bytes_out
    assert row.deltasbefore == 6 and row.wallseconds == figures.wall_seconds
    result = StatementExecutor(wh).run(parse_statement(f"SHOW COMPACTIONS COMPACTIONID={cq}"))
    assert result.columns[:len(ShowCompactionsRow.hive_columns())] == ShowCompactionsRow.hive_columns()
    assert result.columns[-len(RUN_COLUMNS):] == list(RUN_COLUMNS)
    values = dict(zip(result.columns, result.rows[0]))
    assert values["filesin"] == figures.files_in and values["rowsout"] == figures.rows_out


def test_housekeeper_trims_figures_with_their_history_rows(sqlite_wh):
    wh = sqlite_wh
    conf = dataclasses.replace(CONF, history_retention_succeeded=1)
    ms = wh.metastore.with_conf(conf)
    new_table(wh)
    ids = []
    for _ in range(3):
        history(wh, batches=2)
        cq = enqueue(wh, "major")
        assert Worker(ms, runner=LocalRunner()).run_next().status is WorkerStatus.COMPACTED
        ms.cleaning.mark_cleaned(cq)
        ids.append(cq)
    assert set(ms.runs.many(ids)) == set(ids)
    assert ms.compactions.purge_history() == 2
    assert set(ms.runs.many(ids)) == {ids[-1]}
    (row,) = ms.compactions.show_compactions()
    assert row.compactionid == ids[-1] and row.filesin


def test_a_failed_recording_never_fails_the_compaction(sqlite_wh, monkeypatch):
    wh = sqlite_wh
    new_table(wh)
    history(wh)
    cq = enqueue(wh, "major")

    def broken(*args, **kwargs):
        raise RuntimeError("figures table gone")

    monkeypatch.setattr(wh.metastore.runs, "record", broken)
    outcome = Worker(wh.metastore, runner=LocalRunner()).run_next()
    assert outcome.status is WorkerStatus.COMPACTED
    assert wh.metastore.runs.get(cq) is None
    (row,) = wh.metastore.compactions.show_compactions(id=cq)
    assert row.filesin is None


class _Broken(LocalRunner):
    """A runner whose job fails (the compaction is marked 'failed')."""

    def run(self, plan, *, job_name, spark_conf):
        raise RuntimeError("executor lost")


def test_the_airflow_task_is_recorded_with_every_run_failed_or_not(wh):
    """The task instance that ran a compaction (the console's link to its log) is recorded when the Worker takes the
    row, so a failed compaction has it too; the figures recorded at the commit keep it; a retry's try replaces it."""
    new_table(wh)
    history(wh)
    task = TaskIdentity("acid_compaction", "scheduled__2026-11-27T10:00:00+00:00", "compact", 3, 1)
    failed = enqueue(wh, "major")
    outcome = Worker(wh.metastore, runner=_Broken(), host="w1", task=task).run_next()
    assert outcome is not None and outcome.status is WorkerStatus.FAILED
    (row,) = wh.metastore.compactions.show_compactions(id=failed)
    assert (row.state, row.dagid, row.runid, row.taskid, row.mapindex, row.trynumber) == (
        "failed", task.dag_id, task.run_id, "compact", 3, 1)
    assert row.filesin is None and wh.metastore.runs.get(failed).task == task

    compacted = enqueue(wh, "major")
    retry = dataclasses.replace(task, try_number=2)
    outcome = Worker(wh.metastore, runner=LocalRunner(), host="w1", task=retry).run_next()
    assert outcome is not None and outcome.status is WorkerStatus.COMPACTED, outcome
    figures = wh.metastore.runs.get(compacted)
    assert figures.task == retry and figures.files_in and figures.rows_out  # the commit kept the task
    assert wh.metastore.runs.throughput() is not None  # a task-only row (the failed one) is no run

    wh.metastore.runs.record_task(compacted, dataclasses.replace(task, try_number=3))
    assert wh.metastore.runs.get(compacted).task.try_number == 3 and wh.metastore.runs.get(compacted).files_in
