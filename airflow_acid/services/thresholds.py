"""One table/partition against one Initiator threshold, as a serialisable value (no Airflow imports).

The Airflow sensors poke with it and the deferrable trigger runs it in a thread (both only translate); the verdict
comes from the Initiator's pure :func:`decide_compaction` (docs/hive-acid.md#compaction-type) with only the threshold under
test switched on.
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_acid.compactor.decision import DirectoryStats, Rule, decide_compaction
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.settings import DELTA_NUM_KEY, DELTA_PCT_KEY, table_thresholds
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.metastore.store import Metastore
from airflow_acid.services.errors import TableNotFoundError

_NEVER = 2**62  # a count threshold no directory reaches: switches the delta-count rule off


class ThresholdKind(str, enum.Enum):
    """Which Initiator threshold a check watches."""

    DELTA_COUNT = "delta_count"      # hive.compactor.delta.num.threshold
    DELTA_RATIO = "delta_ratio"      # hive.compactor.delta.pct.threshold
    ABORTED_TXNS = "aborted_txns"    # hive.compactor.abortedtxn.threshold / aborted.txn.time.threshold



@dataclass(frozen=True)
class CheckResult:
    """The verdict: ``met`` and why, with the numbers behind it (JSON-friendly for XCom)."""

    met: bool
    reason: str
    database: str
    table: str
    partition: str | None
    kind: str
    threshold: float | None
    type: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ThresholdCheck:
    """``table`` (``db.table``, or ``table`` in database ``default``) / ``partition`` against one threshold.

    ``threshold`` None means the value that applies to the table: its ``compactorthreshold.*`` property or the
    ``[acid]`` setting. ``age_threshold_s`` (aborted transactions only) also fires on an abort older than that.
    """

    kind: ThresholdKind
    table: str
    partition: str | None = None
    threshold: float | None = None
    age_threshold_s: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ThresholdKind(self.kind))
        if self.threshold is not None and (not math.isfinite(float(self.threshold)) or float(self.threshold) < 0):
            raise ValueError(f"threshold {self.threshold!r} for {self.table} must be a finite non-negative number")

    @property
    def database_and_table(self) -> tuple[str, str]:
        db, _, name = self.table.rpartition(".")
        return (db or "default").lower(), name.lower()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "table": self.table, "partition": self.partition,
                "threshold": self.threshold, "age_threshold_s": self.age_threshold_s}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ThresholdCheck:
        return cls(**values)

    def evaluate(self, metastore: Metastore) -> CheckResult:
        """Look at the table/partition now (one directory listing for the delta checks)."""
        database, table = self.database_and_table
        try:
            info = metastore.catalog.get_table(database, table)
        except NoSuchObjectError:
            raise TableNotFoundError(f"table {database}.{table} does not exist; check the sensor's table "
                                     "argument") from None
        if self.kind is ThresholdKind.ABORTED_TXNS:
            return self._aborts(metastore, database, table)
        if info.is_partitioned and self.partition is None:
            raise TableNotFoundError(f"table {database}.{table} is partitioned; give the partition to watch "
                                     "(e.g. ds=2024-01-01)")
        results = Initiator(metastore).evaluate_table(database, table, enqueue=False)
        mine = [r for r in results if r.partition == self.partition]
        if not mine:
            raise TableNotFoundError(f"partition {self.partition} of {database}.{table} does not exist")
        result = mine[0]
        if result.stats is None:
            raise RuntimeError(f"could not look at {result.name}: {result.reason}")
        thresholds = table_thresholds(metastore.conf, info.properties, table=info.full_name)
        stats: DirectoryStats = result.stats
        limit: int | float
        if self.kind is ThresholdKind.DELTA_COUNT:
            limit = int(self.threshold) if self.threshold is not None else thresholds.delta_num_threshold
            source = "sensor threshold" if self.threshold is not None else thresholds.sources[DELTA_NUM_KEY].split()[-1]
            decision = decide_compaction(stats, delta_num_threshold=limit, delta_pct_threshold=math.inf,
                                         num_source=source)
            met = decision.rule in (Rule.DELTA_NUM, Rule.DELTA_NUM_NO_BASE, Rule.DELTA_NUM_MAJOR_ONLY)
        else:
            limit = float(self.threshold) if self.threshold is not None else thresholds.delta_pct_threshold
            source = "sensor threshold" if self.threshold is not None else thresholds.sources[DELTA_PCT_KEY].split()[-1]
            decision = decide_compaction(stats, delta_num_threshold=_NEVER, delta_pct_threshold=limit,
                                         pct_source=source)
            met = decision.rule is Rule.DELTA_PCT
        return CheckResult(met, decision.reason, database, table, self.partition, self.kind.value, limit,
                           type=decision.type.display if met and decision.type else None,
                           stats={"base_size": stats.base_size, "delta_size": stats.delta_size,
                                  "delta_count": stats.delta_count})

    def _aborts(self, metastore: Metastore, database: str, table: str) -> CheckResult:
        conf = metastore.conf
        limit = int(self.threshold) if self.threshold is not None else conf.abortedtxn_threshold
        age_s = self.age_threshold_s if self.age_threshold_s is not None else conf.aborted_txn_time_threshold_s
        store = metastore.initiator
        groups = [g for g in store.abort_groups(-1, -1)
                  if (g.database, g.table, g.partition) == (database, table, self.partition)]
        count = groups[0].count if groups else 0
        oldest_age = (store.now_ms() - groups[0].oldest_started_ms) / 1000 if groups else None
        too_many = count > limit
        too_old = age_s >= 0 and oldest_age is not None and oldest_age > age_s
        stats = {"aborted_txns": count, "oldest_abort_age_s": None if oldest_age is None else round(oldest_age, 3)}
        name = entity_name(database, table, self.partition or None)
        if not (too_many or too_old):
            age_text = f", oldest {oldest_age:.0f} s ago" if oldest_age is not None else ""
            return CheckResult(False, f"not compacted: {count} aborted transaction(s) on {name}{age_text} ≤ "
                               f"threshold {limit} (age limit {age_s:g} s)", database, table, self.partition,
                               self.kind.value, limit, stats=stats)
        decision = decide_compaction(None, delta_num_threshold=_NEVER, delta_pct_threshold=math.inf,
                                     too_many_aborts=too_many, has_old_abort=too_old, aborted_count=count,
                                     abortedtxn_threshold=limit, oldest_abort_age_s=oldest_age,
                                     aborted_txn_time_threshold_s=age_s)
        return CheckResult(True, decision.reason, database, table, self.partition, self.kind.value, limit,
                           type=decision.type.display if decision.type else None, stats=stats)

