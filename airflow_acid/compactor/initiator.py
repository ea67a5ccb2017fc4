"""The Initiator (docs/hive-acid.md#initiator, Hive 4): find tables and partitions that need compaction, check that
they may be compacted, decide the type, and queue it — recording every decision with its reason.

One cycle: take the Initiator lease, read the previous cycle's start (AUX_TABLE ``Initiator`` MT_KEY2), stream the
candidates (committed writes since then, entities whose latest history row is 'did not initiate'/'failed', and —
when ``hive.compactor.clean.aborts.using.cleaner`` is false — aborted-txn groups) in batches of
metastore.compactor.fetch.size; per batch filter them in Hive's order, list each surviving directory exactly once,
apply :func:`decide_compaction`, enqueue and store the decisions (ACID_INITIATOR_DECISIONS, one row per
table/partition, replaced each time); then revoke timed-out workers and store the cycle start as the next
last-checked time. Partitions without new writes are never listed, and memory does not grow with their number.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import fsspec

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidTxnList
from airflow_acid.compactor.decision import Decision, DirectoryStats, decide_compaction
from airflow_acid.compactor.errors import CompactorSettingsError
from airflow_acid.compactor.scope import hive_would_pick, table_pool
from airflow_acid.compactor.settings import (
    DELTA_NUM_KEY,
    DELTA_PCT_KEY,
    NO_AUTO_COMPACTION,
    WORKER_POOL_KEY,
    is_true,
    request_overrides,
    table_thresholds,
)
from airflow_acid.config.scope import CompactionScope
from airflow_acid.metastore.aborts import AbortGroup
from airflow_acid.metastore.catalog import DatabaseInfo, TableInfo
from airflow_acid.metastore.compactions import CompactionInfo, EnqueueRequest, EnqueueResult
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.metastore.initiator_store import (
    INITIATOR_MUTEX,
    InitiatorDecisionRecord,
    Outcome,
    PartitionLocation,
)
from airflow_acid.metastore.partitions import entity_name, normalize_partition_name
from airflow_acid.metastore.store import Metastore
from airflow_acid.version import __version__

log = logging.getLogger(__name__)

REPL_PENDING = "hive.repl.first.inc.pending"
DEFAULT_LEASE_S = 3600.0
ENQUEUE_BATCH = 500
"""Compactions queued per metastore transaction by one Initiator cycle."""
DEFAULT_HIVE_ACTIVE_WINDOW_S = 3600.0
"""Hive's Initiator counts as active when it ran or queued within this long ([acid] takeover_hive_active_window)."""
SHADOW_SUFFIX = "-shadow"


@dataclass
class CandidateResult:
    """What the Initiator did with one table/partition and why."""

    database: str
    table: str
    partition: str | None
    outcome: Outcome
    reason: str
    type: CompactionType | None = None
    rule: str | None = None
    compaction_id: int | None = None
    stats: DirectoryStats | None = None
    listed: bool = False
    sources: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``db.table[/partition]`` for messages."""
        return entity_name(self.database, self.table, self.partition)

    def record(self, initiator_id: str) -> InitiatorDecisionRecord:
        s = self.stats
        return InitiatorDecisionRecord(
            database=self.database, table=self.table, partition=self.partition, outcome=self.outcome,
            reason=self.reason, type=self.type, rule=self.rule, compaction_id=self.compaction_id,
            initiator_id=initiator_id, base_size=s.base_size if s else None, delta_size=s.delta_size if s else None,
            delta_count=s.delta_count if s else None)


@dataclass
class InitiatorReport:
    """One Initiator cycle: what was queued, what was declined and why, how much listing it took."""

    ran: bool
    message: str = ""
    started_ms: int = 0
    last_checked_ms: int = 0
    next_last_checked_ms: int | None = None
    candidates: int = 0
    results: list[CandidateResult] = field(default_factory=list)
    listings: int = 0
    revoked: list[int] = field(default_factory=list)
    truncated: bool = False
    """The cycle stopped before its last candidate (its lease was taken over); the next one starts again."""
    seconds: float = 0.0

    @property
    def queued(self) -> list[CandidateResult]:
        return [r for r in self.results if r.outcome is Outcome.QUEUED]

    @property
    def declined(self) -> list[CandidateResult]:
        return [r for r in self.results if r.outcome is not Outcome.QUEUED]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary (for logs, XCom, the CLI)."""
        def item(r: CandidateResult) -> dict[str, Any]:
            return {"table": f"{r.database}.{r.table}", "partition": r.partition, "outcome": r.outcome.display,
                    "type": r.type.display if r.type else None, "reason": r.reason, "compaction_id": r.compaction_id}
        return {"ran": self.ran, "message": self.message, "candidates": self.candidates, "listings": self.listings,
                "seconds": round(self.seconds, 3), "truncated": self.truncated, "revoked": self.revoked,
                "queued": [item(r) for r in self.queued], "declined": [item(r) for r in self.declined]}


@dataclass
class _Candidate:
    database: str
    table: str
    partition: str | None
    sources: list[str] = field(default_factory=list)
    aborts: AbortGroup | None = None
    too_many_aborts: bool = False
    has_old_abort: bool = False


@dataclass(frozen=True)
class _Job:
    """One eligible candidate ready for evaluation: where it lives and the table's compactor write ids."""

    candidate: _Candidate
    info: TableInfo
    db_info: DatabaseInfo
    location: str
    write_ids: ValidCompactorWriteIdList | None


@dataclass
class _CycleState:
    """What one cycle remembers across its candidate batches: ineligible databases and tables (Hive's skip sets),
    catalog lookups, the entities the "already queued / failing" check can stop, the cycle's snapshot and the
    tables' compactor write ids. Grows with the tables a cycle touches, not with their partitions."""

    skipped_dbs: dict[str, str] = field(default_factory=dict)
    skipped_tables: dict[tuple[str, str], str] = field(default_factory=dict)
    databases: dict[str, DatabaseInfo | None] = field(default_factory=dict)
    tables: dict[tuple[str, str], TableInfo | None] = field(default_factory=dict)
    watched: set[tuple[str, str, str | None]] | None = None
    txns: ValidTxnList | None = None
    write_ids: dict[str, ValidCompactorWriteIdList] = field(default_factory=dict)


@dataclass
class _Intent:
    """A compaction the decision asks for, not queued yet: the real cycle queues it, the preview only checks whether
    the queue would accept it."""

    result: CandidateResult
    type: CompactionType
    highest_write_id_now: int | None
    pool: str | None
    run_as: str | None
    properties: dict[str, str]

    @property
    def batched(self) -> bool:
        """Queued with the cycle's batch (``enqueue_many``): no request properties and a known high watermark."""
        return not self.properties and self.highest_write_id_now is not None

    def request(self) -> EnqueueRequest:
        assert self.highest_write_id_now is not None, "only batched intents become EnqueueRequests"
        r = self.result
        return EnqueueRequest(r.database, r.table, r.partition, self.type, self.highest_write_id_now, self.pool,
                              self.run_as)


def would_refuse(rows: list[CompactionInfo], partition: str | None, highest_write_id_now: int | None) -> str | None:
    """The queue's refusal rule (see docs/hive-acid.md), read only: a row of the entity 'initiated'/'working', or
    'ready for cleaning' at the same high watermark, refuses (the message says why); None: it would be accepted."""
    for row in rows:
        if partition is not None and row.partition != partition:
            continue
        busy = row.state in (CompactionState.INITIATED, CompactionState.WORKING)
        same = (row.state is CompactionState.READY_FOR_CLEANING and highest_write_id_now is not None
                and row.highest_write_id == highest_write_id_now)
        if busy or same:
            return f"Compaction is already scheduled with state='{row.state.display}' and id={row.id}"
    return None


class _Skip(Exception):
    """A candidate is not eligible; ``outcome``/``reason`` say why."""

    def __init__(self, reason: str, outcome: Outcome = Outcome.SKIPPED) -> None:
        super().__init__(reason)
        self.reason = reason
        self.outcome = outcome


class Initiator:
    """Hive's Initiator over one metastore. ``conf`` defaults to the metastore's; ``host`` names this instance
    (initiator id ``<host>-initiator``); ``filesystem`` is an fsspec filesystem for the table locations (default:
    from each location's URL)."""

    def __init__(self, metastore: Metastore, conf: MetastoreConf | None = None, *, host: str | None = None,
                 filesystem: fsspec.AbstractFileSystem | None = None, lease_s: float = DEFAULT_LEASE_S,
                 scope: CompactionScope | None = None, hive_active_window_s: float = DEFAULT_HIVE_ACTIVE_WINDOW_S
                 ) -> None:
        self.metastore = metastore
        self.scope = scope or CompactionScope()
        self.hive_active_window_s = hive_active_window_s
        self._hive_active: bool | None = None
        self.conf = conf or metastore.conf
        self.host = host or socket.gethostname()
        self.initiator_id = f"{self.host}-initiator"
        self.version = __version__
        self.filesystem = filesystem
        self.lease_s = lease_s
        services = metastore.with_conf(self.conf)
        self.store = services.initiator
        self.queue = services.compactions
        self.snapshots = services.snapshots
        self.catalog = services.catalog
        self._listings = 0
        self._listings_lock = threading.Lock()

    # --- public API -------------------------------------------------------------------------------------

    def start(self) -> list[int]:
        """docs/hive-acid.md#initiator-cycle step 1, for a long-running Initiator process: queue rows claimed by workers on
        this host go back to 'initiated', then timed-out ones. Not part of :meth:`run_cycle` — where workers share hosts with
        the Initiator (Airflow), only call it when no worker of this host can be running."""
        return self.store.revoke_from_local_workers(self.host) + self.store.revoke_timed_out_workers()

    def run_cycle(self) -> InitiatorReport:
        """One Initiator cycle (docs/hive-acid.md#initiator-cycle steps 2–9). Returns without doing anything when another
        Initiator holds the lease."""
        clock = time.perf_counter()
        holder = f"{self.initiator_id}:{id(self):x}:{time.time_ns()}"
        lease = self.store.acquire_lease(INITIATOR_MUTEX, holder, int(self.lease_s * 1000))
        if not lease.acquired:
            return InitiatorReport(ran=False, message=f"another Initiator ({lease.holder}) is running; its lease "
                                   f"expires at {lease.until_ms} (epoch ms)")
        try:
            report = self._new_report(record=True)
            lease_ms = int(self.lease_s * 1000)
            for results, intents in self._cycle_batches(report, record=True):
                self._queue(intents)
                self.store.record_decisions([r.record(self.initiator_id) for r in results])  # one batch at a time
                report.results += results
                if not self.store.renew_lease(INITIATOR_MUTEX, holder, lease_ms):
                    report.message = (f"the Initiator lease expired during the cycle ({lease_ms} ms) and another "
                                      "Initiator took it; stopped after the candidates decided so far (the next "
                                      "cycle looks at the same window again)")
                    log.warning("Initiator cycle: %s", report.message)
                    report.truncated = True
                    break
            else:
                report.revoked = self.store.revoke_timed_out_workers()
                assert report.next_last_checked_ms is not None, "set by _new_report"
                self.store.store_last_checked(report.next_last_checked_ms)
        finally:
            self.store.release_lease(INITIATOR_MUTEX, holder)
        report.seconds = time.perf_counter() - clock
        log.info("Initiator cycle: %d candidate(s), %d queued, %d declined, %d listing(s) in %.2f s",
                 report.candidates, len(report.queued), len(report.declined), report.listings, report.seconds)
        return report

    def run_shadow(self) -> InitiatorReport:
        """Shadow mode: evaluate every candidate on the metastore (all of COMPLETED_TXN_COMPONENTS, streamed in
        batches of metastore.compactor.fetch.size, not since anyone's last cycle) reading only — no lease, no queue
        rows, no history rows, nothing written to a Hive table — and record the decisions in ACID_INITIATOR_DECISIONS
        (initiator id ``<host>-shadow``): what the cycle would queue is stored as "would queue"."""
        clock = time.perf_counter()
        report = self._new_report(record=False, since_ms=0)
        for results, _ in self._cycle_batches(report, record=False):
            self.store.record_decisions([r.record(self.host + SHADOW_SUFFIX) for r in results],
                                       log_cycle=True)
            report.results += results
        report.seconds = time.perf_counter() - clock
        log.info("Initiator shadow cycle: %d candidate(s), %d would be queued, %d not; nothing queued",
                 report.candidates, sum(r.outcome is Outcome.WOULD_QUEUE for r in report.results),
                 sum(r.outcome is not Outcome.WOULD_QUEUE for r in report.results))
        return report

    def preview(self) -> InitiatorReport:
        """One cycle that writes nothing and takes no lease (a preview may look while a real cycle runs): the same
        candidates, checks and decisions; what the cycle would queue has the outcome "would queue" (or "refused"
        when the queue would refuse it). Nothing is recorded, revoked or enqueued."""
        report, intents = self._evaluate_cycle(record=False)
        taken: set[tuple[str, str, str | None]] = set()
        for intent in sorted(intents, key=lambda i: (i.result.database, i.result.table, i.result.partition or "")):
            r = intent.result
            key = (r.database.lower(), r.table.lower(), normalize_partition_name(r.partition))
            refusal = "Compaction is already scheduled earlier in this cycle" if key in taken else \
                would_refuse(self.queue.find(db=r.database, table=r.table), r.partition, intent.highest_write_id_now)
            if refusal is None:
                taken.add(key)
                r.outcome, r.compaction_id = Outcome.WOULD_QUEUE, None
            else:
                r.outcome, r.reason = Outcome.REFUSED, f"{r.reason}; not queued: {refusal}"
        return report

    def why(self, database: str, table: str, partition: str | None = None) -> InitiatorDecisionRecord | None:
        """The Initiator's latest decision about this table/partition and its reason (None: never looked at it —
        no committed writes since it started watching)."""
        return self.store.latest_decision(database.lower(), table.lower(), partition)

    def decisions(self, database: str | None = None, table: str | None = None,
                  outcome: Outcome | None = None) -> list[InitiatorDecisionRecord]:
        """Every stored decision, filtered (e.g. ``outcome=Outcome.SKIPPED`` lists what auto-compaction ignores)."""
        return self.store.decisions(database.lower() if database else None, table.lower() if table else None,
                                    outcome)

    def evaluate_table(self, database: str, table: str, *, enqueue: bool = True, pool: str | None = None,
                       properties: Mapping[str, Any] | None = None) -> list[CandidateResult]:
        """Threshold logic for every partition of ``table`` (or the table itself when unpartitioned): what ALTER
        TABLE … COMPACT without PARTITION does on a partitioned table in Hive 4 (docs/hive-acid.md#commands) — the computed
        type replaces the requested one, partitions below the thresholds are skipped, no eligibility checks. ``properties``
        are the request's WITH OVERWRITE TBLPROPERTIES (stored with each queued row; ``tblprops.compactorthreshold.*``
        also changes the thresholds); ``enqueue=False`` is a dry run (outcome "would queue", nothing stored)."""
        database, table = database.lower(), table.lower()
        info = self.catalog.get_table(database, table)
        request = dict(properties or {})
        overrides = request_overrides(info.properties, request, table=info.full_name)
        db_info = self.catalog.get_database(database)
        txns = self.snapshots.valid_txn_list()
        write_ids = self.snapshots.compactor_write_ids(info.full_name, txns)
        targets: list[tuple[str | None, str]]
        if info.is_partitioned:
            targets = [(name, loc.location) for name, loc in self.store.partition_locations(database, table).items()]
        else:
            targets = [(None, info.location)]
        self._listings = 0
        results = []
        for part, location in targets:
            candidate = _Candidate(database, table, part, ["manual request"])
            try:
                result, intent = self._decide(candidate, info, db_info, location, txns, write_ids,
                                              table_properties=overrides.table_properties, request_properties=request,
                                              pool=pool)
            except CompactorSettingsError as exc:
                result, intent = CandidateResult(database, table, part, Outcome.ERROR, str(exc)), None
            if intent is not None and enqueue:
                self._enqueue_one(intent)
            results.append(result)
        if enqueue:
            self.store.record_decisions([r.record(self.initiator_id) for r in results])
        return results

    # --- one cycle --------------------------------------------------------------------------------------

    def _evaluate_cycle(self, *, record: bool, since_ms: int | None = None
                        ) -> tuple[InitiatorReport, list[_Intent]]:
        """Steps 2–7 of a cycle up to the decisions, every batch at once (the preview and shadow cycles, which
        queue nothing). Returns the report and what the decisions would queue."""
        report = self._new_report(record=record, since_ms=since_ms)
        intents: list[_Intent] = []
        for results, batch_intents in self._cycle_batches(report, record=record):
            report.results += results
            intents += batch_intents
        return report, intents

    def _new_report(self, *, record: bool, since_ms: int | None = None) -> InitiatorReport:
        """Steps 2 of a cycle: its start and the previous cycle's (``record`` False: the preview reads the
        last-checked time without locking; ``since_ms``: a shadow cycle's window instead)."""
        started = self.store.now_ms()
        if since_ms is not None:
            previous = since_ms
        else:
            previous = self.store.last_checked() if record else self.store.peek_last_checked()
        self._listings = 0
        return InitiatorReport(ran=True, started_ms=started, last_checked_ms=previous, next_last_checked_ms=started)

    def _cycle_batches(self, report: InitiatorReport, *, record: bool
                       ) -> Iterator[tuple[list[CandidateResult], list[_Intent]]]:
        """Steps 4–7 of a cycle (see docs/hive-acid.md), one batch of metastore.compactor.fetch.size candidates at
        a time: the candidates since the last cycle's start come from the metastore as a stream, each batch goes
        through Hive's filters, one listing per survivor and the decision, and is handed to the caller (which
        queues and records it) before the next batch is read — memory stays flat however many partitions have
        new writes. What a cycle learns about databases, tables and write ids is kept across its batches (one
        snapshot for the whole cycle). Updates ``report``'s counters; the caller collects the results."""
        state = _CycleState()
        for batch in self._candidate_batches(report):
            report.candidates += len(batch)
            eligible, results = self._filter(batch, state, record=record)
            intents: list[_Intent] = []
            if eligible:
                if state.txns is None:  # docs/hive-acid.md#initiator-cycle step 6: one snapshot for the whole cycle
                    state.txns = self.snapshots.valid_txn_list()
                results += self._evaluate(eligible, state, report.started_ms, intents, record=record)
            report.listings = self._listings
            yield results, intents

    def _candidate_batches(self, report: InitiatorReport) -> Iterator[list[_Candidate]]:
        """docs/hive-acid.md#initiator-cycle step 4 in batches: tables/partitions with committed writes since the
        last cycle's start (streamed), merged with the (few, fetched up front) whose latest history row is 'did not
        initiate'/'failed' and — when aborts are not left to the Cleaner — the aborted-txn groups over the
        thresholds; those not among the writes come last."""
        conf = self.conf
        batch_size = conf.compactor_fetch_size
        others: dict[tuple[str, str, str | None], _Candidate] = {}
        for w in self.store.retry_candidates(batch_size):
            others.setdefault(w.entity, _Candidate(*w.entity)).sources.append("last attempt failed or was not "
                                                                              "initiated")
        if not conf.clean_aborts_using_cleaner:
            time_ms = int(conf.aborted_txn_time_threshold_s * 1000)
            for group in self.store.abort_groups(conf.abortedtxn_threshold, time_ms):
                if group.table is None:
                    continue  # database-level component: nothing to compact
                c = others.setdefault((group.database, group.table, group.partition),
                                      _Candidate(group.database, group.table, group.partition))
                c.aborts = group
                c.too_many_aborts = group.count > conf.abortedtxn_threshold
                c.has_old_abort = time_ms >= 0 and group.oldest_started_ms < report.started_ms - time_ms
                c.sources.append("aborted transactions")
        since = report.last_checked_ms if report.last_checked_ms > 0 else None
        for writes in self.store.stream_write_candidates(since, batch_size):
            batch = []
            for w in writes:
                c = others.pop(w.entity) if w.entity in others else _Candidate(*w.entity)
                c.sources.insert(0, "new writes")
                batch.append(c)
            yield batch
        rest = sorted(others.values(), key=lambda c: (c.database, c.table, c.partition or ""))
        for start in range(0, len(rest), batch_size):
            yield rest[start:start + batch_size]

    def _filter(self, candidates: list[_Candidate], state: _CycleState, *, record: bool
                ) -> tuple[list[tuple[_Candidate, TableInfo, DatabaseInfo]], list[CandidateResult]]:
        """docs/hive-acid.md#initiator-cycle step 5 in Hive's order; ineligible databases and tables are remembered for the
        rest of the cycle (``state``)."""
        skipped_dbs, skipped_tables = state.skipped_dbs, state.skipped_tables
        databases, tables = state.databases, state.tables
        eligible: list[tuple[_Candidate, TableInfo, DatabaseInfo]] = []
        results: list[CandidateResult] = []
        if state.watched is None:
            state.watched = self.store.busy_or_failed_entities()  # only these can be stopped by step 5.3
        watched = state.watched
        for c in candidates:
            key = (c.database, c.table)
            try:
                if c.database not in databases:
                    databases[c.database] = self._database(c.database)
                    db_info = databases[c.database]
                    if db_info is None:
                        skipped_dbs[c.database] = f"database {c.database} no longer exists"
                    elif is_true(db_info.param(REPL_PENDING)):
                        skipped_dbs[c.database] = (f"database {c.database} has {REPL_PENDING}=true (replication "
                                                   "bootstrap pending)")
                if c.database in skipped_dbs:
                    raise _Skip(skipped_dbs[c.database])
                if key in skipped_tables:
                    raise _Skip(skipped_tables[key])
                if self.scope.explicit:
                    if key not in tables:
                        tables[key] = self._table(c.database, c.table)
                    owner = self._ownership(tables[key], databases[c.database])
                    if owner is not None:
                        raise owner
                busy = None
                if (c.database, c.table, c.partition) in watched:
                    busy = self.store.initiator_skip_reason(c.database, c.table, c.partition, self._abort_type(c),
                                                            record=record, initiator_id=self.initiator_id)
                if busy is not None:
                    raise _Skip(busy)
                if key not in tables:
                    tables[key] = self._table(c.database, c.table)
                info = tables[key]
                db_info = databases[c.database]
                assert db_info is not None
                reason = self._table_ineligible(info, db_info, c)
                if reason is not None:
                    if reason[1] == "database":
                        skipped_dbs[c.database] = reason[0]
                    else:
                        skipped_tables[key] = reason[0]
                    raise _Skip(reason[0])
                assert info is not None
                if info.is_partitioned and c.partition is None and not c.has_old_abort:
                    raise _Skip(f"table {info.full_name} is partitioned but the write was recorded for the whole "
                                "table (dynamic-partition write); its partitions are evaluated on their own")
                if not info.is_partitioned and c.partition is not None:
                    raise _Skip(f"table {info.full_name} is not partitioned but a write named partition "
                                f"{c.partition}")
                eligible.append((c, info, db_info))
            except _Skip as skip:
                results.append(self._result(c, skip.outcome, skip.reason))
            except Exception as exc:  # noqa: BLE001 - Hive: any exception marks the candidate failed and moves on
                results.append(self._failed(c, exc, record=record))
        return eligible, results

    def _table_ineligible(self, info: TableInfo | None, db_info: DatabaseInfo, c: _Candidate
                          ) -> tuple[str, str] | None:
        """(reason, "database"|"table") when the table may not be auto-compacted (docs/hive-acid.md#initiator-cycle step
        5.4–5.7)."""
        name = f"{c.database}.{c.table}"
        if info is None:
            return f"table {name} no longer exists (dropped)", "table"
        if is_true(info.property(REPL_PENDING)):
            return f"table {name} has {REPL_PENDING}=true (replication bootstrap pending)", "table"
        db_value = db_info.param(NO_AUTO_COMPACTION)
        if self.scope.explicit:
            pass  # in scope: no_auto_compaction is Hive's hand-over marker (checked by _ownership), not a stop here
        elif db_value is not None:
            if is_true(db_value):
                return (f"database {c.database} has {NO_AUTO_COMPACTION}=true; auto-compaction is off for every "
                        "table in it (set it to false to turn it on)", "database")
        elif is_true(info.property(NO_AUTO_COMPACTION)):
            return (f"table {name} has {NO_AUTO_COMPACTION}=true; auto-compaction is off (unset the property or "
                    "request a compaction manually)", "table")
        if not info.is_transactional:
            return f"table {name} is not transactional", "table"
        if info.is_insert_only and not self.conf.compact_insert_only:
            return (f"table {name} is insert-only and hive.compactor.compact.insert.only=false", "table")
        return None

    def _evaluate(self, eligible: list[tuple[_Candidate, TableInfo, DatabaseInfo]], state: _CycleState,
                  started_ms: int, intents: list[_Intent], *, record: bool) -> list[CandidateResult]:
        """docs/hive-acid.md#initiator-cycle step 7 for every eligible candidate: partition, write ids, one listing,
        decision; what the decisions ask to queue is appended to ``intents``.

        Partition locations and write ids are read per table (set-based); the per-candidate part — listing the
        directory, deciding — runs on hive.compactor.request.queue threads (Hive's checkForCompaction pool).
        Results keep the candidates' order."""
        slots: list[CandidateResult | _Job] = []
        txns, write_ids = state.txns, state.write_ids
        assert txns is not None, "the cycle's snapshot is taken before its first evaluation"
        by_table: dict[tuple[str, str], list[tuple[_Candidate, TableInfo, DatabaseInfo]]] = {}
        for item in eligible:
            by_table.setdefault((item[0].database, item[0].table), []).append(item)
        for (database, table), items in by_table.items():
            names = [c.partition for c, _, _ in items if c.partition is not None]
            try:
                locations: dict[str, PartitionLocation] = \
                    self.store.partition_locations(database, table, names) if names else {}
            except Exception as exc:  # noqa: BLE001
                slots += [self._failed(c, exc, record=record) for c, _, _ in items]
                continue
            for c, info, db_info in items:
                try:
                    if c.partition is not None and c.partition not in locations:
                        raise _Skip(f"partition {c.partition} of {info.full_name} no longer exists (dropped)")
                    location = locations[c.partition].location if c.partition is not None else info.location
                    needs_listing = not (c.too_many_aborts or c.has_old_abort)
                    if needs_listing and info.full_name not in write_ids:
                        write_ids[info.full_name] = self.snapshots.compactor_write_ids(info.full_name, txns)
                    slots.append(_Job(c, info, db_info, location, write_ids.get(info.full_name)))
                except _Skip as skip:
                    slots.append(self._result(c, skip.outcome, skip.reason))
                except Exception as exc:  # noqa: BLE001
                    slots.append(self._failed(c, exc, record=record))
        jobs = [s for s in slots if isinstance(s, _Job)]

        def evaluate(job: _Job) -> CandidateResult:
            try:
                result, intent = self._decide(job.candidate, job.info, job.db_info, job.location, txns,
                                              job.write_ids, table_properties=job.info.properties,
                                              request_properties={}, pool=None, now_ms=started_ms)
            except _Skip as skip:
                return self._result(job.candidate, skip.outcome, skip.reason)
            except Exception as exc:  # noqa: BLE001 - Hive: the candidate is marked failed, the cycle goes on
                return self._failed(job.candidate, exc, record=record)
            if intent is not None:
                intents.append(intent)  # list.append is atomic: the threads share it
            return result

        threads = min(max(1, self.conf.request_queue), len(jobs))
        if threads > 1:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="acid-initiator") as pool:
                done = iter(list(pool.map(evaluate, jobs)))
        else:
            done = iter([evaluate(job) for job in jobs])
        return [next(done) if isinstance(s, _Job) else s for s in slots]

    def _queue(self, intents: list[_Intent]) -> None:
        """Queue what the cycle decided, in candidate order: requests without a known high watermark one by one,
        then the others ENQUEUE_BATCH per transaction; fill in the results."""
        intents = sorted(intents, key=lambda i: (i.result.database, i.result.table, i.result.partition or ""))
        for intent in intents:
            if not intent.batched:
                try:
                    self._enqueue_one(intent)
                except Exception as exc:  # noqa: BLE001 - Hive: the candidate is marked failed, the cycle goes on
                    self._fail_result(intent.result, exc)
        batch = [i for i in intents if i.batched]
        for start in range(0, len(batch), ENQUEUE_BATCH):
            chunk = batch[start:start + ENQUEUE_BATCH]
            try:
                answers = self.queue.enqueue_many([i.request() for i in chunk], initiator_id=self.initiator_id,
                                                  initiator_version=self.version)
            except Exception as exc:  # noqa: BLE001 - Hive: the candidates are marked failed, the cycle goes on
                for intent in chunk:
                    self._fail_result(intent.result, exc)
                continue
            for intent, answer in zip(chunk, answers, strict=True):
                self._settle(intent.result, answer)

    def _enqueue_one(self, intent: _Intent) -> None:
        r = intent.result
        answer = self.queue.enqueue(
            r.database, r.table, r.partition, intent.type, pool=intent.pool, properties=dict(intent.properties),
            initiator_id=self.initiator_id, initiator_version=self.version, run_as=intent.run_as,
            highest_write_id_now=intent.highest_write_id_now)
        self._settle(r, answer)

    @staticmethod
    def _settle(result: CandidateResult, answer: EnqueueResult) -> None:
        if answer.accepted:
            result.outcome, result.compaction_id = Outcome.QUEUED, answer.id
        else:
            result.outcome = Outcome.REFUSED
            result.reason = f"{result.reason}; not queued: {answer.message}"

    def _fail_result(self, result: CandidateResult, exc: Exception) -> None:
        failed = self._failed(_Candidate(result.database, result.table, result.partition, list(result.sources)), exc,
                              record=True)
        result.outcome, result.reason, result.compaction_id = failed.outcome, failed.reason, None

    def _decide(self, c: _Candidate, info: TableInfo, db_info: DatabaseInfo, location: str, txns: ValidTxnList,
                write_ids: ValidCompactorWriteIdList | None, *, table_properties: Mapping[str, str],
                request_properties: Mapping[str, str], pool: str | None, now_ms: int | None = None
                ) -> tuple[CandidateResult, _Intent | None]:
        """Decide one candidate (one listing, no write): its result ("would queue" when it needs a compaction) and
        what to queue for it (None: nothing)."""
        thresholds = table_thresholds(self.conf, table_properties, table=info.full_name)
        stats: DirectoryStats | None = None
        listed = False
        if not (c.too_many_aborts or c.has_old_abort):
            if write_ids is None:
                write_ids = self.snapshots.compactor_write_ids(info.full_name, txns)
            stats = self._directory_stats(location, write_ids, txns)
            listed = True
        age_s = None
        if c.aborts is not None and now_ms is not None:
            age_s = (now_ms - c.aborts.oldest_started_ms) / 1000
        decision: Decision = decide_compaction(
            stats, delta_num_threshold=thresholds.delta_num_threshold,
            delta_pct_threshold=thresholds.delta_pct_threshold, too_many_aborts=c.too_many_aborts,
            has_old_abort=c.has_old_abort, aborted_count=c.aborts.count if c.aborts else None,
            abortedtxn_threshold=self.conf.abortedtxn_threshold, oldest_abort_age_s=age_s,
            aborted_txn_time_threshold_s=self.conf.aborted_txn_time_threshold_s,
            num_source=thresholds.sources[DELTA_NUM_KEY].split()[-1],
            pct_source=thresholds.sources[DELTA_PCT_KEY].split()[-1])
        result = CandidateResult(c.database, c.table, c.partition, Outcome.NOT_NEEDED, decision.reason,
                                 type=decision.type, rule=decision.rule.value, stats=stats, listed=listed,
                                 sources=tuple(c.sources))
        if decision.type is None:
            return result, None
        result.outcome = Outcome.WOULD_QUEUE
        pool_name = pool or info.property(WORKER_POOL_KEY) or db_info.param(WORKER_POOL_KEY)
        return result, _Intent(result, decision.type, write_ids.high_watermark if write_ids is not None else None,
                               pool_name, info.owner, dict(request_properties))

    def _directory_stats(self, location: str, write_ids: ValidCompactorWriteIdList,
                         txns: ValidTxnList) -> DirectoryStats:
        """docs/hive-acid.md#compaction-type step 3 from ONE listing of the directory."""
        storage = storage_for(location, self.filesystem)
        with self._listings_lock:
            self._listings += 1
        try:
            files = storage.list_files()
        except FileNotFoundError:
            files = []

        def metadata_reader(path: str) -> str:
            return storage.read_bytes(path).decode("utf-8", errors="replace")

        state = get_acid_state(files, write_ids, txns, metadata_reader=metadata_reader)
        return DirectoryStats.of(state)

    # --- scope and takeover -----------------------------------------------------------------------------

    def _ownership(self, info: TableInfo | None, db_info: DatabaseInfo | None) -> _Skip | None:
        """With an explicit [acid] scope: a skip for a table outside it (left to Hive), a 'declined' for an in-scope
        table Hive's compactor would also pick (naming the setting to change in Hive), None when airflow-acid owns
        it."""
        if info is None:
            return None
        if not self.scope.covers(info.database, info.name, table_pool(info, db_info)):
            return _Skip(f"table {info.full_name} is outside [acid] scope ({self.scope.describe()}); Hive's "
                         "compactor handles it")
        reason = hive_would_pick(info, db_info, self.scope, self.hive_initiator_active())
        return None if reason is None else _Skip(reason, Outcome.DECLINED)

    def hive_initiator_active(self) -> bool:
        """Whether Hive's own Initiator ran or queued on this metastore within the active window (checked once per
        Initiator object; always False on airflow-acid's own schema)."""
        if self._hive_active is None:
            if not self.metastore.profile.is_hive:
                self._hive_active = False
            else:
                seen = self.metastore.shadow.hive_initiator_last_seen()
                now = self.store.now_ms()
                self._hive_active = seen is not None and seen >= now - int(self.hive_active_window_s * 1000)
        return self._hive_active

    # --- helpers ----------------------------------------------------------------------------------------

    @staticmethod
    def _abort_type(c: _Candidate) -> CompactionType:
        return CompactionType.MINOR if c.has_old_abort and not c.too_many_aborts else CompactionType.MAJOR

    def _database(self, name: str) -> DatabaseInfo | None:
        try:
            return self.catalog.get_database(name)
        except NoSuchObjectError:
            return None

    def _table(self, database: str, name: str) -> TableInfo | None:
        try:
            return self.catalog.get_table(database, name)
        except NoSuchObjectError:
            return None

    @staticmethod
    def _result(c: _Candidate, outcome: Outcome, reason: str) -> CandidateResult:
        return CandidateResult(c.database, c.table, c.partition, outcome, reason, sources=tuple(c.sources))

    def _failed(self, c: _Candidate, exc: Exception, *, record: bool) -> CandidateResult:
        """Hive's markFailed: a 'did not initiate' history row with the error (unless ``record`` is False: the
        preview), and an error decision."""
        what = entity_name(c.database, c.table, c.partition or None)
        message = f"Initiator could not evaluate {what}: {exc}"
        log.warning("%s", message)
        if not record:
            return self._result(c, Outcome.ERROR, message)
        try:
            self.store.record_did_not_initiate(c.database, c.table, c.partition, self._abort_type(c), message,
                                               initiator_id=self.initiator_id, initiator_version=self.version)
        except Exception:
            log.exception("could not record 'did not initiate' for %s", what)
        return self._result(c, Outcome.ERROR, message)
