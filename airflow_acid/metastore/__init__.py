"""The SQLAlchemy metastore: Hive's transactional tables, ids, snapshots, locks, compaction queue, catalog.

No Airflow imports here (DESIGN.md).
"""
