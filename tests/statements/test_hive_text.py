"""Values printed as Hive's CLI prints them: FLOAT/DOUBLE as Java's toString, true/false, CHAR(n) padded,
timestamps without trailing zeros, decimals at their scale — through SELECT on each backend, and the formatting
rules against their definition (hypothesis)."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.statements import StatementExecutor, parse_statements
from airflow_acid.statements.hive_text import hive_text, java_double, shortest_float32, timestamp_text
from tests.services.support import unique


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def test_select_prints_values_as_hive(wh):
    t = unique("printed")
    run(wh, f"CREATE TABLE {t} (id INT, f FLOAT, d DOUBLE, b BOOLEAN, c CHAR(5), ts TIMESTAMP, n DECIMAL(10,3)) "
            "STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {t} VALUES (1, 3.14, 1e7, true, 'ab', '2014-09-01 09:44:23.23', 1.5), "
            "(2, NULL, 0.001, false, 'abcdefg', '2014-09-01 09:44:23', 0)")
    [result] = run(wh, f"SELECT * FROM {t} ORDER BY id")
    assert result.text_rows() == [
        ["1", "3.14", "1.0E7", "true", "ab   ", "2014-09-01 09:44:23.23", "1.500"],
        ["2", "NULL", "0.001", "false", "abcde", "2014-09-01 09:44:23", "0.000"]]
    run(wh, f"UPDATE {t} SET f = f * 2 WHERE id = 1")
    [doubled] = run(wh, f"SELECT f FROM {t} WHERE id = 1")
    assert doubled.text_rows() == [["6.28"]]


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_a_float_shows_the_fewest_digits_that_read_back_as_it(value):
    shown = shortest_float32(value)
    assert _float32(shown) == value
    digits = len(Decimal(repr(shown)).normalize().as_tuple().digits)
    if digits > 1:  # one digit fewer does not read back
        assert _float32(float(f"{value:.{digits - 1}g}")) != value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_double_prints_as_java_double_to_string(value):
    text = java_double(value)
    assert float(text.replace("E", "e")) == value
    magnitude = abs(value)
    if value != 0 and not 1e-3 <= magnitude < 1e7:
        mantissa, _ = text.lstrip("-").split("E")
        assert 1 <= float(mantissa) < 10 and "." in mantissa
    else:
        assert "E" not in text and "." in text


def test_special_values():
    assert [hive_text(v) for v in (None, True, False, float("nan"), float("-inf"), -0.0, Decimal("0E-3"), b"xy")] \
        == ["NULL", "true", "false", "NaN", "-Infinity", "-0.0", "0.000", "xy"]
    assert hive_text(None, "---") == "---"


@given(st.datetimes(min_value=dt.datetime(1, 1, 1)))
def test_timestamps_drop_trailing_zeros_of_the_fraction(value):
    text = timestamp_text(value)
    whole, _, fraction = text.partition(".")
    assert dt.datetime.strptime(whole.rjust(19, "0"), "%Y-%m-%d %H:%M:%S") == value.replace(microsecond=0)
    assert (fraction == "") == (value.microsecond == 0)
    assert not fraction.endswith("0")
    if fraction:
        assert int(fraction.ljust(6, "0")) == value.microsecond
