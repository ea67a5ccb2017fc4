"""Prints the Hive query-test figure at the end of a pytest run that computed it (docs/testing.md#hives-query-tests)."""

from __future__ import annotations

from typing import Any

REPORTS: list[str] = []
"""Reports the conformance test produced in this run."""


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for text in REPORTS:
        terminalreporter.write_sep("=", "Hive query tests (tests/hive_qtests)")
        terminalreporter.write_line(text)
