"""Issue 29 item 4: random rows of the type matrix (any edge value in any column, tests/type_matrix.py) keep every
value through write → UPDATE (SQL text) → MERGE → MINOR → MAJOR → REBALANCE compaction, read by our reader after
each step. Derandomized under CI by the ``ci`` hypothesis profile (tests/conftest.py); no shrinking, so an example
costs one run and the test stays within about a minute (the failing example is printed as drawn)."""

from __future__ import annotations

import itertools
import shutil
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from airflow_acid.acid.merge import read_acid_table
from airflow_acid.client.sql_eval import Sql
from airflow_acid.client.warehouse import AcidWarehouse
from tests.spark.helpers import snapshot
from tests.spark.orc_files import compact, location
from tests.type_matrix import (
    COLUMNS,
    EDGES,
    NAMES,
    ROW_TYPE,
    VARIANTS,
    WIDE_VARIANTS,
    api_rows,
    arrow_rows,
    cell,
    expected_row,
)

_tables = itertools.count(1)


@pytest.fixture(scope="module")
def wh(migrated_sqlite, tmp_path_factory):
    work = tmp_path_factory.mktemp("matrix_properties")
    shutil.copy(migrated_sqlite, work / "metastore.db")
    warehouse = AcidWarehouse(f"sqlite:///{work / 'metastore.db'}", work / "wh", init=False)
    yield warehouse
    warehouse.close()


def _row(k: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"k": st.just(k), **{n: st.sampled_from(EDGES[n]) for n in NAMES[1:]}})


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(variant, rows inserted, MERGE source): keys 0…n-1 inserted, the source matching some and adding others."""
    variant = draw(st.sampled_from(sorted(VARIANTS)))
    n = draw(st.integers(1, 4))
    rows = [draw(_row(k)) for k in range(n)]
    keys = draw(st.lists(st.integers(0, n + 2), min_size=1, max_size=4, unique=True))
    source = [draw(_row(k)) for k in keys]
    return variant, VARIANTS[variant](rows), VARIANTS[variant](source)


def _mismatches(label: str, table, expected: dict[int, dict[str, Any]]) -> list[str]:
    got = {int(cell(r["k"])): r for r in arrow_rows(table.select(NAMES))}
    out = [] if sorted(got) == sorted(expected) else [f"{label}: keys {sorted(got)}, expected {sorted(expected)}"]
    for k in sorted(set(got) & set(expected)):
        out += [f"{label} k={k} column {n}: expected {cell(expected[k][n])} got {cell(got[k][n])}"
                for n in NAMES if cell(expected[k][n]) != cell(got[k][n])]
    return out


@pytest.mark.slow
@settings(max_examples=6, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(history=histories())
def test_random_rows_keep_every_value_through_statements_and_compactions(wh, history):
    variant, rows, source = history
    table = f"prop{next(_tables)}"
    wh.create_table(table, COLUMNS)
    expected = {r["k"]: expected_row(r) for r in rows}
    with wh.transaction() as txn:  # write id 1
        txn.insert(table, api_rows(rows, wide=variant in WIDE_VARIANTS))
    with wh.transaction() as txn:  # write id 2: every value through the SQL engine
        txn.update(table, {n: Sql(n) for n in NAMES[1:]}, where="k >= 0")
    with wh.transaction() as txn:  # write id 3
        txn.merge(table, api_rows(source, wide=variant in WIDE_VARIANTS), on="k", when_matched_update=True,
                  when_not_matched_insert=True)
    expected |= {r["k"]: expected_row(r) for r in source}
    folder = location(wh, table)
    problems = []
    with wh.transaction() as txn:
        problems += _mismatches(f"{variant} after MERGE", txn.read(table), expected)
    for ctype, txn_id, kw in (("minor", 103, {}), ("major", 203, {}), ("rebalance", 303, {"number_of_buckets": 1})):
        compact(folder, ctype, 3, row_schema=ROW_TYPE, txn=txn_id, **kw)
        problems += _mismatches(f"{variant} after {ctype}", read_acid_table(str(folder), snapshot(3)), expected)
    assert not problems, "\n".join(problems[:40])
