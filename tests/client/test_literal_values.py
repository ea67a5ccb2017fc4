"""VALUES rows of literals typed without DuckDB (client/literal_values.py) give exactly the Arrow table DuckDB gives
for the same statement through the usual path (sqlglot's Hive → DuckDB transpilation, then DuckDB): same column
types, same values — or the module declines and DuckDB runs as before."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from airflow_acid.client.literal_values import literal_table
from airflow_acid.client.sql_eval import Evaluator, to_duckdb
from airflow_acid.statements import parse_statement


def values_node(rows: str) -> exp.Values:
    statement = parse_statement(f"INSERT INTO t VALUES {rows}")
    assert isinstance(statement.source, exp.Values)
    return statement.source


def through_duckdb(node: exp.Values) -> pa.Table:
    with Evaluator() as ev:
        return ev.query(f"SELECT * FROM ({to_duckdb(node)})", what="test")


def assert_same(rows: str) -> pa.Table | None:
    node = values_node(rows)
    fast = literal_table(node)
    if fast is not None:
        expected = through_duckdb(node)
        assert fast.schema == expected.schema, rows
        assert fast.to_pylist() == expected.to_pylist(), rows
    return fast


@pytest.mark.parametrize("rows, types", [
    ("(1, 'a')", [pa.int32(), pa.string()]),
    ("(2147483647), (-2147483648)", [pa.int32()]),
    ("(2147483648)", [pa.int64()]),
    ("(-2147483649)", [pa.int64()]),
    ("(9223372036854775807), (-9223372036854775808)", [pa.int64()]),
    ("(9.99)", [pa.decimal128(3, 2)]),
    ("(0.5), (-123.25), (NULL)", [pa.decimal128(5, 2)]),
    ("(0.000)", [pa.decimal128(4, 3)]),
    ("(00012)", [pa.int32()]),
    ("(NULL, NULL)", [pa.null(), pa.null()]),
    ("(NULL), (7)", [pa.int32()]),
    ("(true), (false), (NULL)", [pa.bool_()]),
    ("('it\\'s'), ('tab\\there'), ('')", [pa.string()]),
])
def test_literal_rows_are_typed_as_duckdb_types_them(rows: str, types: list[pa.DataType]) -> None:
    fast = assert_same(rows)
    assert fast is not None, f"{rows}: literals the fast path takes"
    assert fast.schema.types == types


@pytest.mark.parametrize("rows", [
    "(1), (2.5)",  # integer and decimal combined: DuckDB's rule
    "('a'), (1)",  # refused by DuckDB: its error
    "(1, 2), (3)",  # rows of different widths: DuckDB's error
    "(1e3)",  # exponent: a DOUBLE
    "(9223372036854775808)",  # beyond 64 bits
    "(1L)",  # a cast
    "(1 + 1)",  # an expression
    "(TIMESTAMP '2024-01-01 00:00:00')",
    "(123456789012345678901234567890.123456789)",  # 39 digits
])
def test_other_values_are_left_to_duckdb(rows: str) -> None:
    assert literal_table(values_node(rows)) is None


def _literal(kind: str) -> st.SearchStrategy[str]:
    if kind == "int":
        return st.one_of(st.integers(-(1 << 31) - 2, (1 << 31) + 1), st.integers(-(1 << 63), (1 << 63) - 1)
                         ).map(str)
    if kind == "decimal":
        return st.integers(1, 6).flatmap(lambda places: st.decimals(
            allow_nan=False, allow_infinity=False, places=places, min_value=Decimal("-1e12"),
            max_value=Decimal("1e12"))).map(lambda d: format(d, "f")).filter(lambda t: "." in t)
    if kind == "string":
        return st.text(st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="\\"), max_size=8
                       ).map(lambda t: "'" + t.replace("'", "\\'") + "'")
    return st.sampled_from(["true", "false", "TRUE"])


@st.composite
def literal_rows(draw: st.DrawFn) -> str:
    kinds = draw(st.lists(st.sampled_from(["int", "decimal", "string", "bool"]), min_size=1, max_size=4))
    n = draw(st.integers(1, 4))
    rows = []
    for _ in range(n):
        values = [draw(st.one_of(st.just("NULL"), _literal(k))) if draw(st.booleans()) else draw(_literal(k))
                  for k in kinds]
        rows.append("(" + ", ".join(values) + ")")
    return ", ".join(rows)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(literal_rows())
def test_any_literal_rows_match_duckdb(rows: str) -> None:
    assert_same(rows)
