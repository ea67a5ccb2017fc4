"""Hive's qtest files read as Hive's test driver reads them: a ``.q`` script split into statements (Hive's ``;``
rules: never inside a string or comment), its ``--! qt:`` directives and ``-- SORT_QUERY_RESULTS`` markers; and a
``.q.out`` file as the blocks Hive wrote for each statement (``PREHOOK:``/``POSTHOOK:`` header lines, then the
result rows, one tab-separated line each). docs/testing.md#hives-query-tests says where the files come from."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from airflow_acid.statements.script import split_script

SORT_MARKERS = ("SORT_QUERY_RESULTS", "SORT_BEFORE_DIFF", "SORT_AND_HASH_QUERY_RESULTS")
"""Comments with which a script asks the driver to sort every query's output lines before writing/comparing."""

MASKED_LINE = "#### A masked pattern was here ####"
_MASKED_TOKEN = re.compile(r"### [A-Za-z ]+ ###")
_DIRECTIVE = re.compile(r"^\s*--!\s*qt:([A-Za-z_]+)(?::(.*))?$")
_SORT = re.compile(r"^\s*--\s*(" + "|".join(SORT_MARKERS) + r")\b", re.MULTILINE)
_HOOK = re.compile(r"^(PREHOOK|POSTHOOK): (\w+): ?(.*)$")


@dataclass(frozen=True)
class QStatement:
    """One statement of a ``.q`` script: its text (comments dropped) and its 1-based line."""

    text: str
    line: int

    @property
    def first_word(self) -> str:
        match = re.match(r"\s*\(*\s*(\w+)", self.text)
        return match.group(1).upper() if match else ""

    @property
    def is_select(self) -> bool:
        """A query whose rows Hive prints: SELECT / WITH / VALUES, or ``FROM t SELECT`` without an INSERT."""
        word = self.first_word
        if word in ("SELECT", "WITH", "VALUES"):
            return True
        return word == "FROM" and re.search(r"\binsert\b", self.text, re.IGNORECASE) is None


@dataclass(frozen=True)
class QScript:
    """A ``.q`` file: its statements, ``--! qt:`` directives (name -> values) and whether results are sorted."""

    statements: list[QStatement]
    directives: dict[str, list[str]] = field(default_factory=dict)
    sorted_results: bool = False

    @property
    def datasets(self) -> list[str]:
        """Hive's shared test tables the script needs (``--! qt:dataset:src``)."""
        return [v.split(":")[0] for v in self.directives.get("dataset", [])]

    @property
    def disabled(self) -> str | None:
        """Why Hive itself does not run the script (``--! qt:disabled:HIVE-…``), or None."""
        values = self.directives.get("disabled")
        return values[0] or "disabled" if values is not None else None


@dataclass
class QBlock:
    """What Hive wrote for one statement: the query text, its hook type (QUERY, CREATETABLE…) and the lines after
    the header (the rows of a query, the plan of an EXPLAIN)."""

    query: str
    kind: str = ""
    lines: list[str] = field(default_factory=list)


def read_script(text: str) -> QScript:
    """The statements and markers of a ``.q`` script."""
    directives: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _DIRECTIVE.match(line)
        if match:
            directives.setdefault(match.group(1), []).append((match.group(2) or "").strip())
    cli_text = _hive_cli_text(text)
    statements = [QStatement(piece.text.strip(), cli_text.count("\n", 0, piece.start) + 1)
                  for piece in split_script(cli_text)]
    return QScript(statements, directives, _SORT.search(text) is not None)


def _hive_cli_text(text: str) -> str:
    """The script as Hive's CLI tokenizes it: whole-line ``--`` comments removed first (Hive drops them line by
    line, so a quote inside one never opens a string); line numbers kept."""
    return "\n".join("" if line.lstrip().startswith("--") else line for line in text.splitlines())


def read_output(text: str) -> list[QBlock]:
    """The blocks of a ``.q.out`` file, in order: one per statement Hive ran (SET and comments have none). Fully
    masked lines stay in a block's lines (they match any line), except those before its first row."""
    blocks: list[QBlock] = []
    current: QBlock | None = None
    in_query: str | None = None  # 'PREHOOK' / 'POSTHOOK' while a multi-line query text continues
    for line in text.split("\n"):
        hook = _HOOK.match(line)
        if hook:
            phase, key, value = hook.groups()
            if key == "query" and phase == "PREHOOK":
                current = QBlock(value)
                blocks.append(current)
                in_query = "PREHOOK"
            elif key == "query":
                in_query = "POSTHOOK"
            else:
                in_query = None
                if key == "type" and current is not None:
                    current.kind = value
            continue
        if current is None:
            continue
        if in_query == "PREHOOK":
            current.query += "\n" + line
        elif in_query is None:
            current.lines.append(line)
    for block in blocks:
        while block.lines and block.lines[-1] == "":
            block.lines.pop()
        while block.lines and block.lines[0] == MASKED_LINE:  # the masked output path before the rows
            block.lines.pop(0)
    return blocks


def normalized(query: str) -> str:
    """A query's text for matching a statement with its block: whitespace collapsed, case folded."""
    return " ".join(query.split()).casefold()


def lines_match(expected: str, actual: str) -> bool:
    """Whether one output line equals Hive's, where Hive's driver masked parts (``### Masked writeid ###``) match
    anything and a fully masked line matches any line."""
    if expected == MASKED_LINE or expected == actual:
        return True
    if "###" not in expected:
        return False
    pattern = ".*?".join(re.escape(part) for part in _MASKED_TOKEN.split(expected))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


__all__ = ["MASKED_LINE", "QBlock", "QScript", "QStatement", "lines_match", "normalized", "read_output",
           "read_script"]
