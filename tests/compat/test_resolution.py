"""The declared ranges resolve together (uv's resolver against the package index): setup.cfg with the oldest and
the newest combination of the matrix, and setup.cfg alone on the oldest and newest Python; the oldest Airflow
resolved is the declared lower bound."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.compat.combos import NEWEST_AIRFLOW, OLDEST_AIRFLOW
from tests.compat.venvs import REPO, Combo, unavailable, uv

pytestmark = pytest.mark.slow


def _compile(python: str, requirements: tuple[str, ...]) -> dict[str, str]:
    """Resolve airflow-acid (this checkout) with ``requirements`` for Python ``python``: {name: version}."""
    lines = "\n".join([f"airflow-acid @ {REPO.as_uri()}", *requirements]) + "\n"
    done = subprocess.run([uv(), "pip", "compile", "-q", "--no-header", "--no-annotate", "--python-version", python,
                           "-"], input=lines, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and ("Failed to fetch" in done.stderr or "error sending request" in done.stderr):
        unavailable(f"the package index is unreachable: {done.stderr[-300:]}")
    assert done.returncode == 0, f"Python {python}: {' '.join(requirements)} do not resolve:\n{done.stderr[-4000:]}"
    return {m[1].lower(): m[2] for m in re.finditer(r"^([A-Za-z0-9_.\-\[\]]+?)(?:\[.*\])?==(\S+)", done.stdout, re.M)}


@pytest.mark.parametrize("combo", [OLDEST_AIRFLOW, NEWEST_AIRFLOW], ids=lambda c: c.name)
def test_matrix_combinations_resolve(combo: Combo):
    pins = _compile(combo.python, combo.requirements)
    assert pins["apache-airflow"].startswith("3.")
    if combo is OLDEST_AIRFLOW:
        assert pins["apache-airflow"].startswith("3.1.") and pins["pyspark"].startswith("3.5.")
        assert "pyspark-client" not in pins  # Spark provider 5.x: pyspark only, nothing overwrites it
    else:
        assert pins["pyspark"] == pins["pyspark-client"]


@pytest.mark.parametrize("python", ["3.10", "3.13"])
def test_setup_cfg_alone_resolves(python: str):
    pins = _compile(python, ())
    assert pins["apache-airflow"].startswith("3.") and "apache-airflow-providers-apache-spark" in pins


def test_airflow_3_0_cannot_have_sqlalchemy_2():
    """Why the lower bound is Airflow 3.1: every 3.0 release pins SQLAlchemy < 2, and the metastore layer needs
    SQLAlchemy 2 (setup.cfg). Fails — time to lower the bound — once a 3.0 release allows it."""
    lines = "apache-airflow==3.0.*\nSQLAlchemy>=2.0,<3\n"
    done = subprocess.run([uv(), "pip", "compile", "-q", "--python-version", "3.10", "-"], input=lines,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "sqlalchemy" in done.stderr.lower(), done.stdout[-2000:] + done.stderr[-2000:]
    assert "apache-airflow>=3.1" in (REPO / "setup.cfg").read_text()
