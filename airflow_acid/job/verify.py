"""How a compaction's output is verified before it commits (``[acid] compaction_verify``); a module of its own so
the configuration reads it without loading the plan's ORC and Arrow machinery."""

from __future__ import annotations

VERIFY_MODES = ("digest", "count", "off")
"""Values of a compaction's ``verify`` (``[acid] compaction_verify``)."""

__all__ = ["VERIFY_MODES"]
