"""The ``airflow-acid`` command line (click + rich): Hive's statements, health, why, cleaner, status, init and the
demo. A thin layer over ``statements`` and ``services``."""

from airflow_acid.cli.commands import main

__all__ = ["main"]
