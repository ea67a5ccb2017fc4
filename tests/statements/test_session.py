"""SET in an ``airflow-acid sql`` session: Hive's settings change what the following statements use, keys that only
configure HiveServer2 or Hive's engine are acknowledged with a note (the settings a Hive ACID script starts with
among them), values are checked where they enter, unknown keys are warned about once, and SET k / SET / SET -v /
help show what the session holds."""

from __future__ import annotations

import pytest

from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import InvalidSettingError
from airflow_acid.statements import parse_script
from airflow_acid.statements.session import ScriptRunner, Session

HIVE_ACID_PREAMBLE = """
SET hive.support.concurrency=true;
SET hive.txn.manager=org.apache.hadoop.hive.ql.lockmgr.DbTxnManager;
SET hive.exec.dynamic.partition.mode=nonstrict;
SET hive.compactor.initiator.on=true;
SET hive.compactor.cleaner.on=true;
SET hive.compactor.worker.threads=1;
SET hive.vectorized.execution.enabled=false;
"""


def run(session: Session, text: str):
    runner = ScriptRunner(lambda statement: pytest.fail(f"no statement expected: {statement}"), session)
    return [runner.run(item) for item in parse_script(text)]


def test_a_hive_acid_script_preamble_is_recognised_not_unknown():
    results = run(Session(MetastoreConf()), HIVE_ACID_PREAMBLE)
    assert not any(r.warnings for r in results)
    lines = [r.messages[0] for r in results]
    assert lines[0].startswith("hive.support.concurrency=true: acknowledged; airflow-acid always runs with "
                               "transactions and locks")
    assert "hive.compactor.initiator.on=true: acknowledged; the Initiator and the Worker run as Airflow DAGs" in lines[3]
    assert "acid_cleanup" in lines[4]
    assert lines[5] == "hive.compactor.worker.threads=1 (applies to the statements that follow in this session)"
    assert "HiveServer2 or Hive's query engine" in lines[6]


def test_a_hive_setting_applies_to_the_session_and_reaches_the_executor():
    seen: list[MetastoreConf] = []
    session = Session(MetastoreConf(), on_change=seen.append)
    run(session, "SET hive.txn.timeout=10m; SET metastore.compactor.wait.timeout=5000")
    assert session.conf.txn_timeout_s == 600.0 and session.conf.wait_timeout_ms == 5000
    assert seen[-1] is session.conf and len(seen) == 2
    [shown] = run(session, "SET hive.txn.timeout")
    assert shown.rows == [["hive.txn.timeout=600s"]]


@pytest.mark.parametrize("text, message", [
    ("SET hive.txn.timeout=soon", "SET hive.txn.timeout='soon': setting hive.txn.timeout='soon' is not a duration"),
    ("SET hive.compactor.delta.num.threshold=-1", "must not be negative"),
    ("SET hive.support.concurrency=maybe", "SET hive.support.concurrency='maybe': Hive accepts true, false"),
    ("SET hive.exec.dynamic.partition.mode=loose", "Hive accepts strict, nonstrict"),
    ("SET hive.compactor.initiator.failed.compacts.threshold=50", "out of range; Hive accepts 1 to 20"),
])
def test_values_are_checked_when_set(text, message):
    session = Session(MetastoreConf())
    with pytest.raises(InvalidSettingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(session, text)
    assert session.conf == MetastoreConf() and session.values == {}


def test_a_value_other_than_the_one_hive_acid_needs_gets_a_note():
    [result] = run(Session(MetastoreConf()), "SET hive.support.concurrency=false")
    assert result.messages[0].endswith("(airflow-acid behaves as hive.support.concurrency=true)")


def test_unknown_keys_are_kept_and_warned_about_once():
    session = Session(MetastoreConf())
    first, second, shown, missing = run(session, "SET my.own.key=1; SET my.own.key=2; SET my.own.key; SET other")
    assert first.warnings == ["my.own.key is not a setting airflow-acid knows (check the spelling); it is kept for "
                              "this session only: SET my.own.key shows it"]
    assert second.warnings == [] and second.messages == ["my.own.key=2"]
    assert shown.rows == [["my.own.key=2"]] and missing.rows == [["other is undefined"]]
    [unknown_compactor] = run(session, "SET hive.compactor.nosuch=1")
    assert unknown_compactor.warnings  # a compactor-looking key airflow-acid does not have is not acknowledged


def test_set_lists_what_the_session_set_and_set_v_every_setting():
    session = Session(MetastoreConf())
    run(session, "SET hive.txn.timeout=600; SET x.y=z")
    [listed] = run(session, "SET")
    assert listed.rows == [["hive.txn.timeout=600"], ["x.y=z"]]
    [everything] = run(session, "SET -v")
    lines = [row[0] for row in everything.rows]
    assert "hive.compactor.delta.num.threshold=10" in lines and "x.y=z" in lines
    assert "hive.txn.timeout=600" in lines and len(lines) > 50


def test_help_lists_statements_and_session_commands():
    [result] = run(Session(MetastoreConf()), "help")
    commands = [row[0] for row in result.rows]
    assert "SHOW COMPACTIONS" in commands and "SET key=value" in commands and "!quit, !q, Ctrl-D" in commands
