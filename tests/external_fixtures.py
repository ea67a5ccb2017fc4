"""Test fixtures that come from outside the repository, found through ONE path: $AIRFLOW_ACID_FIXTURES, by default
the folder ``shared`` beside the repository. It holds

- ``interop/``: table directories written by Hive, Trino and Impala (each with its README), read by the acid and
  Spark tests;
- ``hive-metastore-schema/``: Hive's own schema scripts (``hive-schema-<version>.<postgres|mysql>.sql``), loaded by
  the Hive-metastore tests.

A test that needs a missing fixture is skipped with a message saying what is missing and how to provide it; with
$AIRFLOW_ACID_REQUIRE_FIXTURES=1 (set by .ci/run) or CI=true it fails instead, so CI always runs those tests.
docs/testing.md describes the folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES_ENV = "AIRFLOW_ACID_FIXTURES"
REQUIRE_ENV = "AIRFLOW_ACID_REQUIRE_FIXTURES"
REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get(FIXTURES_ENV) or REPO.parent / "shared").expanduser()
INTEROP_DIR = "interop"
HIVE_SCHEMA_DIR = "hive-metastore-schema"


def required() -> bool:
    """True when missing external fixtures fail the run instead of skipping tests (CI)."""
    return os.environ.get(REQUIRE_ENV) == "1" or os.environ.get("CI", "").lower() == "true"


def external_fixture(relative: str, what: str) -> Path:
    """The path of ``relative`` below the fixture folder; skips (fails in CI) the calling test when it is absent."""
    path = FIXTURES / relative
    if path.exists():
        return path
    message = (f"{what} not found at {path}: set ${FIXTURES_ENV} to the folder holding {INTEROP_DIR}/ and "
               f"{HIVE_SCHEMA_DIR}/ (default: ../shared beside the repository; see docs/testing.md)")
    if required():
        pytest.fail(f"{message} [${REQUIRE_ENV}=1 or CI=true: these tests must run]")
    pytest.skip(message)
