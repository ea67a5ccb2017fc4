"""Operator-facing services over a warehouse, shared by the CLI and the Airflow UI plugin: table/partition health,
"why (not) compacted / what blocks cleanup", manual compaction requests and their undo, operator actions (abort or
requeue a compaction, abort a transaction) and the threshold checks the Airflow sensors and triggers run.
Client-API level: no Airflow imports.

The names below are imported on first use: importing one submodule (as the DAG files' operators do, e.g.
``services.metrics``) must not load the client API and its query engine, so DAG files stay cheap to parse.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from airflow_acid.services.actions import (
        CompactionAbortResult,
        RequeueResult,
        TxnAbortResult,
        TxnImpact,
        abort_compaction,
        abort_transaction,
        requeue_compaction,
        transaction_blocking,
    )
    from airflow_acid.services.compact import (
        RequestedCompaction,
        parse_compaction_type,
        request_compaction,
        requester_id,
        wait_for_compactions,
    )
    from airflow_acid.services.errors import CompactionWaitTimeout, TableNotFoundError
    from airflow_acid.services.explain import Explanation, explain
    from airflow_acid.services.health import LastCompaction, PartitionHealth, table_health, warehouse_health
    from airflow_acid.services.thresholds import CheckResult, ThresholdCheck, ThresholdKind
    from airflow_acid.services.undo import UndoResult, undo_compaction

_SOURCES = {
    "actions": ["CompactionAbortResult", "RequeueResult", "TxnAbortResult", "TxnImpact", "abort_compaction",
                "abort_transaction", "requeue_compaction", "transaction_blocking"],
    "compact": ["RequestedCompaction", "parse_compaction_type", "request_compaction", "requester_id",
                "wait_for_compactions"],
    "errors": ["CompactionWaitTimeout", "TableNotFoundError"],
    "explain": ["Explanation", "explain"],
    "health": ["LastCompaction", "PartitionHealth", "table_health", "warehouse_health"],
    "thresholds": ["CheckResult", "ThresholdCheck", "ThresholdKind"],
    "undo": ["UndoResult", "undo_compaction"],
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = ["CheckResult", "CompactionAbortResult", "CompactionWaitTimeout", "Explanation", "LastCompaction",
           "PartitionHealth", "RequestedCompaction", "RequeueResult", "TableNotFoundError", "ThresholdCheck",
           "ThresholdKind", "TxnAbortResult", "TxnImpact", "UndoResult", "abort_compaction", "abort_transaction",
           "explain", "parse_compaction_type", "request_compaction", "requester_id", "requeue_compaction",
           "table_health", "transaction_blocking", "undo_compaction", "wait_for_compactions", "warehouse_health"]


def __getattr__(name: str) -> Any:
    """Import the submodule that defines ``name`` on first use (then the name is an ordinary attribute)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'airflow_acid.services' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"airflow_acid.services.{module}"), name)
    globals()[name] = value
    return value


class _Services(types.ModuleType):
    """The package keeps its names when a submodule of the same name is imported: ``services.explain`` is the
    function, as it was before the names became lazy, not the ``services/explain.py`` module the import system would
    bind there (that module stays in ``sys.modules``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _MODULE_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Services
