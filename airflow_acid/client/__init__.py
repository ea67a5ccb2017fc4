"""The client API: warehouses and tables, transactional insert/update/delete/merge, streaming ingest and snapshot
reads (Python and PySpark) over the metastore and the table format. No Airflow imports.

``from airflow_acid import AcidWarehouse`` stays the front door; import the rest from here.
"""

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

__all__ = ["AcidClientError", "AcidWarehouse", "NotTransactionalError", "ReadLockError", "SchemaMismatchError",
           "ReadSnapshot", "Sql", "StreamingConnection", "Transaction", "TransactionClosedError",
           "UnsupportedOperationError", "WhenMatched", "WhenNotMatched"]
