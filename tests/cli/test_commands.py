"""The operator commands of ``airflow-acid`` on each backend (click's CliRunner): ``sql`` with Hive's statements and
their columns, ``health``, ``why``, ``cleaner`` — tables for people, ``--json`` for scripts — and the exit codes and
one-line messages of the errors users hit (2: statement not understood, 1: the metastore refused)."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from airflow_acid.acid.codes import CompactionState
from airflow_acid.cli.commands import main
from airflow_acid.cli.demo import CUSTOMERS
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.worker import Worker
from airflow_acid.services import request_compaction
from airflow_acid.spark.runners import LocalRunner
from tests.services.support import COLUMNS, inserts, unique


@pytest.fixture
def cli(module_url, module_root, monkeypatch):
    """``cli(*args, input=None)`` → click Result, against the module's metastore and warehouse."""
    monkeypatch.setenv("AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT", "0")  # cleanable right after the commit
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)

    def invoke(*args: str, input: str | None = None):
        command, *rest = args
        return CliRunner().invoke(main, [command, *rest, "--metastore-url", module_url, "--warehouse",
                                         str(module_root)], input=input)

    return invoke


def as_json(result) -> object:
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def error_line(result) -> str:
    """The one line that says what went wrong (stderr may show progress lines before it): Hive's ``FAILED: …`` for
    a statement, ``Error: …`` for the command itself (options, an unreachable metastore)."""
    errors = [line for line in result.stderr.splitlines() if line.startswith(("Error: ", "FAILED: "))]
    assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), result.stderr
    return errors[0]


# --- sql ----------------------------------------------------------------------------------------------------------


def test_sql_create_compact_and_show(cli, wh):
    table = f"cli.{unique('orders')}"
    wh.create_database("cli")
    created = cli("sql", f"CREATE TABLE {table} (id INT COMMENT 'order id', name STRING) PARTITIONED BY (ds STRING) "
                         "STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    assert created.exit_code == 0, created.output
    assert f"table {table} created at" in created.stdout
    inserts(wh, table, {"ds": "2024-01-01"}, batches=2)

    compact = as_json(cli("sql", f"ALTER TABLE {table} PARTITION (ds='2024-01-01') COMPACT 'minor' POOL 'etl'",
                          "--json"))
    [row] = compact[0]["rows"]
    assert (compact[0]["statement"], row["type"], row["state"], row["partname"]) == \
        ("ALTER TABLE COMPACT", "MINOR", "initiated", "ds=2024-01-01")
    cq_id = row["compactionid"]

    shown = as_json(cli("sql", f"SHOW COMPACTIONS {table} PARTITION (ds='2024-01-01')", "--json"))
    assert shown[0]["columns"][:20] == [
        "compactionid", "dbname", "tabname", "partname", "type", "state", "workerhost", "workerid", "enqueuetime",
        "starttime", "duration", "hadoopjobid", "errormessage", "initiatorhost", "initiatorid", "poolname", "txnid",
        "nexttxnid", "committime", "hightestwriteid"]
    [shown_row] = shown[0]["rows"]
    assert (shown_row["compactionid"], shown_row["state"], shown_row["poolname"], shown_row["workerid"]) == \
        (cq_id, "initiated", "etl", None)

    text = cli("sql", f"SHOW COMPACTIONS COMPACTIONID={cq_id}")
    assert text.exit_code == 0 and "SHOW COMPACTIONS" in text.stdout
    line = next(row for row in text.stdout.splitlines() if f" {cq_id} " in row)
    assert "MINOR" in line and "initiated" in line and "---" in line and "etl" in line

    described = as_json(cli("sql", f"DESCRIBE FORMATTED {table}", "--json"))[0]
    assert described["rows"][1] == {"col_name": "id", "data_type": "int", "comment": "order id"}
    assert {"col_name": "Table Type:", "data_type": "MANAGED_TABLE", "comment": ""} in described["rows"]

    props = cli("sql", f"ALTER TABLE {table} SET TBLPROPERTIES ('no_auto_compaction'='true')")
    assert props.exit_code == 0 and f"table {table}: set no_auto_compaction=true" in props.stdout
    assert wh.table(table).property("no_auto_compaction") == "true"


def test_sql_transactions_and_locks_and_aborts(cli, wh):
    table = f"cli.{unique('tl')}"
    info = wh.create_table(table, COLUMNS)
    idle = wh.transaction()
    with wh.read_snapshot(info) as reader:
        txns, locks = as_json(cli("sql", "SHOW TRANSACTIONS; SHOW LOCKS " + table, "--json"))
        assert txns["columns"] == ["txnid", "state", "startedtime", "lastheartbeattime", "user", "host"]
        states = {r["txnid"]: r["state"] for r in txns["rows"]}
        assert states[reader.txn_id] == "OPEN" and states[idle.txn_id] == "OPEN"
        assert [(r["lock_type"], r["lock_state"], r["transaction_id"]) for r in locks["rows"]] == \
            [("SHARED_READ", "ACQUIRED", reader.txn_id)]
        text = cli("sql", f"SHOW LOCKS EXTENDED {table}")
        assert "SHARED_READ" in text.stdout and "heartbeat_count" in text.stdout

    aborted = as_json(cli("sql", f"ABORT TRANSACTIONS {idle.txn_id}", "--json"))
    assert aborted[0]["rows"] == [{"txnid": idle.txn_id, "status": "Success",
                                   "message": "Successfully aborted transaction"}]
    unknown = cli("sql", "ABORT TRANSACTIONS 987654", "--json")
    assert unknown.exit_code == 1 and as_json(unknown)[0]["rows"][0]["status"] == "Error"
    assert error_line(unknown) == "FAILED: ABORT TRANSACTIONS did not succeed (see above)"

    queued = request_compaction(wh, table, None, "major", pool=unique("pool"))[0].compaction_id
    ok = cli("sql", f"ABORT COMPACTIONS {queued}")
    assert ok.exit_code == 0 and "Successfully aborted compaction" in ok.stdout
    missing = cli("sql", "ABORT COMPACTIONS 987654")
    assert missing.exit_code == 1 and "No Such Compaction Id Available" in missing.stdout


def test_sql_reads_stdin_and_files(cli, tmp_path):
    piped = as_json(cli("sql", "--json", input="SHOW TRANSACTIONS;\n-- locks too\nSHOW LOCKS;\n"))
    assert [r["statement"] for r in piped] == ["SHOW TRANSACTIONS", "SHOW LOCKS"]
    script = tmp_path / "q.hql"
    script.write_text("SHOW COMPACTIONS LIMIT 1;")
    from_file = as_json(cli("sql", "-f", str(script), "--json"))
    assert from_file[0]["statement"] == "SHOW COMPACTIONS" and len(from_file[0]["rows"]) <= 1
    assert cli("sql", "--json", input="  ").exit_code == 2


@pytest.mark.parametrize("statement, code, message", [
    ("SELECT * FROM cli.nosuch", 1, "FAILED: SemanticException table cli.nosuch does not exist"),
    ("BEGIN", 2, "FAILED: SemanticException BEGIN is not supported: airflow-acid sql runs each statement as its own "
                 "transaction"),
    ("SHOW FUNCTIONS", 2, "FAILED: SemanticException SHOW FUNCTIONS is not supported by airflow-acid sql; 'help' "
                          "lists the statements it runs"),
    ("UPDATE cli.{table} SET nope = 1", 1, "unknown column 'nope'"),
    ("SHOW COMPACTIONS WHERE state = 'failed'", 2, "FAILED: ParseException line 1:17 cannot recognize input near "
                                                   "'WHERE' 'state' '='"),
    ("ALTER TABLE cli.nosuch COMPACT 'major'", 1, "FAILED: SemanticException table cli.nosuch does not exist"),
    ("SHOW LOCKS cli.{table} PARTITION (hour='1')", 1, "unknown key 'hour'; the partition keys are ds"),
    ("ALTER TABLE cli.{table} PARTITION (ds='nope') COMPACT 'major'", 1, "partition ds=nope of table cli.{table} "
                                                                        "does not exist"),
    ("ALTER TABLE cli.{table} SET TBLPROPERTIES ('compactorthreshold.hive.compactor.delta.pct.threshold'='lots')",
     1, "compactorthreshold.hive.compactor.delta.pct.threshold='lots' is not a number"),
])
def test_sql_errors_are_one_line_with_exit_codes(cli, wh, statement, code, message):
    table = unique("err")
    wh.create_table(f"cli.{table}", COLUMNS, partition_by=[("ds", "string")])
    result = cli("sql", statement.format(table=table))
    assert result.exit_code == code and message.format(table=table) in error_line(result)
    assert result.stdout == "" and "Traceback" not in result.output


def test_sql_parses_the_whole_script_before_running_it(cli, wh):
    table = f"cli.{unique('script')}"
    result = cli("sql", f"CREATE TABLE {table} (id INT); SHOW COMPACTIONS FOR {table}")
    assert result.exit_code == 2 and "near 'FOR' 'cli' '.'" in error_line(result)
    assert not wh.metastore.catalog.table_exists(*table.split("."))


def test_sql_and_wait_gives_up_after_the_wait_timeout(cli, wh):
    table = f"cli.{unique('wait')}"
    wh.create_table(table, COLUMNS)
    result = cli("sql", f"ALTER TABLE {table} COMPACT 'major' AND WAIT POOL 'nobody'", "--wait-timeout", "0.2")
    assert result.exit_code == 1 and "still waiting for a worker after" in error_line(result)
    assert "Waiting for compaction(s)" in result.stderr
    [row] = wh.metastore.compactions.find(db="cli", table=table.split(".")[1])
    assert row.state is CompactionState.INITIATED  # stays queued


def test_named_metastore_without_schema(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    result = CliRunner().invoke(main, ["sql", "SHOW TRANSACTIONS", "--metastore-url", url])
    assert result.exit_code == 1 and "has no airflow-acid schema; run: airflow-acid init" in error_line(result)


def test_unreachable_metastore(monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    result = CliRunner().invoke(main, ["health", "--metastore-url", "postgresql+psycopg://acid:secret@127.0.0.1:1/ms"])
    line = error_line(result)
    assert result.exit_code == 1 and "cannot reach the metastore database at postgresql+psycopg://acid:***@" in line
    assert "secret" not in result.output


def test_embedded_default_metastore_is_created_on_first_use(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    monkeypatch.setenv("AIRFLOW_ACID_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(main, ["sql", "SHOW TRANSACTIONS", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["rows"] == [] and (tmp_path / "home" / "metastore.db").is_file()


# --- health, why, cleaner -----------------------------------------------------------------------------------------


def test_health(cli, wh):
    db = unique("hc")
    table = f"{db}.events"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")],
                    properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    inserts(wh, table, {"ds": "a"}, batches=2)
    rows = as_json(cli("health", table, "--json"))
    assert [(r["partition"], r["deltas"], r["delete_deltas"], r["base_bytes"], r["last_compaction"]) for r in rows] \
        == [("ds=a", 2, 0, 0, None)]
    assert as_json(cli("health", "--database", db, "--json")) == rows
    text = cli("health", "--database", db)
    assert text.exit_code == 0 and "table health" in text.stdout
    assert next(row for row in text.stdout.splitlines() if "ds=a" in row).split("│")[4].strip() == "2"

    assert "table hc" in error_line(cli("health", f"{db}.nosuch"))
    assert cli("health", f"{db}.nosuch").exit_code == 1
    assert cli("health", "--database", "nosuchdb").exit_code == 1
    assert cli("health", table, "--database", db).exit_code == 2


def test_why_and_cleaner(cli, wh):
    table = f"cli.{unique('why')}"
    info = wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, table, {"ds": "a"}, batches=2)
    pool = unique("pool")
    cq_id = request_compaction(wh, table, "ds=a", "major", pool=pool)[0].compaction_id
    reader = wh.read_snapshot(info).__enter__()
    try:
        Worker(wh.metastore, runner=LocalRunner()).run_next(pool)
        explained = as_json(cli("why", table, "--partition", "ds=a", "--json"))
        assert [(b["compaction_id"], b["txn_id"]) for b in explained["cleanup_blockers"]] == [(cq_id, reader.txn_id)]
        text = cli("why", table, "--partition", "ds=a")
        assert text.exit_code == 0 and "Cleanup is blocked" in text.stdout
        assert "open transactions blocking cleanup" in text.stdout and str(reader.txn_id) in text.stdout

        waiting = as_json(cli("cleaner", "--dry-run", "--json"))
        mine = [w for w in waiting["waiting"] if w["compaction_id"] == cq_id]
        assert waiting["dry_run"] and [b["txn_id"] for b in mine[0]["blockers"]] == [reader.txn_id]
    finally:
        reader.__exit__(None, None, None)

    dry = cli("cleaner", "--dry-run")
    assert dry.exit_code == 0 and "dry run: nothing was deleted" in dry.stdout and "would_clean" in dry.stdout
    location = wh.metastore.catalog.get_partition("cli", info.name, "ds=a").location
    assert sum(name.startswith("delta_") for name in os.listdir(location)) == 2
    assert wh.metastore.compactions.get(cq_id).state is CompactionState.READY_FOR_CLEANING

    cleaned = as_json(cli("cleaner", "--json"))
    [entry] = [e for e in cleaned["entries"] if e["compaction_id"] == cq_id]
    assert entry["status"] == "cleaned" and sorted(d["path"][:6] for d in entry["deletions"]) == ["delta_"] * 2
    assert not any(name.startswith("delta_") for name in os.listdir(location))
    assert wh.metastore.compactions.get(cq_id).state is CompactionState.SUCCEEDED

    assert "is partitioned; name one partition" in error_line(cli("why", table))
    assert cli("why", table, "--partition", "ds=zz").exit_code == 1
    assert "unknown key 'hr'" in error_line(cli("why", table, "--partition", "hr=1"))


def test_init_and_status_print_json(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'm.db'}"
    init = CliRunner().invoke(main, ["init", "--metastore-url", url, "--json"])
    assert init.exit_code == 0 and json.loads(init.stdout)["revision"]
    with AcidWarehouse(url, tmp_path / "wh") as w:  # a demo table, written without running the whole demo
        w.create_table(CUSTOMERS, COLUMNS)
        inserts(w, CUSTOMERS, batches=1)
        for name in ("demo.sales", "demo.audit_log", "demo.events"):
            w.create_table(name, COLUMNS)
    status = CliRunner().invoke(main, ["status", "--warehouse", str(tmp_path / "wh"), "--metastore-url", url, "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout) == {"metastore": {"url": url, "flavour": "acid"},
                                         "tables": {"demo.customers": 3, "demo.sales": 0, "demo.audit_log": 0,
                                                    "demo.events": 0},
                                         "compactions": []}


# --- plan (dry run) -----------------------------------------------------------------------------------------------


def test_plan_dry_run_shows_what_would_run_and_writes_nothing(cli, wh, module_root, monkeypatch):
    from tests.compactor.test_dry_run import files_fingerprint, metastore_fingerprint

    table = f"cli.{unique('planned')}"
    wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=11)  # over hive.compactor.delta.num.threshold (10)
    before = metastore_fingerprint(wh.metastore), files_fingerprint(module_root)
    monkeypatch.setenv("AIRFLOW__ACID__COMPACTION_BUDGET_BYTES", "1")  # nothing fits: every row is held
    shown = as_json(cli("plan", "--json"))
    assert (metastore_fingerprint(wh.metastore), files_fingerprint(module_root)) == before
    [would] = [w for w in shown["would_queue"] if w["table"] == table]
    assert would["type"] == "MAJOR" and "11 current delta(s)" in would["reason"]
    [planned] = [p for p in shown["plans"] if p["table"] == table]
    assert planned["compaction_id"] is None and planned["estimate"]["files_in"] == 11
    assert planned["steps"][-1]["outputs"][0].startswith("base_0000011_v") and not planned["admitted"]
    assert "on its own" in planned["held"]
    monkeypatch.delenv("AIRFLOW__ACID__COMPACTION_BUDGET_BYTES")
    text = cli("plan")
    assert text.exit_code == 0, text.output
    assert "would queue" in text.stdout and table in text.stdout and "held" not in text.stdout.split(table)[-1][:200]
