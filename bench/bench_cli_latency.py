"""Benchmark: how long ``airflow-acid sql`` takes to answer from a cold process, against Python doing nothing and
``airflow-acid --version`` measured in the same run.

Each figure is the median of ``--repeat`` fresh processes (run alternately, so a change of machine speed hits every
command alike) on an embedded SQLite metastore in a temporary ``AIRFLOW_ACID_HOME``: ``SHOW COMPACTIONS``, a
one-row ``INSERT`` of literals (and an ``INSERT … SELECT`` of an expression, which DuckDB evaluates), and the
shell's statements after the first (one process given 1 and then 41 statements on stdin with ``--shell``: the
difference per statement). Prints JSON, with each command's median CPU time (user + system) beside its wall time
and the load average: on a busy machine the wall time grows, the CPU time hardly.

Python runs as ``pip install`` leaves it, with compiled bytecode: the processes write and read it in a temporary
``PYTHONPYCACHEPREFIX`` (warmed by one untimed round), whatever ``PYTHONDONTWRITEBYTECODE`` says — without
bytecode every process compiles pandas, pyarrow and SQLAlchemy from source, seconds that say nothing about
airflow-acid.

    .venv/bin/python bench/bench_cli_latency.py [--repeat 7] [--against ../previous-checkout]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import Goal, emit

ROOT = Path(__file__).resolve().parents[1]

_CLI = "from airflow_acid.cli import main; main()"
SHELL_STATEMENTS = 40


def seconds(args: list[str], env: dict[str, str], stdin: str | None = None, cwd: Path = ROOT) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one fresh process running ``args`` (fails the benchmark when the
    command fails). The CPU time hardly moves with the machine's load, the wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(args, env=env, input=stdin, capture_output=True, text=True, timeout=300, cwd=cwd)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{args[2:]} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(checkout: Path, home: Path, pycache: Path) -> dict[str, str]:
    """The environment of a process running ``checkout``'s airflow-acid in its own warehouse and bytecode cache."""
    env = {**os.environ, "AIRFLOW_ACID_HOME": str(home), "PYTHONPYCACHEPREFIX": str(pycache),
           "PYTHONPATH": str(checkout)}
    env.pop("AIRFLOW_ACID_METASTORE_URL", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--against", type=Path, default=None, metavar="CHECKOUT",
                        help="Another checkout of airflow-acid (e.g. a git worktree of the previous release): its "
                             "sql statements run alternately with this one's, in their own warehouse, and are "
                             "reported under 'against'.")
    args = parser.parse_args()
    cli = [sys.executable, "-c", _CLI]
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as pycache:
        env = _env(ROOT, Path(home) / "this", Path(pycache) / "this")
        other = _env(args.against, Path(home) / "other", Path(pycache) / "other") if args.against else None
        for e, cwd in ((env, ROOT), (other, args.against)) if other else ((env, ROOT),):
            seconds([*cli, "sql", "CREATE TABLE bench_latency (id INT, name STRING)"], e, cwd=cwd)
        one = "SHOW COMPACTIONS;\n"
        many = "SHOW COMPACTIONS;\n" + "SHOW TRANSACTIONS;\n" * SHELL_STATEMENTS
        commands = {
            "python_pass": ([sys.executable, "-c", "pass"], None),
            "version": ([*cli, "--version"], None),
            "show_compactions": ([*cli, "sql", "SHOW COMPACTIONS"], None),
            "insert": ([*cli, "sql", "INSERT INTO bench_latency VALUES (1, 'a')"], None),
            # through DuckDB (an expression): what an INSERT of literals no longer loads
            "insert_select": ([*cli, "sql", "INSERT INTO bench_latency SELECT 2, upper('b')"], None),
            "shell_1": ([*cli, "sql", "--shell"], one),
            "shell_many": ([*cli, "sql", "--shell"], many),
        }
        compared = ("show_compactions", "insert", "insert_select") if other else ()
        runs: dict[str, list[float]] = {name: [] for name in [*commands, *(f"against_{c}" for c in compared)]}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        for command, stdin in commands.values():  # untimed: compiles the bytecode, as pip install does
            seconds(command, env, stdin)
        for name in compared:
            assert other is not None
            seconds(commands[name][0], other, commands[name][1], cwd=args.against)
        for _ in range(args.repeat):
            for name, (command, stdin) in commands.items():
                wall, used = seconds(command, env, stdin)
                runs[name].append(wall)
                cpu[name].append(used)
                if name in compared:
                    assert other is not None
                    wall, used = seconds(command, other, stdin, cwd=args.against)
                    runs[f"against_{name}"].append(wall)
                    cpu[f"against_{name}"].append(used)
    median = {name: round(statistics.median(values), 4) for name, values in runs.items()}
    median_cpu = {name: round(statistics.median(values), 4) for name, values in cpu.items()}
    shell_next = round(max(0.0, median["shell_many"] - median["shell_1"]) / SHELL_STATEMENTS, 4)
    base = median["python_pass"]
    emit({"benchmark": "cli_latency", "repeat": args.repeat, "baseline_python_pass_s": base,
          "version_s": median["version"], "show_compactions_s": median["show_compactions"],
          "insert_s": median["insert"], "shell_next_statement_s": shell_next,
          "ratio_vs_version": {name: round(median[name] / median["version"], 2)
                               for name in ("show_compactions", "insert")},
          "median_s": median, "median_cpu_s": median_cpu, "load_average_1m": round(os.getloadavg()[0], 2)},
         [Goal("airflow-acid sql \"SHOW COMPACTIONS\" answers in < 1.5 s from a cold process", "show_compactions_s",
               "<", 1.5),
          Goal("a one-row INSERT answers in < 1.5 s from a cold process", "insert_s", "<", 1.5),
          Goal("in the shell, a statement after the first answers in < 0.25 s", "shell_next_statement_s", "<",
               0.25)])


if __name__ == "__main__":
    main()
