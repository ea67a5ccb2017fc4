"""``hive.transactional.events.mem``: how many delete events of a bucket a merge holds in memory (the name, Hive's
default, and reading it from a job conf). No pyarrow here: the compactor's planner reads it while planning."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_acid.errors import AcidInputError

EVENTS_MEM_KEY = "hive.transactional.events.mem"
"""Hive's name of the threshold: above this many delete events in a bucket's delete deltas, they are streamed."""
DEFAULT_EVENTS_MEM = 10_000_000
"""Hive's default of ``hive.transactional.events.mem``."""


def events_mem_from(settings: Mapping[str, str], default: int = DEFAULT_EVENTS_MEM) -> int:
    """``hive.transactional.events.mem`` from a job conf (a table's ``compactor.*`` properties, prefix stripped),
    else ``default``; a value that is not a non-negative whole number raises AcidInputError naming the key."""
    raw = settings.get(EVENTS_MEM_KEY)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise AcidInputError(f"{EVENTS_MEM_KEY}={raw!r} is not a whole number of delete events") from None
    if value < 0:
        raise AcidInputError(f"{EVENTS_MEM_KEY}={value} must not be negative (0 streams every bucket's deletes)")
    return value
