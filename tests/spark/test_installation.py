"""The pyspark installation check: Python files and jars of one release, or a clear message naming both."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_acid.operators import spark as spark_runner
from airflow_acid.spark.errors import SparkSubmitError
from airflow_acid.spark.installation import PysparkInstallation, pyspark_installation


def _pyspark(root: Path, python: str, jars: str | None) -> Path:
    (root / "jars").mkdir(parents=True)
    (root / "version.py").write_text(f'__version__: str = "{python}"\n')
    if jars:
        (root / "jars" / f"spark-core_2.13-{jars}.jar").write_bytes(b"")
        (root / "jars" / "spark-sql_2.13-9.9.9.jar").write_bytes(b"")
    return root


def test_the_suites_own_pyspark_is_one_release():
    installation = pyspark_installation()
    assert installation is not None and installation.consistent and installation.jars_release, installation


def test_overwritten_python_files_are_named_with_the_fix(tmp_path):
    installation = pyspark_installation(_pyspark(tmp_path / "pyspark", "4.2.0", "4.3.0"))
    assert installation == PysparkInstallation("4.2.0", "4.3.0")
    assert not installation.consistent and not installation.same_minor
    assert "release 4.2.0 but its jars" in installation.problem()
    assert "pip install 'pyspark==4.3.0' 'pyspark-client==4.3.0'" in installation.problem()


def test_patch_difference_and_client_only_installs(tmp_path):
    patch = pyspark_installation(_pyspark(tmp_path / "a", "4.2.0", "4.2.1"))
    assert patch is not None and not patch.consistent and patch.same_minor
    client_only = pyspark_installation(_pyspark(tmp_path / "b", "4.2.0", None))
    assert client_only == PysparkInstallation("4.2.0", None) and client_only.consistent and not client_only.problem()
    assert pyspark_installation(tmp_path / "missing") is None


def test_the_operator_refuses_to_submit_across_feature_releases(monkeypatch, caplog):
    monkeypatch.setattr(spark_runner, "pyspark_installation", lambda: PysparkInstallation("4.2.0", "3.5.9"))
    with pytest.raises(SparkSubmitError, match="pyspark-client 4.2.0"):
        spark_runner.check_pyspark_installation()
    monkeypatch.setattr(spark_runner, "pyspark_installation", lambda: PysparkInstallation("4.2.0", "4.2.1"))
    spark_runner.check_pyspark_installation()  # same feature release: a warning only
    assert "its jars (spark-submit's Spark) are 4.2.1" in caplog.text
