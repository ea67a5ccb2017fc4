"""The EXCLUSIVE lock a DROP holds while it removes a table or partition, as Hive's DROP does: a writer that asks
for its lock after the DROP's check waits behind it instead of writing into a table being removed. Not granted at
once (someone reads, writes or locks it), the DROP is refused with who holds it and nothing changes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from airflow_acid.acid.codes import LockState, LockType, OperationType
from airflow_acid.metastore.errors import InvalidInputError, NoSuchLockError
from airflow_acid.metastore.locks import LockComponent

if TYPE_CHECKING:
    from airflow_acid.statements.execute import StatementExecutor


@contextmanager
def exclusive_lock(ex: StatementExecutor, what: str, database: str, table: str,
                   partition: str | None = None) -> Iterator[int]:
    """Hold an EXCLUSIVE lock on ``database.table`` (``partition``) for the block; yields its lock id (for the
    in-use check, which must not count it). Refused at once, with the holders named, when it cannot be granted."""
    locks = ex.metastore.locks
    response = locks.lock([LockComponent(database, table, partition, lock_type=LockType.EXCLUSIVE,
                                         operation=OperationType.SELECT)],
                          user=ex.warehouse.user, host=ex.warehouse.host, agent_info=f"airflow-acid {what}",
                          wait=False)
    if response.state is not LockState.ACQUIRED:
        _release(ex, response.lock_id)
        busy = ex.metastore.catalog.in_use(database, table, partition) or "another lock request is ahead of it"
        raise InvalidInputError(f"cannot {what} now: {busy}; nothing was changed. Try again when those "
                                "transactions have ended (SHOW TRANSACTIONS, SHOW LOCKS)")
    try:
        yield response.lock_id
    finally:
        _release(ex, response.lock_id)


def _release(ex: StatementExecutor, lock_id: int) -> None:
    try:
        ex.metastore.locks.unlock(lock_id)
    except NoSuchLockError:  # already gone (timed out): nothing to release
        pass


__all__ = ["exclusive_lock"]
