"""BucketCodec V1/V0: the encoded ``bucket`` column of ACID events (docs/hive-acid.md#bucket-codec)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.bucket_codec import MAX_BUCKET_ID, MAX_STATEMENT_ID, BucketProperty
from airflow_acid.acid.errors import BucketCodecError


@pytest.mark.parametrize(("bucket", "stmt", "value"), [
    (0, 0, 536870912),
    (1, 0, 536936448),
    (2, 0, 537001984),
    (0, 1, 536870913),
    (3, 5, 536870912 + 3 * 65536 + 5),
    (MAX_BUCKET_ID, MAX_STATEMENT_ID, 0x2FFF0FFF),
])
def test_known_values(bucket: int, stmt: int, value: int) -> None:
    assert bucket_codec.encode(bucket, stmt) == value
    assert bucket_codec.decode(value) == BucketProperty(1, bucket, stmt)
    assert bucket_codec.bucket_id_of(value) == bucket
    assert bucket_codec.version_of(value) == 1


def test_no_statement_id_encodes_as_zero() -> None:
    assert bucket_codec.encode(1, -1) == bucket_codec.encode(1, 0) == 536936448


def test_statement_bits_do_not_touch_bucket_bits() -> None:
    value = bucket_codec.encode(7, 4095)
    assert value & 0xFFF == 4095
    assert (value >> 16) & 0xFFF == 7
    assert value & 0x0000F000 == 0  # reserved
    assert value & 0x10000000 == 0  # reserved


@pytest.mark.parametrize("value", [0, 1, 17, 4096, 536870911])
def test_v0_is_whole_int_bucket_id(value: int) -> None:
    assert bucket_codec.version_of(value) == 0
    assert bucket_codec.decode(value) == BucketProperty(0, value, 0)


@pytest.mark.parametrize("value", [2 << 29, 0x7FFFFFFF, -1, -(1 << 31)])
def test_unknown_version_is_an_error(value: int) -> None:
    with pytest.raises(BucketCodecError, match=str(value)):
        bucket_codec.decode(value)


@pytest.mark.parametrize(("bucket", "stmt"), [(MAX_BUCKET_ID + 1, 0), (-1, 0), (0, MAX_STATEMENT_ID + 1)])
def test_range_errors(bucket: int, stmt: int) -> None:
    with pytest.raises(BucketCodecError):
        bucket_codec.encode(bucket, stmt)


@given(st.integers(0, MAX_BUCKET_ID), st.integers(-1, MAX_STATEMENT_ID))
def test_round_trip(bucket: int, stmt: int) -> None:
    value = bucket_codec.encode(bucket, stmt)
    assert -(1 << 31) <= value < (1 << 31)  # fits an ORC int column
    assert bucket_codec.decode(value) == BucketProperty(1, bucket, max(stmt, 0))


@given(st.integers(0, (1 << 29) - 1))
def test_v0_round_trip(bucket: int) -> None:
    assert bucket_codec.bucket_id_of(bucket) == bucket


@given(st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 4095)), max_size=50),
       st.lists(st.integers(0, (1 << 29) - 1), max_size=10))
def test_bucket_ids_of_an_array_match_one_by_one(v1, v0):
    import numpy as np

    values = [bucket_codec.encode(b, s) for b, s in v1] + v0
    assert bucket_codec.bucket_ids_of(np.array(values, dtype=np.int64)).tolist() == \
        [bucket_codec.bucket_id_of(v) for v in values]
