"""``airflow-acid shadow run`` and ``shadow report`` on an airflow-acid SQLite metastore: the run records decisions
and queues nothing; the report shows the categories as a table and as JSON; bad times are refused clearly."""

from __future__ import annotations

import json

from click.testing import CliRunner

from airflow_acid.cli import main
from tests.compactor.initiator_support import synthetic_write, warehouse_on
from tests.compactor.shadow_support import plant_hive_row


def test_shadow_run_and_report(tmp_path):
    url = f"sqlite:///{tmp_path / 'metastore.db'}"
    wh = warehouse_on(url, tmp_path / "wh")
    try:
        for name, n in (("busy", 11), ("quiet", 1)):
            info = wh.create_table(name, [("id", "int")])
            for _ in range(n):
                synthetic_write(wh.metastore, info.location, "default", name, None)
        runner = CliRunner()
        run = runner.invoke(main, ["shadow", "run", "--metastore-url", url, "--warehouse", str(tmp_path / "wh")],
                            catch_exceptions=False)
        assert run.exit_code == 0, run.output
        assert "1 compaction(s) would be queued" in run.output and "default.busy" in run.output
        assert wh.metastore.compactions.find(state="initiated") == []
        decided = wh.metastore.initiator.latest_decision("default", "quiet").decided_at
        plant_hive_row(wh.metastore.db.engine, queue=False, cid=7, table="quiet", state="s", enqueued_ms=decided - 1)

        report = runner.invoke(main, ["shadow", "report", "--metastore-url", url, "--json", "--since", "1h"],
                               catch_exceptions=False)
        assert report.exit_code == 0, report.output
        data = json.loads(report.output)
        assert {r["table"]: r["category"] for r in data["rows"]} == {"default.busy": "hive never compacted",
                                                                     "default.quiet": "would compact later"}
        busy = next(r for r in data["rows"] if r["table"] == "default.busy")
        assert busy["decisions"] == 1 and busy["timeline"][0]["outcome"] == "would queue" and busy["compact_at"]
        table = runner.invoke(main, ["shadow", "report", "--metastore-url", url], catch_exceptions=False)
        assert "hive never compacted" in table.output and "#7 MAJOR succeeded" in table.output
        bad = runner.invoke(main, ["shadow", "report", "--metastore-url", url, "--since", "yesterday"])
        assert bad.exit_code == 2 and "'yesterday' is not epoch ms, an ISO date/time or an age like 7d" in bad.output
    finally:
        wh.metastore.close()
