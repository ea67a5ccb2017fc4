"""A background thread that heartbeats open transactions so hive.txn.timeout does not abort them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from airflow_acid.metastore.errors import TxnStateError

log = logging.getLogger(__name__)


class Heartbeater:
    """Calls ``beat(txn_id)`` for every id ``txn_ids()`` returns, every ``interval_s`` seconds, until stopped.

    Hive heartbeats at half of hive.txn.timeout. A txn that is no longer open (timed out, aborted) is
    remembered in :attr:`lost` and not beaten again; other errors are logged and retried next round.
    """

    def __init__(self, beat: Callable[[int], None], txn_ids: Callable[[], Iterable[int]], interval_s: float,
                 name: str = "acid-heartbeat") -> None:
        self._beat = beat
        self._txn_ids = txn_ids
        self.interval_s = max(0.05, float(interval_s))
        self._stop = threading.Event()
        self.lost: dict[int, str] = {}
        self.beats = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Heartbeater:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
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
