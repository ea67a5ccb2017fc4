"""``airflow-acid doctor [--json] [--fix ID] [--yes]`` (issue 33 item 3) on each backend: an empty finding list on a
healthy metastore, a planted stuck state shown with its fix, the confirmation before a fix (declining changes
nothing), and the refusals with exit code 1."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from airflow_acid.cli.commands import main
from tests.compactor.worker_support import history, make_warehouse, new_table
from tests.services.doctor_support import Planter, checksums


@pytest.fixture
def setup(empty_db_url, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    wh = make_warehouse(empty_db_url, tmp_path / "wh")
    new_table(wh)
    history(wh)
    engine = sa.create_engine(empty_db_url)

    def cli(*args: str, stdin: str | None = None):
        return CliRunner().invoke(main, ["doctor", *args, "--metastore-url", empty_db_url], input=stdin)

    yield engine, cli
    engine.dispose()
    wh.metastore.close()


def test_healthy_metastore_has_no_findings(setup):
    _, cli = setup
    result = cli("--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"findings": []}
    plain = cli()
    assert plain.exit_code == 0 and "no findings" in plain.stdout


def test_finding_shown_then_fixed_after_confirmation(setup):
    engine, cli = setup
    planter = Planter(engine)
    first, second = planter.queue("db", "t", "i"), planter.queue("db", "t", "i")
    orphan = planter.queue("db", "dropped", "i")
    before = checksums(engine)
    shown = cli("--json")
    assert shown.exit_code == 0, shown.output
    findings = json.loads(shown.stdout)["findings"]
    assert [(f["id"], f["kind"], f["severity"], f["compaction_ids"]) for f in findings] == [
        (f"duplicate-queue:cq={second}", "duplicate-queue", "warning", [first, second]),
        (f"orphan-queue-row:cq={orphan}", "orphan-queue-row", "warning", [orphan])]
    assert findings[0]["fix"]["action"] == "abort_compaction" and findings[0]["fix"]["target"] == second
    table = cli()
    assert f"orphan-queue-row:cq={orphan}" in table.stdout and "DELETE FROM COMPACTION_QUEUE" in table.stdout
    assert checksums(engine) == before

    declined = cli("--fix", f"orphan-queue-row:cq={orphan}", stdin="n\n")
    assert declined.exit_code == 1 and "nothing changed" in declined.stderr
    assert checksums(engine) == before
    done = cli("--fix", f"orphan-queue-row:cq={orphan}", stdin="y\n")
    assert done.exit_code == 0, done.output
    assert f"queue row {orphan} is deleted" in done.stdout
    scripted = cli("--fix", f"duplicate-queue:cq={second}", "--yes", "--json")
    assert scripted.exit_code == 0, scripted.output
    assert json.loads(scripted.stdout)["applied"] is True
    assert json.loads(cli("--json").stdout) == {"findings": []}

    gone = cli("--fix", f"orphan-queue-row:cq={orphan}", "--yes")
    assert gone.exit_code == 1 and "finds no" in gone.stderr


def test_a_finding_without_automatic_fix_is_refused(setup):
    engine, cli = setup
    planter = Planter(engine)
    a = planter.history("db", "t", "s", CC_HIGHEST_WRITE_ID=5)
    b = planter.history("db", "t", "s", CC_HIGHEST_WRITE_ID=5)
    result = cli("--fix", f"duplicate-compaction:cq={a},{b}", "--yes")
    assert result.exit_code == 1 and "has no automatic fix" in result.stderr
