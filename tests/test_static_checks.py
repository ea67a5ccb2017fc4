"""Static checks as tests: ruff (lint + import order), import-linter (the layer contracts) and mypy (strict on
the fully annotated packages), each configured in pyproject.toml and run from the repository root with the venv's
executables, so `./dev test` fails when one of them does (`./dev lint` runs the same three alone)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(tool: str, *args: str) -> None:
    proc = subprocess.run([str(BIN / tool), *args], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{tool} {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"


def test_ruff() -> None:
    _run("ruff", "check", "airflow_acid", "tests", "bench", "dags", "plugins")


def test_import_linter() -> None:
    _run("lint-imports")


def test_mypy() -> None:
    _run("mypy", "airflow_acid")
