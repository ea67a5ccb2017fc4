"""Standard-library names newer than Python 3.10, the oldest Python airflow-acid supports, with their 3.10 stand-ins.

Imports nothing of the project, so every layer may use it (``acid/`` included).
"""

from __future__ import annotations

import datetime
import enum
import sys
from typing import TYPE_CHECKING, Any

if sys.version_info >= (3, 11):
    from enum import StrEnum
    from typing import Self

    UTC = datetime.UTC
else:
    if TYPE_CHECKING:
        from typing_extensions import Self
    else:  # only ever in annotations, which are never evaluated here; executors may lack typing_extensions
        Self = Any

    UTC = datetime.timezone.utc

    class StrEnum(str, enum.Enum):
        """Python 3.11's ``enum.StrEnum``: members are strings whose ``str()`` and ``format()`` are the value."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str(self.value).__format__(spec)

        @staticmethod
        def _generate_next_value_(name: str, start: int, count: int, last_values: list[str]) -> str:
            return name.lower()


__all__ = ["UTC", "Self", "StrEnum"]
