"""Errors raised while reading or writing ACID data files: always name the file and what is wrong."""

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
