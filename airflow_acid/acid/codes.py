"""Hive's one-letter and numeric codes for transactions, locks and compactions (docs/hive-acid.md#metastore-tables).

This is the single place these codes live; everything else uses the enums. They sit in the table-format layer
because both the metastore (which stores them) and the compaction job contract (which executes a
:class:`CompactionType`) use them, and neither may import the other.
"""

from __future__ import annotations

import enum

from airflow_acid.errors import AcidInputError


class TxnState(str, enum.Enum):
    """TXNS.TXN_STATE."""

    OPEN = "o"
    ABORTED = "a"
    COMMITTED = "c"

    @property
    def display(self) -> str:
        return {"o": "OPEN", "a": "ABORTED", "c": "COMMITTED"}[self.value]


class TxnType(int, enum.Enum):
    """TXNS.TXN_TYPE."""

    DEFAULT = 0
    REPL_CREATED = 1
    READ_ONLY = 2
    COMPACTION = 3
    MATER_VIEW_REBUILD = 4
    SOFT_DELETE = 5
    REBALANCE_COMPACTION = 6


class OperationType(str, enum.Enum):
    """TXN_COMPONENTS.TC_OPERATION_TYPE / WRITE_SET.WS_OPERATION_TYPE."""

    SELECT = "s"
    INSERT = "i"
    UPDATE = "u"
    DELETE = "d"
    COMPACT = "c"

    @property
    def is_update_or_delete(self) -> bool:
        return self in (OperationType.UPDATE, OperationType.DELETE)


class LockState(str, enum.Enum):
    """HIVE_LOCKS.HL_LOCK_STATE (plus NOT_ACQUIRED, a response that is never stored)."""

    ACQUIRED = "a"
    WAITING = "w"
    NOT_ACQUIRED = "n"

    @property
    def display(self) -> str:
        return {"a": "ACQUIRED", "w": "WAITING", "n": "NOT_ACQUIRED"}[self.value]


class LockType(str, enum.Enum):
    """HIVE_LOCKS.HL_LOCK_TYPE."""

    SHARED_READ = "r"
    SHARED_WRITE = "w"
    EXCL_WRITE = "x"
    EXCLUSIVE = "e"

    @property
    def display(self) -> str:
        return self.name


class LockLevel(str, enum.Enum):
    """The resource a lock names (derived from which of HL_DB/HL_TABLE/HL_PARTITION are set)."""

    DB = "db"
    TABLE = "table"
    PARTITION = "partition"


class CompactionType(str, enum.Enum):
    """COMPACTION_QUEUE.CQ_TYPE."""

    MAJOR = "a"
    MINOR = "i"
    REBALANCE = "r"
    ABORT_TXN_CLEANUP = "c"

    @property
    def display(self) -> str:
        """The text SHOW COMPACTIONS prints (``MAJOR``)."""
        return self.name

    @property
    def keyword(self) -> str:
        """The word of ``ALTER TABLE … COMPACT 'major'`` and of compaction plan/result documents (``major``)."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str | CompactionType) -> CompactionType:
        """'major'/'minor'/'rebalance' (any case) or a one-letter code."""
        if isinstance(text, CompactionType):
            return text
        value = text.strip()
        for member in cls:
            if value.upper() == member.name or value == member.value:
                return member
        raise AcidInputError(f"unknown compaction type {text!r}; use 'major', 'minor' or 'rebalance'")


class CompactionState(str, enum.Enum):
    """COMPACTION_QUEUE.CQ_STATE / COMPLETED_COMPACTIONS.CC_STATE."""

    INITIATED = "i"
    WORKING = "w"
    READY_FOR_CLEANING = "r"
    FAILED = "f"
    SUCCEEDED = "s"
    DID_NOT_INITIATE = "a"
    REFUSED = "c"
    ABORTED = "x"

    @property
    def display(self) -> str:
        """The text SHOW COMPACTIONS prints."""
        return self.name.lower().replace("_", " ")

    @classmethod
    def parse(cls, text: str) -> CompactionState:
        value = text.strip()
        for member in cls:
            if value == member.value or value.lower() in (member.display, member.name.lower()):
                return member
        raise AcidInputError(f"unknown compaction state {text!r}")

    @property
    def is_queued(self) -> bool:
        """States kept in COMPACTION_QUEUE (the others live in COMPLETED_COMPACTIONS)."""
        return self in (CompactionState.INITIATED, CompactionState.WORKING, CompactionState.READY_FOR_CLEANING)


class UpdateDelete(str, enum.Enum):
    """COMPLETED_TXN_COMPONENTS.CTC_UPDATE_DELETE."""

    YES = "Y"
    NO = "N"


class DataOperation(enum.Enum):
    """What a writer does, for choosing lock types (AcidUtils.makeLockComponents, docs/hive-acid.md#locks)."""

    SELECT = "select"
    INSERT = "insert"
    INSERT_OVERWRITE = "insert_overwrite"
    UPDATE = "update"
    DELETE = "delete"
    COMPACT = "compact"
    REBALANCE = "rebalance"
    """A REBALANCE compaction: rewrites every row with new ROW__IDs, so it takes EXCL_WRITE
    (docs/hive-acid.md#compacting-one-row step 3)."""
