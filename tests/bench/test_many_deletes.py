"""bench/bench_many_deletes.py at a small scale: the benchmark's own code path (build, streamed and in-memory
compactions in child processes, output check) runs and its rows are correct."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import pytest
from bench_many_deletes import GOALS, run


@pytest.mark.slow  # two compactions in child processes (~20 s on a busy 2-core machine)
def test_small_scale_run_streams_the_large_bucket_and_gets_the_rows_right(tmp_path):
    result = run(tmp_path, scale=0.0002, write_ids=20, repeat=1)
    assert result["many"]["streamed"] and not result["few"]["streamed"]
    assert result["many"]["deletes"] == 20_000 and result["few"]["deletes"] == 200
    assert result["many"]["rows_out"] == 25_000 - 20_000 and result["rows_correct"] == 1
    assert result["many"]["peak_anon_mib"] > 0 and result["ratio_per_event_vs_1m"] > 0
    memory_goal = GOALS[0].evaluate(result)
    assert memory_goal["met"] is None  # judged at full scale only


@pytest.mark.slow  # two compactions in child processes
def test_small_scale_minor_run_streams_the_large_buckets_delete_side(tmp_path):
    result = run(tmp_path, scale=0.0002, write_ids=20, repeat=1, minor=True)
    assert result["benchmark"].startswith("minor")
    assert result["many"]["streamed"] and not result["few"]["streamed"]
    assert result["many"]["rows_out"] == result["many"]["deletes"] == 20_000 and result["rows_correct"] == 1
