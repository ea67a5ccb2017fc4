"""What the compactor's tasks hand each other (Airflow XCom, the CLI's and the console's JSON): one dataclass per
message, each with ``to_xcom()`` (a JSON-friendly dict, the keys DAGs and XCom consumers read) and ``from_xcom()``.

- :class:`QueuedCompaction`: a compaction waiting in the queue (the Initiator sensor's items, the request
  operator's ``compactions``; the compaction operator takes them as its ``compaction(s)``);
- :class:`WorkerOutcome`: what the Worker did with one row (the compaction operator's XCom);
- :class:`CleanerSummary` of :class:`CleanedEntity` items: one Cleaner cycle (the Cleaner operator's XCom);
- :class:`HouseKeeperReport`: one HouseKeeper pass (the HouseKeeper operator's XCom).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from airflow_acid.metastore.compactions import CompactionInfo
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.pycompat import StrEnum

if TYPE_CHECKING:
    from airflow_acid.compactor.cleaner import CleanerEntry, CleanerReport


OUTCOME_XCOM_KEY = "acid_outcome"
"""XCom key of a compaction or request task's outcome, one sentence per compaction (``compaction 12 of
db.t/ds=1: refused — …``); the plugin's run-notes listener writes them into the DAG run's note."""


def compaction_label(database: str, table: str, partition: str | None, type_name: str) -> str:
    """``db.table/partition MAJOR`` — the mapped task's label in the UI."""
    return f"{entity_name(database, table, partition or None)} {type_name}"


@dataclass(frozen=True)
class QueuedCompaction:
    """One compaction waiting in the queue, and why it was queued (when the Initiator just did)."""

    compaction_id: int
    database: str
    table: str
    partition: str | None
    type: str
    """'MAJOR', 'MINOR' or 'REBALANCE'."""
    pool: str | None = None
    reason: str | None = None

    @classmethod
    def of(cls, info: CompactionInfo, reason: str | None = None) -> QueuedCompaction:
        return cls(info.id, info.database, info.table, info.partition, info.type.display, info.pool_name, reason)

    @property
    def label(self) -> str:
        return compaction_label(self.database, self.table, self.partition, self.type)

    def to_xcom(self) -> dict[str, Any]:
        return {"compaction_id": self.compaction_id, "database": self.database, "table": self.table,
                "partition": self.partition, "type": self.type, "pool": self.pool, "reason": self.reason,
                "label": self.label}

    @classmethod
    def from_xcom(cls, data: Mapping[str, Any]) -> QueuedCompaction:
        return cls(int(data["compaction_id"]), data["database"], data["table"], data.get("partition"), data["type"],
                   data.get("pool"), data.get("reason"))


class WorkerStatus(StrEnum):
    """What the Worker did with one row (``WorkerOutcome.status``)."""

    COMPACTED = "compacted"
    """Output committed; the row is 'ready for cleaning'."""
    CLEANER_ONLY = "cleaner_only"
    """Nothing to compact but obsolete/aborted directories exist: row 'ready for cleaning'
    (docs/hive-acid.md#compacting-one-row step 8)."""
    REFUSED = "refused"
    """Nothing to compact, table/partition gone or unsupported: row 'refused'."""
    FAILED = "failed"
    """C aborted, its output removed, row 'failed' (or left for the worker timeout when the metastore was down)."""
    REVOKED = "revoked"
    """The row was revoked and claimed by another worker while this one ran: output discarded, C aborted."""
    ABORTED = "aborted"
    """An operator aborted the row while this worker ran (ABORT COMPACTIONS, the console, ``airflow-acid compaction
    abort``): C aborted, output discarded, the row is 'aborted' in the history."""


@dataclass(frozen=True)
class WorkerOutcome:
    """The result of compacting one queue row."""

    compaction_id: int
    entity: str
    """``db.table[.partition]``."""
    status: WorkerStatus
    message: str | None = None
    txn_id: int | None = None
    job_name: str | None = None
    outputs: tuple[str, ...] = ()
    rows_in: int = 0
    rows_out: int = 0
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def succeeded(self) -> bool:
        """The row reached 'ready for cleaning' (compacted, or only the Cleaner had work)."""
        return self.status in (WorkerStatus.COMPACTED, WorkerStatus.CLEANER_ONLY)

    def to_xcom(self) -> dict[str, Any]:
        return {"compaction_id": self.compaction_id, "entity": self.entity, "status": self.status.value,
                "message": self.message, "txn_id": self.txn_id, "job_name": self.job_name,
                "outputs": list(self.outputs), "rows_in": self.rows_in, "rows_out": self.rows_out,
                "files": self.files, "bytes": self.bytes, "seconds": round(self.seconds, 3)}

    @classmethod
    def from_xcom(cls, data: Mapping[str, Any]) -> WorkerOutcome:
        return cls(int(data["compaction_id"]), data["entity"], WorkerStatus(data["status"]), data.get("message"),
                   data.get("txn_id"), data.get("job_name"), tuple(data.get("outputs") or ()),
                   int(data.get("rows_in", 0)), int(data.get("rows_out", 0)), int(data.get("files", 0)),
                   int(data.get("bytes", 0)), float(data.get("seconds", 0.0)))


@dataclass(frozen=True)
class CleanedEntity:
    """What the Cleaner did with one compaction row or aborted-writes entity, as passed on: the deleted paths and
    the blocking transactions described."""

    compaction_id: int | None
    entity: str
    status: str
    message: str | None = None
    deleted: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()

    @classmethod
    def of(cls, entry: CleanerEntry) -> CleanedEntity:
        return cls(entry.compaction_id, entry.entity, entry.status.value, entry.message,
                   tuple(d.path for d in entry.deletions), tuple(b.describe() for b in entry.blockers))

    def to_xcom(self) -> dict[str, Any]:
        return {"compaction_id": self.compaction_id, "entity": self.entity, "status": self.status,
                "message": self.message, "deleted": list(self.deleted), "blockers": list(self.blockers)}

    @classmethod
    def from_xcom(cls, data: Mapping[str, Any]) -> CleanedEntity:
        return cls(data.get("compaction_id"), data["entity"], data["status"], data.get("message"),
                   tuple(data.get("deleted") or ()), tuple(data.get("blockers") or ()))


@dataclass(frozen=True)
class CleanerSummary:
    """One Cleaner cycle as passed on: cleaned rows, aborted-write cleanups, rows still waiting, deletions."""

    dry_run: bool
    cleaned: tuple[CleanedEntity, ...] = ()
    abort_cleanups: tuple[CleanedEntity, ...] = ()
    waiting: tuple[CleanedEntity, ...] = ()
    deletions: int = 0

    @classmethod
    def of(cls, report: CleanerReport) -> CleanerSummary:
        return cls(report.dry_run, tuple(map(CleanedEntity.of, report.entries)),
                   tuple(map(CleanedEntity.of, report.abort_cleanups)), tuple(map(CleanedEntity.of, report.waiting)),
                   len(report.deletions))

    def to_xcom(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "cleaned": [e.to_xcom() for e in self.cleaned],
                "abort_cleanups": [e.to_xcom() for e in self.abort_cleanups],
                "waiting": [e.to_xcom() for e in self.waiting], "deletions": self.deletions}

    @classmethod
    def from_xcom(cls, data: Mapping[str, Any]) -> CleanerSummary:
        def entities(key: str) -> tuple[CleanedEntity, ...]:
            return tuple(CleanedEntity.from_xcom(e) for e in data.get(key) or ())
        return cls(bool(data["dry_run"]), entities("cleaned"), entities("abort_cleanups"), entities("waiting"),
                   int(data.get("deletions", 0)))


@dataclass
class HouseKeeperReport:
    """What one HouseKeeper pass did (``ran`` False: another HouseKeeper held the lease)."""

    ran: bool
    message: str = ""
    aborted_txns: list[int] = field(default_factory=list)
    deleted_locks: int = 0
    write_set_rows_deleted: int = 0
    min_history_rows_deleted: int = 0
    txn_to_write_id_rows_deleted: int = 0
    txns_deleted: int = 0
    history_rows_purged: int = 0
    decision_log_rows_purged: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary."""
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}

    def to_xcom(self) -> dict[str, Any]:
        return self.to_dict()

    @classmethod
    def from_xcom(cls, data: Mapping[str, Any]) -> HouseKeeperReport:
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        values["aborted_txns"] = list(values.get("aborted_txns") or [])
        return cls(**values)


__all__ = ["CleanedEntity", "CleanerSummary", "HouseKeeperReport", "QueuedCompaction", "WorkerOutcome",
           "WorkerStatus", "compaction_label"]
