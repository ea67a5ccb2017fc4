"""Hive's multi-table INSERT (``FROM src INSERT OVERWRITE TABLE a SELECT … INSERT INTO TABLE b SELECT …``): each
branch reads the source with its own WHERE, all branches commit in one transaction or none; on each backend."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.client.errors import SchemaMismatchError
from airflow_acid.statements import StatementExecutor, parse_statement, parse_statements
from airflow_acid.statements.model import MultiInsert
from tests.services.support import unique


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def create(wh, name: str, columns: str, extra: str = "") -> None:
    run(wh, f"CREATE TABLE {name} ({columns}) {extra} STORED AS ORC TBLPROPERTIES ('transactional'='true')")


def test_parsed_as_one_statement_with_the_source_in_each_branch():
    s = parse_statement("FROM src s INSERT OVERWRITE TABLE a SELECT s.id WHERE s.id > 1 "
                        "INSERT INTO TABLE b PARTITION (ds='d') SELECT id, name")
    assert isinstance(s, MultiInsert)
    assert [(i.table.table, i.overwrite, i.partition) for i in s.inserts] == [("a", True, None), ("b", False, {"ds": "d"})]
    assert all(i.source.args["from_"].this.name == "src" for i in s.inserts)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.integers(0, 20), min_size=1, max_size=8, unique=True), limit=st.integers(0, 20))
def test_each_branch_writes_what_its_select_gives_in_one_transaction(wh, ids, limit):
    src, a, b = unique("mi_src"), unique("mi_a"), unique("mi_b")
    create(wh, src, "id INT, name STRING")
    create(wh, a, "id INT")
    create(wh, b, "id INT, name STRING", "PARTITIONED BY (ds STRING)")
    run(wh, f"INSERT INTO {src} VALUES " + ", ".join(f"({i}, 'n{i}')" for i in ids))
    run(wh, f"INSERT INTO {a} VALUES (99)")
    [result] = run(wh, f"FROM {src} s INSERT OVERWRITE TABLE {a} SELECT s.id WHERE s.id > {limit} "
                       f"INSERT INTO TABLE {b} PARTITION (ds='d') SELECT id, upper(name) WHERE id <= {limit}")
    assert sorted(r["id"] for r in wh.read(a).to_pylist()) == sorted(i for i in ids if i > limit)
    assert sorted((r["id"], r["name"], r["ds"]) for r in wh.read(b).to_pylist()) == \
        sorted((i, f"N{i}", "d") for i in ids if i <= limit)
    txns = {re.search(r"transaction (\d+)", m).group(1) for m in result.messages}
    assert len(result.messages) == 2 and len(txns) == 1


def test_a_failing_branch_writes_nothing(wh):
    src, a, b = unique("mi_src"), unique("mi_a"), unique("mi_b")
    create(wh, src, "id INT")
    create(wh, a, "id INT")
    create(wh, b, "n DECIMAL(2,0)")
    run(wh, f"INSERT INTO {src} VALUES (1), (500)")
    with pytest.raises(SchemaMismatchError, match="column n"):
        run(wh, f"FROM {src} INSERT INTO TABLE {a} SELECT id INSERT INTO TABLE {b} SELECT id")
    assert wh.read(a).num_rows == 0 and wh.read(b).num_rows == 0
