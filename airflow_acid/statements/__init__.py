"""Hive's statements for ``airflow-acid sql``: parsed with sqlglot's Hive dialect extended with the ACID statements
(``dialect``), turned into typed statements (``model``, ``parse``) and run against a warehouse (``execute``) within a
session (``session``: SET, help).

Nothing heavy is imported here: sqlglot loads with the parser, pyarrow and DuckDB with the first DML statement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_acid.statements.errors import (
    StatementError,
    StatementSyntaxError,
    UnsupportedStatementError,
    hive_error_line,
)
from airflow_acid.statements.result import Result

if TYPE_CHECKING:
    from airflow_acid.statements.execute import USER_ERRORS, StatementExecutor
    from airflow_acid.statements.model import SUPPORTED, Statement
    from airflow_acid.statements.parse import parse_script, parse_statement, parse_statements
    from airflow_acid.statements.session import ScriptRunner, Session

_LAZY = {
    "USER_ERRORS": "execute", "StatementExecutor": "execute", "SUPPORTED": "model", "Statement": "model",
    "parse_script": "parse", "parse_statement": "parse", "parse_statements": "parse", "ScriptRunner": "session",
    "Session": "session",
}


def __getattr__(name: str) -> Any:
    """The parser, model, executor and session load on first use (``airflow-acid --version`` needs none)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = ["SUPPORTED", "USER_ERRORS", "Result", "ScriptRunner", "Session", "Statement", "StatementError",
           "StatementExecutor", "StatementSyntaxError", "UnsupportedStatementError", "hive_error_line",
           "parse_script", "parse_statement", "parse_statements"]
