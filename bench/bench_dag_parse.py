"""Benchmark: what importing each DAG file of dags/ costs over ``import airflow``, each in a cold process.

The baseline is a cold ``python -c "import airflow"`` measured in the same run; each DAG file runs in a cold
process that imports Airflow and then the file (``runpy.run_path``, as the DAG processor's parsing process does),
alternately with the baseline so a change of machine speed hits both sides alike. Reported per file, medians of
``--repeat`` runs: the file's own time in that cold process once ``import airflow`` returned (``over_airflow_s``,
the goal's measure: ``airflow.sdk``, the provider's modules and the DAG) and, less precise on a busy machine, the
process's wall time over the baseline's (``wall_over_baseline_s``). ``AIRFLOW_HOME`` points at an empty temporary
folder, so the provider's defaults apply. Prints JSON.

    .venv/bin/python bench/bench_dag_parse.py [--repeat 7] [--dags dags]

To compare with another checkout's code: ``PYTHONPATH=<checkout> .venv/bin/python bench/bench_dag_parse.py
--dags <checkout>/dags``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import Goal, emit

GOAL_S = 0.5
"""Each DAG file imports in under this much over ``import airflow`` (issue 31)."""

_TIMED_IMPORT = """
import json, runpy, sys, time
start = time.perf_counter()
import airflow
imported = time.perf_counter()
if len(sys.argv) > 1:
    runpy.run_path(sys.argv[1])
print(json.dumps({"airflow_s": imported - start, "dag_s": time.perf_counter() - imported}))
"""


def cold_run(path: Path | None, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds of a fresh interpreter importing Airflow and then ``path``, seconds spent on ``path`` alone).
    It runs in ``AIRFLOW_HOME``, so the package comes from the installation or ``PYTHONPATH``, never from the
    current folder."""
    args = [sys.executable, "-c", _TIMED_IMPORT, *([str(path)] if path else [])]
    start = time.perf_counter()
    out = subprocess.run(args, env=env, cwd=env["AIRFLOW_HOME"], capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"importing {path or 'airflow'} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return wall, float(json.loads(out.stdout.strip().splitlines()[-1])["dag_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dags", type=Path, default=Path(__file__).resolve().parents[1] / "dags")
    args = parser.parse_args()
    files = sorted(args.dags.glob("*.py"))
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "false"}
        cold_run(None, env)  # warm the OS file cache once: every measured process is then equally "cold"
        baseline: list[float] = []
        wall: dict[str, list[float]] = {p.name: [] for p in files}
        inside: dict[str, list[float]] = {p.name: [] for p in files}
        for _ in range(args.repeat):
            for path in files:
                baseline.append(cold_run(None, env)[0])
                seconds, own = cold_run(path, env)
                wall[path.name].append(seconds)
                inside[path.name].append(own)
    base = statistics.median(baseline)
    over = {name: round(statistics.median(values), 4) for name, values in inside.items()}
    emit({"benchmark": "dag_parse", "repeat": args.repeat, "dags": str(args.dags),
          "baseline_import_airflow_s": round(base, 4),
          "over_airflow_s": over,
          "wall_s": {name: round(statistics.median(values), 4) for name, values in wall.items()},
          "wall_over_baseline_s": {name: round(statistics.median(values) - base, 4) for name, values in wall.items()},
          "ratio_vs_import_airflow": {name: round(statistics.median(values) / base, 3)
                                      for name, values in wall.items()},
          "slowest_over_airflow_s": max(over.values(), default=None)},
         [Goal(f"every DAG file imports in under {GOAL_S} s over a cold `import airflow`", "slowest_over_airflow_s",
               "<", GOAL_S)])


if __name__ == "__main__":
    main()
