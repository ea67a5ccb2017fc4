"""Keep pyarrow from importing pandas in a CLI process that never hands it pandas objects.

pyarrow looks for pandas the first time an array is built (``pa.array``, ``pa.table``, …: to tell a pandas object
from a list) and imports it when installed — a few tenths of a second of every ``airflow-acid sql`` INSERT, UPDATE
or SELECT, for objects the CLI never passes (its rows come from DuckDB and ORC files as Arrow). :func:`arrow_without_pandas`
lets that first look find no pandas: pyarrow then treats every input as not pandas. Whatever truly needs pandas
still gets it — pyarrow imports it on demand for ``to_pandas()``, ``Table.from_pandas()`` and the like (it retries
the import when a caller requires pandas) — and nothing else in the process is affected: pandas stays importable.
Arrow's C++ code imports pandas by itself where it may meet pandas values — inferring the type of a Python list,
``to_numpy`` — so the statement path avoids those (typed arrays; key columns read as buffers,
:func:`airflow_acid.acid.event_schema.key_values`); tests/cli/test_lazy_pandas.py checks what an INSERT loads.

Only the CLI calls this (library users hand pyarrow DataFrames: there pyarrow must find pandas on its first look).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _NoPandas:
    """A meta-path finder that answers ``import pandas`` with ModuleNotFoundError (while it is installed)."""

    @staticmethod
    def find_spec(name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
                  ) -> ModuleSpec | None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas is not loaded for pyarrow's first look (airflow_acid.cli.lazy_pandas)",
                                      name=name)
        return None


def arrow_without_pandas() -> bool:
    """Make pyarrow's first look for pandas find none, unless pandas is already loaded (pyarrow then looked, or
    will find it); True when pandas is still not loaded afterwards. Cheap after pyarrow is imported."""
    if "pandas" in sys.modules:
        return False
    import pyarrow as pa

    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([], pa.int8())  # pyarrow's lazy check: tries `import pandas` once, records that there is none
    finally:
        sys.meta_path.remove(finder)
    return "pandas" not in sys.modules


__all__ = ["arrow_without_pandas"]
