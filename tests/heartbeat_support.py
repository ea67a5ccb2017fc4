"""A manual clock for heartbeaters, so heartbeat tests never sleep nor count on how busy the machine is.

``heartbeat_clock`` (a fixture of tests/conftest.py's plugins) makes every Heartbeater built during the test tick on a
:class:`ManualClock`: no round happens until the test moves the clock, and :meth:`ManualClock.advance` returns only
once every round that fell due has finished. The metastore keeps its own clock (the database's), so
:meth:`ManualClock.elapse` also moves the open transactions' last heartbeats back by the same time: to the metastore
the time has passed, and only the rounds that ran in between have refreshed them."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import TxnState
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.heartbeat import Heartbeater
from airflow_acid.metastore.schema import TXNS

SETTLE_TIMEOUT_S = 30.0
"""How long advance() waits for the rounds that fell due (a safety net: they take milliseconds)."""


class _ManualTicker:
    """One heartbeater's pace on a :class:`ManualClock`: due every ``interval_s`` of the clock's time."""

    def __init__(self, clock: ManualClock, interval_s: float, stop: threading.Event) -> None:
        self.clock, self.interval_s, self.stop = clock, interval_s, stop
        self.due = clock.now + interval_s
        self.parked = False
        self.done = False
        self.thread: threading.Thread | None = None

    def wait(self) -> bool:
        cond = self.clock.cond
        with cond:
            self.thread = threading.current_thread()
            self.parked = True
            cond.notify_all()
            while self.clock.now < self.due and not self.stop.is_set():
                cond.wait(0.01)
            self.parked = False
            if self.stop.is_set():
                self.done = True
                cond.notify_all()
                return False
            self.due += self.interval_s  # the next round, even within the same advance() (time moved that far)
            return True

    def settled(self) -> bool:
        """Stopped, or waiting for a round that is not yet due."""
        if self.done or (self.thread is not None and not self.thread.is_alive()):
            return True
        return self.parked and (self.clock.now < self.due or self.stop.is_set())


class ManualClock:
    """Heartbeat time that moves only when the test says so (see the module's docstring)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.cond = threading.Condition()
        self._tickers: list[_ManualTicker] = []

    def ticker(self, interval_s: float, stop: threading.Event) -> _ManualTicker:
        ticker = _ManualTicker(self, interval_s, stop)
        with self.cond:
            self._tickers.append(ticker)
        return ticker

    def advance(self, seconds: float) -> None:
        """Move the clock; return once every heartbeater has run the rounds that fell due and waits again."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        with self.cond:
            self.now += seconds
            self.cond.notify_all()
            while not all(t.settled() for t in self._tickers):
                if time.monotonic() > deadline:
                    raise AssertionError(f"heartbeaters did not finish their rounds within {SETTLE_TIMEOUT_S} s")
                self.cond.wait(0.01)

    def elapse(self, metastore: Metastore, seconds: float) -> None:
        """Let ``seconds`` pass for the heartbeaters and the metastore alike, in steps of the shortest interval of
        the live heartbeaters: each step ages every open transaction's last heartbeat, then runs the rounds due."""
        with self.cond:
            live = [t.interval_s for t in self._tickers if not t.done]
        step = min(live, default=seconds)
        left = seconds
        while left > 1e-9:
            moved = min(step, left)
            age_open_txns(metastore, moved)
            self.advance(moved)
            left -= moved


def age_open_txns(metastore: Metastore, seconds: float) -> None:
    """Move the last heartbeat of every open transaction ``seconds`` into the past (as if that time had passed)."""
    with metastore.db.begin() as conn:
        conn.execute(sa.update(TXNS).where(TXNS.c.TXN_STATE == TxnState.OPEN.value)
                     .values(TXN_LAST_HEARTBEAT=TXNS.c.TXN_LAST_HEARTBEAT - int(seconds * 1000)))


@pytest.fixture
def heartbeat_clock(monkeypatch) -> ManualClock:
    """Every Heartbeater built during the test (transactions, readers, streaming, the Worker) ticks on this clock."""
    clock = ManualClock()
    monkeypatch.setattr(Heartbeater, "default_clock", clock)
    return clock
