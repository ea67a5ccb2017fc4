"""The Cleaner: deletes what compactions and aborted writers made obsolete, once no reader can still choose it
(docs/hive-acid.md#cleaner, Hive 4's CompactionCleaner and AbortedTxnCleaner).

A 'ready for cleaning' row is cleaned when every transaction that was open when its compactor transaction C
committed has ended (CQ_NEXT_TXN_ID ≤ min open txn id, past the delayed-cleanup retention). The cleaning snapshot
is TL = (HWM = watermark − 1, exceptions = aborted txns ≤ HWM) and the table's reader write-id list for it capped
at CQ_HIGHEST_WRITE_ID; the directory is listed once and exactly the directories getAcidState calls obsolete or
aborted are deleted in one batched call (each path checked to lie inside the table/partition location). The deleted
paths are checked to be gone (locally one stat each; on object stores by one re-listing), then getAcidState runs
again on the directory without them (HWM = CQ_HIGHEST_WRITE_ID, no exceptions, no txn gate): when nothing obsolete
below that mark remains the row is marked cleaned, otherwise it stays 'ready for cleaning' for a later cycle
(HIVE-24314). Errors — a delete that left a path in place among them — back off exponentially
(hive.compactor.cleaner.retry.*) and end in 'failed'. A cycle cleans a page of rows at a time with the metastore
work batched (the rows' txn states, locations and start marks, then every cleaned row marked in one transaction).

With hive.compactor.clean.aborts.using.cleaner, directories of aborted writes are also removed without a
compaction once an entity has more than hive.compactor.abortedtxn.threshold aborted txns or one older than
hive.compactor.aborted.txn.time.threshold; their TXN_COMPONENTS rows go with them. A failed attempt leaves an
ABORT_TXN_CLEANUP ('c') row in COMPACTION_QUEUE (SHOW COMPACTIONS) whose doubling retry delay holds the entity back;
a successful cleanup, or a cleaned compaction of the entity, removes it (HIVE-27020).

Each cycle first deletes the output of undone compactions that no open transaction may still be reading
(docs/operations.md#undoing-a-compaction); until then neither step above deletes it.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import fsspec

from airflow_acid.acid import names
from airflow_acid.acid.codes import CompactionState, CompactionType, TxnState
from airflow_acid.acid.errors import NotEnoughHistoryError
from airflow_acid.acid.fs import ListedFile, Storage, storage_for
from airflow_acid.acid.state import AcidState, get_acid_state
from airflow_acid.acid.writeids import (
    LONG_MAX,
    ValidCleanerWriteIdList,
    ValidReaderWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
)
from airflow_acid.compactor.errors import CleanerError, describe_error
from airflow_acid.compactor.scope import table_pool
from airflow_acid.compactor.undo import OutputRemoval, protected_txns, remove_output
from airflow_acid.config.scope import CompactionScope
from airflow_acid.metastore import Metastore, hive_mutex
from airflow_acid.metastore.catalog import DatabaseInfo, TableInfo
from airflow_acid.metastore.cleaning import AbortCleanupCandidate
from airflow_acid.metastore.compactions import CompactionInfo
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.metastore.partitions import entity_name
from airflow_acid.pycompat import StrEnum

log = logging.getLogger(__name__)

NO_CLEANUP = "no_cleanup"


class CleanerStatus(StrEnum):
    """What the Cleaner did with one row or entity (``CleanerEntry.status``)."""

    CLEANED = "cleaned"
    """Directories deleted and verified; the row went to the history as 'succeeded'."""
    WOULD_CLEAN = "would_clean"
    """Dry run: ``deletions`` lists what would go; nothing changed."""
    INCOMPLETE = "incomplete"
    """Obsolete directories below the compaction's high watermark remain; the row stays 'ready for cleaning'."""
    WAITING = "waiting"
    """Not cleanable yet (readers that may need the files, or the compaction's own txn still open)."""
    REFUSED = "refused"
    """``no_cleanup`` is set on the table or partition."""
    RETRY = "retry"
    """The attempt failed; retried after the exponential retry retention."""
    FAILED = "failed"
    """Gave up (max attempts reached, or the compaction's txn was aborted after it was marked compacted)."""

    @property
    def display(self) -> str:
        """The status in words (``would clean``), for people."""
        return self.value.replace("_", " ")


@dataclass(frozen=True)
class Deletion:
    """One directory (or original file) the Cleaner deletes, and why."""

    path: str
    """Relative to the table/partition location."""
    url: str
    reason: str


@dataclass(frozen=True)
class Blocker:
    """An open transaction that keeps a row from being cleaned."""

    txn_id: int
    user: str
    host: str
    started: int
    """Epoch milliseconds."""
    age_s: float
    why: str

    def describe(self) -> str:
        return f"transaction {self.txn_id} ({self.user}@{self.host}, open for {self.age_s:.0f} s: {self.why})"


@dataclass
class CleanerEntry:
    """The outcome for one compaction row (``compaction_id``) or one aborted-writes entity (``compaction_id`` None)."""

    compaction_id: int | None
    entity: str
    status: CleanerStatus
    location: str | None = None
    message: str | None = None
    deletions: list[Deletion] = field(default_factory=list)
    aborted_write_ids: tuple[int, ...] = ()
    blockers: list[Blocker] = field(default_factory=list)
    retry_id: int | None = None
    """For an aborted-writes entity: its ABORT_TXN_CLEANUP retry row in COMPACTION_QUEUE, if an attempt failed."""


@dataclass
class CleanerReport:
    """One cycle: cleaned/attempted rows, rows still waiting (with their blockers), aborted-write cleanups."""

    dry_run: bool
    entries: list[CleanerEntry] = field(default_factory=list)
    waiting: list[CleanerEntry] = field(default_factory=list)
    abort_cleanups: list[CleanerEntry] = field(default_factory=list)
    skipped: str | None = None
    """Why the cycle did nothing (on a Hive metastore: Hive's own Cleaner holds its AUX_TABLE mutex)."""
    staging_removed: list[str] = field(default_factory=list)
    """Stale Spark staging directories removed (their write died before its commit or abort)."""
    undone: list[OutputRemoval] = field(default_factory=list)
    """Output of undone compactions removed (or still waiting for readers that may have selected it)."""

    @property
    def deletions(self) -> list[Deletion]:
        return [d for e in self.entries + self.abort_cleanups for d in e.deletions]


class Cleaner:
    """Hive 4's Cleaner over one metastore (``filesystem``: fsspec filesystem for plain-path locations)."""

    def __init__(self, metastore: Metastore, conf: MetastoreConf | None = None, *,
                 filesystem: fsspec.AbstractFileSystem | None = None, scope: CompactionScope | None = None) -> None:
        self.metastore = metastore
        self.scope = scope or CompactionScope()
        """[acid] scope: rows and aborted writes of tables outside it are left to Hive's Cleaner."""
        self.conf = conf or metastore.conf
        self.filesystem = filesystem
        self._table_roots: set[str] = set()  # table locations this cycle looked at (stale Spark staging)
        self._protected: set[int] | None = None  # this cycle's undone compactor txns whose output is still read
        self._snapshot: tuple[int, ValidTxnList] | None = None  # the cycle's cleaner watermark and cleaning TL
        self._readers: dict[str, ValidWriteIdList] = {}  # the tables' reader lists under that TL, this cycle
        self._tables: dict[tuple[str, str], TableInfo | NoSuchObjectError] = {}  # catalog entries, this cycle

    # --- entry points ------------------------------------------------------------------------------------

    def run_cycle(self, dry_run: bool = False) -> CleanerReport:
        """Clean every ready row, report the rows that must wait and why, then clean aborted writes
        (docs/hive-acid.md#aborted-write-cleanup). On a Hive metastore the cycle holds Hive's ``Cleaner`` mutex, and is
        skipped while Hive's Cleaner holds it."""
        held = None
        if self.metastore.profile.is_hive:
            held = hive_mutex.try_acquire(self.metastore.db, hive_mutex.CLEANER)
            if held is None:
                message = ("skipped: Hive's Cleaner is running (AUX_TABLE mutex 'Cleaner' is locked); set "
                           "hive.compactor.cleaner.on=false in Hive to let airflow-acid clean")
                log.warning("Cleaner cycle %s", message)
                return CleanerReport(dry_run, skipped=message)
        try:
            return self._cycle(dry_run)
        finally:
            if held is not None:
                held.release()

    def _cycle(self, dry_run: bool) -> CleanerReport:
        report = CleanerReport(dry_run)
        report.undone = self.remove_undone(dry_run)
        self._protected = protected_txns(self.metastore)
        handled: set[int] = set()
        self._snapshot = self._cleaning_txns()  # one watermark and TL for the cycle's compaction rows
        try:
            for page in self._ready_pages():
                handled.update(info.id for info in page)
                rows = [info for info in page if self._in_scope(info.database, info.table, info.pool_name)]
                for entry in self._clean_page(rows, dry_run) if rows else ():
                    (report.waiting if entry.status == CleanerStatus.WAITING else report.entries).append(entry)
        finally:
            self._snapshot, self._readers, self._tables = None, {}, {}
        for info in self.metastore.compactions.find(state=CompactionState.READY_FOR_CLEANING):
            if (info.id not in handled and info.type is not CompactionType.ABORT_TXN_CLEANUP
                    and self._in_scope(info.database, info.table, info.pool_name)):
                report.waiting.append(self._waiting(info))
        if self.conf.clean_aborts_using_cleaner:
            report.abort_cleanups = self.clean_aborted(dry_run=dry_run)
        if not dry_run:
            report.staging_removed = self._drop_stale_staging()
        self._table_roots.clear()
        self._protected = None
        return report

    def remove_undone(self, dry_run: bool = False) -> list[OutputRemoval]:
        """Delete the output of undone compactions that no open transaction may still be reading
        (docs/operations.md#undoing-a-compaction)."""
        results = []
        for undone in self.metastore.undo.pending():
            try:
                results.append(remove_output(self.metastore, undone, dry_run=dry_run, filesystem=self.filesystem))
            except Exception as exc:  # noqa: BLE001 - the output stays invisible; the next cycle tries again
                log.warning("removing the output of undone compaction %s failed: %s", undone.id, describe_error(exc))
        return results

    def _protected_txns(self) -> set[int]:
        """Undone compactor txns whose output a reader may still be reading (asked once per cycle)."""
        return self._protected if self._protected is not None else protected_txns(self.metastore)

    def _in_scope(self, database: str, table: str, pool: str | None = None) -> bool:
        """Whether the table is in [acid] scope (its compaction pool read from the catalog when not given)."""
        if not self.scope.explicit or self.scope.covers(database, table, pool):
            return True
        if pool is None and self.scope.pools:
            try:
                info = self.metastore.catalog.get_table(database, table)
            except NoSuchObjectError:
                return False
            return self.scope.covers(database, table, table_pool(info, self._database(database)))
        return False

    def _database(self, name: str) -> DatabaseInfo | None:
        try:
            return self.metastore.catalog.get_database(name)
        except NoSuchObjectError:
            return None

    def _drop_stale_staging(self) -> list[str]:
        """Remove ``.hive-staging_acid_<txn>`` directories (a Spark write that died before its commit or abort) at
        the roots of the tables this cycle looked at, once their transaction is no longer open."""
        if not self._table_roots:
            return []
        txns = self.metastore.snapshots.valid_txn_list()
        removed = []
        for root in sorted(self._table_roots):
            storage = storage_for(root, self.filesystem)
            try:
                entries = storage.fs.ls(storage.root, detail=False)
            except FileNotFoundError:
                continue
            for path in entries:
                txn_id = names.parse_spark_staging(posixpath.basename(str(path).rstrip("/")))
                if txn_id is None or txn_id > txns.high_watermark or txn_id in txns.open:
                    continue
                try:
                    storage.fs.rm(path, recursive=True)
                    removed.append(storage.url(posixpath.basename(str(path).rstrip("/"))))
                except OSError as exc:
                    log.warning("could not remove the stale Spark staging directory %s: %s", path, exc)
        return removed

    def clean(self, cq_id: int, *, dry_run: bool = False) -> CleanerEntry:
        """Clean one 'ready for cleaning' row now if it is ready, else say what it waits for."""
        info = self.metastore.compactions.get(cq_id)
        if info.state is not CompactionState.READY_FOR_CLEANING:
            return CleanerEntry(cq_id, info.full_partition_name, CleanerStatus.WAITING,
                                message=f"compaction {cq_id} is '{info.state.display}', not 'ready for cleaning'")
        if not any(i.id == cq_id for i in self._ready()):
            return self._waiting(info)
        return self._clean_row(info, dry_run)

    def blockers(self, cq_id: int) -> list[Blocker]:
        """Open transactions that keep compaction ``cq_id`` from being cleaned: its own compactor txn while
        uncommitted, every txn below CQ_NEXT_TXN_ID still open, and open txns whose snapshot still treats a txn
        below CQ_NEXT_TXN_ID as open (MIN_HISTORY_LEVEL, which lowers the cleaning watermark)."""
        info = self.metastore.compactions.get(cq_id)
        if info.state is not CompactionState.READY_FOR_CLEANING:
            return []
        open_txns = {t.txnid: t for t in self.metastore.txns.show_transactions() if t.state is TxnState.OPEN}
        now = int(time.time() * 1000)
        found: dict[int, Blocker] = {}

        def add(txn_id: int, why: str) -> None:
            t = open_txns.get(txn_id)
            if t is not None and txn_id not in found:
                found[txn_id] = Blocker(txn_id, t.user, t.host, t.startedtime,
                                        max(0.0, (now - t.startedtime) / 1000), why)

        if info.txn_id is not None and info.next_txn_id is None:
            add(info.txn_id, f"the compactor transaction of compaction {cq_id} has not committed yet")
        limit = info.next_txn_id
        if limit is not None:
            for txn_id in sorted(open_txns):
                if txn_id < limit:
                    add(txn_id, f"opened before compaction {cq_id} committed (its snapshot may read the old files)")
            if self.conf.use_min_history_level:
                for txn_id in self.metastore.cleaning.min_history_holders(limit):
                    add(txn_id, f"its snapshot treats a transaction older than compaction {cq_id}'s commit as open")
        return sorted(found.values(), key=lambda b: b.txn_id)

    # --- compaction rows ---------------------------------------------------------------------------------

    def _ready(self) -> Iterator[CompactionInfo]:
        """Every row of :meth:`_ready_pages`."""
        for page in self._ready_pages():
            yield from page

    def _ready_pages(self) -> Iterator[list[CompactionInfo]]:
        """Rows whose CQ_NEXT_TXN_ID is at or below the *cleaner watermark* (which also counts MIN_HISTORY_LEVEL),
        read metastore.compactor.fetch.size at a time in id order (each page after the last id taken), so one cycle
        reaches every ready row without holding them all; the caller cleans a page before the next is read.

        Hive gates readiness on the min open txn alone and then cleans with the lower watermark, so a row whose
        old files a MIN_HISTORY_LEVEL reader still needs is picked up, cleaned incompletely and retried every
        cycle; gating on the same watermark keeps such rows 'waiting' (with their blockers named) instead.
        """
        watermark = self._snapshot[0] if self._snapshot is not None else self.metastore.snapshots.cleaner_watermark()
        after = 0
        while True:
            page = self.metastore.cleaning.ready_to_clean(watermark, self.conf.cleaner_retention_ms, after_id=after)
            if page:
                yield page
            if len(page) < self.conf.compactor_fetch_size:
                return
            after = page[-1].id

    def _waiting(self, info: CompactionInfo) -> CleanerEntry:
        entity = info.full_partition_name
        if info.type is CompactionType.ABORT_TXN_CLEANUP:
            due_s = ((info.commit_time or 0) + info.retry_retention - time.time() * 1000) / 1000
            when = f"in {due_s:.0f} s" if due_s > 0 else "in the next Cleaner cycle"
            return CleanerEntry(info.id, entity, CleanerStatus.WAITING, retry_id=info.id, message=(
                f"cleaning the aborted writes of {entity} failed ({info.error_message}); it is retried {when} "
                f"(retry delay {info.retry_retention / 1000:g} s after the first failure, doubling per attempt)"))
        blockers = self.blockers(info.id)
        if blockers:
            message = f"compaction {info.id} of {entity} waits for " + "; ".join(b.describe() for b in blockers)
        elif info.next_txn_id is not None and info.next_txn_id > self.metastore.snapshots.cleaner_watermark():
            message = (f"compaction {info.id} of {entity} committed less than hive.txn.opentxn.timeout="
                       f"{self.conf.opentxn_timeout_ms} ms ago; transactions below {info.next_txn_id} may still "
                       "appear, so its files are kept a moment longer")
        elif info.retry_retention:
            message = (f"compaction {info.id} of {entity} waits {info.retry_retention / 1000:g} s after its commit "
                       f"before the next cleaning attempt (after an error: {info.error_message})")
        elif self.conf.delayed_cleanup_enabled:
            message = (f"compaction {info.id} of {entity} is kept hive.compactor.cleaner.retention.time.seconds="
                       f"{self.conf.cleaner_retention_time_s:g} s after its commit (delayed cleanup)")
        else:
            message = (f"compaction {info.id} of {entity} waits for an earlier compaction of the same "
                       "table/partition to be cleaned first")
        return CleanerEntry(info.id, entity, CleanerStatus.WAITING, message=message, blockers=blockers)

    def _clean_row(self, info: CompactionInfo, dry_run: bool) -> CleanerEntry:
        return self._clean_page([info], dry_run)[0]

    def _clean_page(self, page: Sequence[CompactionInfo], dry_run: bool) -> list[CleanerEntry]:
        """Clean a page of ready rows with the metastore work batched: the compactor txns' states, the partitions'
        locations and the cleaner start in one transaction each, the directories one by one (one listing and one
        batched delete each), then every cleaned row marked in ONE transaction. The outcome of each row is the
        same as cleaning it alone: a row whose deletion failed stays 'ready for cleaning' (retried after its
        back-off) and does not hold back the others."""
        ms = self.metastore
        states = ms.cleaning.txn_states(i.txn_id for i in page if i.txn_id is not None)
        entries: list[CleanerEntry] = []
        todo: list[tuple[CompactionInfo, CleanerEntry, TableInfo]] = []
        gone: dict[int, CleanerEntry] = {}  # table/partition dropped: nothing to clean, marked cleaned
        targets = self._resolve_page([i for i in page if states.get(i.txn_id or 0) not in _NOT_CLEANABLE])
        for info in page:
            entity = info.full_partition_name
            entry = CleanerEntry(info.id, entity, CleanerStatus.CLEANED)
            txn_state = states.get(info.txn_id) if info.txn_id is not None else None
            if txn_state is TxnState.OPEN:
                entries.append(self._waiting(info))
                continue
            entries.append(entry)
            if txn_state is TxnState.ABORTED:  # HIVE-29572: its output is invisible; nothing of its inputs is obsolete
                entry.status = CleanerStatus.FAILED
                entry.message = (f"the compactor transaction {info.txn_id} of compaction {info.id} was aborted after "
                                 f"the compaction was marked compacted; its output is invisible and is removed by "
                                 f"a later cleaning; {entity} will be compacted again")
                if not dry_run:
                    ms.compactions.mark_failed(info.id, entry.message)
                continue
            target = targets[info.id]
            if isinstance(target, NoSuchObjectError):
                entry.message = f"{target}; nothing to clean"
                if dry_run:
                    entry.status = CleanerStatus.WOULD_CLEAN
                else:
                    gone[info.id] = entry
                continue
            table, location, no_cleanup = target
            entry.location = location
            if no_cleanup:
                entry.status = CleanerStatus.REFUSED
                entry.message = f"{NO_CLEANUP}=true is set on {no_cleanup}; its obsolete files are kept"
                if not dry_run:
                    ms.compactions.mark_refused(info.id, entry.message)
                continue
            todo.append((info, entry, table))
        if todo and not dry_run:
            try:
                ms.cleaning.mark_cleaner_starts([info.id for info, _, _ in todo])
            except Exception as exc:  # noqa: BLE001 - the metastore is down: nothing deleted, the next cycle tries again
                for info, entry, _ in todo:
                    entry.status = CleanerStatus.RETRY
                    entry.message = f"recording the cleaner start of compaction {info.id} failed: {describe_error(exc)}"
                log.warning("recording the cleaner start of %d compaction(s) failed: %s", len(todo), describe_error(exc))
                todo = []
        cleaned: dict[int, tuple[int, ...] | None] = {i: None for i in gone}
        incomplete: list[int] = []
        for info, entry, table in todo:
            try:
                exact = self._clean_directory(info, entry, table, dry_run)
            except Exception as exc:  # noqa: BLE001 - every error backs off, then fails the row
                self._attempt_failed(info, entry, exc, dry_run)
                continue
            if entry.status is CleanerStatus.CLEANED:
                cleaned[info.id] = exact
            elif entry.status is CleanerStatus.INCOMPLETE:
                incomplete.append(info.id)
        if incomplete:
            try:
                ms.cleaning.clear_cleaner_starts(incomplete)
            except Exception as exc:  # noqa: BLE001 - the rows stay 'ready for cleaning' either way
                log.warning("clearing the cleaner start of compactions %s failed: %s", incomplete, describe_error(exc))
        if cleaned:
            self._mark_cleaned(cleaned, {e.compaction_id: e for e in entries if e.compaction_id in cleaned})
        return entries

    def _mark_cleaned(self, cleaned: dict[int, tuple[int, ...] | None], entries: dict[int | None, CleanerEntry]
                      ) -> None:
        """One transaction for the page's cleaned rows; when it fails they stay 'ready for cleaning' (their
        directories are gone: the next cycle finds nothing to delete and marks them)."""
        try:
            marked = self.metastore.cleaning.mark_many_cleaned(cleaned)
        except Exception as exc:  # noqa: BLE001 - the metastore is down: the next cycle tries again
            message = f"marking {len(cleaned)} compaction(s) cleaned failed: {describe_error(exc)}"
            log.warning("%s", message)
            for cq_id in cleaned:
                entries[cq_id].status = CleanerStatus.RETRY
                entries[cq_id].message = f"{entries[cq_id].message}; {message}"
            return
        for cq_id in cleaned:
            if cq_id not in marked:
                entries[cq_id].status = CleanerStatus.RETRY
                entries[cq_id].message = f"compaction {cq_id} left the queue while it was cleaned (finished elsewhere)"

    def _attempt_failed(self, info: CompactionInfo, entry: CleanerEntry, exc: Exception, dry_run: bool) -> None:
        message = f"cleaning {info.full_partition_name} (compaction {info.id}) failed: {describe_error(exc)}"
        log.warning("%s", message)
        entry.message = message
        if dry_run:
            entry.status = CleanerStatus.FAILED
            return
        try:
            row = self.metastore.cleaning.cleaner_attempt_failed(info.id, message[:4000])
        except Exception as inner:  # noqa: BLE001 - the metastore is down: the next cycle tries again
            entry.status = CleanerStatus.RETRY
            entry.message += f" (recording the failure failed too: {describe_error(inner)})"
            return
        entry.status = CleanerStatus.RETRY if row is not None else CleanerStatus.FAILED

    def _clean_directory(self, info: CompactionInfo, entry: CleanerEntry, table: TableInfo, dry_run: bool
                         ) -> tuple[int, ...] | None:
        """List the row's directory once, delete what the cleaning snapshot calls obsolete or aborted in one batched
        call, verify it is gone, and judge what remains below the row's high watermark (docs/hive-acid.md#cleaning
        steps 3–5). Sets ``entry``'s status (CLEANED, INCOMPLETE or WOULD_CLEAN); returns the exact aborted write
        ids to remove from TXN_COMPONENTS (None: everything up to the high watermark)."""
        location = entry.location or table.location
        txns, reader = self._cleaner_lists(table.full_name)
        write_ids = _capped(reader, info.highest_write_id)
        storage = storage_for(location, self.filesystem)
        files = storage.list_files()
        try:
            state = _acid_state(storage, files, write_ids, txns)
        except NotEnoughHistoryError:
            # A later compaction's base above this row's high watermark is visible to the cleaning snapshot
            # (so to every open reader): below it everything the cleaning snapshot calls obsolete may go.
            write_ids = _capped(reader, None)
            state = _acid_state(storage, files, write_ids, txns)
        entry.deletions = _unprotected(planned_deletions(storage, state, txns), self._protected_txns())
        entry.aborted_write_ids = state.aborted_write_ids
        if dry_run:
            entry.status = CleanerStatus.WOULD_CLEAN
            return None
        _delete(storage, entry.deletions, files)
        after = _verified(storage, entry.deletions, files)
        remaining = self._remaining(storage, after, info.highest_write_id or write_ids.high_watermark,
                                    write_ids.table, {d.path for d in entry.deletions})
        if remaining:
            entry.status = CleanerStatus.INCOMPLETE
            entry.message = (f"obsolete directories below write id {info.highest_write_id} remain in {location}: "
                             f"{remaining}; they are not yet invisible to every snapshot, so compaction "
                             f"{info.id} stays 'ready for cleaning'")
            return None
        entry.message = f"deleted {len(entry.deletions)} obsolete/aborted director(y/ies) from {location}"
        return state.aborted_write_ids if state.has_uncompacted_aborts else None

    def _resolve_page(self, page: Sequence[CompactionInfo]
                      ) -> dict[int, tuple[TableInfo, str, str | None] | NoSuchObjectError]:
        """:meth:`_resolve` for a page of rows: each table read once per cycle, the partitions of a table in one
        transaction (a name the bulk read misses is looked up alone, for its exact error)."""
        result: dict[int, tuple[TableInfo, str, str | None] | NoSuchObjectError] = {}
        by_table: dict[tuple[str, str], list[CompactionInfo]] = {}
        for info in page:
            by_table.setdefault((info.database, info.table), []).append(info)
        for (db, table_name), rows in by_table.items():
            try:
                table = self._table(db, table_name)
            except NoSuchObjectError as exc:
                result.update((i.id, exc) for i in rows)
                continue
            flagged = table.full_name if _true(table.property(NO_CLEANUP)) else None
            names = [i.partition for i in rows if i.partition is not None]
            found = self.metastore.initiator.partition_locations(db, table_name, names) if names else {}
            for info in rows:
                if info.partition is None:
                    result[info.id] = (table, table.location, flagged)
                    continue
                part = found.get(info.partition)
                if part is None:
                    try:
                        result[info.id] = self._resolve(db, table_name, info.partition)
                    except NoSuchObjectError as exc:
                        result[info.id] = exc
                    continue
                mark = flagged
                if mark is None and _true(part.params.get(NO_CLEANUP)):
                    mark = f"partition {info.partition} of {table.full_name}"
                result[info.id] = (table, part.location, mark)
        return result

    def _table(self, db: str, table_name: str) -> TableInfo:
        """The table's catalog entry, read once per cycle (NoSuchObjectError when dropped)."""
        key = (db, table_name)
        if self._snapshot is None:  # outside a cycle (clean one row): read it now
            self._tables.pop(key, None)
        if key not in self._tables:
            try:
                self._tables[key] = self.metastore.catalog.get_table(db, table_name)
            except NoSuchObjectError as exc:
                self._tables[key] = exc
        found = self._tables[key]
        if isinstance(found, NoSuchObjectError):
            raise found
        self._table_roots.add(found.location)
        return found

    def _resolve(self, db: str, table_name: str, partition: str | None) -> tuple[TableInfo, str, str | None]:
        """(table, location, what carries no_cleanup=true or None); NoSuchObjectError when dropped."""
        catalog = self.metastore.catalog
        table = catalog.get_table(db, table_name)
        self._table_roots.add(table.location)
        flagged = table.full_name if _true(table.property(NO_CLEANUP)) else None
        if partition is None:
            return table, table.location, flagged
        part = catalog.get_partition(db, table_name, partition)
        if flagged is None and _true(part.param(NO_CLEANUP)):
            flagged = f"partition {partition} of {table.full_name}"
        return table, part.location, flagged

    def cleaner_snapshot(self, table: str, *, cap: int | None = None) -> tuple[ValidTxnList, ValidReaderWriteIdList]:
        """docs/hive-acid.md#reader-snapshot-rule step 4–5: TL with HWM = cleaner watermark − 1 and the aborted txns below
        it; the table's reader list for that TL with its HWM capped at ``cap`` (CQ_HIGHEST_WRITE_ID)."""
        txns, reader = self._cleaner_lists(table)
        return txns, _capped(reader, cap)

    def _cleaner_lists(self, table: str) -> tuple[ValidTxnList, ValidWriteIdList]:
        if self._snapshot is None:
            txns = self._cleaning_txns()[1]
            return txns, self.metastore.snapshots.valid_write_id_list(table, txns)
        txns = self._snapshot[1]
        if table not in self._readers:  # every txn below the TL's HWM has ended: the list cannot change
            self._readers[table] = self.metastore.snapshots.valid_write_id_list(table, txns)
        return txns, self._readers[table]

    def _cleaning_txns(self) -> tuple[int, ValidTxnList]:
        """The cleaner watermark and the cleaning TL: HWM = watermark − 1, the aborted txns below it."""
        snapshots = self.metastore.snapshots
        watermark = snapshots.cleaner_watermark()
        hwm = watermark - 1
        now = snapshots.valid_txn_list()
        open_ids = tuple(t for t in now.open if t <= hwm)
        txns = ValidTxnList(high_watermark=hwm, open=open_ids, aborted=tuple(t for t in now.aborted if t <= hwm),
                            min_open_txn=open_ids[0] if open_ids else LONG_MAX)
        return watermark, txns

    def _remaining(self, storage: Storage, files: list[ListedFile], highest_write_id: int, table: str | None,
                   deleted: set[str]) -> list[str]:
        """docs/hive-acid.md#cleaning step 4: obsolete/aborted dirs that a snapshot with HWM = ``highest_write_id`` (no
        exceptions, no txn gate) still reports in ``files`` (the directory after the delete, :func:`_verified`), other
        than those just deleted. When a later compacted base hides everything below that mark (not enough history at
        it), whatever that newest base makes obsolete must be gone."""
        try:
            state = _acid_state(storage, files, ValidCleanerWriteIdList(table=table, high_watermark=highest_write_id),
                                None)
        except NotEnoughHistoryError:  # judge against the newest base instead
            state = _acid_state(storage, files, ValidCleanerWriteIdList(table=table, high_watermark=LONG_MAX - 1),
                                None)
        return sorted((set(state.obsolete) | set(state.aborted)) - deleted)

    # --- aborted writes without a compaction (docs/hive-acid.md#aborted-write-cleanup) -------------------

    def clean_aborted(self, *, dry_run: bool = False) -> list[CleanerEntry]:
        """Delete the aborted directories of every table/partition whose aborted txns exceed
        hive.compactor.abortedtxn.threshold or include one older than hive.compactor.aborted.txn.time.threshold,
        and remove the TXN_COMPONENTS rows they no longer need. A failed attempt leaves (or updates) the entity's
        ABORT_TXN_CLEANUP row in COMPACTION_QUEUE with the error and a doubling retry delay (Hive 4, HIVE-27020);
        a successful one removes it."""
        entries = []
        conf = self.conf
        for c in self.metastore.cleaning.ready_to_clean_aborts(
                conf.abortedtxn_threshold, int(conf.aborted_txn_time_threshold_s * 1000)):
            if not self._in_scope(c.database, c.table):
                continue
            db, table_name, partition = c.database, c.table, c.partition
            entity = entity_name(db, table_name, partition)
            entry = CleanerEntry(None, entity, CleanerStatus.CLEANED, retry_id=c.retry_id)
            entries.append(entry)
            try:
                table, location, no_cleanup = self._resolve(db, table_name, partition)
                if table.is_partitioned and partition is None:
                    entry.status = CleanerStatus.WAITING
                    entry.message = (f"aborted writes of {entity} are recorded without a partition; they are "
                                     "cleaned when the partitions are compacted")
                    continue
                entry.location = location
                if no_cleanup:
                    entry.status = CleanerStatus.REFUSED
                    entry.message = f"{NO_CLEANUP}=true is set on {no_cleanup}; aborted directories are kept"
                    continue
                txns, reader = self.cleaner_snapshot(table.full_name)
                cap = reader.min_open - 1 if reader.min_open is not None else reader.high_watermark
                write_ids = _capped(reader, cap)
                storage = storage_for(location, self.filesystem)
                files = storage.list_files()
                state = _acid_state(storage, files, write_ids, txns)
                entry.deletions = _unprotected([d for d in planned_deletions(storage, state, txns)
                                                if d.path in state.aborted], self._protected_txns())
                entry.aborted_write_ids = state.aborted_write_ids
                if dry_run:
                    entry.status = CleanerStatus.WOULD_CLEAN
                    continue
                _delete(storage, entry.deletions, files)
                after = _acid_state(storage, _verified(storage, entry.deletions, files), write_ids, txns)
                if after.aborted:
                    entry.status = CleanerStatus.INCOMPLETE
                    entry.message = f"aborted directories remain in {location}: {list(after.aborted)}"
                    continue
                compactor_txns = sorted({v for v in (_visibility(p) for p in state.aborted) if v})
                exact = state.aborted_write_ids if state.has_uncompacted_aborts else None
                removed = self.metastore.cleaning.mark_aborts_cleaned(
                    db, table_name, partition, aborted_txns=[t for t in txns.aborted if t <= txns.high_watermark],
                    max_write_id=cap, exact_write_ids=exact, compactor_txns=compactor_txns)
                entry.message = (f"deleted {len(entry.deletions)} aborted director(y/ies) from {location}; removed "
                                 f"{removed} TXN_COMPONENTS row(s)")
            except NoSuchObjectError as exc:
                entry.status = CleanerStatus.WAITING
                entry.message = f"{exc}; its aborted components are left to the housekeeper"
            except Exception as exc:  # noqa: BLE001 - recorded on the entity's retry row, retried after its delay
                entry.status = CleanerStatus.RETRY
                entry.message = f"cleaning aborted writes of {entity} failed: {describe_error(exc)}"
                log.warning("%s", entry.message)
                if not dry_run:
                    self._record_abort_failure(entry, c)
        return entries

    def _record_abort_failure(self, entry: CleanerEntry, c: AbortCleanupCandidate) -> None:
        entry.message = entry.message or "cleaning aborted writes failed"
        try:
            row = self.metastore.cleaning.abort_cleanup_failed(
                c.database, c.table, c.partition, entry.message[:4000],
                base_retention_ms=int(self.conf.cleaner_retry_retention_s * 1000))
        except Exception as inner:  # noqa: BLE001 - the metastore is down: the next cycle tries again
            entry.message += f" (recording the failure failed too: {describe_error(inner)})"
            return
        entry.retry_id = row.id
        entry.message += (f"; retried {row.retry_retention / 1000:g} s after the first failure "
                          f"(ABORT_TXN_CLEANUP row {row.id} in SHOW COMPACTIONS)")

    def aborted_candidates(self) -> list[tuple[str, str, str | None]]:
        """(db, table, partition) whose aborted writes are due for cleaning now (see :meth:`clean_aborted`)."""
        return [(c.database, c.table, c.partition) for c in self.metastore.cleaning.ready_to_clean_aborts(
            self.conf.abortedtxn_threshold, int(self.conf.aborted_txn_time_threshold_s * 1000))]


# --- helpers -------------------------------------------------------------------------------------------------


def planned_deletions(storage: Storage, state: AcidState, txns: ValidTxnList | None) -> list[Deletion]:
    """Obsolete ∪ aborted paths of ``state`` with the reason for each; every path is checked to lie inside
    ``storage``'s root (CleanerError otherwise, before anything is deleted)."""
    result = []
    for path in state.obsolete:
        result.append(Deletion(_checked(storage, path), storage.url(path), _obsolete_reason(path, state)))
    for path in state.aborted:
        if path in state.obsolete:
            continue
        result.append(Deletion(_checked(storage, path), storage.url(path), _aborted_reason(path, state, txns)))
    return result


def _checked(storage: Storage, path: str) -> str:
    parts = path.split("/")
    root = storage.root.rstrip("/") + "/"
    if (not path or path.startswith("/") or posixpath.normpath(path) != path or ".." in parts or "." in parts
            or not storage.full_path(path).startswith(root)):
        raise CleanerError(f"refusing to delete {path!r}: it is not a path inside {storage.url()}")
    return path


def _obsolete_reason(path: str, state: AcidState) -> str:
    parsed = names.parse_dir(path) if "/" not in path else None
    if parsed is None:
        return f"obsolete: original data superseded by {state.base}"
    if isinstance(parsed, names.BaseDir):
        return f"obsolete: older base superseded by {state.base}"
    if state.base_directory is not None and parsed.max_write_id <= state.base_directory.write_id:
        return f"obsolete: write ids {parsed.min_write_id}-{parsed.max_write_id} are in {state.base}"
    for d in sorted(state.deltas, key=lambda d: d.is_delete != parsed.is_delete):  # same kind first
        if d.min_write_id <= parsed.min_write_id and d.max_write_id >= parsed.max_write_id:
            return f"obsolete: write ids {parsed.min_write_id}-{parsed.max_write_id} are in {d.name}"
    return "obsolete: covered by a newer directory"


def _aborted_reason(path: str, state: AcidState, txns: ValidTxnList | None) -> str:
    visibility = _visibility(path)
    if visibility and txns is not None and txns.is_txn_aborted(visibility):
        return f"aborted: output of compaction transaction {visibility}, which aborted"
    parsed = names.parse_dir(path)
    if isinstance(parsed, names.DeltaDir):
        return f"aborted: every write id {parsed.min_write_id}-{parsed.max_write_id} was aborted"
    return "aborted: written by an aborted transaction"


def _unprotected(deletions: list[Deletion], protected: set[int]) -> list[Deletion]:
    """``deletions`` without the output of undone compactions that a reader may still be reading."""
    return [d for d in deletions if _visibility(d.path) not in protected] if protected else deletions


def _visibility(path: str) -> int:
    parsed = names.parse_dir(path) if "/" not in path else None
    return parsed.visibility_txn_id if parsed is not None else 0


def _acid_state(storage: Storage, files: list[ListedFile], write_ids: ValidWriteIdList,
                txns: ValidTxnList | None) -> AcidState:
    return get_acid_state(files, write_ids, txns, metadata_reader=lambda p: storage.read_bytes(p).decode())


def _delete(storage: Storage, deletions: Sequence[Deletion], listing: Sequence[ListedFile]) -> None:
    """One batched delete of every planned path (objects from the listing the plan came from), then the log."""
    storage.delete_paths([d.path for d in deletions], listing)
    for d in deletions:
        log.info("deleted %s (%s)", d.url, d.reason)


def _verified(storage: Storage, deletions: Sequence[Deletion], listing: list[ListedFile]) -> list[ListedFile]:
    """The directory after the delete, checked: CleanerError naming what a delete left in place (the row then stays
    'ready for cleaning' and is retried), so a silent partial delete is never marked cleaned.

    Locally each deleted path is checked not to exist any more (one stat each; the rest of the directory is the
    listing the plan came from: nothing below the row's high watermark appears after it). On an object store a
    batched delete can drop keys without raising, and its listing is the only batched existence check: the
    directory is listed again, as Hive's Cleaner does."""
    doomed = [d.path for d in deletions]
    if storage.is_local:
        left = [p for p in doomed if storage.fs.exists(storage.full_path(p))]
        after = [f for f in listing if not any(f.path == p or f.path.startswith(p + "/") for p in doomed)]
    else:
        after = storage.list_files()
        present = {f.path for f in after}
        left = [p for p in doomed if p in present or any(f.startswith(p + "/") for f in present)]
    if left:
        raise CleanerError(f"deleting from {storage.url()} left {left} in place; the directory is cleaned again "
                           "in a later cycle")
    return after


_NOT_CLEANABLE = (TxnState.OPEN, TxnState.ABORTED)  # a row whose compactor txn is in one of these is not resolved


def _capped(reader: ValidWriteIdList, cap: int | None) -> ValidCleanerWriteIdList:
    """Hive's ValidCleanerWriteIdList: the reader list with its HWM lowered to ``cap`` (None or ≤ 0: unchanged);
    a directory whose write ids reach above the HWM (a later compaction's output) is never selected."""
    if cap is None or cap <= 0 or cap >= reader.high_watermark:
        return ValidCleanerWriteIdList(table=reader.table, high_watermark=reader.high_watermark, open=reader.open,
                                       aborted=reader.aborted)
    return ValidCleanerWriteIdList(table=reader.table, high_watermark=cap,
                                   open=tuple(w for w in reader.open if w <= cap),
                                   aborted=tuple(w for w in reader.aborted if w <= cap))


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


__all__ = ["Blocker", "Cleaner", "CleanerEntry", "CleanerReport", "CleanerStatus", "Deletion",
           "planned_deletions"]
