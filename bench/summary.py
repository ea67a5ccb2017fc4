"""Summary table of a ``./dev bench`` run: every goal of every benchmark in ``bench/results/*.json``, met or not.

Prints a Markdown table and writes it to ``bench/results/SUMMARY.md``. A benchmark that failed (its JSON holds
``error``) appears as one ``failed`` row. Usage: python bench/summary.py [--results bench/results]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

_MET = {True: "met", False: "NOT met", None: "not measured"}


def rows(results_dir: Path) -> list[tuple[str, str, str, str]]:
    """(benchmark, goal, value vs target, outcome) for each goal of each result file."""
    out: list[tuple[str, str, str, str]] = []
    for path in sorted(results_dir.glob("*.json")):
        name = path.stem
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            out.append((name, "-", f"unreadable JSON: {exc}", "failed"))
            continue
        if "error" in data:
            out.append((name, "-", str(data["error"]), "failed"))
            continue
        goals = data.get("goals") or []
        if not goals:
            out.append((name, "(no goal stated)", "-", "-"))
        for g in goals:
            value = "-" if g["value"] is None else f"{g['value']:g}"
            out.append((name, g["goal"], f"{value} {g['op']} {g['target']:g}", _MET[g["met"]]))
    return out


def table(results_dir: Path) -> str:
    lines = ["| benchmark | goal | value vs target | outcome |", "|---|---|---|---|"]
    lines += [f"| {b} | {g} | {v} | {m} |" for b, g, v, m in rows(results_dir)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args()
    text = table(args.results)
    (args.results / "SUMMARY.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
