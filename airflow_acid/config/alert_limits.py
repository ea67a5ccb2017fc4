"""The backlog alert limits (``[acid] alert_max_backlog``, ``alert_max_ready_for_cleaning_age``,
``alert_max_initiated_age``): past which backlog the housekeeping DAG's check fails."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from airflow_acid.errors import AcidInputError


@dataclass(frozen=True)
class BacklogLimits:
    """The limits; None switches a check off.

    ``max_backlog``: rows waiting for a worker or the Cleaner ('initiated' + 'working' + 'ready for cleaning').
    ``max_ready_for_cleaning_age_s``: age of the oldest 'ready for cleaning' row (since its compaction committed).
    ``max_initiated_age_s``: age of the oldest 'initiated' row (since it was queued).
    """

    max_backlog: int | None = None
    max_ready_for_cleaning_age_s: float | None = None
    max_initiated_age_s: float | None = None

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value is not None and (not math.isfinite(float(value)) or float(value) < 0):
                raise AcidInputError(f"alert limit {name}={value!r} must be a non-negative number (or unset)")

    @property
    def any(self) -> bool:
        return any(v is not None for v in asdict(self).values())
