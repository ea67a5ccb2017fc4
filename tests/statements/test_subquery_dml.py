"""UPDATE / DELETE whose WHERE (or SET value) reads another table through a subquery — IN, EXISTS (correlated) and
scalar subqueries — as Hive runs them: the other table read at the statement's snapshot under SHARED_READ; each
statement against a model of the rows, on each backend."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid.codes import DataOperation
from airflow_acid.client.transaction import Transaction
from airflow_acid.statements import StatementExecutor, parse_statements
from tests.services.support import unique


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def create(wh, name: str, columns: str) -> None:
    run(wh, f"CREATE TABLE {name} ({columns}) STORED AS ORC TBLPROPERTIES ('transactional'='true')")


def values(rows) -> str:
    return ", ".join("(" + ", ".join(str(v) for v in row) + ")" for row in rows)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.dictionaries(st.integers(0, 9), st.integers(0, 50), min_size=1, max_size=6),
       other=st.dictionaries(st.integers(0, 9), st.integers(0, 50), min_size=1, max_size=6),
       limit=st.integers(0, 50))
def test_subqueries_over_another_table_match_the_model(wh, target, other, limit):
    t, o = unique("subq_t"), unique("subq_o")
    create(wh, t, "id INT, n INT")
    create(wh, o, "id INT, m INT")
    run(wh, f"INSERT INTO {t} VALUES {values(target.items())}")
    run(wh, f"INSERT INTO {o} VALUES {values(other.items())}")
    model = dict(target)

    run(wh, f"DELETE FROM {t} WHERE id IN (SELECT id FROM {o} WHERE m > {limit})")
    model = {k: v for k, v in model.items() if not (k in other and other[k] > limit)}
    assert {r["id"]: r["n"] for r in wh.read(t).to_pylist()} == model

    run(wh, f"UPDATE {t} SET n = (SELECT max(m) FROM {o}) + 1 WHERE EXISTS (SELECT 1 FROM {o} x WHERE x.id = {t}.id)")
    model = {k: (max(other.values()) + 1 if k in other else v) for k, v in model.items()}
    assert {r["id"]: r["n"] for r in wh.read(t).to_pylist()} == model

    run(wh, f"DELETE FROM {t} WHERE id NOT IN (SELECT id FROM {o})")
    model = {k: v for k, v in model.items() if k in other}
    assert {r["id"]: r["n"] for r in wh.read(t).to_pylist()} == model


def test_the_other_table_is_read_under_shared_read(wh, monkeypatch):
    t, o = unique("subq_lt"), unique("subq_lo")
    create(wh, t, "id INT")
    create(wh, o, "id INT")
    run(wh, f"INSERT INTO {t} VALUES (1), (2)")
    run(wh, f"INSERT INTO {o} VALUES (2)")
    taken = []
    original = Transaction._lock

    def spy(self, info, partitions, op, **kw):
        taken.append((info.name, op))
        return original(self, info, partitions, op, **kw)

    monkeypatch.setattr(Transaction, "_lock", spy)
    [result] = run(wh, f"DELETE FROM {t} WHERE id IN (SELECT id FROM {o})")
    assert "1 row(s) deleted" in result.messages[0]
    assert [r["id"] for r in wh.read(t).to_pylist()] == [1]
    assert (o, DataOperation.SELECT) in taken and (t, DataOperation.DELETE) in taken
