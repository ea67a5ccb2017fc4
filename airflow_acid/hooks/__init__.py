"""Airflow hooks of airflow-acid: the ``acid_metastore`` connection type."""
