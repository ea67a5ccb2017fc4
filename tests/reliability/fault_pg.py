"""Dropping a client's PostgreSQL connection in the middle of a commit, deterministically (fault 3).

Two moments, both ended with ``pg_terminate_backend`` from an admin connection:

* ``before`` — the commit's unit of work is blocked on the transaction's TXNS row, which the admin connection
  holds FOR UPDATE; once pg_stat_activity shows the client waiting on that lock its backend is terminated and
  the row released. Nothing of the commit was applied.
* ``after`` — the server has applied the COMMIT; the backend is terminated before the client reads the reply
  (the driver's commit returns, then the connection is found dead). The commit was applied in full.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from airflow_acid.metastore import Metastore

MOMENTS = ("before", "after")


@dataclass
class BackendKiller:
    """An admin connection to the metastore's PostgreSQL database."""

    url: str
    terminated: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.engine: Engine = sa.create_engine(self.url, isolation_level="AUTOCOMMIT")

    def terminate(self, pid: int) -> None:
        with self.engine.connect() as conn:
            assert conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})").scalar() is True
        self.terminated.append(pid)

    def lock_waiter(self, timeout_s: float = 30.0) -> int:
        """The pid of the (one) backend of this database waiting for a lock."""
        deadline = time.monotonic() + timeout_s
        with self.engine.connect() as conn:
            while time.monotonic() < deadline:
                pids = conn.exec_driver_sql(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()").scalars().all()
                if pids:
                    return int(pids[0])
                time.sleep(0.02)
        raise AssertionError(f"no backend waited for a lock within {timeout_s} s")

    def terminate_while_blocked(self, txn_id: int) -> threading.Thread:
        """Hold TXNS row ``txn_id``; in the background terminate the first backend that waits for it, then let go."""
        holder = self.engine.connect().execution_options(isolation_level="READ COMMITTED")
        holder.begin()
        holder.exec_driver_sql(f'SELECT 1 FROM "TXNS" WHERE "TXN_ID" = {int(txn_id)} FOR UPDATE')
        errors: list[BaseException] = []

        def run() -> None:
            try:
                self.terminate(self.lock_waiter())
            except BaseException as exc:  # noqa: BLE001 - re-raised by the test through .errors
                errors.append(exc)
            finally:
                holder.rollback()
                holder.close()

        thread = threading.Thread(target=run, name="terminate-backend")
        thread.errors = errors  # type: ignore[attr-defined]
        thread.start()
        return thread

    def lose_next_commit_reply(self, metastore: Metastore) -> Callable[[], None]:
        """Arm the metastore's driver: the next COMMIT is applied, then its backend is terminated before the client
        sees the reply. Returns the disarm callable."""
        dialect = metastore.db.engine.dialect
        apply_commit = dialect.do_commit
        armed = [True]

        def commit_then_terminate(dbapi_connection) -> None:
            apply_commit(dbapi_connection)
            if armed[0]:
                armed[0] = False
                self.terminate(_backend_pid(dbapi_connection))
                dbapi_connection.cursor().execute("SELECT 1")  # the reply never comes: the connection is dead

        dialect.do_commit = commit_then_terminate

        def disarm() -> None:
            dialect.do_commit = apply_commit

        return disarm

    def dispose(self) -> None:
        self.engine.dispose()


def intercept_first_commit(metastore: Metastore, killer: BackendKiller, moment: str) -> list[int]:
    """Make the next ``metastore.txns.commit`` lose its connection at ``moment``; returns the list that receives the
    intercepted txn id (and, for ``before``, is checked for the background thread's errors by the caller)."""
    txns = metastore.txns
    commit = txns.commit
    seen: list[int] = []

    def intercepted(txn_id: int):
        if seen:
            return commit(txn_id)
        seen.append(txn_id)
        if moment == "before":
            thread = killer.terminate_while_blocked(txn_id)
            try:
                return commit(txn_id)
            finally:
                thread.join(30)
                if thread.errors:  # type: ignore[attr-defined]
                    raise thread.errors[0]  # type: ignore[attr-defined]
        disarm = killer.lose_next_commit_reply(metastore)
        try:
            return commit(txn_id)
        finally:
            disarm()

    txns.commit = intercepted  # type: ignore[method-assign]
    return seen


def _backend_pid(dbapi_connection) -> int:
    """The server process of a (pooled) driver connection: psycopg 3 (``info.backend_pid``) or psycopg2."""
    raw = getattr(dbapi_connection, "driver_connection", dbapi_connection)  # the pool's proxy has its own .info
    pid = getattr(getattr(raw, "info", None), "backend_pid", None)
    return int(pid if pid is not None else raw.get_backend_pid())
