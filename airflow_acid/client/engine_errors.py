"""DuckDB's errors in the words of the Hive statement that caused them: which column, table, function or value,
never DuckDB's error class names, its internal table names or its candidate-function lists."""

from __future__ import annotations

import re

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r'Referenced column "(?P<a>[^"]+)" not found in FROM clause!(?:\s*Candidate bindings: (?P<b>.*))?'),
     "Invalid table alias or column reference '{a}'{candidates}"),
    (re.compile(r'Table "(?P<t>[^"]+)" does not have a column named "(?P<a>[^"]+)"(?:\s*Candidate bindings: :?(?P<b>.*))?'),
     "Invalid column reference '{a}' of '{t}'{candidates}"),
    (re.compile(r'Referenced table "(?P<t>[^"]+)" not found!'), "Invalid table alias '{t}'"),
    (re.compile(r"Scalar Function with name (?P<f>\S+) does not exist!"), "Invalid function '{f}'"),
    (re.compile(r"Aggregate Function with name (?P<f>\S+) does not exist!"), "Invalid function '{f}'"),
    (re.compile(r"Table with name (?P<t>\S+) does not exist!"), "Table not found '{t}'"),
    (re.compile(r"No function matches the given name and argument types '(?P<f>[^']*)'"),
     "Wrong arguments for '{f}': no version of it takes these types; cast the arguments"),
    (re.compile(r'column "(?P<a>[^"]+)" must appear in the GROUP BY clause'),
     "Expression not in GROUP BY key '{a}'"),
    (re.compile(r"Could not convert string '(?P<v>.*)' to (?P<ty>\w+)"), "cannot convert '{v}' to {ty}"),
]
_INTERNAL_NAME = re.compile(r"__acid_rows_\d+\.?")
_PREFIX = re.compile(r"^\s*[A-Za-z ]*Error:\s*")


def engine_message(error: Exception) -> str:
    """One line for a DuckDB error: Hive's wording where one fits, else DuckDB's first line without its prefix."""
    text = str(error)
    body = _PREFIX.sub("", text, count=1)
    for pattern, template in _PATTERNS:
        match = pattern.search(body)
        if match:
            groups = {k: v for k, v in match.groupdict().items() if v is not None}
            names = re.findall(r'"([^"]+)"', groups.pop("b", "").split("\n\n")[0])
            candidates = f" (possible column names are: {', '.join(names)})" if names else ""
            return _INTERNAL_NAME.sub("", template.format(candidates=candidates, **groups))
    first = body.split("\n", 1)[0].strip()
    return _INTERNAL_NAME.sub("", first)


__all__ = ["engine_message"]
