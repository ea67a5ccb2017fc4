"""``python -m tests.hive_qtests.run [--hive-source DIR] [NAME ...]``: run the selection of Hive's ACID query tests
(tests/hive_qtests/manifest.py) and print, per script and in total, how many SELECTs return Hive's rows, then
the reasons of the others grouped. DIR is a Hive source tree (default: $AIRFLOW_ACID_FIXTURES/hive-qtests)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.external_fixtures import FIXTURES
from tests.hive_qtests.runner import ScriptOutcome, find_files, load_selection, run_script, summary

DEFAULT_SOURCE = FIXTURES / "hive-qtests"


def run_selection(source: Path, names: list[str] | None = None) -> tuple[list[ScriptOutcome], list[str]]:
    """Every selected script found below ``source`` run; and the names whose files are missing."""
    selection = load_selection()
    outcomes, missing = [], []
    for name in names or list(selection.scripts):
        files = find_files(source, selection, name)
        if files is None:
            missing.append(name)
            continue
        script, result = files
        outcomes.append(run_script(name, script.read_text(), result.read_text(), selection))
    return outcomes, missing


def report(outcomes: list[ScriptOutcome], missing: list[str], verbose: bool = False) -> str:
    """The per-script figures, the total and the grouped reasons, as printed."""
    lines = []
    for o in outcomes:
        state = f"not run: {o.not_run}" if o.not_run else f"{o.equal}/{len(o.selects)} SELECTs equal"
        lines.append(f"{o.name:55} {state}")
        for s in o.selects if verbose else []:
            if not s.equal:
                lines.append(f"    line {s.line}: {s.reason} — {s.detail}")
        for statement, error in o.failed_statements if verbose else []:
            lines.append(f"    line {statement.line} {statement.first_word} failed: {error}")
    for name in missing:
        lines.append(f"{name:55} files not found")
    equal, total, reasons = summary(outcomes)
    share = 100.0 * equal / total if total else 0.0
    lines.append(f"TOTAL: {equal} of {total} SELECTs equal to Hive's ({share:.1f} %) in {len(outcomes)} scripts")
    for reason, count in reasons.most_common():
        lines.append(f"  {count:4}  {reason}")
    skipped: dict[str, int] = {}
    for o in outcomes:
        for _statement, why in o.skipped:
            skipped[why] = skipped.get(why, 0) + 1
    for why, count in skipped.items():
        lines.append(f"  out of scope ({count}): {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hive-source", type=Path, default=DEFAULT_SOURCE,
                        help="a Hive source tree holding ql/src/test/queries and ql/src/test/results")
    parser.add_argument("-v", "--verbose", action="store_true", help="each failing SELECT and statement")
    parser.add_argument("names", nargs="*", help="scripts to run (default: the whole selection)")
    args = parser.parse_args(argv)
    outcomes, missing = run_selection(args.hive_source, args.names)
    print(report(outcomes, missing, args.verbose))
    return 0 if outcomes else 2


if __name__ == "__main__":
    sys.exit(main())
