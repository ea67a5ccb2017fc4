"""Errors the metastore raises; each message names the object and says what to do. Every error class of the
metastore layer is here, under :class:`airflow_acid.errors.AcidError`; database errors that a user or operator can
act on (unreachable server, missing schema, a refused constraint) are raised as these too
(:mod:`airflow_acid.metastore.db_errors`), so no caller reads a driver's error."""

from __future__ import annotations

from airflow_acid.errors import AcidInputError, AcidNotFoundError, AcidUnavailableError, AcidUserError


class MetastoreError(AcidUserError):
    """Base class of every metastore error."""


class MetastoreUnavailableError(MetastoreError, AcidUnavailableError):
    """The database cannot be reached, or the connection to it was lost (after the bounded retries)."""

    retryable = True


class MetastoreSchemaError(MetastoreUnavailableError):
    """The database lacks airflow-acid's schema, or has an older one than this version needs: ``airflow-acid init``
    creates or upgrades it."""

    retryable = False


class MetastoreConstraintError(MetastoreError):
    """The database refused a write that breaks one of its constraints (a row changed at the same time by another
    process, or edited by hand)."""


class HiveMetastoreError(MetastoreError):
    """An operation airflow-acid does not do on a Hive metastore (schema changes, DDL); the message says where to
    do it instead."""


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


class UndoRefusedError(MetastoreError):
    """A compaction cannot be undone (too late, built upon, or its undo would lose data); the message says why."""


class ActionRefusedError(MetastoreError):
    """An operator action on a compaction (abort, requeue) does not apply to it in its current state; the message
    says why and what to do instead."""
