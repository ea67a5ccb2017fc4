"""Table and partition health: what one snapshot sees in each directory (deltas, delta/base ratio, obsolete and
aborted directories), aborted transactions, and where compaction stands — for the CLI ``health`` command and the UI.

One listing per partition with getAcidState at the current reader snapshot; the queue/history and the aborted
transactions are read with one query per table (and one for the whole warehouse), never per partition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from airflow_acid.acid.errors import AcidStateError
from airflow_acid.acid.writeids import ValidTxnList
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.listing import directory_state
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.compactions import CompactionInfo
from airflow_acid.metastore.partitions import entity_name

Entity = tuple[str, str, str | None]


@dataclass(frozen=True)
class LastCompaction:
    """The newest finished compaction of a table/partition (a COMPLETED_COMPACTIONS row), as Hive prints it."""

    id: int
    type: str
    """'MAJOR', 'MINOR', …"""
    state: str
    """'succeeded', 'failed', 'refused', 'did not initiate', 'aborted'."""
    enqueue_time: int | None
    """Epoch ms."""
    end_time: int | None
    """Epoch ms."""
    error: str | None

    @classmethod
    def of(cls, info: CompactionInfo) -> LastCompaction:
        return cls(info.id, info.type.display, info.state.display, info.enqueue_time, info.end, info.error_message)


@dataclass(frozen=True)
class PartitionHealth:
    """One table (unpartitioned) or partition now."""

    database: str
    table: str
    partition: str | None
    location: str
    base_write_id: int | None
    """Write id of the base a reader uses now (None: no base)."""
    base_bytes: int
    """Bytes of that base (of the original files when there is no base)."""
    deltas: int
    """Current insert deltas."""
    delete_deltas: int
    """Current delete deltas."""
    delta_bytes: int
    """Bytes of the current deltas and delete deltas."""
    delta_base_ratio: float | None
    """delta_bytes / base_bytes (the Initiator's percentage test); None without base data."""
    obsolete_dirs: int
    """Directories the Cleaner may delete once no reader needs them."""
    aborted_dirs: int
    """Directories written by aborted transactions or failed compactions."""
    aborted_txns: int
    """Aborted transactions whose write records for this table/partition are still kept."""
    current_compaction: str | None
    """The queue row of this table/partition ('initiated', 'working' or 'ready for cleaning'), e.g.
    ``"MAJOR compaction 7 working"``."""
    last_compaction: LastCompaction | None
    error: str | None = None
    """Why the directory could not be read (the counts are then 0)."""
    small_deltas: int = 0
    """Current deltas smaller than metastore.deltametrics.delta.pct.threshold of the base (Hive's small deltas)."""

    @property
    def name(self) -> str:
        """``db.table`` or ``db.table/partition`` for messages."""
        return entity_name(self.database, self.table, self.partition)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``last_compaction`` a nested dict or None)."""
        return asdict(self)


def table_health(warehouse: AcidWarehouse, table: str) -> list[PartitionHealth]:
    """One row per partition (by name), or one row for an unpartitioned table.

    NoSuchObjectError when the table does not exist, NotTransactionalError when it is not an ACID table.
    """
    info = warehouse.transactional_table(table)
    scan = _Scan(warehouse)
    return scan.table(info, scan.aborted_counts(info.database, info.name))


def warehouse_health(warehouse: AcidWarehouse, database: str | None = None) -> list[PartitionHealth]:
    """:func:`table_health` of every transactional table (of ``database``, or of every database), by name."""
    catalog = warehouse.metastore.catalog
    databases = [database.lower()] if database else catalog.list_databases()
    scan = _Scan(warehouse)
    aborted = scan.aborted_counts()
    rows: list[PartitionHealth] = []
    for db in databases:
        for name in catalog.list_tables(db):
            info = catalog.get_table(db, name)
            if info.is_transactional:
                rows += scan.table(info, aborted)
    return rows


class _Scan:
    """Shared state of one health scan: one transaction snapshot for every table."""

    def __init__(self, warehouse: AcidWarehouse) -> None:
        self.warehouse = warehouse
        self.metastore = warehouse.metastore
        self.store = self.metastore.initiator
        self.txns: ValidTxnList = self.metastore.snapshots.valid_txn_list()

    def aborted_counts(self, database: str | None = None, table: str | None = None) -> dict[Entity, int]:
        """Aborted transactions per table/partition (every group: no count or age threshold)."""
        return {(g.database, g.table, g.partition): g.count for g in self.store.abort_groups(-1, -1)
                if g.table is not None and (database is None or g.database == database)
                and (table is None or g.table == table)}

    def table(self, info: TableInfo, aborted: dict[Entity, int]) -> list[PartitionHealth]:
        targets: list[tuple[str | None, str]]
        if info.is_partitioned:
            targets = [(name, p.location) for name, p in
                       sorted(self.store.partition_locations(info.database, info.name).items())]
        else:
            targets = [(None, info.location)]
        write_ids = self.metastore.snapshots.valid_write_id_list(info.full_name, self.txns)
        queue, history = _compactions_by_partition(self.metastore.compactions.find(db=info.database, table=info.name))
        rows = []
        for partition, location in targets:
            entity = (info.database, info.name, partition)
            current = queue.get(partition)
            last = history.get(partition)
            common: dict[str, Any] = dict(database=info.database, table=info.name, partition=partition, location=location,
                          aborted_txns=aborted.get(entity, 0),
                          current_compaction=None if current is None else
                          f"{current.type.display} compaction {current.id} {current.state.display}",
                          last_compaction=None if last is None else LastCompaction.of(last))
            try:
                state = directory_state(location, write_ids, self.txns, filesystem=self.warehouse.filesystem,
                                        missing_ok=True)
            except (AcidStateError, OSError) as exc:
                rows.append(PartitionHealth(base_write_id=None, base_bytes=0, deltas=0, delete_deltas=0,
                                            delta_bytes=0, delta_base_ratio=None, obsolete_dirs=0, aborted_dirs=0,
                                            error=f"cannot read {location}: {exc}", **common))
                continue
            base_bytes, delta_bytes = state.base_size, state.delta_size
            small_limit = base_bytes * self.metastore.conf.deltametrics_delta_pct_threshold
            small = sum(1 for d in state.deltas if d.size < small_limit) if base_bytes else 0
            rows.append(PartitionHealth(
                base_write_id=state.base_directory.write_id if state.base_directory is not None else None,
                base_bytes=base_bytes, deltas=len(state.insert_deltas), delete_deltas=len(state.delete_deltas),
                delta_bytes=delta_bytes, delta_base_ratio=delta_bytes / base_bytes if base_bytes else None,
                obsolete_dirs=len(state.obsolete), aborted_dirs=len(state.aborted), small_deltas=small, **common))
        return rows


def _compactions_by_partition(infos: Iterable[CompactionInfo]
                              ) -> tuple[dict[str | None, CompactionInfo], dict[str | None, CompactionInfo]]:
    """(newest queue row, newest history row) per partition, by compaction id."""
    queue: dict[str | None, CompactionInfo] = {}
    history: dict[str | None, CompactionInfo] = {}
    for info in infos:
        target = queue if info.state.is_queued else history
        kept = target.get(info.partition)
        if kept is None or info.id > kept.id:
            target[info.partition] = info
    return queue, history
