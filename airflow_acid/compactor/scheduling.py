"""Cost-aware, fair order of the queued compactions for one run of the compaction DAG.

Every waiting row gets the estimate of :mod:`airflow_acid.compactor.cost` (one listing of its directory): cost =
bytes and files to read and the executor core-seconds that takes, benefit = files and deltas removed plus read
amplification saved. Rows run highest *benefit per core-second* first; aging doubles a row's score for every
``aging_s`` it has waited, so a row with a poor ratio (one huge partition) overtakes fresher cheap ones in bounded
time and no table starves. A run admits rows in that order while its budgets hold — bytes and core-seconds per run,
bytes per compaction pool and per table — skipping (not stopping at) a row that does not fit, so smaller rows still
use what is left. Rows not admitted stay 'initiated' for the next run. A row whose estimate alone exceeds a budget
is never admitted (the budget is never exceeded): it is reported as held, to run by hand or with a larger budget.
Rows the Worker would not compact (nothing to do, table gone, planning error) cost nothing and go first: the
Worker settles them at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.planner import CompactionPreview, preview_queue
from airflow_acid.config.budgets import Budgets
from airflow_acid.metastore.compactions import CompactionInfo
from airflow_acid.metastore.store import Metastore
from airflow_acid.units import iec_size


@dataclass
class ScheduledCompaction:
    """One waiting row with its score and whether this run takes it."""

    preview: CompactionPreview
    score: float
    age_s: float
    admitted: bool = False
    held: str | None = None
    """Why this run does not take it (the budget that would be exceeded)."""

    @property
    def bytes(self) -> int:
        return self.preview.estimate.bytes_in if self.preview.estimate else 0

    @property
    def core_seconds(self) -> float:
        return self.preview.estimate.core_seconds if self.preview.estimate else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**self.preview.as_dict(), "score": round(self.score, 6), "age_s": round(self.age_s, 1),
                "admitted": self.admitted, "held": self.held}


@dataclass
class RunSchedule:
    """The order of one run: admitted rows first (in running order), then the held ones."""

    items: list[ScheduledCompaction] = field(default_factory=list)

    @property
    def admitted(self) -> list[ScheduledCompaction]:
        return [i for i in self.items if i.admitted]

    @property
    def held(self) -> list[ScheduledCompaction]:
        return [i for i in self.items if not i.admitted]

    def totals(self, key: Any = None) -> tuple[int, float]:
        """(bytes, core-seconds) of the admitted rows, optionally of those with ``key(item)`` true."""
        chosen = [i for i in self.admitted if key is None or key(i)]
        return sum(i.bytes for i in chosen), sum(i.core_seconds for i in chosen)


def score_of(preview: CompactionPreview, age_s: float, aging_s: float) -> float:
    """Benefit per estimated core-second, doubled for every ``aging_s`` waited; infinite for rows that cost
    nothing to settle."""
    if preview.estimate is None:
        return float("inf")
    # a row with no benefit still ages: it must run eventually (the Initiator queued it for a reason)
    base = max(preview.estimate.benefit_per_cost, 1e-6)
    factor: float = 2.0 ** min(max(age_s, 0.0) / aging_s, 1000.0)
    return base * factor


def schedule(previews: Iterable[CompactionPreview], budgets: Budgets, now_ms: int) -> RunSchedule:
    """Order ``previews`` (queued rows with their estimates) and admit them within ``budgets``."""
    items = []
    for p in previews:
        age = (now_ms - p.enqueue_time) / 1000 if p.enqueue_time is not None else 0.0
        items.append(ScheduledCompaction(p, score_of(p, age, budgets.aging_s), age))
    items.sort(key=lambda i: (-i.score, i.preview.enqueue_time or 0, i.preview.compaction_id or 0))
    run_bytes, run_seconds = 0, 0.0
    pool_bytes: dict[str | None, int] = {}
    table_bytes: dict[tuple[str, str], int] = {}
    for item in items:
        b, s = item.bytes, item.core_seconds
        table = (item.preview.database, item.preview.table)
        checks = ((budgets.bytes_per_run, run_bytes + b, "per run", b),
                  (budgets.core_seconds_per_run, run_seconds + s, "core-seconds per run", s),
                  (budgets.bytes_per_pool, pool_bytes.get(item.preview.pool, 0) + b,
                   f"for pool {item.preview.pool or 'default'}", b),
                  (budgets.bytes_per_table, table_bytes.get(table, 0) + b, f"for table {'.'.join(table)}", b))
        over = [(limit, what, alone) for limit, total, what, alone in checks if limit is not None and total > limit]
        if over:
            limit, what, alone = over[0]
            amount = _amount if what.startswith("core-seconds") else iec_size
            item.held = (f"estimate {amount(alone)} exceeds the budget of {amount(limit)} {what} on its own; run it "
                         "by hand or raise the budget") if alone > limit else \
                f"the budget of {amount(limit)} {what} is used by rows with a higher score; next run"
            continue
        item.admitted = True
        run_bytes, run_seconds = run_bytes + b, run_seconds + s
        pool_bytes[item.preview.pool] = pool_bytes.get(item.preview.pool, 0) + b
        table_bytes[table] = table_bytes.get(table, 0) + b
    return RunSchedule([i for i in items if i.admitted] + [i for i in items if not i.admitted])


def _amount(value: float) -> str:
    """A core-second budget or estimate (byte ones are written by :func:`iec_size`)."""
    return f"{value:g}"


def priority_weights(admitted: Sequence[ScheduledCompaction], base: int = 1) -> list[int]:
    """Airflow priority weights carrying the order: the first row gets the highest."""
    n = len(admitted)
    return [base + n - 1 - k for k in range(n)]


def schedule_queue(metastore: Metastore, budgets: Budgets, *, pool: str | None = None,
                   rows: Sequence[CompactionInfo] | None = None,
                   filesystem: fsspec.AbstractFileSystem | None = None) -> RunSchedule:
    """Estimate every 'initiated' row (of ``pool``, or ``rows``) from one listing each and order them for this run
    (reads only)."""
    waiting = list(rows) if rows is not None else \
        sorted(metastore.compactions.find(state=CompactionState.INITIATED, pool=pool), key=lambda i: i.id)
    previews = preview_queue(metastore, waiting, filesystem=filesystem,
                             bytes_per_core_second=metastore.runs.throughput())
    return schedule(previews, budgets, metastore.initiator.now_ms())
