"""An order-independent content digest of rows: what a compaction read must equal what it wrote.

Each value is hashed to 64 bits from a canonical form, so the Arrow type a reader happens to produce does not
matter: integers, booleans and dates as int64, floats by the bits of their float64 value, decimals by their
unscaled 128-bit value, strings and binaries by their bytes (string = binary), a timestamp as (seconds since the
epoch, nanoseconds of the second) whichever of its three Arrow forms it is in (``acid/timestamps.py``), structs from
their fields, lists and maps from their elements in order, dictionary arrays by their values, NULL as a fixed
constant (so NULL differs from an empty string, a zero or an empty list). A row's hash is 128 bits: two different
odd-weighted sums of its columns' hashes (column position matters, names do not), each through a bijective 64-bit
finaliser. The digest of a set of rows is (count, sum of the row hashes mod 2^128, xor of the row hashes): cheap to
build batch by batch and to combine across tasks, and independent of row order.

Strength (accidental corruption, not an adversary): one changed value of a fixed-width type, or one changed byte of
a string keeping its length, always changes the digest (every step from the value to the sum is injective in that
value). Any other change — values of another length, several changed rows, a dropped row with another duplicated
(the count stays) — goes unnoticed only if the changes cancel in both the 128-bit sum and the xor, which for
unrelated changes happens with a probability of about 2^-64 (a collision of 64-bit value hashes). It is not a
cryptographic hash: someone who wants to forge a matching output can.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from airflow_acid.acid.timestamps import WIDE_TIMESTAMP

_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1
_U = np.uint64

# Fixed seeds (digits of pi and e): the digest must be the same in every process and release that compares it.
_NULL = _U(0x243F6A8885A308D3)
_SEED_BYTES = _U(0x13198A2E03707344)
_SEED_INT = _U(0xA4093822299F31D0)
_SEED_FLOAT = _U(0x082EFA98EC4E6C89)
_SEED_DECIMAL = _U(0x452821E638D01377)
_SEED_TIMESTAMP = _U(0xBE5466CF34E90C6C)
_SEED_STRUCT = _U(0xC0AC29B7C97C50DD)
_SEED_LIST = _U(0x3F84D5B5B5470917)
_SEED_ROW_LO = _U(0x9216D5D98979FB1B)
_SEED_ROW_HI = _U(0xB7E151628AED2A6B)
_RADIX_BYTES = _U(0x100000001B3)  # odd: invertible mod 2^64
_RADIX_LIST = _U(0x9E3779B97F4A7C15)
_GOLDEN = _U(0x9E3779B97F4A7C15)


def _fmix(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place: a bijection on uint64 that spreads every input bit."""
    x ^= x >> _U(33)
    x *= _U(0xFF51AFD7ED558CCD)
    x ^= x >> _U(33)
    x *= _U(0xC4CEB9FE1A85EC53)
    x ^= x >> _U(33)
    return x


@functools.lru_cache(maxsize=4096)
def _weight(i: int, seed: int) -> np.uint64:
    """An odd 64-bit weight for position ``i`` (column or struct field) under ``seed``."""
    value = np.array([((i + 1) * int(_GOLDEN) & _MASK64) ^ seed], dtype=np.uint64)
    return _U(_fmix(value)[0] | _U(1))


class _Powers:
    """``radix^i`` and ``radix^-i`` mod 2^64, grown on demand (for position-weighted sums over bytes and elements)."""

    def __init__(self, radix: np.uint64) -> None:
        self.radix = radix
        self.inverse = _U(pow(int(radix), -1, 1 << 64))
        self.up = np.ones(1, dtype=np.uint64)
        self.down = np.ones(1, dtype=np.uint64)

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.up) < n + 1:
            size = max(n + 1, 2 * len(self.up))
            self.up = np.cumprod(np.full(size, self.radix, dtype=np.uint64), dtype=np.uint64)
            self.up = np.concatenate([np.ones(1, dtype=np.uint64), self.up[:-1]])
            self.down = np.cumprod(np.full(size, self.inverse, dtype=np.uint64), dtype=np.uint64)
            self.down = np.concatenate([np.ones(1, dtype=np.uint64), self.down[:-1]])
        return self.up, self.down


_BYTE_POWERS = _Powers(_RADIX_BYTES)
_LIST_POWERS = _Powers(_RADIX_LIST)


def _segment_sums(terms: np.ndarray, offsets: np.ndarray, powers: _Powers) -> np.ndarray:
    """Per segment ``[offsets[k], offsets[k+1])`` of ``terms``: Σ terms[i]·radix^(i - start) mod 2^64 — a polynomial
    hash in which each position has its own odd weight, from one prefix sum (no per-segment loop)."""
    base = int(offsets[0]) if len(offsets) else 0
    rel = (offsets - base).astype(np.int64)
    n = int(rel[-1]) if len(rel) else 0
    up, down = powers.get(n)
    prefix = np.zeros(n + 1, dtype=np.uint64)
    if n:
        np.cumsum(terms[base:base + n] * up[:n], dtype=np.uint64, out=prefix[1:])
    starts, ends = rel[:-1], rel[1:]
    sums: np.ndarray = (prefix[ends] - prefix[starts]) * down[starts]
    return sums


def _valid(array: pa.Array) -> np.ndarray | None:
    if array.null_count == 0:
        return None
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _with_nulls(h: np.ndarray, array: pa.Array) -> np.ndarray:
    valid = _valid(array)
    if valid is not None:
        h[~valid] = _NULL
    return h


def _ints(array: pa.Array) -> np.ndarray:
    """The values of an integer-like array as int64 (nulls as 0; overridden later)."""
    return np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False)).astype(np.int64, copy=False)


def _mix_ints(values: np.ndarray, seed: np.uint64) -> np.ndarray:
    h = values.view(np.uint64) ^ seed if values.dtype == np.int64 else values.astype(np.int64).view(np.uint64) ^ seed
    return _fmix(h)


def _hash_timestamp(array: pa.Array) -> np.ndarray:
    """(seconds, nanoseconds of the second) of any timestamp form; the same instant hashes alike in every form."""
    if array.type == WIDE_TIMESTAMP:
        seconds = _ints(array.field(0))
        nanos = _ints(array.field(1))
    else:
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[array.type.unit]
        raw = _ints(array.cast(pa.int64()))
        seconds, rest = np.divmod(raw, per_second)
        nanos = rest * (1_000_000_000 // per_second)
    h = _fmix(seconds.view(np.uint64) ^ _SEED_TIMESTAMP)
    h += nanos.astype(np.uint64) * _RADIX_LIST
    return _with_nulls(_fmix(h), array)


def _hash_bytes(array: pa.Array) -> np.ndarray:
    if not (pa.types.is_large_binary(array.type)):
        array = array.cast(pa.large_binary())
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset:array.offset + len(array) + 1]
    data_buffer = array.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets).astype(np.uint64)
    h = _segment_sums(data.astype(np.uint64), offsets, _BYTE_POWERS)
    h ^= _fmix(lengths ^ _SEED_BYTES)
    return _with_nulls(_fmix(h), array)


def _hash_decimal(array: pa.Array) -> np.ndarray:
    width = array.type.byte_width // 8
    words = np.frombuffer(array.buffers()[1], dtype=np.uint64)[array.offset * width:(array.offset + len(array)) * width]
    words = words.reshape(len(array), width)
    h = np.full(len(array), _SEED_DECIMAL ^ _U(array.type.scale), dtype=np.uint64)
    for w in range(width):
        h = _fmix(h * _RADIX_LIST + words[:, w])
    return _with_nulls(h, array)


def _hash_struct(children: list[np.ndarray], seed: np.uint64, n: int) -> np.ndarray:
    acc = np.full(n, seed, dtype=np.uint64)
    for i, child in enumerate(children):
        acc += child * _weight(i, int(seed))
    return _fmix(acc)


def _hash_list(array: pa.Array) -> np.ndarray:
    offsets = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    elements = value_hashes(array.values)  # the whole child (a map's: its key/value entries); offsets index it
    lengths = np.diff(offsets).astype(np.uint64)
    h = _segment_sums(elements, offsets, _LIST_POWERS)
    h ^= _fmix(lengths ^ _SEED_LIST)
    return _with_nulls(_fmix(h), array)


def value_hashes(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of each value of ``array`` from its canonical form (see the module docstring)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    t = array.type
    n = len(array)
    if pa.types.is_dictionary(t):
        return value_hashes(array.dictionary_decode())
    if pa.types.is_null(t):
        return np.full(n, _NULL, dtype=np.uint64)
    if t == WIDE_TIMESTAMP or pa.types.is_timestamp(t):
        return _hash_timestamp(array)
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_time(t) \
            or pa.types.is_duration(t):
        source = array.cast(pa.int8()) if pa.types.is_boolean(t) else array
        if pa.types.is_date64(t) or pa.types.is_time(t) or pa.types.is_duration(t) or pa.types.is_date32(t):
            source = array.cast(pa.int64() if t.bit_width == 64 else pa.int32())
        return _with_nulls(_mix_ints(_ints(source), _SEED_INT), array)
    if pa.types.is_floating(t):
        values = np.asarray(array.fill_null(0).cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
        return _with_nulls(_fmix(values.view(np.uint64) ^ _SEED_FLOAT), array)
    if pa.types.is_decimal(t):
        return _hash_decimal(array)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_string_view(t) \
            or pa.types.is_binary_view(t):
        return _hash_bytes(array)
    if pa.types.is_struct(t):
        children = [value_hashes(child) for child in array.flatten()]
        return _with_nulls(_hash_struct(children, _SEED_STRUCT, n), array)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return _hash_list(array)
    raise TypeError(f"cannot digest values of type {t}")


@dataclass(frozen=True)
class RowDigest:
    """(count, Σ row hashes mod 2^128, ⊕ row hashes) of a multiset of rows; :meth:`combine` is associative and
    commutative, so batches and tasks combine in any order."""

    count: int = 0
    sum: int = 0
    xor: int = 0

    def combine(self, other: RowDigest) -> RowDigest:
        return RowDigest(self.count + other.count, (self.sum + other.sum) & _MASK128, self.xor ^ other.xor)

    __add__ = combine

    def to_text(self) -> str:
        """``<count>:<sum as 32 hex digits>:<xor as 32 hex digits>`` (what results and the run history hold)."""
        return f"{self.count}:{self.sum:032x}:{self.xor:032x}"

    @classmethod
    def from_text(cls, text: str) -> RowDigest:
        count, total, xor = text.split(":")
        return cls(int(count), int(total, 16), int(xor, 16))

    def short(self) -> str:
        """The first 16 hex digits of the sum, for messages."""
        return f"{self.sum:032x}"[:16]


def _sum128(lo: np.ndarray, hi: np.ndarray) -> int:
    """Σ (hi·2^64 + lo) mod 2^128, exactly (32-bit halves summed without overflow for < 2^32 rows)."""
    low32, high32 = _U(0xFFFFFFFF), _U(32)
    total = int(np.sum(lo & low32, dtype=np.uint64)) + (int(np.sum(lo >> high32, dtype=np.uint64)) << 32)
    total += (int(np.sum(hi & low32, dtype=np.uint64)) << 64) + (int(np.sum(hi >> high32, dtype=np.uint64)) << 96)
    return total & _MASK128


def digest_columns(columns: list[pa.Array | pa.ChunkedArray], num_rows: int | None = None) -> RowDigest:
    """The digest of the rows formed by ``columns`` (position by position; names are not part of it)."""
    n = len(columns[0]) if columns else (num_rows or 0)
    if n == 0:
        return RowDigest()
    hashes = [value_hashes(c) for c in columns]
    lo = np.full(n, _SEED_ROW_LO, dtype=np.uint64)
    hi = np.full(n, _SEED_ROW_HI, dtype=np.uint64)
    for i, h in enumerate(hashes):
        lo += h * _weight(i, int(_SEED_ROW_LO))
        hi += h * _weight(i, int(_SEED_ROW_HI))
    _fmix(lo)
    _fmix(hi)
    xor = (int(np.bitwise_xor.reduce(hi)) << 64) | int(np.bitwise_xor.reduce(lo))
    return RowDigest(n, _sum128(lo, hi), xor)


class DigestBuilder:
    """Accumulates the digest of rows given batch by batch."""

    def __init__(self) -> None:
        self.digest = RowDigest()

    def add(self, columns: list[pa.Array | pa.ChunkedArray], num_rows: int | None = None) -> None:
        self.digest = self.digest.combine(digest_columns(columns, num_rows))

    def reset(self) -> None:
        self.digest = RowDigest()


def digest_of_texts(texts: list[str | None]) -> RowDigest | None:
    """The combination of digests given as text; None when any is missing."""
    total = RowDigest()
    for text in texts:
        if text is None:
            return None
        total = total.combine(RowDigest.from_text(text))
    return total


__all__ = ["DigestBuilder", "RowDigest", "digest_columns", "digest_of_texts", "value_hashes"]
