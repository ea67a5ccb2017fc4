"""DAG files stay cheap to parse: importing one loads no heavy library (the ORC/Arrow stack, pandas, the query
engine, PySpark) — the operators import the compactor when a task runs. Checked on the modules a fresh interpreter
holds after importing Airflow and each DAG file, never on time (bench/bench_dag_parse.py measures the time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DAG_FILES = sorted((REPO / "dags").glob("*.py"))

HEAVY = ("pyarrow", "pandas", "duckdb", "sqlglot", "pyspark", "pyorc", "numpy", "alembic",
         "airflow_acid.compactor.worker", "airflow_acid.compactor.planner", "airflow_acid.compactor.cleaner",
         "airflow_acid.compactor.initiator", "airflow_acid.acid.event_reader", "airflow_acid.acid.event_writer",
         "airflow_acid.client", "airflow_acid.spark", "airflow_acid.statements",
         "airflow.providers.apache.spark.hooks", "airflow.providers.apache.spark.operators")
"""Libraries a DAG file must not import (and the provider's own packages that pull them in), by module prefix."""

_PROBE = """
import json, runpy, sys
import airflow
after_airflow = set(sys.modules)
import airflow.sdk  # what every DAG file imports: Airflow's own cost, not the file's
base = set(sys.modules)
loaded = {"airflow": sorted(after_airflow)}
for path in sys.argv[1:]:
    runpy.run_path(path)
    loaded[path] = sorted(set(sys.modules) - base)
    base = set(sys.modules)
print(json.dumps(loaded))
"""


def heavy(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def _imported_modules(tmp_path) -> dict[str, list[str]]:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _PROBE, *map(str, DAG_FILES)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_dag_files_and_airflow_itself_import_no_heavy_module(tmp_path):
    assert len(DAG_FILES) >= 4
    loaded = _imported_modules(tmp_path)
    # Airflow reads the provider's [acid] config section when it starts: that must stay light too
    assert heavy(loaded["airflow"]) == [], "import airflow (the provider's config) loads heavy modules"
    found = {Path(path).name: heavy(modules) for path, modules in loaded.items() if path != "airflow"}
    assert found == {path.name: [] for path in DAG_FILES}, f"DAG files import heavy modules: {found}"


def test_the_probe_sees_a_heavy_import(tmp_path):
    """The check can fail: a DAG file that imports the compactor is caught."""
    bad = tmp_path / "heavy_dag.py"
    bad.write_text("import airflow_acid.compactor.worker\n")
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _PROBE, str(bad)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    modules = json.loads(out.stdout.strip().splitlines()[-1])[str(bad)]
    assert "airflow_acid.compactor.worker" in heavy(modules) and "pyarrow" in heavy(modules)
