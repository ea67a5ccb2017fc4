"""Undoing a compaction within its delayed-cleanup window (docs/operations.md#undoing-a-compaction), and removing
the output of an undone compaction once no reader can select it.

The undo itself is one metastore transaction (:meth:`~airflow_acid.metastore.undo.UndoStore.undo`): the compactor
transaction C becomes an aborted one, so every snapshot taken afterwards selects the files the compaction replaced
(still on disk: the row was never cleaned), while a reader whose snapshot predates the undo keeps the ``_vC``
output it selected. The output directories (``base_N_vC``, ``delta_x_y_vC``, ``delete_delta_x_y_vC``) are deleted
as soon as no transaction opened between C and the undo is still open: at once when there is none, else by a later
Cleaner cycle. Until then neither the Cleaner nor the aborted-write cleanup touches them.
"""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass, field

import fsspec

from airflow_acid.acid import names
from airflow_acid.acid.fs import storage_for
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.metastore.undo import UndoneCompaction
from airflow_acid.pycompat import StrEnum

log = logging.getLogger(__name__)


class RemovalStatus(StrEnum):
    """What became of an undone compaction's output."""

    REMOVED = "removed"
    """Its ``_vC`` directories were deleted (or were already gone)."""
    WAITING = "waiting"
    """Transactions that may have selected it are still open; a later Cleaner cycle deletes it."""
    WOULD_REMOVE = "would_remove"
    """Dry run: ``paths`` would be deleted."""


@dataclass
class OutputRemoval:
    """The outcome for one undone compaction's output."""

    compaction_id: int
    entity: str
    status: RemovalStatus
    message: str
    paths: list[str] = field(default_factory=list)
    """The deleted (or, in a dry run, to-be-deleted) directories, as URLs."""
    readers: list[int] = field(default_factory=list)
    """Open transactions it waits for."""


def remove_output(metastore: Metastore, undone: UndoneCompaction, *, dry_run: bool = False,
                  filesystem: fsspec.AbstractFileSystem | None = None) -> OutputRemoval:
    """Delete the ``_vC`` directories of ``undone`` if no transaction that may have selected them is open, then
    drop C's TXN_COMPONENTS row; otherwise say which transactions it waits for."""
    entity = entity_name(undone.database, undone.table, undone.partition)
    readers = metastore.undo.readers_of(undone)
    if readers:
        return OutputRemoval(undone.id, entity, RemovalStatus.WAITING, readers=readers, message=(
            f"the output of undone compaction {undone.id} of {entity} (compactor transaction {undone.txn_id}) stays "
            f"until transaction(s) {', '.join(map(str, readers))}, opened before the undo, end; new readers no "
            "longer select it"))
    try:
        location = _location(metastore, undone)
    except NoSuchObjectError as exc:
        if not dry_run:
            metastore.undo.output_removed(undone)
        return OutputRemoval(undone.id, entity, RemovalStatus.REMOVED, message=f"{exc}; nothing to remove")
    storage = storage_for(location, filesystem)
    listing = storage.list_files()
    tops = {f.path.split("/", 1)[0] for f in listing}
    try:
        tops |= {posixpath.basename(str(p).rstrip("/")) for p in storage.fs.ls(storage.root, detail=False)}
    except FileNotFoundError:
        pass
    doomed = sorted(d for d in tops if _output_of(d, undone.txn_id))
    urls = [storage.url(d) for d in doomed]
    if dry_run:
        return OutputRemoval(undone.id, entity, RemovalStatus.WOULD_REMOVE, paths=urls,
                             message=f"would delete {len(doomed)} output director(y/ies) of undone compaction "
                                     f"{undone.id} from {location}")
    storage.delete_paths(doomed, listing)
    for url in urls:
        log.info("deleted %s (output of undone compaction %s)", url, undone.id)
    metastore.undo.output_removed(undone)
    return OutputRemoval(undone.id, entity, RemovalStatus.REMOVED, paths=urls, message=(
        f"deleted {len(doomed)} output director(y/ies) of undone compaction {undone.id} from {location}"))


def protected_txns(metastore: Metastore) -> set[int]:
    """Compactor txns of undone compactions whose output a reader may still be reading: the Cleaner and the
    aborted-write cleanup must leave their ``_vC`` directories alone."""
    return {u.txn_id for u in metastore.undo.pending() if metastore.undo.readers_of(u)}


def visibility_txn(path: str) -> int:
    """The ``_vC`` of a top-level ACID directory name (0 for anything else)."""
    parsed = names.parse_dir(path) if "/" not in path else None
    return parsed.visibility_txn_id if parsed is not None else 0


def _output_of(name: str, txn_id: int) -> bool:
    return bool(txn_id) and visibility_txn(name) == txn_id


def _location(metastore: Metastore, undone: UndoneCompaction) -> str:
    catalog = metastore.catalog
    if undone.partition is None:
        return catalog.get_table(undone.database, undone.table).location
    return catalog.get_partition(undone.database, undone.table, undone.partition).location


__all__ = ["OutputRemoval", "RemovalStatus", "protected_txns", "remove_output", "visibility_txn"]
