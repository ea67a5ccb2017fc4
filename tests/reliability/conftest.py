"""Reliability suite plumbing: one run-wide summary that every test adds its figures to.

At the end of the session the summary is printed as one JSON line (``ACID_RELIABILITY_SUMMARY {...}``) and
written to ``<artifacts>/reliability-summary.json`` so the figures can be quoted. A test that finds a mismatch
records it here *and* fails.

Size: ``AIRFLOW_ACID_RELIABILITY_SECONDS`` (default 20, CI's size) is how long each concurrent-load run lasts;
``./dev test tests/reliability`` runs the suite on its own.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import ARTIFACTS

RUN_SECONDS = float(os.environ.get("AIRFLOW_ACID_RELIABILITY_SECONDS", "20"))


@dataclass
class ReliabilitySummary:
    """Counters of one reliability run; thread-safe so background actors can report into it."""

    counts: Counter = field(default_factory=Counter)
    errors_by_kind: Counter = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, key: str, n: int = 1) -> None:
        """Count ``n`` more of ``key``: transactions_committed, reads_checked, compactions, cleanings, faults_injected…"""
        with self._lock:
            self.counts[key] += n

    def error(self, kind: str, n: int = 1) -> None:
        """Count an expected, handled error by kind (e.g. ``write_conflict``, ``AcidFileError``)."""
        with self._lock:
            self.errors_by_kind[kind] += n

    def mismatch(self, detail: str) -> None:
        """Record a broken invariant (the test must also fail)."""
        with self._lock:
            self.mismatches.append(detail)

    def run(self, **figures: Any) -> None:
        """Keep the figures of one named run (backend, duration, …) for the report."""
        with self._lock:
            self.runs.append(figures)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "transactions_committed": self.counts.get("transactions_committed", 0),
                "reads_checked": self.counts.get("reads_checked", 0),
                "compactions": self.counts.get("compactions", 0),
                "cleanings": self.counts.get("cleanings", 0),
                "faults_injected": self.counts.get("faults_injected", 0),
                "mismatches": len(self.mismatches),
                "mismatch_details": self.mismatches[:50],
                "errors_by_kind": dict(sorted(self.errors_by_kind.items())),
                "counts": dict(sorted(self.counts.items())),
                "runs": self.runs,
            }


_SUMMARY = ReliabilitySummary()


@pytest.fixture(scope="session")
def reliability_summary() -> ReliabilitySummary:
    return _SUMMARY


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not (_SUMMARY.counts or _SUMMARY.errors_by_kind or _SUMMARY.mismatches):
        return
    data = _SUMMARY.as_dict()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "reliability-summary.json").write_text(json.dumps(data, indent=2) + "\n")
    terminalreporter.write_sep("=", "reliability summary")
    terminalreporter.write_line("ACID_RELIABILITY_SUMMARY " + json.dumps(data, sort_keys=True))
