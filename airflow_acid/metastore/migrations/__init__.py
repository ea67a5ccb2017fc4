"""Alembic migrations of the metastore schema; run them with ``airflow_acid.metastore.init.upgrade``."""
