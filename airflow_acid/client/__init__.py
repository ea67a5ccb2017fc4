"""The client API: warehouses and tables, transactional insert/update/delete/merge, streaming ingest and snapshot
reads (Python and PySpark) over the metastore and the table format. No Airflow imports.

``from airflow_acid import AcidWarehouse`` stays the front door; import the rest from here. The names are imported
on first use, so importing one client module (e.g. ``client.warehouse``) does not load the query engine
(``client.sql_eval``: DuckDB, sqlglot, pyarrow.dataset).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from airflow_acid.client.errors import (
        AcidClientError,
        NotTransactionalError,
        ReadLockError,
        SchemaMismatchError,
        TransactionClosedError,
        UnsupportedOperationError,
    )
    from airflow_acid.client.merge_clauses import WhenMatched, WhenNotMatched
    from airflow_acid.client.sql_eval import Sql
    from airflow_acid.client.streaming import StreamingConnection
    from airflow_acid.client.table_io import ReadSnapshot
    from airflow_acid.client.transaction import Transaction
    from airflow_acid.client.warehouse import AcidWarehouse

_SOURCES = {
    "errors": ["AcidClientError", "NotTransactionalError", "ReadLockError", "SchemaMismatchError",
               "TransactionClosedError", "UnsupportedOperationError"],
    "merge_clauses": ["WhenMatched", "WhenNotMatched"],
    "sql_eval": ["Sql"],
    "streaming": ["StreamingConnection"],
    "table_io": ["ReadSnapshot"],
    "transaction": ["Transaction"],
    "warehouse": ["AcidWarehouse"],
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = ["AcidClientError", "AcidWarehouse", "NotTransactionalError", "ReadLockError", "ReadSnapshot",
           "SchemaMismatchError", "Sql", "StreamingConnection", "Transaction", "TransactionClosedError",
           "UnsupportedOperationError", "WhenMatched", "WhenNotMatched"]


def __getattr__(name: str) -> Any:
    """Import the client module that defines ``name`` on first use."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'airflow_acid.client' has no attribute {name!r}")
    return getattr(importlib.import_module(f"airflow_acid.client.{module}"), name)
