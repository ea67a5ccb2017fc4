"""Airflow triggers of airflow-acid (deferrable sensors)."""
