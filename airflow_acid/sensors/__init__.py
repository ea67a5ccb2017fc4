"""Airflow sensors of airflow-acid: the Initiator cycle and per-table compaction thresholds."""
