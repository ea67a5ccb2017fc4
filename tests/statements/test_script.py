"""Scripts as Hive's CLI reads them: statements split at ';' by sqlglot's tokenizer (never inside strings or
comments), SET and help recognised before parsing, shell buffers complete only at a ';' that ends a statement, and
parse errors in Hive's ``line L:C cannot recognize input near …`` form without library internals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.errors import AcidUserError
from airflow_acid.statements import StatementSyntaxError, parse_script
from airflow_acid.statements.model import Query, ShowCompactions, ShowTransactions
from airflow_acid.statements.script import HelpCommand, SetCommand, is_complete, session_command, split_script


def test_semicolons_inside_strings_and_comments_do_not_split():
    script = ("SET hive.txn.manager=org.apache.hadoop.hive.ql.lockmgr.DbTxnManager; -- a comment; still comment\n"
              "/* block; comment */ SELECT 'a;b' AS x;\n\n;;SHOW TRANSACTIONS")
    pieces = split_script(script)
    assert [p.text for p in pieces] == [
        "SET hive.txn.manager=org.apache.hadoop.hive.ql.lockmgr.DbTxnManager", "SELECT 'a;b' AS x",
        "SHOW TRANSACTIONS"]
    assert script[pieces[1].start:].startswith("SELECT 'a;b'")
    items = parse_script(script)
    assert items[0] == SetCommand("hive.txn.manager", "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager")
    assert isinstance(items[1], Query) and items[1].query.expressions[0].this.this == "a;b"
    assert items[2] == ShowTransactions()


@pytest.mark.parametrize("text, command", [
    ("SET", SetCommand()),
    ("set -v", SetCommand(verbose=True)),
    ("SET hive.txn.timeout", SetCommand("hive.txn.timeout")),
    ("SET hive.txn.timeout = 600s ", SetCommand("hive.txn.timeout", "600s")),
    ("Set hive.exec.dynamic.partition.mode=nonstrict", SetCommand("hive.exec.dynamic.partition.mode", "nonstrict")),
    ("help", HelpCommand()),
])
def test_session_commands(text, command):
    [piece] = split_script(text)
    assert session_command(piece) == command


def test_set_with_a_spaced_key_is_refused():
    with pytest.raises(StatementSyntaxError, match="SET takes key=value"):
        parse_script("SET a b = 1")


@pytest.mark.parametrize("text, complete", [
    ("SELECT 1", False), ("SELECT 1;", True), ("SELECT 'x;", False), ("SELECT 'x;';", True),
    ("SELECT 1 -- ;", False), ("SELECT 1; -- done", True), ("/* ; ", False), ("SELECT\n1\n;", True), ("", True),
])
def test_shell_buffers_complete_at_a_statement_end(text, complete):
    assert is_complete(text) is complete


_WORDS = st.sampled_from(["SHOW COMPACTIONS", "SHOW TRANSACTIONS", "SELECT 'x;y'", "SELECT \"a;--b\"",
                          "SELECT 1 /* ; */ + 2"])
_NOISE = st.sampled_from(["", " ", "\n", "-- c; c\n", "/* ; */", ";", "\n;\n"])


@given(st.lists(st.tuples(_NOISE, _WORDS, _NOISE), min_size=1, max_size=6))
def test_any_script_splits_into_its_statements(parts):
    script = ";".join(f"{before}{statement}{after}" for before, statement, after in parts)
    assert [p.text for p in split_script(script)] == [s for _b, s, _a in parts]


@pytest.mark.parametrize("text, message", [
    ("SELEC 1", "line 1:0 cannot recognize input near 'SELEC' '1' '<EOF>'"),
    ("SELECT 1 *", "line 1:10 cannot recognize input near '<EOF>' '<EOF>' '<EOF>'"),
    ("SELECT * FROM t WHERE", "line 1:21 cannot recognize input near '<EOF>' '<EOF>' '<EOF>'"),
    ("SHOW COMPACTIONS;\n  SELECT a b c FROM t", "line 2:13 cannot recognize input near 'c' 'FROM' 't'"),
    ("INSERT INTO t VALUES (1 2", "line 1:24 cannot recognize input near '2' '<EOF>' '<EOF>'; expecting ')'"),
    ("DELETE FROM", "line 1:11 cannot recognize input near '<EOF>' '<EOF>' '<EOF>'; expecting a table name"),
    ("SHOW COMPACTIONS;\nSELECT 'open", "line 2:7 character \"'\" starts a string or name that is never closed"),
])
def test_parse_errors_name_the_token_and_position_as_hive_does(text, message):
    with pytest.raises(StatementSyntaxError) as err:
        parse_script(text)
    assert str(err.value) == message


@given(st.text(alphabet="SELECTFROMWHEREabc123 ,;()*+-='\n", max_size=40))
def test_no_parse_error_shows_library_internals(text):
    try:
        parse_script(text)
    except StatementSyntaxError as exc:
        message = str(exc)
        assert not any(word in message for word in ("<class", "sqlglot", "Required keyword", "SENTINEL", "Token"))
        assert "supported: SELECT" not in message
    except AcidUserError:  # a statement refused with its reason; anything else fails the test
        pass


def test_show_compactions_script_parses_once():
    assert parse_script("SHOW COMPACTIONS") == [ShowCompactions()]
