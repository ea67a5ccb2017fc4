"""Errors the metastore raises; each message names the object and says what to do."""

from __future__ import annotations

from airflow_acid.errors import AcidInputError, AcidNotFoundError, AcidUnavailableError, AcidUserError


class MetastoreError(AcidUserError):
    """Base class of every metastore error."""


class MetastoreUnavailableError(MetastoreError, AcidUnavailableError):
    """The database cannot be reached (after the bounded retries)."""


class InvalidInputError(MetastoreError, AcidInputError):
    """A name, partition spec, property or argument is not acceptable."""


class NoSuchObjectError(MetastoreError, AcidNotFoundError):
    """A database, table, partition, transaction, lock or compaction does not exist."""


class AlreadyExistsError(MetastoreError):
    """A database, table or partition already exists."""


class TxnStateError(MetastoreError):
    """The transaction is not open (already committed, aborted or timed out)."""


class TxnAbortedError(TxnStateError):
    """The transaction was aborted (by a user, a timeout or a write conflict)."""


class WriteConflictError(TxnAbortedError):
    """First committer wins: a concurrent transaction updated/deleted the same partition first."""


class TooManyOpenTxnsError(MetastoreError):
    """Opening would exceed hive.max.open.txns."""


class LockNotAcquiredError(MetastoreError):
    """A lock request could not be granted within hive.lock.numretries tries."""


class TxnOpenError(MetastoreError):
    """The lock belongs to a transaction: it is released by committing or aborting that transaction."""


class NoSuchTxnError(NoSuchObjectError, TxnStateError):
    """The transaction id is not in TXNS (never opened, or ended and cleaned up)."""


class NoSuchLockError(NoSuchObjectError):
    """The lock id is not in HIVE_LOCKS (released, or timed out without heartbeats)."""


class InvalidSettingError(InvalidInputError):
    """A setting (an ``[acid]`` option, an environment variable) has a value airflow-acid cannot use; the message
    names the key and the value."""
