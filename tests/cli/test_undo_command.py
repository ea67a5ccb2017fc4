"""``airflow-acid compaction undo ID`` (issue 30 item 2) on each backend: undoes a compaction inside the window set by
``[acid] cleaner_retention``, prints what it did (or JSON), and refuses with the reason and exit code 1 otherwise."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from airflow_acid.acid.codes import CompactionState
from airflow_acid.cli.commands import main
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import acid_dirs, enqueue, history, make_warehouse, new_table, rows


@pytest.fixture
def setup(empty_db_url, tmp_path, monkeypatch):
    """(warehouse, cli) with one compacted table 'ready for cleaning'; the CLI reads [acid] from the environment."""
    monkeypatch.setenv("AIRFLOW__ACID__CLEANER_RETENTION", "1h")
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    wh = make_warehouse(empty_db_url, tmp_path / "wh")
    info = new_table(wh)
    history(wh)

    def cli(*args: str):
        return CliRunner().invoke(main, [*args, "--metastore-url", empty_db_url, "--warehouse", str(tmp_path / "wh")])

    yield wh, info, cli
    wh.metastore.close()


def _compact(wh, kind: str) -> int:
    cq = enqueue(wh, kind)
    assert Worker(wh.metastore, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
    return cq


def test_undo_command(setup, monkeypatch):
    wh, info, cli = setup
    model = rows(wh)
    cq = _compact(wh, "major")
    txn = wh.metastore.compactions.get(cq).txn_id
    done = cli("compaction", "undo", str(cq))
    assert done.exit_code == 0, done.output
    assert f"compaction {cq} of db.t is undone: compactor transaction {txn} is aborted" in done.stdout
    assert f"base_0000005_v{txn:07d}" in done.stdout
    assert not any(d.endswith(f"_v{txn:07d}") for d in acid_dirs(info.location)) and rows(wh) == model
    assert wh.metastore.compactions.get(cq).state is CompactionState.ABORTED

    again = cli("compaction", "undo", str(cq), "--json")
    assert again.exit_code == 1
    assert json.loads(again.stdout) == {"compaction_id": cq, "undone": False, "removed": [], "waiting_for": [],
                                        "message": f"compaction {cq} is already undone"}
    assert cli("compaction", "undo", "9999").exit_code == 1  # no such compaction

    second = _compact(wh, "major")
    monkeypatch.setenv("AIRFLOW__ACID__CLEANER_RETENTION", "0")  # delayed cleanup off: no window
    refused = cli("compaction", "undo", str(second))
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (f"Error: undo refused: compaction {second}: there is no undo window, delayed "
                                      "cleanup is off (set [acid] cleaner_retention, or "
                                      "hive.compactor.delayed.cleanup.enabled=true)")
    assert wh.metastore.compactions.get(second).state is CompactionState.READY_FOR_CLEANING
    assert os.path.isdir(info.location)
