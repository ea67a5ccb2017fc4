"""NULL ordering as Hive 4 (``hive.default.nulls.last=true``): NULLs last when ascending, first when descending,
an explicit NULLS FIRST/LAST as written — in SELECT, window functions and which rows ``INSERT … ORDER BY … LIMIT``
keeps; on each backend."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.statements import StatementExecutor, parse_statements
from tests.services.support import unique


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def hive_order(values: list[int | None], desc: bool, nulls: str | None) -> list[int | None]:
    """The model: Hive 4 sorts NULLs last for ASC and first for DESC unless NULLS FIRST/LAST says otherwise."""
    nulls_first = desc if nulls is None else nulls == "FIRST"
    present = sorted((v for v in values if v is not None), reverse=desc)
    missing = [None] * (len(values) - len(present))
    return missing + present if nulls_first else present + missing


@pytest.fixture
def table(wh):
    t = unique("order")
    run(wh, f"CREATE TABLE {t} (v INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    return t


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=6),
       desc=st.booleans(), nulls=st.sampled_from([None, "FIRST", "LAST"]))
def test_select_order_by_puts_nulls_where_hive_4_does(wh, table, values, desc, nulls):
    run(wh, f"TRUNCATE TABLE {table}")
    run(wh, f"INSERT INTO {table} VALUES " + ", ".join(f"({'NULL' if v is None else v})" for v in values))
    clause = f"v{' DESC' if desc else ''}{f' NULLS {nulls}' if nulls else ''}"
    [result] = run(wh, f"SELECT v FROM {table} ORDER BY {clause}")
    assert [r[0] for r in result.rows] == hive_order(values, desc, nulls)
    [ranked] = run(wh, f"SELECT v, row_number() OVER (ORDER BY {clause}) AS n FROM {table}")
    assert [r[0] for r in sorted(ranked.rows, key=lambda r: r[1])] == hive_order(values, desc, nulls)


def test_insert_order_by_limit_keeps_the_rows_hive_4_keeps(wh, table):
    target = unique("order_top")
    run(wh, f"CREATE TABLE {target} (v INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {table} VALUES (NULL), (3), (1), (NULL), (2)")
    run(wh, f"INSERT INTO {target} SELECT v FROM {table} ORDER BY v LIMIT 2")
    assert sorted(r["v"] for r in wh.read(target).to_pylist()) == [1, 2]
    run(wh, f"INSERT OVERWRITE TABLE {target} SELECT v FROM {table} ORDER BY v DESC LIMIT 3")
    kept = [r["v"] for r in wh.read(target).to_pylist()]
    assert kept.count(None) == 2 and [v for v in kept if v is not None] == [3]


def session_run(wh, session, text: str):
    from airflow_acid.statements import parse_script
    from airflow_acid.statements.session import ScriptRunner

    runner = ScriptRunner(StatementExecutor(wh).run, session)
    return [runner.run(item) for item in parse_script(text)]


def test_set_default_nulls_last_false_orders_as_hive_did_for_the_rest_of_the_session(wh, table):
    from airflow_acid.metastore.conf import MetastoreConf
    from airflow_acid.statements.session import Session

    session = Session(MetastoreConf())
    target = unique("order_first")
    run(wh, f"CREATE TABLE {target} (v INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {table} VALUES (NULL), (3), (1), (NULL), (2)")
    results = session_run(wh, session, f"""
        SELECT v FROM {table} ORDER BY v;
        SET hive.default.nulls.last=FALSE;
        SELECT v FROM {table} ORDER BY v;
        SELECT v FROM {table} ORDER BY v DESC;
        SELECT v FROM {table} ORDER BY v NULLS LAST;
        SELECT v, rank() OVER (ORDER BY v) AS r FROM {table} ORDER BY r, v;
        INSERT INTO {target} SELECT v FROM {table} ORDER BY v LIMIT 2;
        SET hive.default.nulls.last;
        SET hive.default.nulls.last=true;
        SELECT v FROM {table} ORDER BY v DESC""")
    values = [[r[0] for r in result.rows] for result in results]
    assert values[0] == [1, 2, 3, None, None]
    assert results[1].messages[0].startswith("hive.default.nulls.last=false (applies to the statements that follow")
    assert values[2] == [None, None, 1, 2, 3]
    assert values[3] == [3, 2, 1, None, None]
    assert values[4] == [1, 2, 3, None, None]
    assert [r[1] for r in results[5].rows] == [1, 1, 3, 4, 5]
    assert [r["v"] for r in wh.read(target).to_pylist()] == [None, None]
    assert results[7].rows == [["hive.default.nulls.last=false"]]
    assert values[9] == [None, None, 3, 2, 1]
    assert StatementExecutor(wh).run(parse_statements(f"SELECT v FROM {table} ORDER BY v")[0]).rows[0] == [1]


def test_set_default_nulls_last_takes_only_booleans():
    from airflow_acid.metastore.conf import MetastoreConf
    from airflow_acid.metastore.errors import InvalidSettingError
    from airflow_acid.statements.session import Session

    session = Session(MetastoreConf())
    with pytest.raises(InvalidSettingError, match="Hive accepts true, false"):
        session.set("hive.default.nulls.last", "maybe")
    assert session.show("hive.default.nulls.last").rows == [["hive.default.nulls.last=true"]]
    assert ["hive.default.nulls.last=true"] in session.listing(verbose=True).rows
