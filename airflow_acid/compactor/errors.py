"""Errors of the compactor layer, all under the project's :class:`~airflow_acid.errors.AcidError` root."""

from __future__ import annotations

from airflow_acid.errors import AcidError
from airflow_acid.metastore.errors import InvalidInputError, MetastoreError


class CompactionAttemptError(AcidError):
    """One compaction attempt failed; the message is what goes into CQ_ERROR_MESSAGE."""


class OutputVerificationError(CompactionAttemptError):
    """The job reported success but its output does not hold up (missing dirs, bad files, row counts)."""


class CompactorSettingsError(InvalidInputError):
    """A setting, table property or request property has a value the compactor cannot use."""


class CleanerError(AcidError):
    """A cleaning attempt cannot proceed safely (e.g. a path outside the table location)."""


def describe_error(exc: BaseException) -> str:
    """An attempt's error as recorded on its queue row: the compactor's and the metastore's errors by their message,
    any other with its type."""
    if isinstance(exc, (CompactionAttemptError, CleanerError, MetastoreError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


__all__ = ["CleanerError", "CompactionAttemptError", "CompactorSettingsError", "OutputVerificationError", "describe_error"]
