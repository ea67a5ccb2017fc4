"""Hive ACID directory and file names: parse and format (docs/hive-acid.md#names).

Widths (``%07d`` write ids, ``%04d`` statement ids, ``%05d`` bucket files) are *minimum* widths, so
names are parsed by splitting on ``_``, never by fixed positions.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass

from airflow_acid.acid.errors import AcidNameError

BASE_PREFIX = "base_"
DELTA_PREFIX = "delta_"
DELETE_DELTA_PREFIX = "delete_delta_"
VISIBILITY_PREFIX = "_v"
BUCKET_PREFIX = "bucket_"
FLUSH_LENGTH_SUFFIX = "_flush_length"
ORC_ACID_VERSION_FILE = "_orc_acid_version"
METADATA_ACID_FILE = "_metadata_acid"
SPARK_STAGING_PREFIX = ".hive-staging_acid_"
"""``<table>/.hive-staging_acid_<txn>``: where a Spark write stages its tasks' files until its transaction commits
(hidden: readers never see it; the Cleaner removes it once the transaction is no longer open)."""


def format_spark_staging(txn_id: int) -> str:
    return f"{SPARK_STAGING_PREFIX}{int(txn_id)}"


def parse_spark_staging(name: str) -> int | None:
    """The txn id of a Spark staging directory name, or None."""
    rest = name[len(SPARK_STAGING_PREFIX):] if name.startswith(SPARK_STAGING_PREFIX) else ""
    return int(rest) if rest.isdigit() else None
ORC_ACID_VERSION = 2
MAX_STATEMENTS_PER_TXN = 10000
LONG_MAX = 9223372036854775807
LONG_MIN = -9223372036854775808
"""Java's Long.MIN_VALUE: the write id of the base that the first compaction of a converted table writes."""

_BUCKET_FILE_RE = re.compile(r"^bucket_([0-9]+)(?:_([0-9]+))?$")
_ORIGINAL_FILE_RE = re.compile(r"^([0-9]+)_([0-9]+)(?:_copy_([0-9]+))?$")



class DirKind(enum.Enum):
    """What a directory under a table or partition location is (classification of rule 1,
    docs/hive-acid.md#directory-selection)."""

    BASE = "base"
    DELTA = "delta"
    DELETE_DELTA = "delete_delta"
    ORIGINAL = "original"


def _number(text: str, name: str, what: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise AcidNameError(f"{name!r}: {what} {text!r} is not a non-negative integer")
    value = int(text)
    if value > LONG_MAX:
        raise AcidNameError(f"{name!r}: {what} {text} does not fit a 64-bit signed integer (Hive's long)")
    return value


def _split_visibility(name: str, rest: str) -> tuple[str, int]:
    if VISIBILITY_PREFIX in rest:
        head, _, tail = rest.partition(VISIBILITY_PREFIX)
        return head, _number(tail, name, "visibility txn id")
    return rest, 0


@dataclass(frozen=True, order=False)
class BaseDir:
    """``base_N[_vT]``: all data up to write id N; T = committing txn of a compaction (0 if none)."""

    write_id: int
    visibility_txn_id: int = 0

    @property
    def name(self) -> str:
        return format_base(self.write_id, self.visibility_txn_id)

    kind = DirKind.BASE


@dataclass(frozen=True)
class DeltaDir:
    """``delta_a_b[_s][_vT]`` or ``delete_delta_…``; ``statement_id`` is None when the name has none."""

    min_write_id: int
    max_write_id: int
    statement_id: int | None = None
    visibility_txn_id: int = 0
    is_delete: bool = False

    @property
    def name(self) -> str:
        return format_delta(self.min_write_id, self.max_write_id, self.statement_id,
                            self.visibility_txn_id, delete=self.is_delete)

    @property
    def kind(self) -> DirKind:
        return DirKind.DELETE_DELTA if self.is_delete else DirKind.DELTA

    @property
    def sort_statement_id(self) -> int:
        """Statement id as Hive compares it: a name without one counts as −1."""
        return -1 if self.statement_id is None else self.statement_id


def format_base(write_id: int, visibility_txn_id: int = 0) -> str:
    """``base_%07d`` plus ``_v%07d`` when a visibility txn is given (compactor output)."""
    name = f"{BASE_PREFIX}{write_id:07d}"
    return name + (f"{VISIBILITY_PREFIX}{visibility_txn_id:07d}" if visibility_txn_id else "")


def format_delta(min_write_id: int, max_write_id: int, statement_id: int | None = None,
                 visibility_txn_id: int = 0, *, delete: bool = False) -> str:
    """``[delete_]delta_%07d_%07d`` plus ``_%04d`` statement (None or −1: none) and ``_v%07d`` visibility."""
    prefix = DELETE_DELTA_PREFIX if delete else DELTA_PREFIX
    name = f"{prefix}{min_write_id:07d}_{max_write_id:07d}"
    if statement_id is not None and statement_id >= 0:
        name += f"_{statement_id:04d}"
    return name + (f"{VISIBILITY_PREFIX}{visibility_txn_id:07d}" if visibility_txn_id else "")


PARSED_NAMES_CACHED = 65536
"""Parsed directory names kept (frozen results): the same few names recur in every partition of a table, so the
Initiator evaluating 10,000 partitions parses each name once."""


@functools.lru_cache(maxsize=PARSED_NAMES_CACHED)
def parse_base(name: str) -> BaseDir:
    """Parse ``base_N[_vT]`` (also ``base_-9223372036854775808``, Long.MIN_VALUE); AcidNameError names a bad name."""
    if not name.startswith(BASE_PREFIX):
        raise AcidNameError(f"{name!r} is not a base directory name (expected 'base_<writeId>[_v<txnId>]')")
    rest, vis = _split_visibility(name, name[len(BASE_PREFIX):])
    if rest == str(LONG_MIN):
        return BaseDir(LONG_MIN, vis)
    return BaseDir(_number(rest, name, "write id"), vis)


@functools.lru_cache(maxsize=PARSED_NAMES_CACHED)
def parse_delta(name: str) -> DeltaDir:
    """Parse ``[delete_]delta_a_b[_s][_vT]`` by splitting on ``_``; AcidNameError names a bad name."""
    if name.startswith(DELETE_DELTA_PREFIX):
        delete, rest = True, name[len(DELETE_DELTA_PREFIX):]
    elif name.startswith(DELTA_PREFIX):
        delete, rest = False, name[len(DELTA_PREFIX):]
    else:
        raise AcidNameError(f"{name!r} is not a delta directory name (expected 'delta_<min>_<max>[_<stmt>][_v<txnId>]')")
    rest, vis = _split_visibility(name, rest)
    parts = rest.split("_")
    if len(parts) not in (2, 3):
        raise AcidNameError(f"{name!r}: a delta name holds a min and a max write id and an optional statement id")
    lo, hi = _number(parts[0], name, "min write id"), _number(parts[1], name, "max write id")
    if lo > hi:
        raise AcidNameError(f"{name!r}: min write id {lo} is above max write id {hi}")
    stmt = _number(parts[2], name, "statement id") if len(parts) == 3 else None
    return DeltaDir(lo, hi, stmt, vis, delete)


def dir_kind(name: str) -> DirKind:
    """Classify a directory by prefix, as Hive does (``delete_delta_`` does not start with ``delta_``)."""
    if name.startswith(BASE_PREFIX):
        return DirKind.BASE
    if name.startswith(DELTA_PREFIX):
        return DirKind.DELTA
    if name.startswith(DELETE_DELTA_PREFIX):
        return DirKind.DELETE_DELTA
    return DirKind.ORIGINAL


def parse_dir(name: str) -> BaseDir | DeltaDir | None:
    """Parse an ACID directory name; None for an original (non-ACID) directory."""
    kind = dir_kind(name)
    if kind is DirKind.BASE:
        return parse_base(name)
    if kind is DirKind.ORIGINAL:
        return None
    return parse_delta(name)


@dataclass(frozen=True)
class BucketFile:
    """``bucket_NNNNN[_attempt]`` inside a base or delta directory."""

    bucket_id: int
    attempt_id: int | None = None

    @property
    def name(self) -> str:
        return format_bucket_file(self.bucket_id, self.attempt_id)


def format_bucket_file(bucket_id: int, attempt_id: int | None = None) -> str:
    """``bucket_%05d`` plus ``_<attempt>`` for direct-insert writers."""
    return f"{BUCKET_PREFIX}{bucket_id:05d}" + (f"_{attempt_id}" if attempt_id is not None else "")


def parse_bucket_file(name: str) -> BucketFile:
    """Parse ``bucket_N[_attempt]``; side files and other names raise AcidNameError."""
    m = _BUCKET_FILE_RE.match(name)
    if not m:
        raise AcidNameError(f"{name!r} is not a bucket file name (expected 'bucket_<NNNNN>[_<attempt>]')")
    return BucketFile(int(m.group(1)), int(m.group(2)) if m.group(2) is not None else None)


def is_bucket_file(name: str) -> bool:
    """Hive's bucket-file filter: starts with ``bucket_`` and is not a ``_flush_length`` side file."""
    return name.startswith(BUCKET_PREFIX) and not name.endswith(FLUSH_LENGTH_SUFFIX)


@dataclass(frozen=True)
class OriginalFile:
    """A pre-ACID file such as ``000001_0`` or ``000001_0_copy_2``."""

    bucket_id: int
    task_attempt: int
    copy: int = 0

    @property
    def name(self) -> str:
        return format_original_file(self.bucket_id, self.copy, self.task_attempt)


def format_original_file(bucket_id: int, copy: int = 0, task_attempt: int = 0) -> str:
    """``%06d_<attempt>`` plus ``_copy_N`` — the names non-ACID writers give their files."""
    return f"{bucket_id:06d}_{task_attempt}" + (f"_copy_{copy}" if copy else "")


def parse_original_file(name: str) -> OriginalFile | None:
    """Bucket id and copy number of an original file name; None if the name is not bucket-shaped."""
    m = _ORIGINAL_FILE_RE.match(name)
    if not m:
        return None
    return OriginalFile(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def flush_length_file(bucket_file_name: str) -> str:
    """Name of the streaming side file holding the logical length of ``bucket_file_name``
    (docs/hive-acid.md#flush-length)."""
    return bucket_file_name + FLUSH_LENGTH_SUFFIX


def is_hidden(name: str) -> bool:
    """Hive's hidden-file filter: ``_``/``.`` names are ignored except the two ACID marker files."""
    return name.startswith(("_", ".")) and name not in (ORC_ACID_VERSION_FILE, METADATA_ACID_FILE)
