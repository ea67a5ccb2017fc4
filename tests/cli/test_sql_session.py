"""``airflow-acid sql`` as a Hive user drives it: scripts with Hive's SET preamble and comments (-f, -e, STATEMENT),
the shell (one process, statements over several lines, help, !quit), Hive's FAILED lines without library internals,
``--json`` that prints nothing half-done, and refused statements that leave no transaction behind — on each backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from airflow_acid.cli.commands import main
from airflow_acid.cli.shell import CONTINUATION
from tests.services.support import COLUMNS, unique

PREAMBLE = """-- as Hive's ACID qtests start
set hive.support.concurrency=true;
set hive.txn.manager=org.apache.hadoop.hive.ql.lockmgr.DbTxnManager;
set hive.exec.dynamic.partition.mode=nonstrict;
SET hive.compactor.initiator.on=true; SET hive.compactor.cleaner.on=true;
"""


@pytest.fixture
def cli(module_url, module_root, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)

    def invoke(*args: str, input: str | None = None):
        return CliRunner().invoke(main, ["sql", *args, "--metastore-url", module_url, "--warehouse",
                                         str(module_root)], input=input)

    return invoke


def failed_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("FAILED: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_hive_script_runs_with_its_set_preamble(cli, wh, tmp_path):
    table = f"cli.{unique('hq')}"
    wh.create_table(table, COLUMNS)
    script = tmp_path / "q.hql"
    script.write_text(PREAMBLE + f"""
/* rows; with a semicolon in a comment */
INSERT INTO {table} VALUES (1, 'a;b'), (2, 'c');  -- trailing comment
SET hive.txn.timeout=600s;
SET my.custom.key=1;
SET my.custom.key=2;
SELECT name FROM {table} ORDER BY id;
""")
    result = cli("-f", str(script), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [r["statement"] for r in out] == ["SET"] * 5 + ["INSERT", "SET", "SET", "SET", "SELECT"]
    assert out[-1]["rows"] == [{"name": "a;b"}, {"name": "c"}]
    assert "acknowledged" in out[0]["messages"][0] and "warnings" not in out[1]
    assert out[7]["warnings"] and "warnings" not in out[8]  # an unknown key: warned once
    assert result.stderr.count("WARNING: my.custom.key is not a setting airflow-acid knows") == 1


def test_a_script_uses_its_database(cli):
    """USE lasts for the rest of the script: unqualified names resolve in it; the qtests' DROP … IF EXISTS preamble."""
    db = unique("use")
    result = cli("-e", f"CREATE DATABASE {db}; USE {db}; DROP TABLE IF EXISTS t; CREATE TABLE t (id INT); "
                       "INSERT INTO t VALUES (1), (2); SHOW TABLES; SELECT count(*) AS n FROM t; "
                       f"USE default; SHOW TABLES IN {db} LIKE 't|x*'; DROP TABLE {db}.t; DROP DATABASE {db}",
                 "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [r["statement"] for r in out] == ["CREATE DATABASE", "USE", "DROP TABLE", "CREATE TABLE", "INSERT",
                                             "SHOW TABLES", "SELECT", "USE", "SHOW TABLES", "DROP TABLE",
                                             "DROP DATABASE"]
    assert out[5]["rows"] == [{"tab_name": "t"}] and out[6]["rows"] == [{"n": 2}] and out[8]["rows"] == out[5]["rows"]
    assert out[3]["messages"][0].startswith(f"table {db}.t created at ")


def test_execute_option_and_its_conflicts(cli):
    ok = cli("-e", "SET hive.txn.timeout; SHOW TRANSACTIONS")
    assert ok.exit_code == 0 and ok.stdout.startswith("hive.txn.timeout=300s\n")
    both = cli("SHOW LOCKS", "-e", "SHOW LOCKS")
    assert both.exit_code == 2 and "give one of STATEMENT, -e/--execute or -f/--file" in both.stderr


@pytest.mark.parametrize("statement, code, line", [
    ("SELEC 1", 2, "FAILED: ParseException line 1:0 cannot recognize input near 'SELEC' '1' '<EOF>'"),
    ("SHOW COMPACTIONS;\nSELECT 1 *", 2, "FAILED: ParseException line 2:10 cannot recognize input near '<EOF>' "
                                         "'<EOF>' '<EOF>'"),
    ("SELECT nope FROM cli.{table}", 1, "FAILED: SemanticException SELECT: Invalid table alias or column reference "
                                        "'nope'"),
    ("SELECT no_such_function(id) FROM cli.{table}", 1, "FAILED: SemanticException SELECT: Invalid function "
                                                        "'no_such_function'"),
    ("SET hive.txn.timeout=soon", 1, "FAILED: SemanticException SET hive.txn.timeout='soon'"),
    ("DROP INDEX i ON cli.{table}", 2, "FAILED: SemanticException DROP INDEX is not supported by airflow-acid sql; "
                                       "'help' lists the statements it runs"),
    ("CREATE TABLE nosuchdb.{table} (id INT)", 1, "FAILED: SemanticException Database does not exist: nosuchdb"),
    ("ALTER TABLE cli.{table} SET TBLPROPERTIES ('NO_AUTO_COMPACTION'='maybe')", 1,
     "FAILED: SemanticException table cli.{table}: property no_auto_compaction='maybe' is not a boolean; use 'true' "
     "or 'false'"),
    ("ALTER TABLE cli.{table} SET TBLPROPERTIES ('orc.compress'='bogus')", 1,
     "FAILED: SemanticException table cli.{table}: property orc.compress='bogus' is not an ORC compression"),
])
def test_errors_read_as_hive_prints_them(cli, wh, statement, code, line):
    table = unique("e")
    wh.create_table(f"cli.{table}", COLUMNS)
    result = cli(statement.format(table=table))
    assert result.exit_code == code and failed_line(result).startswith(line.format(table=table)), result.stderr
    for internal in ("<class", "sqlglot", "Binder Error", "Catalog Error", "Required keyword", "supported: SELECT",
                     "Traceback"):
        assert internal not in result.output


def test_json_prints_nothing_when_a_statement_fails(cli, wh):
    table = f"cli.{unique('js')}"
    wh.create_table(table, COLUMNS)
    result = cli("--json", "-e", f"SHOW TRANSACTIONS; INSERT INTO {table} VALUES (1, 'a'); SELECT nope FROM {table}")
    assert result.exit_code == 1 and result.stdout == ""
    assert "Invalid table alias or column reference 'nope'" in failed_line(result)


@pytest.mark.parametrize("statement", [
    "INSERT INTO cli.{table} VALUES (1, 'a', 'extra')",
    "INSERT INTO cli.{table} (id, nope) VALUES (1, 'a')",
    "INSERT INTO cli.{table} SELECT nope FROM cli.{table}",
    "INSERT INTO cli.nosuch VALUES (1, 'a')",
    "UPDATE cli.{table} SET nope = 1",
    "UPDATE cli.{table} SET name = 'x' WHERE missing = 1",
    "DELETE FROM cli.{table} WHERE no_such_function(id) = 1",
    "MERGE INTO cli.{table} t USING (SELECT nope FROM cli.{table}) s ON t.id = s.nope WHEN MATCHED THEN DELETE",
    "SELECT nope FROM cli.{table}",
])
def test_a_refused_statement_leaves_no_transaction_behind(cli, wh, statement):
    table = unique("nt")
    wh.create_table(f"cli.{table}", COLUMNS)
    before = {t.txnid for t in wh.metastore.txns.show_transactions()}
    result = cli(statement.format(table=table))
    assert result.exit_code in (1, 2) and failed_line(result).startswith("FAILED: SemanticException")
    assert {t.txnid for t in wh.metastore.txns.show_transactions()} == before


def test_the_shell_reads_statements_over_several_lines(cli, wh):
    table = f"cli.{unique('sh')}"
    wh.create_table(table, COLUMNS)
    session = (f"SET hive.support.concurrency=true;\nINSERT INTO {table}\n  VALUES (1, 'x;y');\n"
               "SELEC oops;\n"  # an error does not end the session
               f"help\nSELECT name\nFROM {table};\n!quit\nSHOW TRANSACTIONS;\n")
    result = cli("--shell", input=session)
    assert result.exit_code == 0, result.output
    assert "1 row(s) inserted" in result.stdout and "x;y" in result.stdout and "SHOW COMPACTIONS" in result.stdout
    assert "FAILED: ParseException line 1:0 cannot recognize input near 'SELEC' 'oops' '<EOF>'" in result.stderr
    assert "lastheartbeattime" not in result.stdout  # SHOW TRANSACTIONS came after !quit


def test_the_shell_is_one_process(tmp_path):
    """A real process given the session on stdin: every statement is answered by it, then Ctrl-D (end of input)."""
    env = {**os.environ, "AIRFLOW_ACID_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("AIRFLOW_ACID_METASTORE_URL", None)
    statements = "CREATE TABLE s (id INT);\n" + "INSERT INTO s VALUES (1);\n" * 3 + "SELECT count(*) AS n FROM s;\n"
    out = subprocess.run([sys.executable, "-c", "from airflow_acid.cli import main; main()", "sql", "--shell",
                          "--json"], input=statements, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    answers = [json.loads(chunk) for chunk in out.stdout.replace("]\n[", "]\0[").split("\0")]
    assert [a[0]["statement"] for a in answers] == ["CREATE TABLE", "INSERT", "INSERT", "INSERT", "SELECT"]
    assert answers[-1][0]["rows"] == [{"n": 3}]
    transactions = {int(m.split("transaction ")[1].split(",")[0]) for a in answers[1:4] for m in a[0]["messages"]}
    assert len(transactions) == 3


def test_the_interactive_shell_on_a_terminal(tmp_path):
    """On a pseudo-terminal: the prompt, a statement typed over two lines, !quit, and the history kept."""
    import pty
    import select

    home = tmp_path / "home"
    env = {**os.environ, "AIRFLOW_ACID_HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "TERM": "dumb"}
    env.pop("AIRFLOW_ACID_METASTORE_URL", None)
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", "from airflow_acid.cli import main; main()", "sql"],
                               stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    seen = b""

    def read_until(marker: bytes, timeout: float = 120.0) -> None:
        """Wait for ``marker`` in what the process wrote since the last marker."""
        nonlocal seen
        while marker not in seen:
            ready, _, _ = select.select([master], [], [], timeout)
            assert ready, f"no {marker!r} in {seen[-2000:]!r}"
            seen += os.read(master, 65536)
        seen = seen[seen.index(marker) + len(marker):]

    try:
        read_until(b"airflow-acid> ")
        os.write(master, b"SHOW\n")
        read_until(CONTINUATION.encode())  # the statement goes on until its ';'
        os.write(master, b"TRANSACTIONS;\n")
        read_until(b"lastheartbeattime")
        read_until(b"airflow-acid> ")
        os.write(master, b"!quit\n")
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        os.close(master)
    assert "SHOW" in (home / "sql_history").read_text()
