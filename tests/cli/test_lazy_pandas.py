"""What a cold ``airflow-acid sql`` process loads (docs/performance.md#cli-latency): an INSERT of literals runs
without DuckDB and without pandas, a SELECT still gets DuckDB (and, through the merge reader, pandas), and pyarrow
still gives pandas to whatever asks for it after the CLI kept it from importing pandas on its first look."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_RUN = """
import json, sys
from airflow_acid.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "loaded": sorted(m for m in ("duckdb", "pandas", "pyarrow") if m in sys.modules)}),
      file=sys.stderr)
"""


def run_cli(home: Path, *args: str) -> dict:
    env = {**os.environ, "AIRFLOW_ACID_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("AIRFLOW_ACID_METASTORE_URL", None)
    out = subprocess.run([sys.executable, "-c", _RUN, *args], env=env, capture_output=True, text=True, timeout=300)
    answer: dict = json.loads(out.stderr.strip().splitlines()[-1])
    assert answer["code"] in (0, None), out.stderr
    return answer


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    run_cli(home, "sql", "CREATE TABLE t (id INT, amount DECIMAL(10,2), name STRING)")
    return home


def test_an_insert_of_literals_loads_neither_duckdb_nor_pandas(home: Path) -> None:
    assert run_cli(home, "sql", "INSERT INTO t VALUES (1, 9.99, 'a'), (2, NULL, 'b')")["loaded"] == ["pyarrow"]
    assert "duckdb" in run_cli(home, "sql", "--json", "SELECT sum(id) AS s FROM t")["loaded"]


def test_show_loads_no_table_format(home: Path) -> None:
    assert run_cli(home, "sql", "SHOW COMPACTIONS")["loaded"] == []


def test_pyarrow_still_gives_pandas_to_what_needs_it() -> None:
    code = """
import sys
from airflow_acid.cli.lazy_pandas import arrow_without_pandas
import pyarrow as pa
assert arrow_without_pandas() and "pandas" not in sys.modules
table = pa.table({"a": pa.array([1, 2], pa.int64())})
assert "pandas" not in sys.modules
frame = table.to_pandas()  # pyarrow imports pandas now that it is required
assert list(frame["a"]) == [1, 2] and "pandas" in sys.modules
assert pa.Table.from_pandas(frame).column("a").to_pylist() == [1, 2]
assert pa.table(frame).num_rows == 2  # and knows DataFrames again
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
