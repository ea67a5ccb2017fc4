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

The definition never changes: digests are stored (``ACR_DIGEST_IN/OUT``) and compared across processes, so
``tests/acid/test_digest_reference.py`` checks this code against the definition written out value by value and pins
known digests. How it is computed may change: rows are hashed :data:`BLOCK_ROWS` at a time into arrays reused from
block to block (no allocation, so no page faults, per batch); NULLs are masks on the products, never copies; strings
are read straight from their Arrow buffers (no cast, no copy), word k of every value at once while the longest value
is short enough, else word by word with one prefix sum.
"""

from __future__ import annotations

import functools
import threading
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
_FMIX_1 = _U(0xFF51AFD7ED558CCD)
_FMIX_2 = _U(0xC4CEB9FE1A85EC53)

BLOCK_ROWS = 32_768
"""Rows hashed together: larger batches are hashed block by block, so the scratch arrays stay this size (and in
cache) whatever a caller hands in."""


class _Scratch(threading.local):
    """Arrays reused from block to block in this thread: hashing a batch allocates (and page-faults) nothing."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, n: int, dtype: type = np.uint64) -> np.ndarray:
        """An array of ``n`` items for ``name`` (its contents are whatever its last user left): the caller uses it
        before anything else asks for ``name``."""
        if n > 2 * BLOCK_ROWS:  # a large child array (list elements): not kept
            return np.empty(n, dtype=dtype)
        array = self.arrays.get(name)
        if array is None or array.dtype != dtype or len(array) < n:
            array = self.arrays[name] = np.empty(max(n, BLOCK_ROWS), dtype=dtype)
        return array[:n]


_SCRATCH = _Scratch()


def _fmix(x: np.ndarray, tmp: np.ndarray | None = None) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place: a bijection on uint64 that spreads every input bit."""
    if tmp is None:
        tmp = np.empty_like(x)
    for constant in (_FMIX_1, _FMIX_2, None):
        np.right_shift(x, _U(33), out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        if constant is not None:
            np.multiply(x, constant, out=x)
    return x


@functools.lru_cache(maxsize=4096)
def _weight(position: int, word: int, seed: int) -> np.uint64:
    """An odd 64-bit weight for word ``word`` of the value at ``position`` (column or struct field) under ``seed``."""
    first = _fmix(np.array([((position + 1) * int(_GOLDEN) & _MASK64) ^ seed], dtype=np.uint64))
    second = _fmix(first ^ _U((word + 1) * int(_RADIX_BYTES) & _MASK64))
    weight: np.uint64 = _U(second[0] | _U(1))
    return weight


@functools.lru_cache(maxsize=4096)
def _weights(position: int, word: int, seeds: tuple[int, ...]) -> np.ndarray:
    """The weights of one word under each seed, as a column (one row per seed: broadcasts over a block's rows)."""
    return np.array([[_weight(position, word, seed)] for seed in seeds], dtype=np.uint64)


_ROW_SEEDS = (int(_SEED_ROW_LO), int(_SEED_ROW_HI))
_VALUE_SEEDS = (int(_SEED_VALUE),)


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


def _whole(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array


def _valid_mask(array: pa.Array) -> np.ndarray | None:
    """All ones where ``array`` holds a value and zero where it holds NULL; None when it holds no NULL."""
    if array.null_count == 0:
        return None
    n = len(array)
    bitmap = array.buffers()[0]
    if bitmap is None:
        bits = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)
    else:
        bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), count=array.offset + n,
                             bitorder="little")[array.offset:]
    mask = _SCRATCH.get("valid", n)
    np.negative(bits, out=mask, dtype=np.uint64, casting="unsafe")  # 1 → all ones, 0 → 0
    return mask


def _fixed(array: pa.Array, signed: bool) -> np.ndarray:
    """The int64 value's 64 bits of each value of a fixed-width integer-like array (any value in a NULL slot: masked
    later): 8-byte values as they are stored, narrower ones widened (a signed value sign-extends) into scratch — a
    multiply of uint64 by uint64 runs twice as fast as one that casts its input."""
    width = array.type.bit_width // 8
    n = len(array)
    if width == 8:
        return np.frombuffer(array.buffers()[1], dtype=_WORD)[array.offset:array.offset + n]
    values = np.frombuffer(array.buffers()[1], dtype=f"<{'i' if signed else 'u'}{width}")[array.offset:array.offset + n]
    wide = _SCRATCH.get("fixed", n, np.int64)
    np.copyto(wide, values)
    return wide.view(np.uint64)


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


def _float_parts(array: pa.Array) -> list[np.ndarray]:
    """The bits of the float64 value."""
    if pa.types.is_float64(array.type):
        return [np.frombuffer(array.buffers()[1], dtype="<u8")[array.offset:array.offset + len(array)]]
    if pa.types.is_float32(array.type):
        values = np.frombuffer(array.buffers()[1], dtype="<f4")[array.offset:array.offset + len(array)]
        wide = _SCRATCH.get("float64", len(array), np.float64)
        np.copyto(wide, values)
        return [wide.view(np.uint64)]
    return [_numbers(array.cast(pa.float64())).astype(np.float64, copy=False).view(np.uint64)]


def _bit_parts(array: pa.Array) -> list[np.ndarray]:
    """Booleans as 0 and 1."""
    n = len(array)
    return [np.unpackbits(np.frombuffer(array.buffers()[1], dtype=np.uint8), count=array.offset + n,
                          bitorder="little")[array.offset:]]


_SHORT_WORDS = 4
"""Values of at most this many words are hashed word position by word position (the common short strings)."""
_SHORT_FACTOR = 2.5
"""Longer values too, while (longest value's words × values) ≤ this × (their words): word k of every value costs
about a third of what a word costs in the word-by-word path."""
_LENGTH_MASKS = np.array([0] + [(1 << (8 * r)) - 1 for r in range(1, 8)] + [_MASK64], dtype=np.uint64)
"""The bytes of a word a value holds of its own, by how many of its bytes are left (0-8; little-endian: low bytes)."""
_TAIL_MASKS = np.array([_MASK64] + [(1 << (8 * r)) - 1 for r in range(1, 8)], dtype=np.uint64)
"""The bytes a value's last 8-byte word holds of its own, by length mod 8 (little-endian: the low bytes)."""
_WORD = np.dtype("<u8")


@functools.lru_cache(maxsize=64)
def _word_masks(k: int, longest: int) -> np.ndarray:
    """By a value's length (0 to ``longest``): the bytes of its word ``k`` that are its own (a look-up in a table this
    small costs less than computing the mask)."""
    return _LENGTH_MASKS[np.clip(np.arange(longest + 1) - 8 * k, 0, 8)]


def _byte_parts(array: pa.Array) -> list[np.ndarray]:
    """Σ word_k · R^k + length · G mod 2^64 over the value's bytes read as little-endian 8-byte words (the last one
    zero-padded): a polynomial hash with a distinct odd weight per word, so one changed byte always changes it."""
    t = array.type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        offset_type: type = np.int32
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        offset_type = np.int64
    else:  # fixed-size binaries and views: into the offset form
        array = array.cast(pa.large_binary())
        offset_type = np.int64
    n = len(array)
    if n == 0:
        return [np.zeros(0, dtype=np.uint64)]
    offsets: np.ndarray = np.frombuffer(array.buffers()[1], dtype=offset_type)[array.offset:array.offset + n + 1]
    if offset_type is np.int32:  # widened once: arithmetic that casts its inputs runs at half speed
        wide = _SCRATCH.get("bytes.offsets", n + 1, np.int64)
        np.copyto(wide, offsets)
        offsets = wide
    lengths = _SCRATCH.get("bytes.lengths", n, np.int64)
    np.subtract(offsets[1:], offsets[:-1], out=lengths)
    shortest, longest = int(lengths.min()), int(lengths.max())
    if shortest < 0:
        raise ValueError("cannot digest a binary array whose offsets decrease")
    words = (longest + 7) >> 3
    data = array.buffers()[2]
    if words == 0 or data is None:
        poly = _SCRATCH.get("bytes.poly", n)
        poly.fill(0)
    elif words <= _SHORT_WORDS or words * n <= _SHORT_FACTOR * ((int(offsets[-1]) - int(offsets[0])) // 8 + n):
        poly = _short_polys(np.frombuffer(data, dtype=np.uint8), offsets, lengths, words, shortest)
    else:
        poly = _long_polys(np.frombuffer(data, dtype=np.uint8), offsets, lengths)
    term = _SCRATCH.get("bytes.term", n)
    np.multiply(lengths.view(np.uint64), _GOLDEN, out=term)
    np.add(poly, term, out=poly)  # plus the length times an odd constant: zero-padding cannot make two lengths alike
    return [poly]


def _short_polys(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, words: int,
                 shortest: int) -> np.ndarray:
    """The word polynomials of values of at most ``words`` words, word position by word position (no per-word
    index): word k of every value is two aligned words of the data shifted together, gathered straight from the
    data buffer (values whose words would reach past its last whole word: from a zero-padded copy of its tail)."""
    n = len(lengths)
    first, last = int(offsets[0]), int(offsets[-1])
    base = first & ~7
    if (data.ctypes.data + base) % 8:  # a buffer not 8-byte aligned: hash an aligned copy of the values' bytes
        copy = np.zeros((last - first + 8 * (words + 2)) // 8 * 8, dtype=np.uint8)
        copy[:last - first] = data[first:last]
        data, base = copy, 0
        offsets = offsets - first
    aligned = data[base:base + (len(data) - base) // 8 * 8].view(_WORD)
    starts = _SCRATCH.get("bytes.starts", n, np.int64)
    np.subtract(offsets[:-1], base, out=starts)
    index = _SCRATCH.get("bytes.index", n, np.int64)
    np.right_shift(starts, 3, out=index)
    low = starts  # the bits below the value's first byte in its first aligned word: (start mod 8) · 8
    np.bitwise_and(starts, 7, out=low)
    np.left_shift(low, 3, out=low)
    low_bits = low.view(np.uint64)
    high_bits = _SCRATCH.get("bytes.high", n)
    np.subtract(_U(64), low_bits, out=high_bits)  # a shift by 64 gives 0 (numpy defines it)
    poly = _SCRATCH.get("bytes.poly", n)
    safe = int(np.searchsorted(index, len(aligned) - words, side="left"))  # index + words < len(aligned)
    if safe:
        _short_core(aligned, index[:safe], low_bits[:safe], high_bits[:safe], lengths[:safe], words, shortest,
                    poly[:safe])
    if safe < n:  # the last values: the buffer's last partial word and what lies past it, from a padded copy
        start = base + 8 * int(index[safe])
        tail = np.zeros((last - start + 8 * (words + 2)) // 8 * 8, dtype=np.uint8)
        tail[:last - start] = data[start:last]
        _short_core(tail.view(_WORD), index[safe:] - index[safe], low_bits[safe:], high_bits[safe:],
                    lengths[safe:], words, shortest, poly[safe:])
    return poly


def _short_core(aligned: np.ndarray, index: np.ndarray, low_bits: np.ndarray, high_bits: np.ndarray,
                lengths: np.ndarray, words: int, shortest: int, out: np.ndarray) -> None:
    """``out`` = Σ_k word_k · R^k, word k of a value being ``aligned[index + k] >> low | aligned[index + k + 1] <<
    high`` keeping only the value's own bytes (two gathered words in flight, whatever ``words`` is)."""
    n = len(index)
    spare = [_SCRATCH.get("bytes.word0", n), _SCRATCH.get("bytes.word1", n)]
    upper = _SCRATCH.get("bytes.upper", n)
    up, _ = _BYTE_POWERS.get(words)
    np.take(aligned, index, out=out, mode="clip")  # clip: no buffering; every index is in range
    word = out
    for k in range(words):
        following = spare[k % 2]
        np.take(aligned[k + 1:], index, out=following, mode="clip")
        np.right_shift(word, low_bits, out=word)
        np.left_shift(following, high_bits, out=upper)
        np.bitwise_or(word, upper, out=word)
        if shortest < 8 * (k + 1):  # some value ends inside (or before) this word: keep only its own bytes
            np.take(_word_masks(k, 8 * words), lengths, out=upper, mode="clip")
            np.bitwise_and(word, upper, out=word)
        if k:
            np.multiply(word, up[k], out=word)
            np.add(out, word, out=out)
        word = following


def _long_polys(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The word polynomials of values of any length, word by word (one prefix sum over all the words)."""
    first, last = int(offsets[0]), int(offsets[-1])
    padded = np.zeros((last - first + 8 * 2) // 8 * 8, dtype=np.uint8)  # zeros past every value
    padded[:last - first] = data[first:last]
    at_byte = np.ndarray((len(padded) - 7,), dtype=_WORD, buffer=padded, strides=(1,))  # the word at every byte
    counts = (lengths + 7) >> 3
    word_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    total = int(word_offsets[-1])
    positions = np.repeat(offsets[:-1] - first - 8 * word_offsets[:-1], counts) + 8 * np.arange(total, dtype=np.int64)
    words = at_byte[positions].astype(np.uint64, copy=False)
    partial = (lengths & 7) != 0
    tails = word_offsets[1:][partial] - 1
    words[tails] &= _TAIL_MASKS[lengths[partial] & 7]
    return _segment_sums(words, word_offsets, _BYTE_POWERS)


def _decimal_parts(array: pa.Array) -> list[np.ndarray]:
    width = array.type.byte_width // 8
    words = np.frombuffer(array.buffers()[1], dtype=_WORD)[array.offset * width:(array.offset + len(array)) * width]
    return [words.reshape(len(array), width)[:, w] for w in range(width)]


def _list_parts(array: pa.Array) -> list[np.ndarray]:
    offsets = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    first, last = (int(offsets[0]), int(offsets[-1])) if len(offsets) else (0, 0)
    elements = value_hashes(array.values.slice(first, last - first))  # a map's: its key/value entries
    return [_segment_sums(elements, offsets - first, _LIST_POWERS), np.diff(offsets).view(np.uint64)]


def _parts(array: pa.Array) -> tuple[list[np.ndarray], np.ndarray | None]:
    """A value's canonical form as 64-bit words (the same words whichever Arrow form it comes in; arrays of any
    integer type multiply as their int64 value's bits) and the mask of non-NULL values (None: no NULL). NULL: all
    words 0 and a last word 1 (present only in batches that hold a NULL, 0 otherwise), see :func:`_accumulate`.
    The arrays may be scratch, read-only or views: use them before the next call."""
    t = array.type
    if pa.types.is_dictionary(t):
        return _parts(array.dictionary_decode())
    if pa.types.is_null(t):
        return [np.ones(len(array), dtype=np.uint64)], None
    if t == WIDE_TIMESTAMP or pa.types.is_timestamp(t):
        parts = _timestamp_parts(array)
    elif pa.types.is_boolean(t):
        parts = _bit_parts(array)
    elif pa.types.is_integer(t):
        parts = [_fixed(array, pa.types.is_signed_integer(t))]
    elif pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        parts = [_fixed(array, True)]
    elif pa.types.is_floating(t):
        parts = _float_parts(array)
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
    return parts, _valid_mask(array)


def _accumulate(acc: np.ndarray, tmp: np.ndarray, parts: list[np.ndarray], valid: np.ndarray | None,
                position: int, seeds: tuple[int, ...]) -> None:
    """acc[h] += Σ part_j · weight(position, j, seeds[h]) mod 2^64 (in place; ``acc`` has a row per seed); a NULL
    contributes only its flag word (the last, 1)."""
    for j, part in enumerate(parts):
        np.multiply(part, _weights(position, j, seeds), out=tmp, dtype=np.uint64, casting="unsafe")
        if valid is not None:
            np.bitwise_and(tmp, valid, out=tmp)
        np.add(acc, tmp, out=acc)
    if valid is not None:
        null = _SCRATCH.get("null", len(valid))
        np.invert(valid, out=null)
        np.bitwise_and(null, _weights(position, len(parts), seeds), out=tmp)
        np.add(acc, tmp, out=acc)


def value_hashes(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of each value of ``array``: its canonical words, weighted and summed, through the finaliser."""
    array = _whole(array)
    n = len(array)
    acc = np.full((1, n), _SEED_VALUE, dtype=np.uint64)
    parts, valid = _parts(array)
    tmp = _SCRATCH.get("value.tmp", n).reshape(1, n)
    _accumulate(acc, tmp, parts, valid, 0, _VALUE_SEEDS)
    hashes: np.ndarray = _fmix(acc, tmp)[0]
    return hashes


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
    multiply-adds per word and a row two finalisers. Rows are hashed :data:`BLOCK_ROWS` at a time into arrays
    reused from block to block."""
    arrays = [_whole(column) for column in columns]
    n = len(arrays[0]) if arrays else (num_rows or 0)
    total = RowDigest()
    for start in range(0, n, BLOCK_ROWS):
        rows = min(BLOCK_ROWS, n - start)
        block = arrays if rows == n else [array.slice(start, rows) for array in arrays]
        total = total.combine(_digest_block(block, rows))
    return total


def _digest_block(arrays: list[pa.Array], n: int) -> RowDigest:
    acc = _SCRATCH.get("row.acc", 2 * n).reshape(2, n)
    acc[0].fill(_SEED_ROW_LO)
    acc[1].fill(_SEED_ROW_HI)
    tmp = _SCRATCH.get("row.tmp", 2 * n).reshape(2, n)
    for i, array in enumerate(arrays):
        parts, valid = _parts(array)
        _accumulate(acc, tmp, parts, valid, i, _ROW_SEEDS)
    _fmix(acc, tmp)
    lo, hi = (int(s) for s in np.add.reduce(acc, axis=1, dtype=np.uint64))
    xor_lo, xor_hi = (int(x) for x in np.bitwise_xor.reduce(acc, axis=1))
    return RowDigest(n, (hi << 64) | lo, (xor_hi << 64) | xor_lo)


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


__all__ = ["BLOCK_ROWS", "DigestBuilder", "RowDigest", "digest_columns", "digest_of_texts", "value_hashes"]
