"""``airflow-acid compaction abort|requeue ID`` and ``airflow-acid transaction abort ID`` (issue 31 item 3) on each
backend: what they did (or JSON), the refusals with their reason and exit code 1, and what a transaction blocks
shown before it is aborted."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from airflow_acid.acid.codes import CompactionState, LockType, OperationType, TxnState
from airflow_acid.cli.commands import main
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.spark.runners import LocalRunner
from tests.compactor.worker_support import enqueue, history, make_warehouse, new_table


@pytest.fixture
def setup(empty_db_url, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    wh = make_warehouse(empty_db_url, tmp_path / "wh")
    new_table(wh)
    history(wh)

    def cli(*args: str):
        return CliRunner().invoke(main, [*args, "--metastore-url", empty_db_url, "--warehouse", str(tmp_path / "wh")])

    yield wh, cli
    wh.metastore.close()


def test_abort_and_requeue_commands(setup):
    wh, cli = setup
    ms = wh.metastore
    cq = enqueue(wh, "major")
    done = cli("compaction", "abort", str(cq))
    assert done.exit_code == 0, done.output
    assert f"MAJOR compaction {cq} of db.t is aborted (it was 'initiated')" in done.stdout
    info = ms.compactions.get(cq)
    assert info.state is CompactionState.ABORTED and "By cli:" in info.error_message

    again = cli("compaction", "abort", str(cq), "--json")
    assert again.exit_code == 1
    assert json.loads(again.stdout) == {
        "compaction_id": cq, "aborted": False, "was": None, "txn_id": None,
        "message": f"compaction {cq} has finished as 'aborted'; only 'initiated' or 'working' compactions can be "
                   "aborted"}
    missing = cli("compaction", "abort", "9999")
    assert missing.exit_code == 1 and "compaction 9999 does not exist" in missing.stderr

    refused = cli("compaction", "requeue", str(cq))
    assert refused.exit_code == 1 and "requeue refused" in refused.stderr and "is 'aborted'" in refused.stderr
    failed = enqueue(wh, "minor")
    ms.compactions.mark_failed(failed, "boom")
    requeued = cli("compaction", "requeue", str(failed), "--json")
    assert requeued.exit_code == 0, requeued.output
    answer = json.loads(requeued.stdout)
    assert answer["requeued"] is True
    new = ms.compactions.get(answer["new_compaction_id"])
    assert new.state is CompactionState.INITIATED and "-cli:" in new.initiator_id


def test_transaction_abort_shows_what_it_blocks_first(setup):
    wh, cli = setup
    ms = wh.metastore
    reader = ms.txns.open_txn(user="analyst", host="bi-host")
    ms.locks.lock([LockComponent("db", "t", lock_type=LockType.SHARED_READ, operation=OperationType.SELECT)],
                  txn_id=reader, user="analyst", host="bi-host")
    cq = enqueue(wh, "major")
    assert Worker(ms, runner=LocalRunner()).run_next().status is WorkerStatus.COMPACTED

    dry = cli("transaction", "abort", str(reader), "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "cleanups waiting for it" in dry.stdout and "aborting it would:" in dry.stdout
    assert f"the cleanup of compaction {cq} of db.t no longer waits for it" in dry.stdout
    assert ms.txns.txn_state(reader) is TxnState.OPEN  # a dry run changes nothing

    done = cli("transaction", "abort", str(reader))
    assert done.exit_code == 0, done.output
    assert f"transaction {reader} (analyst@bi-host) is aborted by cli:" in done.stdout
    assert "released 1 cleanup(s), 1 lock(s)" in done.stdout
    assert ms.txns.txn_state(reader) is TxnState.ABORTED

    again = cli("transaction", "abort", str(reader), "--json")
    assert again.exit_code == 1
    assert json.loads(again.stdout)["message"] == f"transaction {reader} is aborted: there is nothing to abort"
    assert cli("transaction", "abort", "99999").exit_code == 1
