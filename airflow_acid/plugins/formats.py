"""How the console writes numbers, one way everywhere (tables, charts, the Next run page, the JSON-free parts of the
pages): sizes in IEC units (B, KiB, MiB, …), ratios as percentages that never round a real difference to 0 %,
durations, and UTC timestamps of the metastore's epoch milliseconds."""

from __future__ import annotations

import time
from datetime import datetime

from airflow_acid.pycompat import UTC
from airflow_acid.units import iec_size


def when(ms: int | None) -> str:
    """A metastore timestamp (ms since the epoch) as ``YYYY-MM-DD HH:MM:SS`` UTC; empty when missing."""
    if ms is None or ms <= 0:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def duration(ms: float | None) -> str:
    """Milliseconds as ``1h 02m``, ``3m 07s`` or ``4.2s``; empty when missing."""
    if ms is None or ms < 0:
        return ""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def age(ms: int | None) -> str:
    """How long ago a metastore timestamp was, as :func:`duration` writes it."""
    return "" if not ms or ms <= 0 else duration(max(0, int(time.time() * 1000) - ms))


def size(n: float | None) -> str:
    """Bytes in IEC units (:func:`~airflow_acid.units.iec_size`: ``818 B``, ``1.5 KiB``); empty when missing."""
    return "" if n is None else iec_size(n)


def percent(ratio: float | None) -> str:
    """A ratio as a percentage: whole percents from 10 %, one decimal below, ``<0.1%`` for a tiny non-zero ratio
    (never ``0%`` for something that is not zero); empty when missing."""
    if ratio is None:
        return ""
    value = ratio * 100
    if value == 0:
        return "0%"
    if abs(value) < 0.1:
        return "<0.1%"
    return f"{value:.0f}%" if abs(value) >= 10 else f"{value:.1f}%"


def seconds(value: float | None) -> str:
    """Seconds (core-seconds, wall time) as :func:`duration` writes them; empty when missing."""
    return "" if value is None else duration(value * 1000)
