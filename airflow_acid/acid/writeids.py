"""Snapshots of transaction ids and table write ids, with Hive's exact semantics and string forms.

``ValidTxnList`` is Hive's ValidReadTxnList (global snapshot), ``ValidReaderWriteIdList`` the per-table
snapshot readers use, ``ValidCompactorWriteIdList`` the one the compactor uses and ``ValidCleanerWriteIdList``
the Cleaner's (docs/hive-acid.md#write-id-lists, docs/hive-acid.md#reader-snapshot-rule).
String forms round-trip with Hive's ``writeToString``/``readFromString``:

* txn list:      ``<hwm>:<minOpenTxn>:<open,...>:<aborted,...>``
* write-id list: ``<db.table>:<hwm>:<minOpenWriteId>:<open,...>:<aborted,...>``
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from airflow_acid.acid.errors import SnapshotFormatError
from airflow_acid.pycompat import Self

LONG_MAX = 9223372036854775807
"""Java's Long.MAX_VALUE: Hive's marker for "nothing open"."""


class RangeResponse(enum.Enum):
    """How many ids of an inclusive range a snapshot accepts (Hive's ValidTxnList.RangeResponse)."""

    NONE = "NONE"
    SOME = "SOME"
    ALL = "ALL"



def _parse_ids(text: str, what: str, source: str) -> list[int]:
    if not text:
        return []
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise SnapshotFormatError(f"{what} list {text!r} in snapshot {source!r} is not a comma-separated list of "
                                  "integers") from None


@dataclass(frozen=True)
class _IdSnapshot:
    """Shared core: a high watermark plus sorted exceptions, each flagged open or aborted."""

    high_watermark: int
    open: tuple[int, ...] = ()
    aborted: tuple[int, ...] = ()
    _exceptions: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _aborted_set: frozenset[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        open_ids = tuple(sorted(set(int(i) for i in self.open)))
        aborted_ids = tuple(sorted(set(int(i) for i in self.aborted)))
        overlap = set(open_ids) & set(aborted_ids)
        if overlap:
            raise ValueError(f"ids {sorted(overlap)} are listed both open and aborted")
        object.__setattr__(self, "open", open_ids)
        object.__setattr__(self, "aborted", aborted_ids)
        object.__setattr__(self, "_exceptions", tuple(sorted(open_ids + aborted_ids)))
        object.__setattr__(self, "_aborted_set", frozenset(aborted_ids))

    @property
    def exceptions(self) -> tuple[int, ...]:
        """Open and aborted ids together, ascending (Hive's ``getInvalid…``)."""
        return self._exceptions

    def _is_valid(self, i: int) -> bool:
        if i > self.high_watermark:
            return False
        pos = bisect.bisect_left(self._exceptions, i)
        return not (pos < len(self._exceptions) and self._exceptions[pos] == i)

    def _is_aborted(self, i: int) -> bool:
        return i in self._aborted_set

    def _count_in(self, ids: tuple[int, ...], lo: int, hi: int) -> int:
        return bisect.bisect_right(ids, hi) - bisect.bisect_left(ids, lo)

    def _range_valid(self, lo: int, hi: int) -> RangeResponse:
        if lo > self.high_watermark:
            return RangeResponse.NONE
        if self._exceptions and self._exceptions[0] > hi:
            return RangeResponse.ALL
        count = max(0, hi - self.high_watermark) + self._count_in(self._exceptions, lo, hi)
        if count == 0:
            return RangeResponse.ALL
        if count == hi - lo + 1:
            return RangeResponse.NONE
        return RangeResponse.SOME

    def _range_aborted(self, lo: int, hi: int) -> RangeResponse:
        if self.high_watermark < lo:
            return RangeResponse.NONE
        count = self._count_in(self.aborted, lo, hi)
        if count == 0:
            return RangeResponse.NONE
        if count == hi - lo + 1:
            return RangeResponse.ALL
        return RangeResponse.SOME

    def _tail(self) -> str:
        return f"{','.join(map(str, self.open))}:{','.join(map(str, self.aborted))}"


@dataclass(frozen=True)
class ValidTxnList(_IdSnapshot):
    """Global transaction snapshot: committed txns up to ``high_watermark`` minus the exceptions."""

    min_open_txn: int = LONG_MAX

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.exceptions:
            object.__setattr__(self, "min_open_txn", LONG_MAX)
        elif self.min_open_txn == LONG_MAX and self.open:
            object.__setattr__(self, "min_open_txn", self.open[0])

    def is_txn_valid(self, txn_id: int) -> bool:
        return self._is_valid(txn_id)

    def is_txn_aborted(self, txn_id: int) -> bool:
        return self._is_aborted(txn_id)

    def is_txn_open(self, txn_id: int) -> bool:
        """Open in this snapshot: listed as open, or above the high watermark (not yet visible)."""
        return txn_id > self.high_watermark or (txn_id in self.exceptions and not self._is_aborted(txn_id))

    def is_txn_range_valid(self, lo: int, hi: int) -> RangeResponse:
        return self._range_valid(lo, hi)

    def is_txn_range_aborted(self, lo: int, hi: int) -> RangeResponse:
        return self._range_aborted(lo, hi)

    def to_string(self) -> str:
        return f"{self.high_watermark}:{self.min_open_txn}:{self._tail()}"

    __str__ = to_string

    @classmethod
    def from_string(cls, value: str) -> ValidTxnList:
        if not value:
            return cls(high_watermark=LONG_MAX)
        parts = value.split(":")
        if len(parts) < 2 or len(parts) > 4:
            raise SnapshotFormatError(f"transaction snapshot {value!r} is not '<hwm>:<minOpenTxn>:<open>:<aborted>'")
        try:
            hwm, min_open = int(parts[0]), int(parts[1])
        except ValueError:
            raise SnapshotFormatError(f"transaction snapshot {value!r} has a non-numeric watermark") from None
        open_ids = _parse_ids(parts[2], "open", value) if len(parts) > 2 else []
        aborted = _parse_ids(parts[3], "aborted", value) if len(parts) > 3 else []
        try:
            return cls(high_watermark=hwm, open=tuple(open_ids), aborted=tuple(aborted), min_open_txn=min_open)
        except ValueError as exc:
            raise SnapshotFormatError(f"transaction snapshot {value!r} is inconsistent: {exc}") from None


@dataclass(frozen=True)
class ValidWriteIdList(_IdSnapshot):
    """Per-table write-id snapshot (base for the reader and compactor variants)."""

    table: str | None = None
    min_open_write_id: int = LONG_MAX

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.table is not None:
            object.__setattr__(self, "table", self.table.lower())
        if not self.exceptions:
            object.__setattr__(self, "min_open_write_id", LONG_MAX)
        elif self.min_open_write_id == LONG_MAX and self.open:
            object.__setattr__(self, "min_open_write_id", self.open[0])

    @property
    def min_open(self) -> int | None:
        """The smallest open write id, or None when nothing is open."""
        return None if self.min_open_write_id == LONG_MAX else self.min_open_write_id

    def is_write_id_valid(self, write_id: int) -> bool:
        return self._is_valid(write_id)

    def is_write_id_aborted(self, write_id: int) -> bool:
        return self._is_aborted(write_id)

    def is_write_id_range_valid(self, lo: int, hi: int) -> RangeResponse:
        return self._range_valid(lo, hi)

    def is_write_id_range_aborted(self, lo: int, hi: int) -> RangeResponse:
        return self._range_aborted(lo, hi)

    def is_valid_base(self, write_id: int) -> bool:
        """A base may be used only if no write id it covers is still open."""
        return write_id < self.min_open_write_id and write_id <= self.high_watermark

    def to_string(self) -> str:
        name = self.table if self.table is not None else "null"
        return f"{name}:{self.high_watermark}:{self.min_open_write_id}:{self._tail()}"

    __str__ = to_string

    @classmethod
    def from_string(cls, value: str) -> Self:
        if not value:
            return cls(high_watermark=LONG_MAX)
        parts = value.split(":")
        if len(parts) < 3 or len(parts) > 5:
            raise SnapshotFormatError(
                f"write-id snapshot {value!r} is not '<db.table>:<hwm>:<minOpenWriteId>:<open>:<aborted>'"
            )
        table = None if parts[0].lower() == "null" else parts[0]
        try:
            hwm, min_open = int(parts[1]), int(parts[2])
        except ValueError:
            raise SnapshotFormatError(f"write-id snapshot {value!r} has a non-numeric watermark") from None
        open_ids = _parse_ids(parts[3], "open", value) if len(parts) > 3 else []
        aborted = _parse_ids(parts[4], "aborted", value) if len(parts) > 4 else []
        try:
            obj = cls(table=table, high_watermark=hwm, open=tuple(open_ids), aborted=tuple(aborted),
                      min_open_write_id=min_open)
        except ValueError as exc:
            raise SnapshotFormatError(f"write-id snapshot {value!r} is inconsistent: {exc}") from None
        # Like Hive's readFromString, the string's min open write id is kept as written.
        object.__setattr__(obj, "min_open_write_id", min_open)
        return obj


@dataclass(frozen=True)
class ValidReaderWriteIdList(ValidWriteIdList):
    """A reader's view: a write id is valid only if its transaction committed before the snapshot."""


@dataclass(frozen=True)
class ValidCleanerWriteIdList(ValidReaderWriteIdList):
    """The Cleaner's view (Hive's ValidCleanerWriteIdList, HIVE-27526): a reader list in which a range reaching
    above the high watermark is not valid at all, so with the HWM capped at a compaction's CQ_HIGHEST_WRITE_ID a
    directory of a later compaction (``delta_1_8_vC`` for a row that compacted up to 5) is never selected and
    never makes this row's own output look obsolete."""

    def _range_valid(self, lo: int, hi: int) -> RangeResponse:
        if hi > self.high_watermark:
            return RangeResponse.NONE
        return super()._range_valid(lo, hi)


@dataclass(frozen=True)
class ValidCompactorWriteIdList(ValidWriteIdList):
    """The compactor's view: HWM stops below the lowest open write id; exceptions are aborted ids only.

    Build it from a reader list with :meth:`from_reader` (Hive's TxnUtils.createValidCompactWriteIdList).
    """

    def __post_init__(self) -> None:
        if self.open:
            raise ValueError("a compactor write-id list holds aborted ids only; open ids lower its high watermark")
        aborted = tuple(i for i in self.aborted if i <= self.high_watermark)
        object.__setattr__(self, "aborted", aborted)
        super().__post_init__()

    def _range_valid(self, lo: int, hi: int) -> RangeResponse:
        # A range is compactable only when all of it lies at or below the HWM (aborted ids are filtered
        # per event, so they do not make a range partially valid here).
        return RangeResponse.ALL if hi <= self.high_watermark else RangeResponse.NONE

    @classmethod
    def from_reader(cls, reader: ValidWriteIdList) -> ValidCompactorWriteIdList:
        min_open = reader.open[0] if reader.open else None
        hwm = reader.high_watermark if min_open is None else min_open - 1
        return cls._build(reader.table, hwm, tuple(i for i in reader.aborted if i <= hwm),
                          LONG_MAX if min_open is None else min_open)

    @classmethod
    def _build(cls, table: str | None, hwm: int, aborted: tuple[int, ...], min_open_write_id: int) -> Self:
        obj = cls(table=table, high_watermark=hwm, aborted=aborted)
        # Hive keeps the min open write id (it is what made the HWM drop) even though no open id is listed.
        object.__setattr__(obj, "min_open_write_id", min_open_write_id)
        return obj

    @classmethod
    def from_string(cls, value: str) -> ValidCompactorWriteIdList:
        base = ValidReaderWriteIdList.from_string(value)
        if base.open:
            raise SnapshotFormatError(f"compactor write-id snapshot {value!r} lists open ids")
        return cls._build(base.table, base.high_watermark, base.aborted, base.min_open_write_id)


def txn_list(high_watermark: int, *, open: Iterable[int] = (), aborted: Iterable[int] = (),
             min_open_txn: int | None = None) -> ValidTxnList:
    """Keyword-friendly constructor for tests and callers."""
    return ValidTxnList(high_watermark=high_watermark, open=tuple(open), aborted=tuple(aborted),
                        min_open_txn=LONG_MAX if min_open_txn is None else min_open_txn)
