"""Airflow operators of airflow-acid: compaction (Worker), compaction requests, Cleaner and HouseKeeper."""
