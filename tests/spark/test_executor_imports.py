"""The compaction job imports only what the README lists for Spark executors (the wheel, pyarrow, pyorc, numpy,
fsspec): pandas is blocked in a fresh interpreter while the job's modules load. What this cannot see is pandas
reached only through an older pyarrow (``to_pandas_dtype`` needs pandas on pyarrow 25, not on the suite's 26): the
compatibility matrix runs the job on those (tests/compat/test_spark_versions.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JOB_MODULES = ("airflow_acid.spark.compact_job", "airflow_acid.spark.driver", "airflow_acid.spark.units",
               "airflow_acid.spark.rebalance", "airflow_acid.spark.output_check", "airflow_acid.acid.merge",
               "airflow_acid.acid.delete_merge", "airflow_acid.acid.delete_cursor", "airflow_acid.acid.digest")

_PROBE = """
import importlib, importlib.abc, sys

class NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: Spark executors need not have it)")
        return None

sys.meta_path.insert(0, NoPandas())
for module in sys.argv[1:]:
    importlib.import_module(module)
print("ok")
"""


def _probe(*modules: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", _PROBE, *modules], env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_compaction_job_imports_without_pandas():
    done = _probe(*JOB_MODULES)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_the_probe_blocks_pandas():
    done = _probe("pandas")
    assert done.returncode != 0 and "blocked" in done.stderr
