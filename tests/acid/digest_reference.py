"""The content digest's definition (acid/digest.py's docstring) written out value by value in plain Python: slow and
obvious, so the vectorised implementation can be checked against it (tests/acid/test_digest_reference.py)."""

from __future__ import annotations

import decimal
import struct

import pyarrow as pa

from airflow_acid.acid.timestamps import WIDE_TIMESTAMP

M = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
RADIX_BYTES = 0x100000001B3
RADIX_LIST = 0x9E3779B97F4A7C15
SEED_VALUE = 0xC0AC29B7C97C50DD
SEED_ROW_LO = 0x9216D5D98979FB1B
SEED_ROW_HI = 0xB7E151628AED2A6B
PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def fmix(x: int) -> int:
    """MurmurHash3's 64-bit finaliser."""
    x ^= x >> 33
    x = x * 0xFF51AFD7ED558CCD & M
    x ^= x >> 33
    x = x * 0xC4CEB9FE1A85EC53 & M
    return x ^ (x >> 33)


def weight(position: int, word: int, seed: int) -> int:
    first = fmix(((position + 1) * GOLDEN & M) ^ seed)
    return fmix(first ^ ((word + 1) * RADIX_BYTES & M)) | 1


def byte_poly(value: bytes) -> int:
    """Σ word_k · R^k + length · G over the little-endian 8-byte words (the last zero-padded)."""
    total = 0
    for k in range(0, len(value), 8):
        total += int.from_bytes(value[k:k + 8], "little") * pow(RADIX_BYTES, k // 8, 1 << 64)
    return (total + len(value) * GOLDEN) & M


def _word_count(t: pa.DataType) -> int:
    if t == WIDE_TIMESTAMP or pa.types.is_timestamp(t) or pa.types.is_list(t) or pa.types.is_large_list(t) \
            or pa.types.is_map(t):
        return 2
    if pa.types.is_decimal(t):
        return t.byte_width // 8
    if pa.types.is_struct(t):
        return t.num_fields
    return 1


def _value_words(t: pa.DataType, value: object) -> list[int]:
    """The canonical words of one non-NULL scalar value."""
    if pa.types.is_boolean(t):
        return [int(bool(value))]
    if isinstance(value, int):  # integers, and dates/times/durations/timestamps read as their integer
        return [value & M]
    if isinstance(value, float):
        return [struct.unpack("<Q", struct.pack("<d", value))[0]]
    if isinstance(value, decimal.Decimal):
        unscaled = int(value.scaleb(t.scale, decimal.Context(prec=100))) & ((1 << (8 * t.byte_width)) - 1)
        return [(unscaled >> (64 * w)) & M for w in range(t.byte_width // 8)]
    if isinstance(value, str):
        return [byte_poly(value.encode())]
    assert isinstance(value, bytes), (t, value)
    return [byte_poly(value)]


def _integers(array: pa.Array) -> list[int | None]:
    """Dates, times, durations and timestamps as the integer Arrow stores."""
    t = array.type
    width = pa.int64() if t.bit_width == 64 else pa.int32()
    return array.view(width).to_pylist()


def row_words(array: pa.Array) -> list[list[int]]:
    """Per value: its canonical words, NULL as zeros, then the NULL flag (1 for NULL, else 0) — except for the null
    type, whose every value is the one word 1."""
    t = array.type
    if pa.types.is_dictionary(t):
        return row_words(array.dictionary_decode())
    n = len(array)
    if pa.types.is_null(t):
        return [[1] for _ in range(n)]
    valid = array.is_valid().to_pylist()
    if t == WIDE_TIMESTAMP:
        seconds, nanos = array.field(0).to_pylist(), array.field(1).to_pylist()
        words = [[(s or 0) & M, (ns or 0) & M] for s, ns in zip(seconds, nanos)]
    elif pa.types.is_timestamp(t):
        per = PER_SECOND[t.unit]
        words = []
        for v in _integers(array):
            s, rest = divmod(v or 0, per)
            words.append([s & M, rest * (1_000_000_000 // per) & M])
    elif pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        words = [[(v or 0) & M] for v in _integers(array)]
    elif pa.types.is_struct(t):
        children = [value_hashes(child) for child in array.flatten()]
        words = [[c[i] for c in children] for i in range(n)]
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = array.offsets.to_pylist()
        elements = value_hashes(array.values)
        words = []
        for i in range(n):
            start, end = offsets[i], offsets[i + 1]
            poly = sum(elements[start + k] * pow(RADIX_LIST, k, 1 << 64) for k in range(end - start)) & M
            words.append([poly, end - start])
    else:
        words = [_value_words(t, v) if v is not None else [] for v in array.to_pylist()]
    count = _word_count(t)
    return [(w if ok else [0] * count) + [0 if ok else 1] for w, ok in zip(words, valid)]


def value_hashes(array: pa.Array) -> list[int]:
    return [fmix((SEED_VALUE + sum(w * weight(0, j, SEED_VALUE) for j, w in enumerate(words))) & M)
            for words in row_words(array)]


def digest(columns: list[pa.Array], num_rows: int | None = None) -> tuple[int, int, int]:
    """(count, sum, xor) as :class:`~airflow_acid.acid.digest.RowDigest` holds them."""
    n = len(columns[0]) if columns else (num_rows or 0)
    per_column = [row_words(c) for c in columns]
    total_lo = total_hi = xor = 0
    for row in range(n):
        halves = []
        for seed in (SEED_ROW_LO, SEED_ROW_HI):
            acc = seed
            for i, words in enumerate(per_column):
                acc += sum(w * weight(i, j, seed) for j, w in enumerate(words[row]))
            halves.append(fmix(acc & M))
        lo, hi = halves
        total_lo, total_hi = (total_lo + lo) & M, (total_hi + hi) & M
        xor ^= (hi << 64) | lo
    return n, (total_hi << 64) | total_lo, xor
