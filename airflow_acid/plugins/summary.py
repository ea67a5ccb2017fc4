"""The overview at a glance: queue, transaction and lock counts, one line per table rolled up from the per-partition
health rows of :mod:`airflow_acid.services.health`, and what blocks the cleanup backlog."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_acid.acid.codes import CompactionState, LockState, TxnState
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.errors import AcidUserError
from airflow_acid.metastore.compactions import ShowCompactionsRow
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.services import PartitionHealth, explain, warehouse_health

EXPLAINED_ENTITIES = 10  # "what blocks cleanup" asks the Cleaner (a dry run, one listing) per table/partition


@dataclass
class TableSummary:
    """One table's partitions added up; the worst delta/base ratio; what compaction is doing now."""

    database: str
    table: str
    partitions: int = 0
    deltas: int = 0
    delete_deltas: int = 0
    delta_bytes: int = 0
    base_bytes: int = 0
    max_delta_base_ratio: float | None = None
    """The worst partition's delta/base ratio (the Initiator tests each partition on its own)."""
    bases: int = 0
    """Partitions (or the table) with a base directory, empty or not."""
    obsolete_dirs: int = 0
    aborted_dirs: int = 0
    aborted_txns: int = 0
    current_compactions: list[str] = field(default_factory=list)
    last_compaction: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)

    def add(self, row: PartitionHealth) -> None:
        self.partitions += 1
        self.deltas += row.deltas
        self.delete_deltas += row.delete_deltas
        self.delta_bytes += row.delta_bytes
        self.base_bytes += row.base_bytes
        self.bases += row.base_write_id is not None
        if row.delta_base_ratio is not None:
            self.max_delta_base_ratio = max(self.max_delta_base_ratio or 0.0, row.delta_base_ratio)
        self.obsolete_dirs += row.obsolete_dirs
        self.aborted_dirs += row.aborted_dirs
        self.aborted_txns += row.aborted_txns
        if row.current_compaction:
            self.current_compactions.append(row.current_compaction)
        if row.last_compaction is not None and (self.last_compaction is None
                                                or row.last_compaction.id > self.last_compaction["id"]):
            self.last_compaction = asdict(row.last_compaction)
        if row.error:
            self.errors.append(row.error)

    @property
    def delta_base_ratio(self) -> float | None:
        """The table's delta bytes over its base bytes: the ratio of the two sizes shown beside it (None without
        base data)."""
        return self.delta_bytes / self.base_bytes if self.base_bytes else None


def table_summaries(rows: list[PartitionHealth]) -> list[TableSummary]:
    """Per-table totals, in the order the tables first appear."""
    tables: dict[tuple[str, str], TableSummary] = {}
    for row in rows:
        key = (row.database, row.table)
        tables.setdefault(key, TableSummary(*key)).add(row)
    return list(tables.values())


def overview(warehouse: AcidWarehouse, database: str | None = None) -> dict[str, Any]:
    """Counts of queued compactions by state, failures kept in the history, transactions, locks; table totals."""
    ms = warehouse.metastore
    queued = {s.display: len(ms.compactions.find(state=s)) for s in CompactionState if s.is_queued}
    txns = Counter(t.state for t in ms.txns.show_transactions())
    locks = Counter(lock.lock_state for lock in ms.locks.show_locks())
    return {
        "databases": ms.catalog.list_databases(),
        "database": database,
        "queue": queued,
        "failed": len(ms.compactions.find(state=CompactionState.FAILED)),
        "transactions": {"open": txns[TxnState.OPEN], "aborted": txns[TxnState.ABORTED]},
        "locks": {"acquired": locks[LockState.ACQUIRED.display], "waiting": locks[LockState.WAITING.display]},
        "tables": [{**asdict(t), "delta_base_ratio": t.delta_base_ratio}
                   for t in table_summaries(warehouse_health(warehouse, database))],
    }


def cleanup_blockers(warehouse: AcidWarehouse, ready: list[ShowCompactionsRow],
                     limit: int = EXPLAINED_ENTITIES) -> tuple[list[dict[str, Any]], list[str]]:
    """The open transactions that keep 'ready for cleaning' rows from being cleaned, from :func:`explain` of the
    first ``limit`` tables/partitions (each with ``table`` and ``partition`` added); plus one note per entity that
    could not be explained (e.g. dropped meanwhile) or was left out."""
    entities = list(dict.fromkeys((r.dbname, r.tabname, r.partname) for r in ready))
    blockers: list[dict[str, Any]] = []
    notes = [f"{len(entities) - limit} more table(s)/partition(s) not examined"] if len(entities) > limit else []
    for db, table, partition in entities[:limit]:
        try:
            why = explain(warehouse, f"{db}.{table}", partition)
        except AcidUserError as exc:
            notes.append(f"{entity_name(db, table, partition)}: {exc}")
            continue
        blockers += [{"table": f"{db}.{table}", "partition": partition, **b} for b in why.cleanup_blockers]
    return blockers, notes
