"""The three Arrow forms of a Hive timestamp (acid/timestamps.py): exact conversions, the narrowest form, the values
ORC cannot store and those pyarrow's writer would store wrongly (issue 29)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid.errors import TimestampFormError, UnstorableTimestampError
from airflow_acid.acid.timestamps import (
    WIDE_TIMESTAMP,
    TimestampForm,
    check_storable,
    convert,
    has_negative_fractions,
    in_form,
    keep_timestamp_forms,
    narrowest,
)

HIVE_MIN, HIVE_MAX = -62135596800, 253402300799  # 0001-01-01 00:00:00 and 9999-12-31 23:59:59, seconds
NS_MIN, NS_MAX = -(1 << 63), (1 << 63) - 1

exact = st.tuples(st.integers(HIVE_MIN, HIVE_MAX), st.integers(0, 999_999_999))
values = st.lists(st.one_of(st.none(), exact, st.tuples(st.integers(-10**6, 10**6), st.integers(0, 999_999_999)),
                            st.tuples(st.integers(HIVE_MIN, HIVE_MAX), st.integers(0, 999_999).map(lambda n: n * 1000))),
                  max_size=40)


def _wide(pairs) -> pa.Array:
    return pa.array([None if p is None else {"epoch_seconds": p[0], "nanos_of_second": p[1]} for p in pairs],
                    WIDE_TIMESTAMP)


def _pairs(array) -> list:
    wide = convert(array, in_form(array.type, TimestampForm.WIDE))
    return [None if v is None else (v["epoch_seconds"], v["nanos_of_second"]) for v in wide.to_pylist()]


@given(values)
def test_narrowest_form_holds_every_value_exactly(pairs):
    array = _wide(pairs)
    narrow = narrowest(array)
    assert _pairs(narrow) == pairs
    fits_ns = all(p is None or NS_MIN <= p[0] * 10**9 + p[1] <= NS_MAX for p in pairs)
    whole_us = all(p is None or p[1] % 1000 == 0 for p in pairs)
    expected = pa.timestamp("ns") if fits_ns else pa.timestamp("us") if whole_us else WIDE_TIMESTAMP
    assert narrow.type == expected


@given(values)
def test_nested_timestamps_convert_exactly(pairs):
    struct = pa.StructArray.from_arrays([_wide(pairs), pa.array(range(len(pairs)), pa.int32())], names=["t", "i"])
    offsets = pa.array([0, len(pairs) // 2, len(pairs)], pa.int32())
    nested = pa.ListArray.from_arrays(offsets, struct)
    mapped = pa.MapArray.from_arrays(offsets, pa.array([str(i) for i in range(len(pairs))]), _wide(pairs))
    for array in (nested, mapped, nested.slice(1), mapped.slice(1)):
        narrow = narrowest(array)
        assert convert(narrow, array.type).to_pylist() == array.to_pylist()


def test_a_conversion_that_would_lose_digits_or_range_is_refused():
    with pytest.raises(TimestampFormError, match="0001-01-01 00:00:00 is out of range for timestamp\\[ns\\]"):
        convert(_wide([(HIVE_MIN, 0)]), pa.timestamp("ns"))
    with pytest.raises(TimestampFormError, match="1500-01-01 12:34:56.123456789 has digits below"):
        convert(_wide([(-14831724304, 123456789)]), pa.timestamp("us"))
    assert convert(_wide([(-14831724304, 123456789)]), pa.timestamp("us"), exact=False).to_pylist()[0].microsecond \
        == 123456  # floored for evaluation only
    with pytest.raises(TimestampFormError):
        convert(pa.array([1], pa.timestamp("ns")), pa.timestamp("us"))


def test_storable_values_and_the_one_orc_cannot_store():
    ok = [(-1, 0), (-1, 999_999), (-2, 999_999_999), (0, 1), (HIVE_MIN, 0), (HIVE_MAX, 999_999_999)]
    check_storable(_wide(ok), "t")
    for form in TimestampForm:
        for nanos in (1_000_000, 999_999_000, 500_000_000):
            array = convert(_wide([(-1, nanos)]), form.arrow_type)
            with pytest.raises(UnstorableTimestampError, match="column t: timestamp 1969-12-31 23:59:59"):
                check_storable(array, "t")
    check_storable(pa.array([None], pa.timestamp("ns")), "t")


def test_negative_fractions_are_what_pyarrow_cannot_write():
    assert not has_negative_fractions(pa.array([-10**9, 0, 10**9 + 1, None], pa.timestamp("ns")))
    assert has_negative_fractions(pa.array([-10**9 - 1], pa.timestamp("ns")))
    assert has_negative_fractions(pa.array([[-1]], pa.list_(pa.timestamp("us"))))
    assert has_negative_fractions(_wide([(0, 0)]))  # the wide form always needs the row writer


def test_keep_timestamp_forms_follows_the_declared_type_elsewhere():
    declared = pa.struct([("t", pa.timestamp("ns")), ("i", pa.int64())])
    got = pa.struct([("t", WIDE_TIMESTAMP), ("i", pa.int32())])
    assert keep_timestamp_forms(declared, got) == pa.struct([("t", WIDE_TIMESTAMP), ("i", pa.int64())])
    assert keep_timestamp_forms(pa.timestamp("ns"), pa.timestamp("us", "UTC")) == pa.timestamp("ns")


def test_only_the_values_of_a_sliced_map_are_checked():
    offsets = pa.array([0, 1, 2], pa.int32())
    mapped = pa.MapArray.from_arrays(offsets, pa.array(["a", "b"]), _wide([(-1, 5_000_000), (7, 0)]))
    check_storable(mapped.slice(1), "m")
    with pytest.raises(UnstorableTimestampError):
        check_storable(mapped.slice(0, 1), "m")
