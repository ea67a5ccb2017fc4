"""The README's supported versions say what setup.cfg declares and what the matrix runs (no environment built: these
run in every suite)."""

from __future__ import annotations

import re

from tests.compat.combos import CI_SPARK_VERSIONS, EXECUTOR_PACKAGES, EXECUTOR_PYTHONS
from tests.compat.venvs import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
SETUP_CFG = (REPO / "setup.cfg").read_text(encoding="utf-8")


def _row(name: str) -> str:
    """The README's "Supported versions" table row of ``name``."""
    rows = [line for line in README.splitlines() if line.startswith(f"| {name} |")]
    assert len(rows) == 1, f"README has {len(rows)} '{name}' rows"
    return rows[0]


def _section(title: str) -> str:
    start = README.index(f"### {title}\n")
    return README[start:README.index("\n#", start + 1)]


def test_python_row_is_setup_cfg_classifiers():
    declared = re.findall(r"Programming Language :: Python :: (3\.\d+)$", SETUP_CFG, re.M)
    assert re.findall(r"3\.\d+", _row("Python")) == declared


def test_airflow_row_is_setup_cfg_range_with_its_reason():
    (spec,) = re.findall(r"^\s+apache-airflow(>=[^\s#]+)$", SETUP_CFG, re.M)
    row = _row("Airflow")
    assert f"`{spec}`" in row
    assert "SQLAlchemy" in row  # why the lower bound (tests/compat/test_resolution.py proves it)


def test_executor_packages_are_the_matrix_ones():
    """The Spark job's environments in the matrix hold exactly what the README tells a cluster to install."""
    section = _section("Spark clusters")
    for spec in EXECUTOR_PACKAGES:
        assert f"`{spec}`" in section, spec
    names = {re.split(r"[<>=]", spec)[0] for spec in EXECUTOR_PACKAGES}
    installs = re.findall(r"pip install (pyarrow[a-z0-9 -]+)", section)  # YARN's packed environment, the Kubernetes image
    assert len(installs) == 2 and all(names <= set(i.split()) for i in installs), installs


def test_ci_spark_releases_are_stated():
    for version in CI_SPARK_VERSIONS:
        assert f"Spark {version} (Python {EXECUTOR_PYTHONS[version]})" in README, version
