"""The compaction budgets of one run of the compaction DAG (``[acid] compaction_budget_*``, ``compaction_aging``):
how much one run may read and compute, per run, per compaction pool and per table, and how fast a waiting row
gains priority."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_acid.metastore.errors import InvalidSettingError

DEFAULT_AGING_S = 3600.0

BUDGET_OPTIONS = {
    "compaction_budget_bytes": "bytes_per_run",
    "compaction_budget_core_seconds": "core_seconds_per_run",
    "compaction_budget_pool_bytes": "bytes_per_pool",
    "compaction_budget_table_bytes": "bytes_per_table",
    "compaction_aging": "aging_s",
}
"""``[acid]`` options of the compaction budgets → :class:`Budgets` fields."""


@dataclass(frozen=True)
class Budgets:
    """``[acid]`` compaction budgets of one DAG run (None: unlimited) and the aging period."""

    bytes_per_run: int | None = None
    core_seconds_per_run: float | None = None
    bytes_per_pool: int | None = None
    bytes_per_table: int | None = None
    aging_s: float = DEFAULT_AGING_S

    def __post_init__(self) -> None:
        for name in ("bytes_per_run", "core_seconds_per_run", "bytes_per_pool", "bytes_per_table"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InvalidSettingError(
                    f"compaction budget {name} must be positive (or unset for no limit), got {value}")
        if self.aging_s <= 0:
            raise InvalidSettingError(f"compaction aging must be a positive number of seconds, got {self.aging_s}")


def budgets_from_mapping(values: Mapping[str, Any], *, source: str = "[acid]") -> Budgets:
    """The compaction budgets from a config mapping (unset or empty: unlimited; aging in seconds, or with a unit
    such as ``30m``); InvalidSettingError names a bad option and its value."""
    lowered = {str(k).strip().lower(): v for k, v in values.items()}
    kwargs: dict[str, Any] = {}
    for option, name in BUDGET_OPTIONS.items():
        raw = lowered.get(option)
        if raw is None or str(raw).strip() == "":
            continue
        text = str(raw).strip().lower()
        try:
            if name == "aging_s":
                kwargs[name] = _seconds(text)
            elif name == "core_seconds_per_run":
                kwargs[name] = float(text)
            else:
                kwargs[name] = _bytes(text)
        except ValueError:
            raise InvalidSettingError(f"{source} {option}={raw!r} is not a valid value") from None
        if kwargs[name] <= 0:
            raise InvalidSettingError(f"{source} {option}={raw!r} must be positive"
                                      f"{'' if name == 'aging_s' else ' (unset it for no limit)'}")
    return Budgets(**kwargs)


_BYTE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024 ** 2, "mb": 1024 ** 2, "g": 1024 ** 3,
               "gb": 1024 ** 3, "t": 1024 ** 4, "tb": 1024 ** 4}
_TIME_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def _split_unit(text: str) -> tuple[float, str]:
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
    return float(number), text[len(number):].strip()


def _bytes(text: str) -> int:
    number, unit = _split_unit(text)
    if unit not in _BYTE_UNITS:
        raise ValueError(text)
    return int(number * _BYTE_UNITS[unit])


def _seconds(text: str) -> float:
    number, unit = _split_unit(text)
    if unit not in _TIME_UNITS:
        raise ValueError(text)
    return number * _TIME_UNITS[unit]
