"""The declared ranges resolve together (uv's resolver against the package index): setup.cfg with the oldest and
the newest combination of the matrix, and setup.cfg alone on every declared Python; the oldest Airflow resolved is
the declared lower bound, and Airflow 3.0 is shown not to work (its SQLAlchemy breaks the metastore)."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.compat.combos import NEWEST_AIRFLOW, OLDEST_AIRFLOW
from tests.compat.venvs import REPO, Combo, compat_venv, unavailable, uv

pytestmark = pytest.mark.slow


DECLARED_PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


@dataclass(frozen=True)
class Resolution:
    """One resolver run: airflow-acid (this checkout, unless ``project`` is false) with ``requirements`` for Python
    ``python``."""

    python: str
    requirements: tuple[str, ...]
    project: bool = True


RESOLUTIONS = {
    OLDEST_AIRFLOW.name: Resolution(OLDEST_AIRFLOW.python, OLDEST_AIRFLOW.requirements),
    NEWEST_AIRFLOW.name: Resolution(NEWEST_AIRFLOW.python, NEWEST_AIRFLOW.requirements),
    **{f"setup.cfg-{python}": Resolution(python, ()) for python in DECLARED_PYTHONS},
    "airflow-3.0": Resolution("3.10", ("apache-airflow==3.0.*",), project=False),
    "airflow-3.0-sqlalchemy-2": Resolution("3.10", ("apache-airflow==3.0.*", "SQLAlchemy>=2.0,<3"), project=False),
}
"""Every resolution the tests below check. They run at once: each waits mostly on the index (pyspark is an sdist
of several hundred MB that uv downloads to read its metadata)."""


def _resolve(uv_binary: str, resolution: Resolution) -> subprocess.CompletedProcess[str]:
    lines = [*([f"airflow-acid @ {REPO.as_uri()}"] if resolution.project else []), *resolution.requirements]
    # no interpreter downloads: uv would otherwise try to fetch one for builds when the Python is not installed
    return subprocess.run([uv_binary, "pip", "compile", "-q", "--no-header", "--no-annotate", "--no-python-downloads",
                           "--python-version", resolution.python, "-"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=900)


_STARTED: dict[str, Future[subprocess.CompletedProcess[str]]] = {}
_STARTED_LOCK = threading.Lock()


def start_resolving() -> dict[str, Future[subprocess.CompletedProcess[str]]]:
    """The resolver runs of :data:`RESOLUTIONS`, started together in background threads on the first call (by
    tests/conftest.py at collection, so they overlap the tests before these; else by the fixture below)."""
    with _STARTED_LOCK:
        if not _STARTED:
            uv_binary = uv()
            pool = ThreadPoolExecutor(len(RESOLUTIONS), thread_name_prefix="compat-resolve")
            _STARTED.update({name: pool.submit(_resolve, uv_binary, r) for name, r in RESOLUTIONS.items()})
            pool.shutdown(wait=False)
        return _STARTED


@pytest.fixture(scope="module")
def resolving() -> dict[str, Future[subprocess.CompletedProcess[str]]]:
    """The resolver runs of :data:`RESOLUTIONS` (see :func:`start_resolving`)."""
    return start_resolving()


def _outcome(resolving: dict[str, Future[subprocess.CompletedProcess[str]]],
             name: str) -> subprocess.CompletedProcess[str]:
    done = resolving[name].result()
    if done.returncode != 0 and ("Failed to fetch" in done.stderr or "error sending request" in done.stderr):
        unavailable(f"the package index is unreachable: {done.stderr[-300:]}")
    return done


def _pins(resolving: dict[str, Future[subprocess.CompletedProcess[str]]], name: str) -> dict[str, str]:
    """{distribution: version} of a resolution that must succeed."""
    done = _outcome(resolving, name)
    r = RESOLUTIONS[name]
    assert done.returncode == 0, f"Python {r.python}: {' '.join(r.requirements)} do not resolve:\n{done.stderr[-4000:]}"
    return {m[1].lower(): m[2] for m in re.finditer(r"^([A-Za-z0-9_.\-\[\]]+?)(?:\[.*\])?==(\S+)", done.stdout, re.M)}


@pytest.mark.parametrize("combo", [OLDEST_AIRFLOW, NEWEST_AIRFLOW], ids=lambda c: c.name)
def test_matrix_combinations_resolve(combo: Combo, resolving):
    pins = _pins(resolving, combo.name)
    assert pins["apache-airflow"].startswith("3.")
    if combo is OLDEST_AIRFLOW:
        assert pins["apache-airflow"].startswith("3.1.") and pins["pyspark"].startswith("3.5.")
        assert "pyspark-client" not in pins  # Spark provider 5.x: pyspark only, nothing overwrites it
    else:
        assert pins["pyspark"] == pins["pyspark-client"]


def test_declared_pythons_match_setup_cfg():
    """The Pythons resolved below are those setup.cfg declares (classifiers and python_requires)."""
    text = (REPO / "setup.cfg").read_text()
    assert re.findall(r"Programming Language :: Python :: (3\.\d+)$", text, re.M) == DECLARED_PYTHONS
    assert re.search(r"^python_requires = >=3\.10$", text, re.M)


@pytest.mark.parametrize("python", DECLARED_PYTHONS)
def test_setup_cfg_alone_resolves(python: str, resolving):
    pins = _pins(resolving, f"setup.cfg-{python}")
    assert pins["apache-airflow"].startswith("3.") and "apache-airflow-providers-apache-spark" in pins


def test_airflow_3_0_cannot_have_sqlalchemy_2(resolving):
    """Why the lower bound is Airflow 3.1: every 3.0 release pins SQLAlchemy < 2, and the metastore layer needs
    SQLAlchemy 2 (setup.cfg; the next test shows it). Fails — time to lower the bound — once a 3.0 release allows
    it."""
    done = _outcome(resolving, "airflow-3.0-sqlalchemy-2")
    assert done.returncode != 0 and "sqlalchemy" in done.stderr.lower(), done.stdout[-2000:] + done.stderr[-2000:]
    assert "apache-airflow>=3.1" in (REPO / "setup.cfg").read_text()


TINY_WAREHOUSE = """
from airflow_acid import AcidWarehouse
with AcidWarehouse("sqlite:///metastore.db", "warehouse") as wh:
    wh.create_table("t", [("id", "int")])
    with wh.transaction() as txn:
        txn.insert("t", [(1,), (2,)])
    assert wh.read("t").column("id").to_pylist() == [1, 2]
print("WAREHOUSE OK")
"""


def _requirements_without(*names: str) -> tuple[str, ...]:
    """setup.cfg's install_requires minus the distributions ``names`` (lower case)."""
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    lines = [ln.strip() for ln in parser["options"]["install_requires"].splitlines()]
    kept = [ln for ln in lines if ln and not ln.startswith("#")]
    return tuple(ln for ln in kept if re.split(r"[<>=!~\[ ]", ln, maxsplit=1)[0].lower() not in names)


def _tiny_warehouse(python: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run :data:`TINY_WAREHOUSE` with ``python`` on this checkout's package, in ``cwd``."""
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin", "HOME": str(cwd)}
    return subprocess.run([python, "-c", TINY_WAREHOUSE], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_airflow_3_0_sqlalchemy_breaks_the_metastore(tmp_path, resolving):
    """Airflow 3.0 would not work, not just fail to resolve: with the SQLAlchemy every 3.0 release resolves to (1.4)
    and the rest of setup.cfg's dependencies, the metastore cannot even be imported (it uses SQLAlchemy 2's API:
    ``add_cte`` with several CTEs, the psycopg 3 dialect). The same script runs on the suite's SQLAlchemy 2, so the
    failure is SQLAlchemy's. Fails — time to lower the bound — once the metastore works on it."""
    sqlalchemy = _pins(resolving, "airflow-3.0")["sqlalchemy"]
    assert sqlalchemy.startswith("1."), f"Airflow 3.0 now resolves SQLAlchemy {sqlalchemy}: time to lower the bound"
    (tmp_path / "sa2").mkdir()
    control = _tiny_warehouse(sys.executable, tmp_path / "sa2")
    assert "WAREHOUSE OK" in control.stdout, control.stderr[-3000:]
    others = _requirements_without("apache-airflow", "apache-airflow-providers-apache-spark", "pyspark", "sqlalchemy")
    venv = compat_venv(Combo("sqlalchemy-of-airflow-3.0", "3.10", (f"SQLAlchemy=={sqlalchemy}", *others),
                             install_project=False))
    (tmp_path / "sa1").mkdir()
    done = _tiny_warehouse(str(venv / "bin" / "python"), tmp_path / "sa1")
    assert done.returncode != 0 and "WAREHOUSE OK" not in done.stdout, f"the metastore runs on SQLAlchemy {sqlalchemy}"
    assert "ModuleNotFoundError" not in done.stderr, done.stderr[-3000:]  # failed for SQLAlchemy, not a missing package
    # the last frame is a SQLAlchemy 2 call of the metastore layer that SQLAlchemy 1.4 refuses
    assert re.search(r"airflow_acid/metastore/\S+\.py.*\n.*\n(TypeError|AttributeError|sqlalchemy\.exc\.)",
                     done.stderr), done.stderr[-3000:]
