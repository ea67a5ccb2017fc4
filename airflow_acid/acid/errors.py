"""Errors of the table format layer: names, snapshots, directory states, bucket properties, settings and data files.

A file error always names the file and what is wrong. Classes that also subclass ``ValueError`` keep doing so for
callers that catch ``ValueError``."""

from __future__ import annotations

from airflow_acid.errors import AcidInputError, AcidUserError


class AcidFileError(AcidUserError):
    """A data file of an ACID table cannot be read or written as required (corrupt, wrong kind, wrong schema)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class AcidSchemaError(AcidInputError):
    """A table schema (Arrow) that cannot be stored in an ACID ORC file, or rows that do not fit it."""


class AcidNameError(AcidInputError):
    """A name looks like an ACID directory or file but does not follow Hive's rules."""


class OrcSettingsError(AcidInputError):
    """An ORC setting (or the table property it comes from) is invalid."""


class AcidStateError(AcidUserError, ValueError):
    """A listing cannot be turned into an ACID state (bad marker file, bad path)."""


class NotEnoughHistoryError(AcidStateError):
    """Rule 12: a compacted base erased history that this snapshot still needs (Hive's ACID_NOT_ENOUGH_HISTORY)."""


class BucketCodecError(AcidInputError):
    """A bucket property or bucket/statement id that BucketCodec cannot represent."""


class TimestampRangeError(AcidFileError):
    """A timestamp outside the nanosecond range met a ``timestamp[ns]`` schema; redo with
    :func:`~airflow_acid.acid.timestamps.wide_schema`."""


class TimestampFormError(AcidUserError, ValueError):
    """A timestamp value does not fit the requested Arrow form (out of range, or digits it cannot hold)."""


class UnstorableTimestampError(AcidSchemaError):
    """A timestamp ORC's encoding cannot store exactly (docs/hive-acid.md#timestamps): refused, never changed."""


class UnsortedEventsError(AcidFileError):
    """Events handed to :class:`~airflow_acid.acid.fast_event_writer.AcidOrcFileWriter` are not in
    (originalTransaction, bucket, rowId) order."""


class OrcTailError(AcidUserError, ValueError):
    """An ORC file's tail cannot be parsed or rewritten."""


class SnapshotFormatError(AcidInputError):
    """A snapshot string is not in Hive's format."""


class StorageOptionsError(AcidInputError):
    """Storage options that cannot be used (a secret among them, an unknown key, a bad value)."""
