"""Which tables airflow-acid compacts and cleans: ``[acid] scope`` / ``scope_pools``.

An empty scope covers every table (airflow-acid alone on its metastore). With a scope, a table is covered when its
``db.table``, its database or an fnmatch pattern of ``scope`` matches, or its compaction pool
(``hive.compactor.worker.pool``) is one of ``scope_pools``; everything else is left to Hive.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

POOL_KEY = "hive.compactor.worker.pool"


@dataclass(frozen=True)
class CompactionScope:
    """The tables airflow-acid owns: ``patterns`` (``db``, ``db.table`` or fnmatch patterns of ``db.table``, lower
    case) and ``pools`` (Hive compaction pools). Both empty: every table."""

    patterns: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()

    @classmethod
    def parse(cls, scope: str, pools: str = "") -> CompactionScope:
        """From the comma-separated option texts."""
        return cls(tuple(dict.fromkeys(p.strip().lower() for p in scope.split(",") if p.strip())),
                   tuple(dict.fromkeys(p.strip() for p in pools.split(",") if p.strip())))

    @property
    def explicit(self) -> bool:
        """A scope was configured (so airflow-acid shares the metastore with Hive's compactor)."""
        return bool(self.patterns or self.pools)

    def covers(self, database: str, table: str, pool: str | None = None) -> bool:
        """Whether airflow-acid compacts and cleans ``database.table`` (in compaction pool ``pool``)."""
        if not self.explicit:
            return True
        name = f"{database}.{table}".lower()
        if pool and pool in self.pools:
            return True
        return any(p == database.lower() or fnmatchcase(name, p if "." in p else f"{p}.*") for p in self.patterns)

    def in_dedicated_pool(self, pool: str | None) -> bool:
        """The table's pool is one of ``scope_pools`` (pools Hive's workers are configured not to serve)."""
        return bool(pool) and pool in self.pools

    def describe(self) -> str:
        """The scope as the options spell it, for messages."""
        parts = []
        if self.patterns:
            parts.append(f"scope={','.join(self.patterns)}")
        if self.pools:
            parts.append(f"scope_pools={','.join(self.pools)}")
        return " ".join(parts) or "every table"
