"""sqlglot's Hive dialect as Hive 4 orders NULLs: ``hive.default.nulls.last=true`` (Hive 4's default) puts NULLs last
in ascending and first in descending order, where sqlglot's Hive dialect follows Hive 3 (NULLs first when ascending).
Every Hive text the project parses goes through :class:`Hive4`, so ORDER BY (and which rows ``INSERT … ORDER BY …
LIMIT`` keeps) transpiles to DuckDB with Hive 4's order; an explicit NULLS FIRST/LAST is kept as written."""

from __future__ import annotations

from sqlglot.dialects.hive import Hive


class Hive4(Hive):
    """Hive with Hive 4's default NULL ordering (NULLs compare as larger than any value)."""

    NULL_ORDERING = "nulls_are_large"
