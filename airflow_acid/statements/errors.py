"""Errors of the statement layer: text that is not a statement, or a statement airflow-acid does not run."""

from __future__ import annotations

from airflow_acid.errors import AcidInputError, AcidNotFoundError, AcidUserError


class StatementError(AcidInputError):
    """A statement cannot be run as written (the CLI exits with code 2)."""

    exit_code = 2


class StatementSyntaxError(StatementError):
    """The text is not a well-formed statement."""


class UnsupportedStatementError(StatementError):
    """A well-formed statement (or clause) that airflow-acid does not run."""


def hive_error_line(error: AcidUserError) -> str:
    """The one line Hive's CLI prints for a statement that failed: ``FAILED: ParseException line 1:7 …`` for text
    that is not a statement, ``FAILED: SemanticException …`` for one that cannot run as written (unknown table or
    column, a statement or value airflow-acid refuses), ``FAILED: Execution Error: …`` for one that failed while
    running (a lock not granted, a write conflict, an unreachable database)."""
    one_line = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    if isinstance(error, StatementSyntaxError):
        return f"FAILED: ParseException {one_line}"
    if isinstance(error, (AcidInputError, AcidNotFoundError)):
        return f"FAILED: SemanticException {one_line}"
    return f"FAILED: Execution Error: {one_line}"


__all__ = ["StatementError", "StatementSyntaxError", "UnsupportedStatementError", "hive_error_line"]
