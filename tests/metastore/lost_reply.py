"""Simulate a reply lost after the server applied a COMMIT (as with pg_terminate_backend at that moment)."""

from __future__ import annotations

from typing import Any

from airflow_acid.metastore.db import Database


def drop_the_reply_of_the_next_commit(db: Database, monkeypatch, marker: Any = True) -> list[Any]:
    """The next COMMIT reaches the server, then the client sees the connection fail, so Database.run retries the
    unit of work. Returns a list that receives ``marker`` once the reply has been dropped."""
    dialect = db.engine.dialect
    apply_commit = dialect.do_commit
    dropped: list[Any] = []

    def commit_then_drop(dbapi_connection) -> None:
        apply_commit(dbapi_connection)
        if not dropped:
            dropped.append(marker)
            raise dialect.loaded_dbapi.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(dialect, "do_commit", commit_then_drop)
    return dropped
