"""What one statement returns: Hive's output columns and rows (typed values; how Hive prints a missing one), and
the messages Hive prints for statements without rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airflow_acid.statements.hive_text import hive_text


@dataclass
class Result:
    """The outcome of one statement. ``failed`` marks a statement that ran but did not do what was asked (an AND
    WAIT ending in 'failed', an id that could not be aborted); the CLI exits with 1 after printing it."""

    statement: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    null: str = "NULL"
    """How a missing value prints ('---' in SHOW COMPACTIONS, 'NULL' elsewhere)."""
    failed: bool = False
    warnings: list[str] = field(default_factory=list)
    """Things the user should know that did not stop the statement (an unknown SET key, the first time)."""

    def text_rows(self) -> list[list[str]]:
        """The rows as Hive's CLI prints them: every value a string (:func:`hive_text`)."""
        return [[hive_text(value, self.null) for value in row] for row in self.rows]

    def records(self) -> list[dict[str, Any]]:
        """The rows as {column: value} dicts (missing values None)."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: statement, columns, rows (as records), messages, failed (and warnings, when any)."""
        out = {"statement": self.statement, "columns": list(self.columns), "rows": self.records(),
               "messages": list(self.messages), "failed": self.failed}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out
