"""Issue 29 item 5: UPDATE and MERGE — the client's keyword and SQL-text forms and ``airflow-acid sql`` — on rows
holding timestamps outside 1677–2262 (0001-01-01, 9999-12-31, which Arrow keeps at microseconds), on every metastore
backend: each statement changes what it names and every other value reads back exactly."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from airflow_acid.cli.commands import main
from airflow_acid.client.merge_clauses import WhenMatched, WhenNotMatched
from airflow_acid.client.sql_eval import Sql
from airflow_acid.client.warehouse import AcidWarehouse
from tests.services.support import unique

LOW, HIGH = dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
MID = dt.datetime(1500, 1, 1, 12, 34, 56, 123456)
COLUMNS = [("k", "int"), ("ts", "timestamp"), ("st", "struct<a:int,t:timestamp>"), ("ats", "array<timestamp>"),
           ("m", "map<string,timestamp>"), ("s", "string")]
ROWS = [
    {"k": 1, "ts": LOW, "st": {"a": 1, "t": HIGH}, "ats": [LOW, None, HIGH], "m": {"lo": LOW}, "s": "one"},
    {"k": 2, "ts": HIGH, "st": {"a": 2, "t": LOW}, "ats": [], "m": {}, "s": "two"},
    {"k": 3, "ts": MID, "st": None, "ats": None, "m": None, "s": "three"},
]
NEW = {"k": 4, "ts": LOW, "st": {"a": 4, "t": MID}, "ats": [HIGH], "m": {"hi": HIGH}, "s": "four"}


def _cli(url: str, root, statement: str) -> None:
    result = CliRunner().invoke(main, ["sql", statement, "--metastore-url", url, "--warehouse", str(root)])
    assert result.exit_code == 0, f"airflow-acid sql {statement!r} exited {result.exit_code}: {result.output}"


def _merge_source() -> list[dict[str, Any]]:
    """Row 2 matched (its ts set to 0001-01-01, its s changed) and row 4 new."""
    return [{**ROWS[1], "ts": LOW, "s": "two'"}, NEW]


STATEMENTS: dict[str, tuple[Callable[..., None], dict[int, dict[str, Any]]]] = {
    "update keyword": (lambda wh, t, url, root: _in_txn(wh, lambda x: x.update(t, {"ts": HIGH, "s": "x"},
                                                                                  where=pc.field("k") == 1)),
                       {1: {**ROWS[0], "ts": HIGH, "s": "x"}}),
    "update sql text": (lambda wh, t, url, root: _in_txn(wh, lambda x: x.update(
        t, {"ts": Sql("TIMESTAMP '9999-12-31 23:59:59.999999'"), "s": Sql("concat(s, '!')")}, where="k = 1")),
                        {1: {**ROWS[0], "ts": HIGH, "s": "one!"}}),
    "update every row by sql": (lambda wh, t, url, root: _in_txn(wh, lambda x: x.update(
        t, {"s": Sql("upper(s)")}, where="k > 0")), {r["k"]: {**r, "s": r["s"].upper()} for r in ROWS}),
    "merge keywords": (lambda wh, t, url, root: _in_txn(wh, lambda x: x.merge(
        t, _merge_source(), on="k", when_matched_update=True, when_not_matched_insert=True)),
                       {2: _merge_source()[0], 4: NEW}),
    "merge clauses": (lambda wh, t, url, root: _in_txn(wh, lambda x: x.merge(
        t, _merge_source(), on=["k"], when=[WhenMatched(update={"ts": Sql("s.ts"), "s": Sql("s.s")}),
                                             WhenNotMatched()])), {2: _merge_source()[0], 4: NEW}),
    "cli update": (lambda wh, t, url, root: _cli(url, root, f"UPDATE {t} SET s = 'cli' WHERE k = 1"),
                   {1: {**ROWS[0], "s": "cli"}}),
    "cli merge": (lambda wh, t, url, root: _cli(
        url, root, f"MERGE INTO {t} AS t USING (SELECT k, ts, s FROM {t} WHERE k = 2) AS s ON t.k = s.k "
                   "WHEN MATCHED THEN UPDATE SET ts = s.ts, s = 'merged'"), {2: {**ROWS[1], "s": "merged"}}),
    "cli merge of literals": (lambda wh, t, url, root: _cli(
        url, root, f"MERGE INTO {t} AS t USING (SELECT 3 AS k, TIMESTAMP '0001-01-01 00:00:00' AS ts) AS s "
                   "ON t.k = s.k WHEN MATCHED THEN UPDATE SET ts = s.ts"), {3: {**ROWS[2], "ts": LOW}}),
    "cli update to a literal": (lambda wh, t, url, root: _cli(
        url, root, f"UPDATE {t} SET ts = TIMESTAMP '9999-12-31 23:59:59.999999' WHERE k = 3"),
                                {3: {**ROWS[2], "ts": HIGH}}),
}
"""Each statement and the rows it changes (key -> the whole row afterwards); the other rows stay as written."""


def _in_txn(wh: AcidWarehouse, action: Callable[[Any], object]) -> None:
    with wh.transaction() as txn:
        action(txn)


@pytest.mark.parametrize("statement", list(STATEMENTS))
def test_statement_on_out_of_range_timestamps_keeps_every_value(wh, module_url, module_root, statement):
    table = unique("oor")
    wh.create_table(table, COLUMNS)
    with wh.transaction() as txn:
        txn.insert(table, ROWS)
    run, changed = STATEMENTS[statement]
    run(wh, table, module_url, module_root)
    expected = {r["k"]: r for r in ROWS} | changed
    with wh.transaction() as txn:
        got = {r["k"]: r for r in txn.read(table).to_pylist()}
    assert sorted(got) == sorted(expected)
    for k, row in expected.items():
        assert {n: _plain(n, v) for n, v in got[k].items()} == row, f"row k={k}"


def _plain(column: str, value: Any) -> Any:
    """A read value as written: the map column's pairs back to a dict."""
    return dict(value) if column == "m" and value is not None else value
