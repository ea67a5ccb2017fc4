"""One concurrent-load run against one metastore: writers, readers, compaction, cleaning and housekeeping at once
for a fixed time, then the final settling, a MAJOR compaction of everything, cleaning, and the end checks.

Figures go to the reliability summary; broken invariants go to ``summary.mismatch``; actor exceptions, writer
crashes and a final state that cannot be reached go to :attr:`LoadRun.errors`. The test fails on either.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_acid.acid.codes import CompactionState, CompactionType, TxnState
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.job.runner import Runner
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from tests.reliability.actors import MARKERS, TABLE, WriterConfig, WriterProcess, create_tables
from tests.reliability.load_checks import Reference, check_held_read, leftover_directories
from tests.reliability.load_threads import Actor, Compactor, Janitor, Killer, Reader, join_all, start_all
from tests.reliability.model import Journal

if TYPE_CHECKING:
    from tests.reliability.conftest import ReliabilitySummary


@dataclass(frozen=True)
class LoadSettings:
    """Size and pace of a run. Hive settings are short so that everything happens within seconds."""

    seconds: float
    writers: int = 3
    readers: int = 2
    compactors: int = 2
    """Worker threads sharing the Spark session; the first also runs the Initiator."""
    max_hold_s: float = 2.5
    kill_every_s: tuple[float, float] = (2.0, 5.0)
    txn_timeout_s: float = 5.0
    seed: int = 20240601
    hive: dict[str, Any] = field(default_factory=lambda: {
        "hive.compactor.delta.num.threshold": 4,
        "hive.compactor.delta.pct.threshold": 0.5,
        "hive.compactor.abortedtxn.threshold": 4,
        "hive.compactor.aborted.txn.time.threshold": "4s",
        "hive.compactor.cleaner.retry.retentionTime": "1s",
        "hive.txn.xlock.write": False,  # shared writes: the model checks first-committer-wins conflicts at commit
    })

    def hive_settings(self) -> dict[str, Any]:
        return {**self.hive, "hive.txn.timeout": f"{self.txn_timeout_s:g}s"}


class LoadRun:
    """Set up tables, run every actor for ``settings.seconds``, wind down, compact, clean and check."""

    def __init__(self, url: str, root: Path, runner: Runner, summary: ReliabilitySummary,
                 settings: LoadSettings) -> None:
        self.url, self.root, self.runner, self.summary, self.settings = url, root, runner, summary, settings
        self.conf = MetastoreConf.from_mapping(settings.hive_settings())
        self.errors: list[str] = []
        self._warehouses: list[AcidWarehouse] = []
        self.wh = self._warehouse("load-test", init=True)
        create_tables(self.wh)
        # the main table leans to MINOR compactions (delta/base ratio rarely above 4), the markers to MAJOR ones
        self.wh.alter_table_properties(TABLE, {"compactorthreshold.hive.compactor.delta.pct.threshold": "4"})
        self.journal = Journal(root / "journal.jsonl")
        self.reference = Reference(self._warehouse("load-checker"), self.journal)
        (root / "logs").mkdir()
        self.stop_file = root / "stop-writers"
        epoch = time.time()
        self.writers = [WriterProcess(WriterConfig(
            slot=i + 1, metastore_url=url, warehouse=str(root / "wh"), journal=str(self.journal.path),
            stop_file=str(self.stop_file), settings=settings.hive_settings(), seed=settings.seed + i, epoch=epoch),
            root / "logs") for i in range(settings.writers)]
        self.writers_lock = threading.Lock()
        self.stop_actors = threading.Event()
        self.stop_killer = threading.Event()

    def _warehouse(self, host: str, *, init: bool = False) -> AcidWarehouse:
        ms = Metastore(self.url, self.conf)
        if init:
            ms.init()
        wh = AcidWarehouse(ms, self.root / "wh", init=False, host=host, user="load")
        self._warehouses.append(wh)
        return wh

    # --- the run -------------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """The whole run; returns its figures (also added to the summary)."""
        s, summary = self.settings, self.summary
        before = Counter(summary.as_dict()["counts"])
        started = time.monotonic()
        self.readers = [Reader(f"reader{i}", self.stop_actors, summary, self.errors, wh=self._warehouse(f"reader{i}"),
                               reference=self.reference, seed=s.seed + 100 + i, max_hold_s=s.max_hold_s)
                        for i in range(s.readers)]
        claimed: set[int] = set()
        claimed_lock = threading.Lock()
        self.compactors = [Compactor(f"compactor{i}", self.stop_actors, summary, self.errors,
                                     wh=self._warehouse(f"load-compactor{i}"), runner=self.runner, claimed=claimed,
                                     claimed_lock=claimed_lock, initiate=i == 0) for i in range(s.compactors)]
        self.compactor = self.compactors[0]
        self.janitor = Janitor("janitor", self.stop_actors, summary, self.errors, wh=self._warehouse("load-janitor"))
        self.killer = Killer("killer", self.stop_killer, summary, self.errors, writers=self.writers,
                             reference=self.reference, seed=s.seed + 200, every_s=s.kill_every_s,
                             settle_timeout_s=3 * s.txn_timeout_s + 10, lock=self.writers_lock)
        actors: list[Actor] = [*self.readers, *self.compactors, self.janitor]
        try:
            for w in self.writers:
                w.start()
            start_all([*actors, self.killer])
            self._watch_writers(until=started + s.seconds)
            self.stop_killer.set()
            join_all([self.killer], 3 * s.txn_timeout_s + 30, self.errors)
            self._stop_writers()
            self.stop_actors.set()
            join_all(actors, 120, self.errors)
            loaded = time.monotonic() - started
            self._wind_down()
            self._final_checks()
        finally:
            self.stop_killer.set()
            self.stop_actors.set()
            for w in self.writers:
                w.close()
            self.journal.close()
            for wh in self._warehouses:
                wh.metastore.close()
        return self._figures(before, loaded, time.monotonic() - started)

    def _watch_writers(self, until: float) -> None:
        """Until the deadline, notice writers that ended on their own (a crash) and report them."""
        reported: set[int] = set()
        while time.monotonic() < until and not self.errors:
            time.sleep(min(0.5, max(0.0, until - time.monotonic())))
            with self.writers_lock:
                for w in self.writers:
                    if not w.alive() and id(w.proc) not in reported:
                        reported.add(id(w.proc))
                        self.errors.append(f"{w.cfg.name} (incarnation {w.cfg.incarnation}) exited on its own with "
                                           f"code {w.exit_code}:\n{w.log_tail()}")

    def _stop_writers(self) -> None:
        """Ask writers to finish their transaction and exit; one that does not is killed and settled."""
        self.stop_file.touch()
        for w in self.writers:
            code = w.wait(60)
            if code is None:
                w.dump_stacks()
                self.errors.append(f"{w.cfg.name} did not stop within 60 s of the stop file; killed:\n{w.log_tail(60)}")
                w.kill()
                self.reference.settle_writer(w.cfg.name, 3 * self.settings.txn_timeout_s + 10, by="stop")
            elif code != 0:
                self.errors.append(f"{w.cfg.name} exited with code {code}:\n{w.log_tail()}")

    def _wind_down(self) -> None:
        """No open transactions left (killed writers' ones time out), the queue drained, a MAJOR compaction of
        every partition and of the marker table, and everything cleaned."""
        deadline = time.monotonic() + 3 * self.settings.txn_timeout_s + 20
        while any(t.state is TxnState.OPEN for t in self.wh.metastore.txns.show_transactions()):
            if time.monotonic() > deadline:
                self.errors.append("transactions still open long after hive.txn.timeout: "
                                   f"{[t.txnid for t in self.wh.metastore.txns.show_transactions()]}")
                return
            self.janitor.housekeep()
            time.sleep(0.5)
        self.compactor.drain()
        self._clean_until_done()
        queue = self.wh.metastore.compactions
        entities = [(TABLE, p.name) for p in self.wh.list_partitions(TABLE)] + [(MARKERS, None)]
        for table, partition in entities:
            db, name = self.wh.io.split_name(table)
            answer = queue.enqueue(db, name, partition, CompactionType.MAJOR)
            if not answer.accepted:
                self.errors.append(f"final MAJOR compaction of {table}/{partition} not queued: {answer.message}")
        self.summary.add("final_compactions", self.compactor.drain())
        self._clean_until_done()
        self.janitor.housekeep()

    def _clean_until_done(self, timeout_s: float = 30.0) -> None:
        """Cleaner cycles until no compaction is 'ready for cleaning' (no reader is left to wait for)."""
        deadline = time.monotonic() + timeout_s
        queue = self.wh.metastore.compactions
        while True:
            self.janitor.clean()
            waiting = queue.find(state=CompactionState.READY_FOR_CLEANING)
            if not waiting:
                return
            if time.monotonic() > deadline:
                self.errors.append(f"compactions still waiting for the Cleaner after {timeout_s:g} s: "
                                   f"{[(c.id, c.full_partition_name) for c in waiting]}")
                return
            time.sleep(0.3)

    def _final_checks(self) -> None:
        """The table equals the model (every committed txn, nothing else); no obsolete, aborted or temporary
        directory remains; the queue holds nothing."""
        model = self.reference.refresh()
        for table in (TABLE, MARKERS):
            report = check_held_read(self.wh, self.reference, table, lambda: None)
            for problem in report.problems:
                self.summary.mismatch(f"final state: {problem}")
            everything = (model.markers_at(lambda _t: True) if table == MARKERS else model.table_at(lambda _t: True))
            expected, _ = self.reference.expected(table, self.wh.metastore.snapshots.valid_txn_list())
            if expected != everything:
                self.summary.mismatch(f"final state: a fresh snapshot of {table} does not see every committed "
                                      "transaction of the journal")
            self.summary.add(f"final_rows_{table.split('.')[-1]}", report.rows)
            for location, left in leftover_directories(self.wh, table).items():
                self.summary.mismatch(f"final state: {location} still holds {left}")
        pending = [c for c in self.wh.metastore.compactions.find()
                   if c.state in (CompactionState.INITIATED, CompactionState.WORKING,
                                  CompactionState.READY_FOR_CLEANING)]
        if pending:
            self.errors.append(f"compaction queue not empty at the end: {[(c.id, c.state.display) for c in pending]}")
        if self.journal.torn:
            self.errors.append(f"{self.journal.torn} torn journal line(s)")
        for crash in model.crashes:
            self.errors.append(f"writer crash: {crash}")
        for compactor in self.compactors:  # a compactor txn that timed out on an overloaded machine is expected
            self.errors += [f"compaction: {f}" for f in compactor.failures if "no longer open" not in f]
        self.errors += [f"cleaner: {f}" for f in self.janitor.failures]

    def _figures(self, before: Counter, loaded_s: float, total_s: float) -> dict[str, Any]:
        model = self.reference.refresh()
        committed = model.committed()
        self.summary.add("transactions_committed", len(committed))
        self.summary.add("transactions_aborted", sum(model.why_aborted.values()))
        for why, n in model.why_aborted.items():
            self.summary.add(f"transactions_aborted_{why}", n)
        for kind, n in model.expected_errors.items():
            self.summary.error(kind, n)
        self.summary.add("writer_incarnations", sum(model.incarnations.values()))
        after = Counter(self.summary.as_dict()["counts"])
        figures: dict[str, Any] = dict(sorted((after - before).items()))
        figures.update(load_seconds=round(loaded_s, 1), total_seconds=round(total_s, 1),
                       writers=self.settings.writers, readers=self.settings.readers,
                       compactors=self.settings.compactors,
                       compaction_failures=[f for c in self.compactors for f in c.failures][:5],
                       cleaner_failures=self.janitor.failures[:5])
        return figures


__all__ = ["LoadRun", "LoadSettings"]
