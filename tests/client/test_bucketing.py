"""Hive's Murmur3-32 against the published MurmurHash3_x86_32 test vectors, Hive's sign-extended tail, and
bucketing version 2 bucket numbers."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.client.bucketing import assign_buckets, bucket_hash_codes, bucket_numbers, murmur3_32, murmur3_32_fixed
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


def test_unsupported_bucket_column_type_is_refused():
    t = pa.table({"ts": pa.array([0], pa.timestamp("ns"))})
    with pytest.raises(BucketingError, match="bucket column ts has type timestamp"):
        assign_buckets(t, ["ts"], ["timestamp"], 4)
