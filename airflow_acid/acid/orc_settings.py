"""ORC writer settings of ACID event files (docs/hive-acid.md#orc-writer-settings), from Hive's table properties.

Bases use these values, deltas and delete deltas divide stripe and buffer sizes by ``orc.base.delta.ratio``. Shared
by client statement files and compaction output (the compaction plan carries one :class:`OrcSettings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from airflow_acid.acid.errors import OrcSettingsError
from airflow_acid.acid.orc_rules import ORC_COMPRESSIONS, compression_problem
from airflow_acid.pycompat import Self

KiB = 1024
MiB = 1024 * KiB
DEFAULT_STRIPE_SIZE = 64 * MiB
DEFAULT_BUFFER_SIZE = 256 * KiB
DEFAULT_ROW_INDEX_STRIDE = 10000
BASE_DELTA_RATIO = 8
"""``orc.base.delta.ratio``: delta files use stripe and buffer sizes divided by this."""

__all__ = ["ORC_COMPRESSIONS", "OrcSettings"]


@dataclass(frozen=True)
class OrcSettings:
    """ORC writer settings: compression, stripe/buffer sizes of a base, row index stride, base/delta ratio."""

    compression: str = "ZLIB"
    stripe_size: int = DEFAULT_STRIPE_SIZE
    buffer_size: int = DEFAULT_BUFFER_SIZE
    row_index_stride: int = DEFAULT_ROW_INDEX_STRIDE
    base_delta_ratio: int = BASE_DELTA_RATIO

    error: ClassVar[type[ValueError]] = OrcSettingsError
    """Exception raised for invalid values (a subclass may report them in its own terms)."""

    def __post_init__(self) -> None:
        problem = compression_problem(self.compression)
        if problem is not None:
            raise self.error(f"table property orc.compress={self.compression!r} {problem}"
                             if not problem.startswith("LZO") else f"table property orc.compress: {problem}")
        object.__setattr__(self, "compression", self.compression.upper())
        for name in ("stripe_size", "buffer_size", "base_delta_ratio"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0:
                raise self.error(f"ORC setting {name} must be a positive integer, got {getattr(self, name)!r}")
        if not isinstance(self.row_index_stride, int) or self.row_index_stride < 0:
            raise self.error(f"ORC setting row_index_stride must be >= 0, got {self.row_index_stride!r}")

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> Self:
        """Hive table properties ``orc.compress``, ``orc.stripe.size``, ``orc.compress.size``,
        ``orc.row.index.stride`` and ``orc.base.delta.ratio`` / ``hive.exec.orc.base.delta.ratio``."""
        def number(*keys: str, default: int) -> int:
            for key in keys:
                if key in props:
                    try:
                        return int(props[key])
                    except ValueError:
                        raise cls.error(f"table property {key}={props[key]!r} is not an integer") from None
            return default
        return cls(compression=props.get("orc.compress", "ZLIB"),
                   stripe_size=number("orc.stripe.size", default=DEFAULT_STRIPE_SIZE),
                   buffer_size=number("orc.compress.size", default=DEFAULT_BUFFER_SIZE),
                   row_index_stride=number("orc.row.index.stride", default=DEFAULT_ROW_INDEX_STRIDE),
                   base_delta_ratio=number("orc.base.delta.ratio", "hive.exec.orc.base.delta.ratio",
                                           default=BASE_DELTA_RATIO))
