"""Hive's statements for ``airflow-acid sql``: parsed with sqlglot's Hive dialect extended with the ACID statements
(``dialect``), turned into typed statements (``model``, ``parse``) and run against a warehouse (``execute``)."""

from airflow_acid.statements.errors import StatementError, StatementSyntaxError, UnsupportedStatementError
from airflow_acid.statements.execute import USER_ERRORS, StatementExecutor
from airflow_acid.statements.model import SUPPORTED, Statement
from airflow_acid.statements.parse import parse_statement, parse_statements
from airflow_acid.statements.result import Result

__all__ = ["SUPPORTED", "USER_ERRORS", "Result", "Statement", "StatementError", "StatementExecutor",
           "StatementSyntaxError", "UnsupportedStatementError", "parse_statement", "parse_statements"]
