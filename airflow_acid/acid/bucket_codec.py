"""BucketCodec: the encoded ``bucket`` property stored in every ACID event (docs/hive-acid.md#bucket-codec).

V1 layout (MSB→LSB): 3 bits version (1) | 1 reserved | 12 bits bucket id | 4 reserved | 12 bits statement id.
V0 (version bits 0) is the legacy form where the whole int is the bucket id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_acid.acid.errors import BucketCodecError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

_VERSION_SHIFT = 29
_VERSION_MASK = 0xE0000000
_BUCKET_SHIFT = 16
_BUCKET_MASK = 0x0FFF0000
_STATEMENT_MASK = 0x00000FFF
MAX_BUCKET_ID = 4095
MAX_STATEMENT_ID = 4095



@dataclass(frozen=True)
class BucketProperty:
    """Decoded bucket property: codec version, bucket (writer) id and statement id."""

    version: int
    bucket_id: int
    statement_id: int


def _as_unsigned(value: int) -> int:
    return value & 0xFFFFFFFF


def _as_signed(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def encode(bucket_id: int, statement_id: int = 0) -> int:
    """V1 encoding; statement id −1 (none) encodes as 0."""
    if statement_id < 0:
        statement_id = 0
    if not 0 <= bucket_id <= MAX_BUCKET_ID:
        raise BucketCodecError(f"bucket id {bucket_id} is outside BucketCodec V1's range 0..{MAX_BUCKET_ID}")
    if statement_id > MAX_STATEMENT_ID:
        raise BucketCodecError(f"statement id {statement_id} is outside BucketCodec V1's range 0..{MAX_STATEMENT_ID}")
    return _as_signed((1 << _VERSION_SHIFT) | (bucket_id << _BUCKET_SHIFT) | statement_id)


def version_of(value: int) -> int:
    return (_as_unsigned(value) & _VERSION_MASK) >> _VERSION_SHIFT


def decode(value: int) -> BucketProperty:
    """Decode V0 or V1; any other version is an error."""
    raw = _as_unsigned(value)
    version = version_of(raw)
    if version == 0:
        return BucketProperty(0, raw, 0)
    if version == 1:
        return BucketProperty(1, (raw & _BUCKET_MASK) >> _BUCKET_SHIFT, raw & _STATEMENT_MASK)
    raise BucketCodecError(f"bucket property {value} has unknown BucketCodec version {version}")


def bucket_id_of(value: int) -> int:
    return decode(value).bucket_id


def bucket_ids_of(values: np.ndarray) -> np.ndarray:
    """:func:`bucket_id_of` for an array of bucket properties (V0 or V1; other versions are an error)."""
    import numpy as np

    raw = np.asarray(values, dtype=np.int64) & 0xFFFFFFFF
    versions = (raw & _VERSION_MASK) >> _VERSION_SHIFT
    if versions.size and int(versions.max()) > 1:
        bad = int(np.asarray(values)[versions > 1][0])
        raise BucketCodecError(f"bucket property {bad} has unknown BucketCodec version {version_of(bad)}")
    return np.where(versions == 0, raw, (raw & _BUCKET_MASK) >> _BUCKET_SHIFT)
