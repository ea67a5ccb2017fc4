"""Regenerate airflow-acid's reference descriptions of Hive's metastore schema (airflow_acid/metastore/
hive_reference/*.json) from Hive's schema scripts in the external fixture folder: each script is loaded into a
scratch database on the test servers, as schematool does, and described by the same code preflight runs.

    PYTHONPATH=. python -m tests.hive.generate_reference [--check]
"""

from __future__ import annotations

import json
import sys

import sqlalchemy as sa

from airflow_acid.metastore import hive_reference
from airflow_acid.metastore.preflight import describe_schema
from tests.backends import server_database
from tests.external_fixtures import FIXTURES
from tests.hive import hms

BACKENDS = {"postgresql": "postgresql", "mariadb": "mysql"}
"""Test backend → reference family."""


def render(description: dict) -> str:
    """The committed file's text (stable: sorted keys, one trailing newline)."""
    return json.dumps(description, indent=1, sort_keys=True) + "\n"


def describe_script(backend: str, version: str) -> dict:
    """Load Hive's script of ``version`` for ``backend`` into a scratch database and describe it."""
    url, drop = server_database(backend)
    try:
        hms.load_schema(url, FIXTURES / hms.script_name(backend, version))
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                return describe_schema(conn)
        finally:
            engine.dispose()
    finally:
        drop()


def main(check: bool = False) -> int:
    """Write (or with ``check`` compare) every reference; returns the number of files that differ."""
    differ = 0
    for backend, family in BACKENDS.items():
        for version in hms.VERSIONS:
            path = hive_reference.REFERENCE_DIR / hive_reference.file_name(version, family)
            text = render(describe_script(backend, version))
            if path.is_file() and path.read_text() == text:
                continue
            differ += 1
            if check:
                print(f"{path.name} differs from Hive's {version} script", file=sys.stderr)
            else:
                path.write_text(text)
                print(f"wrote {path.name}")
    return differ


if __name__ == "__main__":
    sys.exit(1 if main(check="--check" in sys.argv) and "--check" in sys.argv else 0)
