"""Counting what a metastore call sends to the database: SQL statements and client/server round trips.

Used by ``bench/bench_metastore_txns.py`` (counts per open, allocate write id, lock, commit, abort in its JSON) and
by tests that keep those counts from creeping back up. A round trip is one statement, one BEGIN or COMMIT or
ROLLBACK (psycopg2 and PyMySQL send each as a command of its own) or one pool pre-ping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


@dataclass
class RoundTrips:
    """What went to the database while counting."""

    statements: int = 0
    begins: int = 0
    commits: int = 0
    rollbacks: int = 0
    pings: int = 0
    sql: list[str] = field(default_factory=list)

    @property
    def round_trips(self) -> int:
        return self.statements + self.begins + self.commits + self.rollbacks + self.pings

    def as_dict(self) -> dict[str, int]:
        return {"statements": self.statements, "round_trips": self.round_trips}


@contextmanager
def count_round_trips(engine: Engine) -> Iterator[RoundTrips]:
    """Count statements and round trips on ``engine`` inside the ``with`` block (all threads)."""
    counts = RoundTrips()
    pre_ping = bool(getattr(engine.pool, "_pre_ping", False))

    def on_statement(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        counts.statements += 1
        counts.sql.append(statement)

    def on_begin(_conn: Any) -> None:
        counts.begins += 1

    def on_commit(_conn: Any) -> None:
        counts.commits += 1

    def on_rollback(_conn: Any) -> None:
        counts.rollbacks += 1

    def on_checkout(*_: Any) -> None:
        if pre_ping:
            counts.pings += 1

    listeners: list[tuple[Any, str, Callable[..., Any]]] = [
        (engine, "before_cursor_execute", on_statement), (engine, "begin", on_begin), (engine, "commit", on_commit),
        (engine, "rollback", on_rollback), (engine.pool, "checkout", on_checkout)]
    for target, name, fn in listeners:
        event.listen(target, name, fn)
    try:
        yield counts
    finally:
        for target, name, fn in listeners:
            event.remove(target, name, fn)
