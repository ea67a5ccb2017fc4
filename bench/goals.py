"""Benchmark goals: each bench script states its goals (issue 17's table) and reports whether its run met them.

A goal names a value in the script's JSON by a dotted path (``txn_per_s.postgresql.8``), a comparison and a
target. ``emit`` adds ``goals`` — one entry per goal with the measured value and ``met`` (true/false, or null when
this run did not measure it, e.g. a backend left out) — and prints the JSON object (the script's only stdout).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, "<": operator.lt,
                                                   ">": operator.gt}


@dataclass(frozen=True)
class Goal:
    """One goal: ``value at path <op> target``; ``when`` (optional) says whether this run measured what it means."""

    description: str
    path: str
    op: str
    target: float
    when: Callable[[dict[str, Any]], bool] | None = None

    def evaluate(self, result: dict[str, Any]) -> dict[str, Any]:
        value = lookup(result, self.path)
        applies = self.when is None or self.when(result)
        met = None if value is None or not applies else _OPS[self.op](float(value), self.target)
        return {"goal": self.description, "metric": self.path, "op": self.op, "target": self.target,
                "value": value, "met": met}


def lookup(result: dict[str, Any], path: str) -> Any:
    """The value at a dotted path, or None when any part is missing."""
    node: Any = result
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def emit(result: dict[str, Any], goals: Sequence[Goal]) -> None:
    """Add the goals' outcome to ``result`` and print it as the script's one JSON object."""
    result["goals"] = [g.evaluate(result) for g in goals]
    print(json.dumps(result, indent=2))
