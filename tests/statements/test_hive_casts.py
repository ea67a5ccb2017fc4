"""Hive's implicit conversion of strings written into typed columns: valid strings become the value Hive's CAST
gives, invalid ones NULL (not an error) — through INSERT … VALUES / UPDATE on each backend, and the rules over
generated values (hypothesis)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.client.hive_casts import exact_timestamp, string_values
from airflow_acid.statements import StatementExecutor, parse_statements
from tests.services.support import unique


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def test_strings_into_typed_columns_cast_as_hive_or_become_null(wh):
    t = unique("casts")
    run(wh, f"CREATE TABLE {t} (id INT, ts TIMESTAMP, n INT, d DATE, x DECIMAL(5,2), f DOUBLE) STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {t} VALUES (1, '2014-09-01 09:44.23.23', 'x', '2014-09-01 10:00:00', '1.005', 'abc'), "
            "(2, '2014-09-01 09:44:23.23', ' 7.9 ', 'nope', '12345', '2.5'), "
            "(3, '2014-09-01T09:44', '99999999999', '2014-13-01', ' -1.5', '1e3')")
    rows = {r["id"]: r for r in wh.read(t).to_pylist()}
    assert [rows[1][c] for c in ("ts", "n", "d", "x", "f")] == [None, None, dt.date(2014, 9, 1), Decimal("1.01"), None]
    assert [rows[2][c] for c in ("ts", "n", "d", "x", "f")] == \
        [dt.datetime(2014, 9, 1, 9, 44, 23, 230000), 7, None, None, 2.5]
    assert [rows[3][c] for c in ("ts", "n", "d", "x", "f")] == \
        [dt.datetime(2014, 9, 1, 9, 44), None, None, Decimal("-1.50"), 1000.0]
    run(wh, f"UPDATE {t} SET n = 'seven', ts = '2020-02-30 00:00:00' WHERE id = 2")
    assert [(r["n"], r["ts"]) for r in wh.read(t).to_pylist() if r["id"] == 2] == [(None, None)]


@given(st.integers(-(1 << 40), 1 << 40), st.sampled_from([(pa.int8(), 8), (pa.int16(), 16), (pa.int32(), 32),
                                                          (pa.int64(), 64)]))
def test_integers_in_range_read_back_and_others_are_null(value, kind):
    typ, bits = kind
    fits = -(1 << (bits - 1)) <= value < (1 << (bits - 1))
    assert string_values([f" {value} ", f"{value}.75", f"{value}x"], typ) == \
        [value if fits else None, value if fits else None, None]


@given(st.datetimes(min_value=dt.datetime(1, 1, 1)), st.integers(0, 999))
def test_timestamps_keep_every_digit(value, nanos):
    text = f"{value:%Y-%m-%d %H:%M:%S}".rjust(19, "0") + f".{value.microsecond * 1000 + nanos:09d}"
    exact = exact_timestamp(text)
    assert exact is not None
    whole = value.replace(microsecond=0, tzinfo=dt.timezone.utc)
    assert exact["epoch_seconds"] == int((whole - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)).total_seconds())
    assert exact["nanos_of_second"] == value.microsecond * 1000 + nanos
    assert exact_timestamp(text.replace(":", ".", 1)) is None


@given(st.decimals(min_value=-999, max_value=999, places=4))
def test_decimals_round_half_up_to_the_scale_and_null_beyond_the_precision(value):
    [cast] = string_values([str(value)], pa.decimal128(4, 1))
    expected = value.quantize(Decimal("0.1"), rounding="ROUND_HALF_UP")
    assert cast == (expected if abs(expected) < 1000 else None)


def test_comparisons_with_string_literals_convert_as_hive_does(wh):
    """A number against a string compares as DOUBLEs, a date or timestamp against a string as that type; a string
    that is no such value makes the comparison NULL (no row, no error) — in SELECT, joins' WHERE, UPDATE, DELETE."""
    t = unique("cmp")
    run(wh, f"CREATE TABLE {t} (id INT, ts TIMESTAMP, d DATE, x DECIMAL(5,2), s STRING) STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {t} VALUES (7, '2014-09-01 09:44:23.23', '2014-09-01', 1.5, '10'), "
            "(8, '2014-09-02 00:00:00', '2014-09-02', 2.25, 'ten')")

    def ids(where: str) -> list[int]:
        [result] = run(wh, f"SELECT id FROM {t} WHERE {where} ORDER BY id")
        return [r[0] for r in result.rows]

    assert ids("id = '7'") == ids("id = ' 7.0 '") == ids("'7' = id") == [7]
    assert ids("id = 'abc'") == ids("id <> 'abc'") == ids("x > 'one'") == []
    assert ids("x >= '2.25'") == [8] and ids(f"{t}.id < '8'") == [7]
    assert ids("ts = '2014-09-01 09:44:23.23'") == [7]
    assert ids("ts = '2014-09-01 09:44.23.23'") == ids("ts > '2014'") == ids("d = 'x'") == []
    assert ids("ts >= '2014-09-02'") == [8]
    assert ids("d = '2014-09-01 10:00:00'") == [7]
    assert ids("s > 9") == [7] and ids("s = 10") == [7] and ids("s < 100") == [7]
    run(wh, f"UPDATE {t} SET s = 'x' WHERE id = 'abc'")
    run(wh, f"DELETE FROM {t} WHERE ts = 'not a time'")
    run(wh, f"DELETE FROM {t} WHERE d = '2014-09-02'")
    assert sorted((r["id"], r["s"]) for r in wh.read(t).to_pylist()) == [(7, "10")]
