"""sqlglot's Hive dialect as Hive 4 orders NULLs: ``hive.default.nulls.last=true`` (Hive 4's default) puts NULLs last
in ascending and first in descending order, where sqlglot's Hive dialect follows Hive 3 (NULLs first when ascending).
Every Hive text the project parses goes through :class:`Hive4`, so ORDER BY (and which rows ``INSERT … ORDER BY …
LIMIT`` keeps) transpiles to DuckDB with Hive 4's order; an explicit NULLS FIRST/LAST is kept as written.

A session's ``SET hive.default.nulls.last=false`` (Hive's older default: NULLs first when ascending, last when
descending) is :data:`DEFAULT_NULLS_LAST` for the statements it runs; :func:`session_null_order` applies it to every
ORDER BY key that does not say NULLS FIRST/LAST (the parser marks those)."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from sqlglot import exp
from sqlglot.dialects.hive import Hive
from sqlglot.parsers.hive import HiveParser

DEFAULT_NULLS_LAST: ContextVar[bool] = ContextVar("hive_default_nulls_last", default=True)
"""``hive.default.nulls.last`` of the statement being run (True, Hive 4's default, unless the session SET it)."""

_DEFAULT_ORDER = "hive_default_null_order"
"""Meta key of an ORDER BY key written without NULLS FIRST/LAST."""


class Hive4Parser(HiveParser):
    """Hive's parser marking ORDER BY keys whose NULL order is Hive's default (not written)."""

    def _parse_ordered(self, parse_method: Callable[[], exp.Expr | None] | None = None) -> exp.Ordered | None:
        node = super()._parse_ordered(parse_method)
        if node is not None:
            last = [token.text.upper() for token in self._tokens[max(self._index - 2, 0):self._index]]
            if not (len(last) == 2 and last[0] == "NULLS" and last[1] in ("FIRST", "LAST")):
                node.meta[_DEFAULT_ORDER] = True
        return node


class Hive4(Hive):
    """Hive with Hive 4's default NULL ordering (NULLs compare as larger than any value)."""

    NULL_ORDERING = "nulls_are_large"
    Parser = Hive4Parser


def session_null_order(node: exp.Expr) -> exp.Expr:
    """``node`` with the session's default NULL order on every ORDER BY key written without NULLS FIRST/LAST:
    unchanged under Hive 4's default; NULLs first when ascending and last when descending after ``SET
    hive.default.nulls.last=false``."""
    if DEFAULT_NULLS_LAST.get():
        return node

    def reorder(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Ordered) and n.meta_get(_DEFAULT_ORDER):
            n.set("nulls_first", not n.args.get("desc"))
        return n

    return node.transform(reorder)
