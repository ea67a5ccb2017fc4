"""Hive bucketing version 2: which bucket a row belongs to (Murmur3 hash of the bucket columns).

Hive 3+ (``bucketing_version=2``, the default for new tables) hashes each bucket column with
ObjectInspectorUtils.hashCodeMurmur, folds the column hashes as ``h = 31 * h + column_hash`` and assigns
``bucket = (h & Integer.MAX_VALUE) % num_buckets``. Column hashes, by Hive type:

* NULL → 0; boolean → 1/0; tinyint → the value itself (no hashing);
* smallint / int / bigint / date (days) → Murmur3-32 of the big-endian 2 / 4 / 8 / 4 bytes;
* float / double → Murmur3-32 of the big-endian IEEE bits (NaN canonical, as Float.floatToIntBits /
  Double.doubleToLongBits give it); string / varchar → Murmur3-32 of the UTF-8 bytes (char: trailing spaces
  stripped first); binary → Murmur3-32 of the bytes;
* decimal → Murmur3-32 of ``HiveDecimalWritable.getInternalStorage()``: the two's-complement big-endian bytes of
  the unscaled value (``BigInteger.toByteArray``) once trailing fractional zeros are dropped, as HiveDecimal holds
  every value (1.50 in a DECIMAL(5,2) hashes as 15 at scale 1; 0 as the single byte 0x00);
* timestamp → Murmur3-32 of ``TimestampWritableV2.getBytes()``: 4 big-endian bytes of the epoch seconds (as if
  UTC) with the top bit flagging what follows, then as Hadoop VLongs the nanoseconds with their 9 digits reversed
  (0.23 s → 32) and, for seconds outside 0 … 2^31−1, ``seconds >> 31`` (the nanoseconds field is then
  ``−reversed − 1``).

All with Hive's seed 104729. Hive's ``Murmur3.hash32`` differs from the reference MurmurHash3_x86_32 in one
place, and this module reproduces it: tail bytes (the last ``len % 4`` bytes) are sign-extended before being
combined, so inputs whose tail holds a byte ≥ 0x80 hash differently from the reference algorithm. Inputs
whose length is a multiple of 4 (int, bigint, float, double, date) or whose tail bytes are < 0x80 (ASCII
text) agree with the reference.

Complex bucket columns (array, map, struct) are refused. Only ``bucketing_version=2`` is reproduced: tables Hive 2
created (version 1, Java ``hashCode``) are refused by :func:`check_bucketing_version`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid.timestamps import WIDE_TIMESTAMP, convert, is_timestamp_type
from airflow_acid.client.errors import BucketingError

HIVE_SEED = 104729
"""``Murmur3.DEFAULT_SEED`` in Hive's storage-api."""

_C1, _C2 = 0xCC9E2D51, 0x1B873593
_MASK = 0xFFFFFFFF



def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _signed(x: int) -> int:
    x &= _MASK
    return x - (1 << 32) if x & 0x80000000 else x


def _fmix(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h


def murmur3_32(data: bytes, seed: int = HIVE_SEED, *, hive_tail: bool = True) -> int:
    """Murmur3 x86 32-bit hash as a signed Java int.

    ``hive_tail=True`` reproduces Hive's ``Murmur3.hash32`` (tail bytes sign-extended); ``False`` is the reference
    MurmurHash3_x86_32 (the published test vectors).
    """
    h = seed & _MASK
    n = len(data)
    nblocks = n // 4
    for (k,) in struct.iter_unpack("<I", data[: nblocks * 4]):
        k = (k * _C1) & _MASK
        k = _rotl(k, 15)
        k = (k * _C2) & _MASK
        h ^= k
        h = _rotl(h, 13)
        h = (h * 5 + 0xE6546B64) & _MASK
    tail = data[nblocks * 4:]
    if tail:
        k = 0
        for i in range(len(tail) - 1, -1, -1):
            byte = tail[i]
            if hive_tail and byte >= 0x80:
                k ^= ((byte - 256) << (8 * i)) & _MASK  # Java: data[i] << 8*i on a signed byte
            else:
                k ^= byte << (8 * i)
        k = (k * _C1) & _MASK
        k = _rotl(k, 15)
        k = (k * _C2) & _MASK
        h ^= k
    return _signed(_fmix(h, n))


# --- vectorised hashing of fixed-width values (int, bigint, double …) --------------------------------------

def _np_rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _np_mix_block(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = k * np.uint32(_C1)
    k = _np_rotl(k, 15)
    k = k * np.uint32(_C2)
    h = h ^ k
    h = _np_rotl(h, 13)
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def _np_fmix(h: np.ndarray, length: int) -> np.ndarray:
    h = h ^ np.uint32(length)
    h ^= h >> np.uint32(16)
    h = h * np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h = h * np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def murmur3_32_fixed(values: np.ndarray, width: int, seed: int = HIVE_SEED) -> np.ndarray:
    """Hive's hash of each value's big-endian ``width``-byte form (width 2, 4 or 8), as int32."""
    if width == 2:
        raw = values.astype(">i2").view(np.uint8).reshape(-1, 2)
        tail = raw.astype(np.int32)
        tail = np.where(tail >= 0x80, tail - 256, tail)  # Hive sign-extends tail bytes
        k = ((tail[:, 1] << 8) ^ tail[:, 0]).astype(np.int64) & _MASK
        k = k.astype(np.uint32)
        k = k * np.uint32(_C1)
        k = _np_rotl(k, 15)
        k = k * np.uint32(_C2)
        h = np.full(len(values), seed & _MASK, dtype=np.uint32) ^ k
        return _np_fmix(h, 2).view(np.int32)
    dtype = {4: ">i4", 8: ">i8"}[width]
    blocks = np.ascontiguousarray(values.astype(dtype)).view("<u4").reshape(-1, width // 4)
    h = np.full(len(values), seed & _MASK, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for j in range(width // 4):
            h = _np_mix_block(h, blocks[:, j].astype(np.uint32))
        return _np_fmix(h, width).view(np.int32)


# --- Hive's byte forms of decimals and timestamps ------------------------------------------------------------

def java_big_integer_bytes(value: int) -> bytes:
    """``BigInteger.toByteArray()``: the shortest two's-complement big-endian form holding a sign bit."""
    bits = value.bit_length() if value >= 0 else (~value).bit_length()
    return value.to_bytes(bits // 8 + 1, "big", signed=True)


def decimal_storage(value: Decimal) -> bytes:
    """``HiveDecimalWritable.getInternalStorage()`` of ``value``: its unscaled value, trailing fractional zeros
    dropped (HiveDecimal's normal form), as :func:`java_big_integer_bytes`."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise BucketingError(f"decimal {value} is not a number Hive can bucket")
    unscaled = int("".join(map(str, digits)) or "0")
    if exponent > 0:
        unscaled *= 10 ** exponent
        exponent = 0
    while exponent < 0 and unscaled and unscaled % 10 == 0:
        unscaled //= 10
        exponent += 1
    return java_big_integer_bytes(-unscaled if sign else unscaled)


def hadoop_vlong(value: int) -> bytes:
    """Hadoop's zero-compressed long (``WritableUtils.writeVLong`` / ``LazyBinaryUtils.writeVLongToByteArray``)."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    first = -112
    if value < 0:
        value = ~value
        first = -120
    size = (value.bit_length() + 7) // 8
    return struct.pack(">b", first - size) + value.to_bytes(size, "big")


def timestamp_bytes(seconds: int, nanos: int) -> bytes:
    """``TimestampWritableV2.getBytes()`` of a timestamp ``seconds`` (floor, since 1970 as if UTC) + ``nanos``."""
    reversed_nanos = int(f"{nanos:09d}"[::-1]) if nanos else 0
    second_vint = seconds < 0 or seconds > 0x7FFFFFFF
    first = seconds & 0x7FFFFFFF
    if reversed_nanos or second_vint:
        first |= 0x80000000
    out = first.to_bytes(4, "big")
    if reversed_nanos or second_vint:
        out += hadoop_vlong(-reversed_nanos - 1 if second_vint else reversed_nanos)
    if second_vint:
        out += hadoop_vlong(seconds >> 31)
    return out


def _timestamp_hashes(array: pa.Array) -> np.ndarray:
    wide = convert(array, WIDE_TIMESTAMP)
    seconds = wide.field("epoch_seconds").fill_null(0).to_numpy(zero_copy_only=False)
    nanos = wide.field("nanos_of_second").fill_null(0).to_numpy(zero_copy_only=False)
    return np.array([murmur3_32(timestamp_bytes(int(s), int(n))) for s, n in zip(seconds, nanos)], dtype=np.int32)


# --- per-column hashes --------------------------------------------------------------------------------------

def _column_hashes(array: pa.ChunkedArray | pa.Array, hive_type: str, column: str) -> np.ndarray:
    """Hive's hashCodeMurmur of every value of one bucket column, as int32 (NULL → 0)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    base = hive_type.split("(", 1)[0].strip().lower()
    n = len(array)
    valid = ~np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    with np.errstate(over="ignore"):
        if base == "boolean":
            out = np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int32)
        elif base == "tinyint":
            out = np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int32)
        elif base in ("smallint", "int", "integer", "bigint", "date"):
            width = {"smallint": 2, "int": 4, "integer": 4, "bigint": 8, "date": 4}[base]
            if base == "date":
                array = array.cast(pa.int32()) if not pa.types.is_integer(array.type) else array
            values = np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False))
            out = murmur3_32_fixed(values, width)
        elif base in ("float", "double"):
            ftype, itype, nan = (np.float32, np.int32, 0x7FC00000) if base == "float" else \
                (np.float64, np.int64, 0x7FF8000000000000)
            floats = np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False), dtype=ftype)
            bits = np.where(np.isnan(floats), itype(nan), floats.view(itype))  # Java's canonical NaN
            out = murmur3_32_fixed(bits, 4 if base == "float" else 8)
        elif base in ("decimal", "numeric"):
            out = np.array([0 if v is None else murmur3_32(decimal_storage(v)) for v in array.to_pylist()],
                           dtype=np.int32)
        elif base == "timestamp" and is_timestamp_type(array.type):
            out = _timestamp_hashes(array)
        elif base in ("string", "varchar", "char", "binary"):
            values = array.to_pylist()
            out = np.zeros(n, dtype=np.int32)
            for i, v in enumerate(values):
                if v is None:
                    continue
                data = v if isinstance(v, bytes) else (v.rstrip(" ") if base == "char" else v).encode("utf-8")
                out[i] = murmur3_32(data)
        else:
            raise BucketingError(
                f"bucket column {column} has type {hive_type}: bucketing version 2 is reproduced only for boolean, "
                "tinyint, smallint, int, bigint, float, double, decimal, date, timestamp, string, varchar, char and "
                "binary columns")
    return np.where(valid, out, 0).astype(np.int32)


def bucket_hash_codes(table: pa.Table, bucket_cols: Sequence[str], hive_types: Sequence[str]) -> np.ndarray:
    """ObjectInspectorUtils.getBucketHashCode for every row: ``h = 31 * h + column_hash`` over the columns."""
    h = np.zeros(table.num_rows, dtype=np.int64)
    for col, typ in zip(bucket_cols, hive_types):
        h = (h * 31 + _column_hashes(table.column(col), typ, col).astype(np.int64)) & _MASK
    return h.astype(np.uint32).view(np.int32)


def bucket_numbers(hash_codes: np.ndarray, num_buckets: int) -> np.ndarray:
    """``(hash & Integer.MAX_VALUE) % num_buckets`` (ObjectInspectorUtils.getBucketNumber)."""
    return (hash_codes.astype(np.int64) & 0x7FFFFFFF) % int(num_buckets)


def assign_buckets(table: pa.Table, bucket_cols: Sequence[str], hive_types: Sequence[str],
                   num_buckets: int) -> np.ndarray:
    """Bucket id (0 … num_buckets−1) of every row of ``table``."""
    if not bucket_cols or num_buckets <= 0:
        return np.zeros(table.num_rows, dtype=np.int64)
    return bucket_numbers(bucket_hash_codes(table, bucket_cols, hive_types), num_buckets)


def bucket_of_value(value: object, hive_type: str, num_buckets: int) -> int:
    """The bucket of a single-column key (handy for tests and for pruning)."""
    arr = pc.cast(pa.array([value]), _arrow_for_hash(hive_type)) if value is not None else pa.array([None])
    return int(assign_buckets(pa.table({"k": arr}), ["k"], [hive_type], num_buckets)[0])


def _arrow_for_hash(hive_type: str) -> pa.DataType:
    base = hive_type.split("(", 1)[0].strip().lower()
    return {"boolean": pa.bool_(), "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
            "integer": pa.int32(), "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(),
            "date": pa.date32(), "binary": pa.binary(), "timestamp": pa.timestamp("ns"),
            "decimal": pa.decimal128(38, 18)}.get(base, pa.string())


def check_bucketing_version(properties: dict[str, str], table: str) -> None:
    """Refuse to bucket rows of a table whose ``bucketing_version`` is not 2: Hive reads a missing property as
    version 1 (tables Hive 2 created), whose Java ``hashCode`` bucketing this project does not reproduce."""
    version = (properties.get("bucketing_version") or "1").strip()
    if version != "2":
        raise BucketingError(
            f"table {table} is bucketed with bucketing_version={version} (Hive 2's hash); airflow-acid writes only "
            "bucketing version 2 — rewrite it in Hive into a new table (CREATE TABLE … AS SELECT) to get version 2")
