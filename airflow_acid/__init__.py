"""airflow-acid: Hive-style ACID tables on plain files, compacted by Spark and orchestrated by Airflow."""

__version__ = "0.1.0"
