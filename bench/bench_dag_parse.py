"""Benchmark: how long Airflow takes to parse each DAG file of dags/, against a minimal DAG parsed the same way.

Airflow's DAG processor parses a file in a process that has already imported Airflow, so each measurement runs in a
fresh interpreter that imports ``airflow.sdk`` first (not timed) and then times ``runpy.run_path`` of the file. The
baseline is a one-task DAG file (written to a temporary folder) measured in the same run, alternately with the DAG
files; each figure is the median of ``--repeat`` runs. ``AIRFLOW_HOME`` points at an empty temporary folder, so the
provider's defaults apply. Prints JSON.

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import Goal, emit

_TIMED_PARSE = """
import json, runpy, sys, time
import airflow.sdk  # already imported in Airflow's DAG processor: not timed
start = time.perf_counter()
runpy.run_path(sys.argv[1])
print(json.dumps(time.perf_counter() - start))
"""

_MINIMAL_DAG = """
from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator

with DAG("minimal", schedule=None):
    EmptyOperator(task_id="only")
"""


def parse_seconds(path: Path, env: dict[str, str]) -> float:
    """Seconds one fresh interpreter (Airflow imported) spends running the DAG file. It runs in ``AIRFLOW_HOME``, so
    the package comes from the installation or ``PYTHONPATH``, never from the current folder."""
    out = subprocess.run([sys.executable, "-c", _TIMED_PARSE, str(path)], env=env, cwd=env["AIRFLOW_HOME"],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"parsing {path} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dags", type=Path, default=Path(__file__).resolve().parents[1] / "dags")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "false"}
        minimal = Path(home) / "minimal_dag.py"
        minimal.write_text(_MINIMAL_DAG)
        files = sorted(args.dags.glob("acid_*.py"))
        runs: dict[str, list[float]] = {p.name: [] for p in files}
        baseline: list[float] = []
        for _ in range(args.repeat):  # alternate, so a change of machine speed hits both sides alike
            baseline.append(parse_seconds(minimal, env))
            for path in files:
                runs[path.name].append(parse_seconds(path, env))
    base = statistics.median(baseline)
    seconds = {name: round(statistics.median(values), 4) for name, values in runs.items()}
    emit({"benchmark": "dag_parse", "repeat": args.repeat, "dags": str(args.dags),
          "baseline_minimal_dag_s": round(base, 4), "parse_s": seconds,
          "ratio_vs_minimal_dag": {name: round(s / base, 2) for name, s in seconds.items()},
          "slowest_s": max(seconds.values(), default=None)},
         [Goal("slowest DAG file parses in under 2 s (Airflow's dagbag_import_timeout is 30 s)", "slowest_s",
               "<", 2.0)])


if __name__ == "__main__":
    main()
