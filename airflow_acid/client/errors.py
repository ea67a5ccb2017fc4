"""Errors the client API (warehouse, transactions, streaming, reads) raises; each names the object and what to do."""

from __future__ import annotations

from airflow_acid.errors import AcidInputError, AcidUserError


class AcidClientError(AcidUserError):
    """Base class of client API errors."""


class SchemaMismatchError(AcidClientError, AcidInputError):
    """Data does not fit the table schema (unknown or missing column, value of the wrong type)."""


class NotTransactionalError(AcidClientError, AcidInputError):
    """The table is not a transactional table, so airflow-acid cannot write or read it transactionally."""


class UnsupportedOperationError(AcidClientError, AcidInputError):
    """The operation is not allowed on this table (e.g. UPDATE on an insert-only table)."""


class TransactionClosedError(AcidClientError):
    """The transaction (or streaming connection) has already been committed, aborted or closed."""


class ReadLockError(AcidClientError):
    """A read could not take its shared-read lock (an exclusive lock, e.g. a DROP, holds the table)."""


class BucketingError(AcidInputError):
    """A bucket column whose type Hive bucketing version 2 cannot be reproduced for."""
