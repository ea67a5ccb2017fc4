"""An order-independent content digest of rows: what a compaction read must equal what it wrote.

Each value becomes canonical 64-bit words, so the Arrow type a reader happens to produce does not matter: integers,
booleans and dates their int64 value, floats the bits of their float64 value, decimals their unscaled 128-bit value,
strings and binaries (string = binary) a polynomial over their little-endian 8-byte words with a distinct odd
weight per word, plus their length; a timestamp (seconds since the epoch, nanoseconds of the second) whichever of
its three Arrow forms it is in (``acid/timestamps.py``); structs, lists and maps the hashes of their fields or
elements in order; dictionary arrays their values; NULL all-zero words plus a null flag (so NULL differs from an
empty string, a zero or an empty list). A row's hash is 128 bits: two independent weighted sums of its columns'
words (odd weights per column, word and half; column position matters, names do not), each through MurmurHash3's
bijective 64-bit finaliser — linear up to the finaliser, so a column costs two multiply-adds per word and a row two
finalisers. The digest of a set of rows is (count, the sums of the row hashes' halves mod 2^64, the xor of the row
hashes): cheap to build batch by batch and to combine across tasks, and independent of row order.

Strength (accidental corruption, not an adversary): one changed value of a fixed-width type, or one changed byte of
a string keeping its length, always changes the digest (every step from the value to the sums is injective in that
value). Any other change — values of another length, several changed rows, a dropped row with another duplicated
(the count stays) — goes unnoticed only if the changes cancel in both sums and the xor, which for unrelated changes
happens with a probability of about 2^-64 (a collision of a string's, list's or struct's 64-bit hash collides both
halves). It is not a cryptographic hash: someone who wants to forge a matching output can.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from airflow_acid.acid.timestamps import WIDE_TIMESTAMP

_MASK64 = (1 << 64) - 1
_U = np.uint64

# Fixed seeds (digits of pi and e): the digest must be the same in every process and release that compares it.
_SEED_VALUE = _U(0xC0AC29B7C97C50DD)
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
def _weight(position: int, word: int, seed: int) -> np.uint64:
    """An odd 64-bit weight for word ``word`` of the value at ``position`` (column or struct field) under ``seed``."""
    first = _fmix(np.array([((position + 1) * int(_GOLDEN) & _MASK64) ^ seed], dtype=np.uint64))
    second = _fmix(first ^ _U((word + 1) * int(_RADIX_BYTES) & _MASK64))
    weight: np.uint64 = _U(second[0] | _U(1))
    return weight


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
        np.multiply(terms[base:base + n], up[:n], out=prefix[1:], casting="unsafe")
        np.cumsum(prefix[1:], out=prefix[1:])
    starts, ends = rel[:-1], rel[1:]
    sums: np.ndarray = (prefix[ends] - prefix[starts]) * down[starts]
    return sums


def _valid(array: pa.Array) -> np.ndarray | None:
    if array.null_count == 0:
        return None
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _words(values: np.ndarray) -> np.ndarray:
    """Integers (any width, signed) as their int64 value's 64 bits."""
    return values.astype(np.int64, copy=False).view(np.uint64)


def _numbers(array: pa.Array) -> np.ndarray:
    filled = array.fill_null(0) if array.null_count else array
    return np.asarray(filled.to_numpy(zero_copy_only=False))


def _timestamp_parts(array: pa.Array) -> list[np.ndarray]:
    """(seconds, nanoseconds of the second) of any timestamp form; the same instant gives the same parts."""
    if array.type == WIDE_TIMESTAMP:
        return [_words(_numbers(array.field(0))), _words(_numbers(array.field(1)))]
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[array.type.unit]
    seconds, rest = np.divmod(_numbers(array.cast(pa.int64())).astype(np.int64, copy=False), per_second)
    return [_words(seconds), _words(rest * (1_000_000_000 // per_second))]


_SHORT_WORDS = 4
"""Values of at most this many words are hashed word position by word position (the common short strings)."""
_LENGTH_MASKS = np.array([0] + [(1 << (8 * r)) - 1 for r in range(1, 8)] + [_MASK64], dtype=np.uint64)
"""The bytes of a word a value holds of its own, by how many of its bytes are left (0-8; little-endian: low bytes)."""
_TAIL_MASKS = np.array([_MASK64] + [(1 << (8 * r)) - 1 for r in range(1, 8)], dtype=np.uint64)
"""The bytes a value's last 8-byte word holds of its own, by length mod 8 (little-endian: the low bytes)."""


def _byte_parts(array: pa.Array) -> list[np.ndarray]:
    """Σ word_k · R^k + length · G mod 2^64 over the value's bytes read as little-endian 8-byte words (the last one
    zero-padded): a polynomial hash with a distinct odd weight per word, so one changed byte always changes it."""
    if not pa.types.is_large_binary(array.type):
        array = array.cast(pa.large_binary())
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset:array.offset + len(array) + 1]
    lengths = np.diff(offsets)
    data_buffer = array.buffers()[2]
    first, last = (int(offsets[0]), int(offsets[-1])) if len(offsets) else (0, 0)
    padded = np.zeros((last - first + 8 * (_SHORT_WORDS + 2)) // 8 * 8, dtype=np.uint8)  # zeros past every value
    if data_buffer is not None and last > first:
        padded[:last - first] = np.frombuffer(data_buffer, dtype=np.uint8)[first:last]
    at_byte = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))  # the word at every byte
    counts = (lengths + 7) >> 3
    if len(counts) and int(counts.max()) <= _SHORT_WORDS:  # word k of every value at once: no per-word index
        starts = offsets[:-1] - first
        aligned = padded.view("<u8")  # a word at any byte: two aligned words shifted together (faster than unaligned)
        index = starts >> 3
        low = ((starts & 7) << 3).astype(np.uint64)
        high = _U(63) - low
        poly = np.zeros(len(lengths), dtype=np.uint64)
        up, _ = _BYTE_POWERS.get(_SHORT_WORDS)
        shortest = int(lengths.min())
        for k in range(int(counts.max())):
            word = np.take(aligned, index + k).astype(np.uint64, copy=False)
            word >>= low
            upper = np.take(aligned, index + (k + 1)).astype(np.uint64, copy=False)
            upper <<= _U(1)
            upper <<= high
            word |= upper
            if shortest < 8 * (k + 1):  # some value ends inside (or before) this word: keep only its own bytes
                word &= _LENGTH_MASKS[np.clip(lengths - 8 * k, 0, 8)]
            word *= up[k]
            poly += word
        return [_with_length(poly, lengths)]
    word_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    total = int(word_offsets[-1])
    positions = np.repeat(offsets[:-1] - first - 8 * word_offsets[:-1], counts) + 8 * np.arange(total, dtype=np.int64)
    words = at_byte[positions].astype(np.uint64, copy=False)
    partial = (lengths & 7) != 0
    tails = word_offsets[1:][partial] - 1
    words[tails] &= _TAIL_MASKS[lengths[partial] & 7]
    return [_with_length(_segment_sums(words, word_offsets, _BYTE_POWERS), lengths)]


def _with_length(poly: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The word polynomial plus the length times an odd constant: zero-padding cannot make two lengths alike."""
    poly += lengths.view(np.uint64) * _GOLDEN
    return poly


def _decimal_parts(array: pa.Array) -> list[np.ndarray]:
    width = array.type.byte_width // 8
    words = np.frombuffer(array.buffers()[1], dtype=np.uint64)[array.offset * width:(array.offset + len(array)) * width]
    return [np.ascontiguousarray(words.reshape(len(array), width)[:, w]) for w in range(width)]


def _list_parts(array: pa.Array) -> list[np.ndarray]:
    offsets = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    elements = value_hashes(array.values)  # the whole child (a map's: its key/value entries); offsets index it
    return [_segment_sums(elements, offsets, _LIST_POWERS), np.diff(offsets).view(np.uint64)]


def _parts(array: pa.Array | pa.ChunkedArray) -> list[np.ndarray]:
    """A value's canonical form as 64-bit words (the same words whichever Arrow form it comes in); NULL: all words 0
    and a last word 1 (present only in batches that hold a NULL, 0 otherwise)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    t = array.type
    if pa.types.is_dictionary(t):
        return _parts(array.dictionary_decode())
    if pa.types.is_null(t):
        return [np.ones(len(array), dtype=np.uint64)]
    if t == WIDE_TIMESTAMP or pa.types.is_timestamp(t):
        parts = _timestamp_parts(array)
    elif pa.types.is_boolean(t):
        parts = [_words(_numbers(array.cast(pa.int8())))]
    elif pa.types.is_integer(t):
        parts = [_words(_numbers(array))]
    elif pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        parts = [_words(_numbers(array.cast(pa.int64() if t.bit_width == 64 else pa.int32())))]
    elif pa.types.is_floating(t):
        parts = [_numbers(array.cast(pa.float64())).astype(np.float64, copy=False).view(np.uint64)]
    elif pa.types.is_decimal(t):
        parts = _decimal_parts(array)
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_string_view(t) \
            or pa.types.is_binary_view(t):
        parts = _byte_parts(array)
    elif pa.types.is_struct(t):
        parts = [value_hashes(child) for child in array.flatten()]
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        parts = _list_parts(array)
    else:
        raise TypeError(f"cannot digest values of type {t}")
    valid = _valid(array)
    if valid is not None:
        parts = [np.where(valid, p, _U(0)) for p in parts] + [(~valid).view(np.uint8).astype(np.uint64)]
    return parts


def _accumulate(acc: np.ndarray, parts: list[np.ndarray], position: int, seed: int, tmp: np.ndarray) -> None:
    """acc += Σ part_j · weight(position, j) mod 2^64 (in place)."""
    for j, part in enumerate(parts):
        np.multiply(part, _weight(position, j, seed), out=tmp)
        acc += tmp


def value_hashes(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of each value of ``array``: its canonical words, weighted and summed, through the finaliser."""
    parts = _parts(array)
    n = len(array)
    acc = np.full(n, _SEED_VALUE, dtype=np.uint64)
    _accumulate(acc, parts, 0, int(_SEED_VALUE), np.empty(n, dtype=np.uint64))
    return _fmix(acc)


@dataclass(frozen=True)
class RowDigest:
    """(count, sums of the row hashes' halves, ⊕ of the row hashes) of a multiset of rows. ``sum`` holds the sum of
    the high halves mod 2^64 above that of the low halves mod 2^64; :meth:`combine` is associative and commutative,
    so batches and tasks combine in any order."""

    count: int = 0
    sum: int = 0
    xor: int = 0

    def combine(self, other: RowDigest) -> RowDigest:
        lo = ((self.sum & _MASK64) + (other.sum & _MASK64)) & _MASK64
        hi = ((self.sum >> 64) + (other.sum >> 64)) & _MASK64
        return RowDigest(self.count + other.count, (hi << 64) | lo, self.xor ^ other.xor)

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


def digest_columns(columns: list[pa.Array | pa.ChunkedArray], num_rows: int | None = None) -> RowDigest:
    """The digest of the rows formed by ``columns`` (position by position; names are not part of it).

    A row's two 64-bit halves are two independent weighted sums of every column's canonical words (odd weights per
    column, word and half), each through the bijective finaliser: linear up to the finaliser, so a column costs two
    multiply-adds per word and a row two finalisers."""
    n = len(columns[0]) if columns else (num_rows or 0)
    if n == 0:
        return RowDigest()
    lo = np.full(n, _SEED_ROW_LO, dtype=np.uint64)
    hi = np.full(n, _SEED_ROW_HI, dtype=np.uint64)
    tmp = np.empty(n, dtype=np.uint64)
    for i, column in enumerate(columns):
        parts = _parts(column)
        _accumulate(lo, parts, i, int(_SEED_ROW_LO), tmp)
        _accumulate(hi, parts, i, int(_SEED_ROW_HI), tmp)
    _fmix(lo)
    _fmix(hi)
    total = (int(np.sum(hi, dtype=np.uint64)) << 64) | int(np.sum(lo, dtype=np.uint64))
    xor = (int(np.bitwise_xor.reduce(hi)) << 64) | int(np.bitwise_xor.reduce(lo))
    return RowDigest(n, total, xor)


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
