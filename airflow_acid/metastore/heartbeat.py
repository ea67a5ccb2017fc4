"""A background thread that heartbeats open transactions so hive.txn.timeout does not abort them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import ClassVar, Protocol

from airflow_acid.metastore.errors import TxnStateError

log = logging.getLogger(__name__)


class Ticker(Protocol):
    """The pace of one heartbeater's rounds."""

    def wait(self) -> bool:
        """Block until the next round is due (True) or the heartbeater is stopped (False)."""
        ...


class Clock(Protocol):
    """Where heartbeaters get their pace: real time, or a test's manual clock that never makes a test sleep."""

    def ticker(self, interval_s: float, stop: threading.Event) -> Ticker:
        """A ticker due every ``interval_s`` seconds after the previous round, until ``stop`` is set."""
        ...


class _SystemTicker:
    def __init__(self, interval_s: float, stop: threading.Event) -> None:
        self._interval_s = interval_s
        self._stop = stop

    def wait(self) -> bool:
        return not self._stop.wait(self._interval_s)


class SystemClock:
    """Real time: a round ``interval_s`` seconds after the previous one ended."""

    def ticker(self, interval_s: float, stop: threading.Event) -> Ticker:
        return _SystemTicker(interval_s, stop)


class Heartbeater:
    """Calls ``beat(txn_id)`` for every id ``txn_ids()`` returns, every ``interval_s`` seconds, until stopped.

    Hive heartbeats at half of hive.txn.timeout. A txn that is no longer open (timed out, aborted) is
    remembered in :attr:`lost` and not beaten again; other errors are logged and retried next round.
    """

    default_clock: ClassVar[Clock] = SystemClock()
    """The clock of heartbeaters built without one (those of transactions, readers, streaming and the Worker)."""

    def __init__(self, beat: Callable[[int], None], txn_ids: Callable[[], Iterable[int]], interval_s: float,
                 name: str = "acid-heartbeat", clock: Clock | None = None) -> None:
        self._beat = beat
        self._txn_ids = txn_ids
        self.interval_s = max(0.05, float(interval_s))
        self._stop = threading.Event()
        self._ticker = (clock or self.default_clock).ticker(self.interval_s, self._stop)
        self.lost: dict[int, str] = {}
        self.beats = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Heartbeater:
        self._thread.start()
        return self

    def _run(self) -> None:
        while self._ticker.wait():
            for txn_id in list(self._txn_ids()):
                if txn_id in self.lost:
                    continue
                try:
                    self._beat(txn_id)
                    self.beats += 1
                except TxnStateError as exc:
                    self.lost[txn_id] = str(exc)
                    log.warning("heartbeat of transaction %s failed: %s", txn_id, exc)
                except Exception as exc:  # noqa: BLE001 - a transient metastore problem: try again next round
                    log.warning("heartbeat of transaction %s failed, will retry: %s", txn_id, exc)

    def stop(self) -> None:
        """Stop beating and wait for the thread (at most one metastore call)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
