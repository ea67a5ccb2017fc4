"""Shared fixtures: the external fixture folder (tests/external_fixtures.py), fresh metastore databases on SQLite,
PostgreSQL and MariaDB (tests/backends.py), one SparkSession; the plugins below add the rest."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from tests.backends import BACKENDS, server_database
from tests.external_fixtures import INTEROP_DIR, external_fixture

REPO = Path(__file__).resolve().parents[1]

# Screenshots, JSON summaries and logs that a CI run keeps (gitignored).
ARTIFACTS = Path(os.environ.get("AIRFLOW_ACID_ARTIFACTS", REPO / "test-artifacts"))

# py4j logs "Closing down clientserver connection" from __del__ at interpreter exit, after pytest closed the
# captured streams; keep its INFO chatter out of the run.
logging.getLogger("py4j").setLevel(logging.WARNING)

# Property tests explore new random examples on every local run; CI (.ci/run sets AIRFLOW_ACID_HYPOTHESIS_PROFILE=ci)
# replays a fixed, per-test derandomized set so a red CI is always reproducible. Run the random profile to hunt.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
hypothesis_settings.load_profile(os.environ.get("AIRFLOW_ACID_HYPOTHESIS_PROFILE", "default"))

# Shared fixtures for every test module (pytest only takes plugins from the root conftest):
pytest_plugins = [
    "tests.warehouse_support",  # a migrated SQLite template, an AcidWarehouse per test
    "tests.airflow_support",  # the Airflow adapters' warehouse behind acid_metastore_default
    "tests.heartbeat_support",  # heartbeat_clock: heartbeaters on a manual clock (heartbeat tests never sleep)
    "tests.services.support",  # module_url, module_root, wh: ONE metastore per backend and test module
    "tests.plugins.console_fixtures",  # the console behind real Airflow authentication: acid_host, clients, scene
]
# (tests/compactor/conftest.py overrides ``wh`` there with a fresh metastore per test.)


def pytest_collection_finish(session: pytest.Session) -> None:
    """When the run holds the compatibility matrix, start building its environments and resolving its requirement
    sets now, in background threads: they wait mostly on the package index and the disk, so they overlap the tests
    collected before tests/compat instead of adding to the run."""
    modules = {item.nodeid.split("::", 1)[0] for item in session.items}
    if not any(m.startswith("tests/compat/") for m in modules):
        return
    from tests.compat.combos import matrix_combos
    from tests.compat.venvs import start_building

    try:
        if "tests/compat/test_resolution.py" in modules:
            from tests.compat.test_resolution import start_resolving

            start_resolving()
        start_building(matrix_combos(modules))
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:  # no uv: the tests themselves report it
        logging.getLogger(__name__).warning("compatibility matrix not prepared in the background: %s", exc)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Folder for files a run keeps for people to look at (screenshots, summaries); $AIRFLOW_ACID_ARTIFACTS."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def interop() -> Path:
    """The folder of table directories written by Hive, Trino and Impala (skips the test when absent, fails in CI)."""
    return external_fixture(INTEROP_DIR, "the interop fixtures (files written by Hive, Trino and Impala)")


@pytest.fixture(params=BACKENDS)
def empty_db_url(request, tmp_path) -> str:
    """A URL of a brand-new empty database on each backend (SQLite file, PostgreSQL, MariaDB); the server ones carry
    the ``servers`` mark. Narrow it with ``@pytest.mark.parametrize("empty_db_url", backends(...), indirect=True)``."""
    backend = request.param
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'metastore.db'}"
        return
    url, drop = server_database(backend)
    try:
        yield url
    finally:
        drop()


@pytest.fixture(scope="session")
def spark():
    """ONE local[2] SparkSession for the whole test run (JVM start-up is paid once)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("airflow-acid-tests")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.pyspark.python", sys.executable).getOrCreate())
    yield session
    session.stop()
