"""Undo a compaction inside its delayed-cleanup window (docs/operations.md#undoing-a-compaction) — shared by the CLI
(``airflow-acid compaction undo ID``) and the console. A refusal is an answer with its reason, not an error."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.undo import RemovalStatus, remove_output
from airflow_acid.metastore.errors import UndoRefusedError


@dataclass(frozen=True)
class UndoResult:
    """What an undo request did."""

    compaction_id: int
    undone: bool
    message: str
    """Why it was refused, or what happened to the compaction's output."""
    removed: list[str] = field(default_factory=list)
    """Output directories deleted at once (URLs)."""
    waiting_for: list[int] = field(default_factory=list)
    """Open transactions that may still read the output; the Cleaner deletes it after they end."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def undo_compaction(warehouse: AcidWarehouse, compaction_id: int, *, user: str) -> UndoResult:
    """Undo 'ready for cleaning' compaction ``compaction_id`` for ``user``: its output is aborted at once (new
    snapshots read the files it replaced) and deleted now if no open transaction may be reading it, else by the
    Cleaner. Refused (``undone`` false, the reason in ``message``) when the window passed, the Cleaner started, a
    later compaction built on it or, for a REBALANCE, later writes may name its new ROW__IDs."""
    ms = warehouse.metastore
    try:
        undone = ms.undo.undo(int(compaction_id), user=user)
    except UndoRefusedError as exc:
        return UndoResult(int(compaction_id), False, str(exc))
    removal = remove_output(ms, undone, filesystem=warehouse.filesystem)
    head = (f"compaction {undone.id} of {removal.entity} is undone: compactor transaction {undone.txn_id} is aborted "
            "and readers see the files it replaced")
    if removal.status is RemovalStatus.WAITING:
        return UndoResult(undone.id, True, f"{head}; {removal.message}", waiting_for=removal.readers)
    return UndoResult(undone.id, True, f"{head}; {removal.message}", removed=removal.paths)
