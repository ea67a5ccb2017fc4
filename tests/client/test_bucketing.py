"""Hive's Murmur3-32 against the published MurmurHash3_x86_32 test vectors, Hive's sign-extended tail, and
bucketing version 2 bucket numbers — decimals and timestamps hashed over Hive's own byte forms."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid.timestamps import WIDE_TIMESTAMP
from airflow_acid.client.bucketing import (
    assign_buckets,
    bucket_hash_codes,
    bucket_numbers,
    check_bucketing_version,
    decimal_storage,
    hadoop_vlong,
    murmur3_32,
    murmur3_32_fixed,
    timestamp_bytes,
)
from airflow_acid.client.errors import BucketingError

# MurmurHash3_x86_32 reference vectors (SMHasher's algorithm; the widely published verification table).
VECTORS = [
    (b"", 0, 0x00000000), (b"", 1, 0x514E28B7), (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\xff\xff\xff\xff", 0, 0x76293B50), (b"\x21\x43\x65\x87", 0, 0xF55B516B),
    (b"\x21\x43\x65\x87", 0x5082EDEE, 0x2362F9DE), (b"\x21\x43\x65", 0, 0x7E4A8634),
    (b"\x21\x43", 0, 0xA0F7B07A), (b"\x21", 0, 0x72661CF4), (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
    (b"\x00\x00\x00", 0, 0x85F0B427), (b"\x00\x00", 0, 0x30F4C306), (b"\x00", 0, 0x514E28B7),
    (b"aaaa", 0x9747B28C, 0x5A97808A), (b"Hello, world!", 0x9747B28C, 0x24884CBA),
    (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
]


@pytest.mark.parametrize("data, seed, expected", VECTORS)
def test_reference_vectors(data, seed, expected):
    assert murmur3_32(data, seed, hive_tail=False) & 0xFFFFFFFF == expected
    # none of these tails has a byte >= 0x80, so Hive's variant agrees
    assert murmur3_32(data, seed) & 0xFFFFFFFF == expected


def test_hive_sign_extends_high_tail_bytes():
    assert murmur3_32(b"\x80", 0) != murmur3_32(b"\x80", 0, hive_tail=False)
    assert murmur3_32(b"\x80\x00\x00\x00", 0) == murmur3_32(b"\x80\x00\x00\x00", 0, hive_tail=False)
    assert murmur3_32("é".encode(), 0) != murmur3_32("é".encode(), 0, hive_tail=False)  # UTF-8 C3 A9 in the tail
    assert murmur3_32(b"abcd\x7f", 0) == murmur3_32(b"abcd\x7f", 0, hive_tail=False)


@given(st.lists(st.integers(-2**31, 2**31 - 1), max_size=50))
def test_vectorised_int_hash_matches_scalar(values):
    arr = np.array(values, dtype=np.int32)
    assert murmur3_32_fixed(arr, 4).tolist() == [murmur3_32(struct.pack(">i", v)) for v in values]


@given(st.lists(st.integers(-2**63, 2**63 - 1), max_size=50))
def test_vectorised_bigint_hash_matches_scalar(values):
    arr = np.array(values, dtype=np.int64)
    assert murmur3_32_fixed(arr, 8).tolist() == [murmur3_32(struct.pack(">q", v)) for v in values]


@given(st.lists(st.integers(-2**15, 2**15 - 1), max_size=50))
def test_vectorised_smallint_hash_matches_scalar(values):
    arr = np.array(values, dtype=np.int16)
    assert murmur3_32_fixed(arr, 2).tolist() == [murmur3_32(struct.pack(">h", v)) for v in values]


def test_column_hashes_and_bucket_numbers():
    t = pa.table({"i": pa.array([7, None], pa.int32()), "s": ["ab", None], "b": [True, False],
                  "t": pa.array([-3, 5], pa.int8())})
    assert bucket_hash_codes(t, ["i"], ["int"]).tolist() == [murmur3_32(struct.pack(">i", 7)), 0]
    assert bucket_hash_codes(t, ["s"], ["string"]).tolist() == [murmur3_32(b"ab"), 0]
    assert bucket_hash_codes(t, ["b", "t"], ["boolean", "tinyint"]).tolist() == [31 * 1 - 3, 5]
    combined = bucket_hash_codes(t, ["i", "s"], ["int", "string"])
    h = (31 * murmur3_32(struct.pack(">i", 7)) + murmur3_32(b"ab")) & 0xFFFFFFFF
    assert combined[0] == (h - (1 << 32) if h >= 1 << 31 else h)
    codes = np.array([-1, 0, 5, -(2**31)], dtype=np.int32)
    assert bucket_numbers(codes, 4).tolist() == [(2**31 - 1) % 4, 0, 1, 0]
    buckets = assign_buckets(pa.table({"k": pa.array(range(1000), pa.int64())}), ["k"], ["bigint"], 8)
    assert set(buckets.tolist()) == set(range(8))


def test_complex_bucket_column_is_refused():
    t = pa.table({"a": pa.array([[1]], pa.list_(pa.int32()))})
    with pytest.raises(BucketingError, match="bucket column a has type array<int>"):
        assign_buckets(t, ["a"], ["array<int>"], 4)


def test_only_bucketing_version_2_is_written():
    check_bucketing_version({"bucketing_version": "2"}, "db.t")
    for props in ({}, {"bucketing_version": "1"}):
        with pytest.raises(BucketingError, match="table db.t is bucketed with bucketing_version=1"):
            check_bucketing_version(props, "db.t")


# Murmur3.hash32 of HiveDecimalWritable.getInternalStorage() and of TimestampWritable.getBytes(), computed with
# Hive's own classes (hive-storage-api 2.8.1's Murmur3 and HiveDecimalWritable, hive-serde's TimestampWritable,
# whose byte form TimestampWritableV2 keeps), JVM in UTC.
HIVE_DECIMAL_HASHES = [
    ("0", 500407381), ("1", -1089647197), ("1.5", 864210675), ("1.50", 864210675), ("-1.5", 749244392),
    ("100", 275017581), ("12345.678", -1674736020), ("-128", 1104592682), ("127", 1106843505),
    ("128", -1144278644), ("-0.001", -1036465288), ("-12345678901234567890.123456789", -53961276),
]
HIVE_TIMESTAMP_HASHES = [  # (epoch seconds, nanos of the second, hash)
    (0, 0, 1362653161), (1, 0, 1321152925), (1409564663, 230000000, 154643289), (-1, 0, -2005195780),
    (-1, 999999999, -1782270734), (2147483647, 0, 1133859967), (2147483648, 1, -571600512),
    (-62135596800, 0, 1971120217), (253402300799, 999999999, -41241568), (1409564663, 123456789, -60926623),
    (86400, 100, 668353125),
]


@pytest.mark.parametrize("text, expected", HIVE_DECIMAL_HASHES)
def test_decimal_hash_is_hives(text, expected):
    assert murmur3_32(decimal_storage(Decimal(text))) == expected
    column = pa.array([Decimal(text), None], pa.decimal128(38, 9))
    assert bucket_hash_codes(pa.table({"d": column}), ["d"], ["decimal(38,9)"]).tolist() == [expected, 0]


@pytest.mark.parametrize("seconds, nanos, expected", HIVE_TIMESTAMP_HASHES)
def test_timestamp_hash_is_hives_in_every_timestamp_form(seconds, nanos, expected):
    assert murmur3_32(timestamp_bytes(seconds, nanos)) == expected
    wide = pa.StructArray.from_arrays([pa.array([seconds], pa.int64()), pa.array([nanos], pa.int32())],
                                      fields=list(WIDE_TIMESTAMP))
    forms = [wide]
    if -(2**63) < seconds * 10**9 + nanos < 2**63:
        forms.append(pa.array([seconds * 10**9 + nanos], pa.int64()).cast(pa.timestamp("ns")))
    if nanos % 1000 == 0:
        forms.append(pa.array([seconds * 10**6 + nanos // 1000], pa.int64()).cast(pa.timestamp("us")))
    for column in forms:
        assert bucket_hash_codes(pa.table({"ts": column}), ["ts"], ["timestamp"]).tolist() == [expected]


def _java_big_integer(data: bytes) -> int:
    """``new BigInteger(byte[])``."""
    return int.from_bytes(data, "big", signed=True)


@given(st.decimals(allow_nan=False, allow_infinity=False, places=6, min_value=-10**20, max_value=10**20))
def test_decimal_storage_is_the_trimmed_unscaled_value_in_fewest_bytes(value):
    data = decimal_storage(value)
    unscaled = _java_big_integer(data)
    normal = value.normalize() if value else Decimal(0)
    scale = max(0, -normal.as_tuple().exponent)
    assert Decimal(unscaled).scaleb(-scale) == value  # the value, at the scale with no trailing zeros
    assert scale == 0 or unscaled % 10
    assert len(data) == 1 or _java_big_integer(data[1:]) != unscaled  # no redundant sign byte


def _read_vlong(data: bytes, at: int) -> tuple[int, int]:
    """Hadoop's VLong reader (WritableUtils.readVLong): (value, next offset)."""
    first = struct.unpack(">b", data[at:at + 1])[0]
    if first >= -112:
        return first, at + 1
    size = (-120 - first) if first < -120 else (-112 - first)  # WritableUtils.decodeVIntSize − 1
    value = int.from_bytes(data[at + 1:at + 1 + size], "big")
    return (~value if first < -120 else value), at + 1 + size


@given(st.integers(-(1 << 63), (1 << 63) - 1))
def test_vlong_reads_back(value):
    data = hadoop_vlong(value)
    assert _read_vlong(data, 0) == (value, len(data))


@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)),
       st.integers(0, 999_999_999))
def test_timestamp_bytes_read_back_as_hive_reads_them(when, nanos):
    """TimestampWritableV2.getSeconds / getNanos over the bytes give the timestamp back."""
    seconds = (when.replace(microsecond=0) - dt.datetime(1970, 1, 1)) // dt.timedelta(seconds=1)
    data = timestamp_bytes(seconds, nanos)
    first = int.from_bytes(data[:4], "big")
    if not first & 0x80000000:
        assert len(data) == 4 and (seconds, nanos) == (first, 0)
        return
    reversed_nanos, at = _read_vlong(data, 4)
    high = 0
    if reversed_nanos < 0:
        reversed_nanos = -reversed_nanos - 1
        high, at = _read_vlong(data, at)
    assert at == len(data)
    assert (first & 0x7FFFFFFF) | (high << 31) == seconds
    assert (int(str(reversed_nanos)[::-1].ljust(9, "0")) if reversed_nanos else 0) == nanos


def test_floats_hash_javas_canonical_nan():
    quiet = np.array([np.nan], dtype=np.float64)
    payload = np.array([0x7FF0000000000123], dtype=np.int64).view(np.float64)
    float_payload = np.array([0x7FC00123], dtype=np.int32).view(np.float32)
    t = pa.table({"a": pa.array(quiet), "b": pa.array(payload), "f": pa.array(float_payload)})
    canonical = murmur3_32(struct.pack(">q", 0x7FF8000000000000))
    assert bucket_hash_codes(t, ["a"], ["double"]).tolist() == [canonical]
    assert bucket_hash_codes(t, ["b"], ["double"]).tolist() == [canonical]
    assert bucket_hash_codes(t, ["f"], ["float"]).tolist() == [murmur3_32(struct.pack(">i", 0x7FC00000))]
