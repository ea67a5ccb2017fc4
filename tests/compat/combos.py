"""The combinations the matrix runs (README "Supported versions"): the oldest and the newest declared Airflow, and
the Spark releases of the compaction job's executors."""

from __future__ import annotations

from tests.compat.venvs import Combo

OLDEST_AIRFLOW = Combo("airflow-oldest", "3.10", (
    "apache-airflow==3.1.*",
    # the oldest Spark provider setup.cfg allows: pyspark (3.5) itself, no pyspark-client
    "apache-airflow-providers-apache-spark==5.3.*",
    "pyspark==3.5.*",
    # Spark 3.5's mapInArrow (the plain read helper) refuses to run without pandas; Spark 4 does not need it
    "pandas>=1.5",
))
NEWEST_AIRFLOW = Combo("airflow-newest", "3.13", (
    "apache-airflow>=3.1,<4",
    "apache-airflow-providers-apache-spark",
    # the Spark provider's pyspark-client and pyspark on one release (docs/airflow.md#spark-connection)
    "pyspark==4.2.0",
    "pyspark-client==4.2.0",
))

EXECUTOR_PACKAGES = ("pyarrow>=15", "pyorc>=0.10", "numpy>=1.23", "fsspec>=2024.2")
"""What a Spark cluster's Python needs to run the compaction job (README "Spark clusters"), besides the package."""


def spark_executors(version: str) -> Combo:
    """A Spark ``version`` (``3.5``, ``4.0`` …) with only the executors' packages: the job's code travels with
    ``--py-files``, as on a real cluster."""
    python = "3.10" if version.startswith("3.") else "3.11"
    return Combo(f"spark-{version}", python, (f"pyspark=={version}.*", *EXECUTOR_PACKAGES), install_project=False)
