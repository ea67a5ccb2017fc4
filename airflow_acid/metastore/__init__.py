"""The SQLAlchemy metastore: Hive's transactional tables, ids, snapshots, locks, compaction queue, catalog.

No Airflow imports here (docs/architecture.md#layers).
"""

from airflow_acid.metastore.store import Metastore

__all__ = ["Metastore"]
