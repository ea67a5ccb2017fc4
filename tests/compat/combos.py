"""The combinations the matrix runs (README "Supported versions"): the oldest and the newest declared Airflow, and
the Spark releases of the compaction job's executors."""

from __future__ import annotations

import os

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


CI_SPARK_VERSIONS = ("3.5", "4.0")
"""The Spark releases tests/compat/test_spark_versions.py submits the job to by default (CI); the suite's own Spark
(4.2) runs it everywhere else."""

EXECUTOR_PYTHONS = {"3.5": "3.10", "4.0": "3.12"}
"""The executors' Python per Spark release: 3.12 on Spark 4.0 runs the job on the one declared Python that neither
the suite (3.11) nor the Airflow combinations (3.10, 3.13) run."""


def spark_executors(version: str) -> Combo:
    """A Spark ``version`` (``3.5``, ``4.0`` …) with only the executors' packages: the job's code travels with
    ``--py-files``, as on a real cluster."""
    python = EXECUTOR_PYTHONS.get(version, "3.11")
    return Combo(f"spark-{version}", python, (f"pyspark=={version}.*", *EXECUTOR_PACKAGES), install_project=False)


def spark_versions() -> list[str]:
    """The Spark releases the job is submitted to: ``$AIRFLOW_ACID_COMPAT_SPARK`` (comma-separated), else
    :data:`CI_SPARK_VERSIONS`."""
    text = os.environ.get("AIRFLOW_ACID_COMPAT_SPARK", ",".join(CI_SPARK_VERSIONS))
    return [v.strip() for v in text.split(",") if v.strip()]


def matrix_combos(modules: set[str]) -> list[Combo]:
    """The environments the matrix's test modules among ``modules`` (paths) build: tests/conftest.py starts building
    them when the run collects those modules, so they are ready when the tests start."""
    combos = []
    if "tests/compat/test_airflow_versions.py" in modules:
        combos += [OLDEST_AIRFLOW, NEWEST_AIRFLOW]
    if "tests/compat/test_spark_versions.py" in modules:
        combos += [spark_executors(v) for v in spark_versions()]
    return combos
