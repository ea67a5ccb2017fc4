"""Errors of the statement layer: text that is not a statement, or a statement airflow-acid does not run."""

from __future__ import annotations

from airflow_acid.errors import AcidInputError


class StatementError(AcidInputError):
    """A statement cannot be run as written (the CLI exits with code 2)."""

    exit_code = 2


class StatementSyntaxError(StatementError):
    """The text is not a well-formed statement."""


class UnsupportedStatementError(StatementError):
    """A well-formed statement (or clause) that airflow-acid does not run."""


__all__ = ["StatementError", "StatementSyntaxError", "UnsupportedStatementError"]
