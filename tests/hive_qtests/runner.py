"""Runs Hive's ACID query tests through airflow-acid's SQL path and compares every SELECT with Hive's ``.q.out``:
each script on a fresh warehouse and SQLite metastore, its statements run one by one as ``airflow-acid sql -f``
runs them (a failing statement is recorded and the script goes on, so every SELECT is counted), and each SELECT's
rows printed as Hive's CLI prints them. docs/testing.md#hives-query-tests."""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from airflow_acid.errors import AcidUserError
from tests.hive_qtests import manifest
from tests.hive_qtests.qfiles import (
    MASKED_LINE,
    QBlock,
    QScript,
    QStatement,
    lines_match,
    normalized,
    read_output,
    read_script,
)

ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


@dataclass(frozen=True)
class OutOfScope:
    """Statements the runner leaves out, and why."""

    pattern: re.Pattern[str]
    reason: str


@dataclass(frozen=True)
class Selection:
    """The manifest: which scripts (and the Hive commits of their files), where Hive keeps them, what is left out."""

    scripts: dict[str, tuple[str, str]]
    queries: str
    results: list[str]
    out_of_scope: list[OutOfScope]
    minimum_equal: float

    def reason_out_of_scope(self, statement: QStatement) -> str | None:
        return next((o.reason for o in self.out_of_scope if o.pattern.match(statement.text)), None)


def load_selection() -> Selection:
    """The selection of tests/hive_qtests/manifest.py."""
    return Selection(dict(manifest.SCRIPTS), manifest.QUERIES, list(manifest.RESULTS),
                     [OutOfScope(re.compile(pattern, re.IGNORECASE), reason) for pattern, reason in manifest.OUT_OF_SCOPE],
                     manifest.MINIMUM_EQUAL)


@dataclass
class SelectOutcome:
    """One SELECT: equal to Hive's rows, or why not."""

    line: int
    text: str
    equal: bool
    reason: str = ""
    detail: str = ""


@dataclass
class ScriptOutcome:
    """One script: its SELECTs' outcomes, the statements that failed and those left out."""

    name: str
    selects: list[SelectOutcome] = field(default_factory=list)
    failed_statements: list[tuple[QStatement, str]] = field(default_factory=list)
    skipped: list[tuple[QStatement, str]] = field(default_factory=list)
    not_run: str | None = None

    @property
    def equal(self) -> int:
        return sum(s.equal for s in self.selects)


def find_files(source: Path, selection: Selection, name: str) -> tuple[Path, Path] | None:
    """The ``.q`` and ``.q.out`` of one script below a Hive source tree (or a copy of its test folders)."""
    script = source / selection.queries / f"{name}.q"
    result = next((source / d / f"{name}.q.out" for d in selection.results
                   if (source / d / f"{name}.q.out").is_file()), None)
    return (script, result) if script.is_file() and result is not None else None


def run_script(name: str, script_text: str, output_text: str, selection: Selection) -> ScriptOutcome:
    """Run one script on a fresh warehouse and compare its SELECTs with Hive's blocks."""
    outcome = ScriptOutcome(name)
    script = read_script(script_text)
    if script.disabled:
        outcome.not_run = f"disabled in Hive itself ({script.disabled})"
        return outcome
    if script.datasets:
        outcome.not_run = f"needs Hive's test tables {', '.join(script.datasets)} (not loaded by this runner)"
        return outcome
    blocks = read_output(output_text)
    with tempfile.TemporaryDirectory(prefix=f"qtest-{name}-") as tmp:
        _run(script, blocks, Path(tmp), selection, outcome)
    return outcome


def _run(script: QScript, blocks: list[QBlock], tmp: Path, selection: Selection, outcome: ScriptOutcome) -> None:
    from airflow_acid.client.warehouse import AcidWarehouse
    from airflow_acid.metastore import Metastore
    from airflow_acid.statements import ScriptRunner, Session, StatementExecutor, parse_script

    metastore = Metastore(f"sqlite:///{tmp / 'metastore.db'}")
    metastore.init()
    warehouse = AcidWarehouse(metastore, tmp / "warehouse", init=False)
    try:
        executor = StatementExecutor(warehouse)
        runner = ScriptRunner(executor.run, Session(metastore.conf, on_change=executor.reconfigure))
        aligned = _align(script.statements, blocks)
        first_failure = ""
        for number, (statement, block) in enumerate(aligned):
            reason = selection.reason_out_of_scope(statement)
            if reason is not None:
                outcome.skipped.append((statement, reason))
                continue
            try:
                results = [runner.run(item) for item in parse_script(with_driver_variables(statement.text, tmp))]
                error = ""
            except AcidUserError as exc:
                results, error = [], _one_line(str(exc))
            except Exception as exc:  # noqa: BLE001 - an engine error is a finding too: record it and go on
                results, error = [], f"{type(exc).__name__}: {_one_line(str(exc))}"
            if not statement.is_select:
                if error:
                    outcome.failed_statements.append((statement, error))
                    first_failure = first_failure or f"{statement.first_word}: {error}"
                continue
            if block is None:
                outcome.selects.append(SelectOutcome(statement.line, statement.text, False,
                                                     "no block in the .q.out for this SELECT"))
                continue
            if error:
                outcome.selects.append(SelectOutcome(statement.line, statement.text, False, f"error: {error}",
                                                     f"earlier failure: {first_failure}" if first_failure else ""))
                continue
            actual = ["\t".join(row) for result in results for row in result.text_rows()]
            expected = block.lines
            following = aligned[number + 1][0] if number + 1 < len(aligned) else None
            if following is not None and following.first_word == "DFS" and MASKED_LINE in expected:
                expected = expected[:expected.index(MASKED_LINE)]  # the dfs output Hive's driver appended
            outcome.selects.append(compare(statement, expected, actual, script.sorted_results, first_failure))
    finally:
        warehouse.close()
        metastore.close()


def with_driver_variables(text: str, tmp: Path) -> str:
    """A statement with the variables of Hive's test driver given values: ``${system:test.tmp.dir}`` a folder of
    the run, and ``pfile:`` (the driver's local file system) ``file:``."""
    return text.replace("${system:test.tmp.dir}", str(tmp / "test.tmp.dir")).replace("pfile://", "file://")


def _align(statements: list[QStatement], blocks: list[QBlock]) -> list[tuple[QStatement, QBlock | None]]:
    """Each statement with the block Hive wrote for it: the next block with the same text, else, for a SELECT, the
    next block in order (a .q.out last regenerated with a slightly different query text, a query line Hive's driver
    masked); SET and other session commands have none."""
    out: list[tuple[QStatement, QBlock | None]] = []
    at = 0
    for statement in statements:
        if statement.first_word in ("SET", "RESET", "ADD", "DFS"):
            out.append((statement, None))
            continue
        text = normalized(statement.text)
        found = next((i for i in range(at, len(blocks)) if normalized(blocks[i].query) == text), None)
        if found is None and statement.is_select and at < len(blocks):
            found = at  # a SELECT whose text Hive's file spells otherwise: its rows are the next block's
        out.append((statement, blocks[found] if found is not None else None))
        if found is not None:
            at = found + 1
    return out


def compare(statement: QStatement, expected: list[str], actual: list[str], sort_all: bool,
            earlier_failure: str = "") -> SelectOutcome:
    """A SELECT's printed rows against Hive's: in order when the query orders them (and the script does not ask
    for sorted output), else as sorted lines (Hive's order is then the engine's and not part of the result)."""
    ordered = not sort_all and ORDER_BY.search(statement.text) is not None
    exp, act = (expected, actual) if ordered else (sorted(expected), sorted(actual))
    if len(exp) == len(act) and all(lines_match(e, a) for e, a in zip(exp, act)):
        return SelectOutcome(statement.line, statement.text, True)
    if ordered and len(exp) == len(act) and all(lines_match(e, a) for e, a in zip(sorted(exp), sorted(act))):
        reason = "same rows, other order"
    elif len(exp) != len(act):
        reason = f"{len(act)} rows, Hive has {len(exp)}"
    else:
        reason = "values differ"
    detail = _first_difference(exp, act)
    if earlier_failure:
        reason += " (after a failed statement)"
        detail = f"{detail}; earlier failure: {earlier_failure}"
    return SelectOutcome(statement.line, statement.text, False, reason, detail)


def _first_difference(expected: list[str], actual: list[str]) -> str:
    for i, (e, a) in enumerate(zip(expected, actual)):
        if not lines_match(e, a):
            return f"row {i + 1}: Hive {e!r}, airflow-acid {a!r}"
    longer, who = (expected, "Hive") if len(expected) > len(actual) else (actual, "airflow-acid")
    return f"row {min(len(expected), len(actual)) + 1}: only {who} has {longer[min(len(expected), len(actual))]!r}"


def _one_line(message: str) -> str:
    return " ".join(message.split())[:300]


def reason_group(select: SelectOutcome) -> str:
    """A failure reason with names, numbers and quoted values blanked, so that like failures group together."""
    text = select.reason
    if "earlier failure: " in select.detail:  # the first failed statement is the likely cause: group by it
        text = f"after a failed {select.detail.split('earlier failure: ', 1)[1]}"
    text = re.sub(r"\btable [\w.]+", "table …", re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", text))
    return re.sub(r"\b\d+\b", "N", text)[:200]


def summary(outcomes: list[ScriptOutcome]) -> tuple[int, int, Counter[str]]:
    """(equal SELECTs, compared SELECTs, failure reasons grouped and counted)."""
    selects = [s for o in outcomes for s in o.selects]
    return sum(s.equal for s in selects), len(selects), Counter(reason_group(s) for s in selects if not s.equal)


__all__ = ["ScriptOutcome", "SelectOutcome", "Selection", "compare", "find_files", "load_selection",
           "reason_group", "run_script", "summary"]
