"""The shadow report in the console (/acid/api/shadow, /acid/shadow) on SQLite, PostgreSQL and MariaDB: a shadow
run's decisions beside a planted Hive history, the same categories as the CLI, and nothing written."""

from __future__ import annotations

from airflow_acid.compactor.initiator import Initiator
from tests.compactor.shadow_support import plant_hive_row, row_checksums


def test_shadow_report_in_the_console(clients, scene):
    ms = scene.warehouse.metastore
    Initiator(ms, host="consolehost").run_shadow()
    busy = {(h.table, h.partition) for h in ms.shadow.hive_compactions(0, 2**62)}
    quiet = [d for d in ms.initiator.decisions() if (d.table, d.partition) not in busy]
    assert quiet, "the scene has writes without compactions for the shadow run to decide on"
    decision = quiet[0]
    table = decision.table
    plant_hive_row(ms.db.engine, queue=False, cid=9100, table=table, state="f", enqueued_ms=decision.decided_at - 5,
                   partition=decision.partition, message="worker lost")
    before = row_checksums(ms.db.engine)

    for path in ("/acid/api/shadow", "/acid/shadow"):
        assert clients.anonymous.get(path, follow_redirects=False).status_code in (401, 303)
    answer = clients.viewer.get(f"/acid/api/shadow?since={decision.decided_at - 60_000}").json()
    rows = {(r["table"], r["partition"]): r for r in answer["rows"]}
    failed = rows[(f"default.{table}", decision.partition)]
    assert failed["category"] == "hive failed" and failed["hive"][0]["message"] == "worker lost"
    assert answer["counts"]["hive failed"] == 1 and answer["mode"] == "active"
    assert failed["decisions"] == 1 and failed["timeline"][0]["outcome"] == decision.outcome.display
    page = clients.viewer.get("/acid/shadow").text
    assert 'id="shadow"' in page and "worker lost" in page and "hive failed" in page
    assert "Decided to compact" in page and "ACID_INITIATOR_DECISION_LOG" in page
    assert row_checksums(ms.db.engine) == before
