"""Errors the services (compaction requests, threshold checks) raise."""

from __future__ import annotations

from airflow_acid.errors import AcidNotFoundError, AcidTimeoutError


class CompactionWaitTimeout(AcidTimeoutError):
    """Compactions were still 'initiated'/'working' when the wait ended (they stay queued)."""

    def __init__(self, pending: list[int], waited_s: float) -> None:
        super().__init__(f"compaction(s) {', '.join(map(str, pending))} still waiting for a worker after "
                         f"{waited_s:g} s; they stay queued — is the acid_compaction DAG (or another worker) running?")
        self.pending = pending


class TableNotFoundError(AcidNotFoundError):
    """The watched table or partition does not exist."""


__all__ = ["CompactionWaitTimeout", "TableNotFoundError"]
