"""The concurrent-load test's actors inside the test process: readers, the Initiator + Worker loops, the Cleaner +
HouseKeeper loop and the killer of writer processes.

Each is a thread looping until a shared stop event. Every exception an actor meets is recorded with its traceback
(the run fails on it) — nothing is swallowed. Outcomes that are not exceptions (a failed compaction attempt, a
Cleaner retry) are counted by kind and kept for the run's end checks.
"""

from __future__ import annotations

import logging
import random
import threading
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.compactor.housekeeper import HouseKeeper
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.job.runner import Runner
from tests.reliability.actors import MARKERS, TABLE, WriterProcess
from tests.reliability.load_checks import Reference, check_held_read
from tests.reliability.model import Outcome

if TYPE_CHECKING:
    from tests.reliability.conftest import ReliabilitySummary

log = logging.getLogger(__name__)


class Actor(threading.Thread):
    """A background loop: ``step()`` until ``stop`` is set, ``pause_s`` apart; exceptions go to ``errors``."""

    pause_s = 0.2

    def __init__(self, name: str, stop: threading.Event, summary: ReliabilitySummary, errors: list[str]) -> None:
        super().__init__(name=name, daemon=True)
        self.stop = stop
        self.summary = summary
        self.errors = errors
        self.steps = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.step()
                self.steps += 1
            except Exception:
                self.errors.append(f"{self.name}: {traceback.format_exc()}")
                log.exception("%s failed", self.name)
            self.stop.wait(self.pause_s)

    def step(self) -> None:
        raise NotImplementedError


class Reader(Actor):
    """Holds a snapshot for a random time (so the Cleaner has to wait for it), reads, checks against the model."""

    pause_s = 0.05

    def __init__(self, name: str, stop: threading.Event, summary: ReliabilitySummary, errors: list[str], *,
                 wh: AcidWarehouse, reference: Reference, seed: int, max_hold_s: float) -> None:
        super().__init__(name, stop, summary, errors)
        self.wh, self.reference = wh, reference
        self.rng = random.Random(seed)
        self.max_hold_s = max_hold_s

    def step(self) -> None:
        table = self.rng.choice((TABLE, TABLE, MARKERS))
        hold = self.rng.uniform(0, self.max_hold_s)
        report = check_held_read(self.wh, self.reference, table, lambda: self.stop.wait(hold))
        if report.timed_out:
            self.summary.error("reader_txn_timed_out")
            return
        self.summary.add("reads_checked")
        self.summary.add(f"reads_checked_{table.split('.')[-1]}")
        self.summary.add("rows_checked", report.rows)
        for problem in report.problems:
            self.summary.mismatch(problem)


class Compactor(Actor):
    """A compaction worker thread: (optionally) one Initiator cycle, then run what is queued (a bounded number per
    step). Workers share ``claimed``: a queue row claimed twice breaks "concurrent workers never claim the same
    row"."""

    def __init__(self, name: str, stop: threading.Event, summary: ReliabilitySummary, errors: list[str], *,
                 wh: AcidWarehouse, runner: Runner, claimed: set[int], claimed_lock: threading.Lock,
                 initiate: bool = True, per_step: int = 2) -> None:
        super().__init__(name, stop, summary, errors)
        self.initiator = Initiator(wh.metastore, host="load-initiator") if initiate else None
        self.worker = Worker(wh.metastore, runner=runner, host=f"load-{name}")
        self.claimed, self.claimed_lock = claimed, claimed_lock
        self.per_step = per_step
        self.failures: list[str] = []

    def step(self) -> None:
        if self.initiator is not None:
            report = self.initiator.run_cycle()
            self.summary.add("compactions_queued", len(report.queued))
        self.drain(self.per_step)

    def drain(self, limit: int | None = None) -> int:
        """Run queued compactions until the queue is empty (or ``limit`` ran); returns how many ran."""
        ran = 0
        while limit is None or ran < limit:
            info = self.worker.claim()
            if info is None:
                break
            with self.claimed_lock:
                if info.id in self.claimed:
                    self.summary.mismatch(f"compaction {info.id} of {info.full_partition_name} was claimed twice")
                self.claimed.add(info.id)
            outcome = self.worker.compact(info.id)
            ran += 1
            if outcome.status == WorkerStatus.COMPACTED:
                self.summary.add("compactions")
                self.summary.add(f"compactions_{info.type.display}")
            elif outcome.status == WorkerStatus.FAILED or outcome.status == WorkerStatus.REVOKED:
                self.summary.error(f"compaction_{outcome.status}")
                self.failures.append(f"{outcome.entity}: {outcome.message}")
            else:
                self.summary.add(f"compactions_{outcome.status}")
        return ran


class Janitor(Actor):
    """A Cleaner cycle (compaction rows and aborted writes), then a HouseKeeper pass (time-outs, TXNS cleanup)."""

    pause_s = 0.3

    def __init__(self, name: str, stop: threading.Event, summary: ReliabilitySummary, errors: list[str], *,
                 wh: AcidWarehouse) -> None:
        super().__init__(name, stop, summary, errors)
        self.cleaner = Cleaner(wh.metastore)
        self.housekeeper = HouseKeeper(wh.metastore, host="load-housekeeper")
        self.failures: list[str] = []

    def step(self) -> None:
        self.clean()
        self.housekeep()

    def clean(self) -> int:
        """One Cleaner cycle; returns how many rows are still waiting."""
        report = self.cleaner.run_cycle()
        for entry in report.entries:
            if entry.status == CleanerStatus.CLEANED:
                self.summary.add("cleanings")
                self.summary.add("directories_deleted", len(entry.deletions))
            elif entry.status in (CleanerStatus.RETRY, CleanerStatus.FAILED):
                self.summary.error(f"cleaner_{entry.status}")
                self.failures.append(f"{entry.entity}: {entry.message}")
            else:
                self.summary.add(f"cleanings_{entry.status}")
        for entry in report.abort_cleanups:
            if entry.status == CleanerStatus.CLEANED and entry.deletions:
                self.summary.add("aborted_cleanings")
                self.summary.add("directories_deleted", len(entry.deletions))
            elif entry.status in (CleanerStatus.RETRY, CleanerStatus.FAILED):
                self.summary.error(f"aborted_cleaner_{entry.status}")
                self.failures.append(f"{entry.entity}: {entry.message}")
        return len(report.waiting)

    def housekeep(self) -> list[int]:
        report = self.housekeeper.run_once()
        self.summary.add("txns_timed_out", len(report.aborted_txns))
        return report.aborted_txns


class Killer(Actor):
    """Now and then SIGKILLs a random writer, settles the outcome of its last intent, and restarts the slot."""

    def __init__(self, name: str, stop: threading.Event, summary: ReliabilitySummary, errors: list[str], *,
                 writers: Sequence[WriterProcess], reference: Reference, seed: int, every_s: tuple[float, float],
                 settle_timeout_s: float, lock: threading.Lock) -> None:
        super().__init__(name, stop, summary, errors)
        self.writers, self.reference = writers, reference
        self.rng = random.Random(seed)
        self.every_s = every_s
        self.settle_timeout_s = settle_timeout_s
        self.lock = lock
        self.settled_committed = 0

    def step(self) -> None:
        if self.stop.wait(self.rng.uniform(*self.every_s)):
            return
        with self.lock:  # the run's monitor must not take the dead process for a crash
            alive = [w for w in self.writers if w.alive()]
            if not alive:
                return
            victim = self.rng.choice(alive)
            victim.kill()
            self.summary.add("writers_killed")
            settled = self.reference.settle_writer(victim.cfg.name, self.settle_timeout_s)
            self.summary.add("killed_mid_commit", len(settled))
            self.settled_committed += sum(o is Outcome.COMMITTED for o in settled.values())
            victim.start()


def start_all(actors: Sequence[Actor]) -> None:
    for a in actors:
        a.start()


def join_all(actors: Sequence[Actor], timeout_s: float, errors: list[str]) -> None:
    for a in actors:
        a.join(timeout_s)
        if a.is_alive():
            errors.append(f"{a.name} did not stop within {timeout_s:g} s")


__all__ = ["Actor", "Compactor", "Janitor", "Killer", "Reader", "join_all", "start_all"]
