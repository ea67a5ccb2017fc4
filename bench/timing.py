"""Timing helpers shared by the bench scripts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def fastest(fn: Callable[[], Any], repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``fn``, in seconds (the run least disturbed by the rest of the machine)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
