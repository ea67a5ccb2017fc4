"""Operator-facing services over a warehouse, shared by the CLI and the Airflow UI plugin: table/partition health,
"why (not) compacted / what blocks cleanup", manual compaction requests and their undo, operator actions (abort or
requeue a compaction, abort a transaction) and the threshold checks the Airflow sensors and triggers run.
Client-API level: no Airflow imports."""

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
    wait_for_compactions,
)
from airflow_acid.services.errors import CompactionWaitTimeout, TableNotFoundError
from airflow_acid.services.explain import Explanation, explain
from airflow_acid.services.health import LastCompaction, PartitionHealth, table_health, warehouse_health
from airflow_acid.services.thresholds import CheckResult, ThresholdCheck, ThresholdKind
from airflow_acid.services.undo import UndoResult, undo_compaction

__all__ = ["CheckResult", "CompactionAbortResult", "CompactionWaitTimeout", "Explanation", "LastCompaction",
           "PartitionHealth", "RequestedCompaction", "RequeueResult", "TableNotFoundError", "ThresholdCheck",
           "ThresholdKind", "TxnAbortResult", "TxnImpact", "UndoResult", "abort_compaction", "abort_transaction",
           "explain", "parse_compaction_type", "request_compaction", "requeue_compaction", "table_health",
           "transaction_blocking", "undo_compaction", "wait_for_compactions", "warehouse_health"]
