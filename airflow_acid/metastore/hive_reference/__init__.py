"""Hive's metastore schema per version and database, as :func:`airflow_acid.metastore.preflight.describe_schema`
describes it after Hive's own schema script (``hive-schema-<version>.<postgres|mysql>.sql``, what ``schematool
-initSchema`` runs) ran on an empty database. One JSON file per version and dialect, made by
``python -m tests.hive.generate_reference`` (a structural description, no Hive code); a test regenerates them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REFERENCE_DIR = Path(__file__).resolve().parent
DIALECTS = {"postgresql": "postgresql", "mysql": "mysql", "mariadb": "mysql"}
"""SQLAlchemy dialect name → the reference family (Hive's ``mysql`` script serves MySQL and MariaDB)."""


def file_name(version: str, dialect: str) -> str:
    """``4.2.0.postgresql.json``: the reference of Hive ``version`` on ``dialect``'s family."""
    return f"{version}.{DIALECTS.get(dialect, dialect)}.json"


def known_versions(dialect: str) -> list[str]:
    """The Hive versions with a reference for ``dialect``, oldest first."""
    family = DIALECTS.get(dialect, dialect)
    found = [p.name[: -len(f".{family}.json")] for p in REFERENCE_DIR.glob(f"*.{family}.json")]
    return sorted(found, key=lambda v: tuple(int(x) if x.isdigit() else 0 for x in v.split(".")))


def load(version: str, dialect: str) -> dict[str, Any] | None:
    """The reference description, or None when there is none for that version and dialect."""
    path = REFERENCE_DIR / file_name(version, dialect)
    if not path.is_file():
        return None
    description: dict[str, Any] = json.loads(path.read_text())
    return description
