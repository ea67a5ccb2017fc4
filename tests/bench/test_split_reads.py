"""bench/bench_split_reads.py at a small scale: the bucket is cut into several splits, the bounded splits read fewer
delete events than the unbounded ones, and both get the generator's surviving rows."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import pytest
from bench_split_reads import GOALS, run


@pytest.mark.slow  # builds a 1.6 M-row bucket and reads it 2 × 2 × 2 times (~15 s on a busy 2-core machine)
def test_small_scale_run_bounds_the_splits_delete_events(tmp_path):
    result = run(tmp_path, scale=0.2, n_splits=4, deltas=1, repeat=1)
    assert result["splits"] > 1 and result["rows_correct"] == 1
    for mode in ("in_memory", "streamed"):
        every, bounded = result[mode]["every_delete"], result[mode]["bounded"]
        assert bounded["rows"] == every["rows"] == result["rows"] - result["deletes"]
        assert every["delete_events_read"] == result["splits"] * result["deletes"]
        assert bounded["delete_events_read"] < every["delete_events_read"]
    assert GOALS[-1].evaluate(result)["met"] is True  # rows correct
    assert GOALS[0].evaluate(result)["value"] == result["streamed"]["delete_events_read_ratio"] < 1
