"""bench/goals.py and bench/summary.py: goals evaluated against a benchmark's JSON, summary table of a run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from goals import Goal, emit
from summary import table


def test_goal_met_not_met_and_not_measured() -> None:
    result = {"rate": {"postgresql": {"8": 612.0, "1": 180.0}}, "backend": "sqlite"}
    hit = Goal("8 clients >= 500", "rate.postgresql.8", ">=", 500).evaluate(result)
    miss = Goal("1 client >= 250", "rate.postgresql.1", ">=", 250).evaluate(result)
    absent = Goal("mariadb >= 1", "rate.mariadb.8", ">=", 1).evaluate(result)
    other_setup = Goal("on pg", "rate.postgresql.8", ">=", 1, when=lambda r: r["backend"] == "postgresql")
    assert (hit["met"], hit["value"]) == (True, 612.0)
    assert (miss["met"], miss["value"]) == (False, 180.0)
    assert (absent["met"], absent["value"]) == (None, None)
    assert other_setup.evaluate(result)["met"] is None


def test_summary_lists_every_goal_and_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    emit({"ratio": 0.4}, [Goal("ratio >= 0.6", "ratio", ">=", 0.6), Goal("ratio <= 1", "ratio", "<=", 1)])
    (tmp_path / "merge.json").write_text(capsys.readouterr().out)
    (tmp_path / "broken.json").write_text(json.dumps({"benchmark": "broken", "error": "exit code 1", "goals": []}))
    text = table(tmp_path)
    assert "| merge | ratio >= 0.6 | 0.4 >= 0.6 | NOT met |" in text
    assert "| merge | ratio <= 1 | 0.4 <= 1 | met |" in text
    assert "| broken | - | exit code 1 | failed |" in text
