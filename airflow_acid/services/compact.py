"""Manual compaction requests — ALTER TABLE t [PARTITION (…)] COMPACT 'major'|'minor'|'rebalance' [CLUSTERED INTO n
BUCKETS] [POOL] [WITH OVERWRITE TBLPROPERTIES] [ORDER BY …] [AND WAIT] (docs/hive-acid.md#commands) — shared by the CLI and
the UI (which offer MAJOR and MINOR; REBALANCE is requested with the statement, passing ``CompactionType.REBALANCE``).

REBALANCE is never initiated automatically: only this request queues it, for an unpartitioned table or one named
partition of a table that is not explicitly bucketed (Hive refuses to rebalance a CLUSTERED BY table), with the
optional bucket count and ORDER BY columns stored in CQ_NUMBER_OF_BUCKETS / CQ_ORDER_BY.

An unpartitioned table or a named partition is queued directly (no thresholds; refused when already queued,
docs/hive-acid.md#enqueue), in the given pool or else the table's (then the database's) hive.compactor.worker.pool, as
the Initiator does. Unless ``queue_anyway``, it is first checked against what the Worker would refuse (nothing to
compact: MINOR on fewer than two deltas, MAJOR on one delta and no base — the planner's own rule), which is then not
queued. A partitioned table without a partition gets the Initiator's threshold logic per partition (Hive 4): the
computed type replaces the requested one and partitions below the thresholds are skipped. Waiting polls the queue like Hive:
first after 2 s, doubling, each sleep capped at hive.compactor.wait.timeout.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.planner import preview_compaction
from airflow_acid.compactor.settings import WORKER_POOL_KEY, validate_request_properties
from airflow_acid.job.plan import format_order_by
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.compactions import CompactionInfo
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.initiator_store import Outcome
from airflow_acid.metastore.partitions import entity_name, parse_partition_name
from airflow_acid.metastore.store import Metastore
from airflow_acid.services.errors import CompactionWaitTimeout
from airflow_acid.version import __version__

FIRST_POLL_S = 0.25
"""The first sleep of AND WAIT; each later sleep doubles, capped at :data:`MAX_POLL_S`."""
MAX_POLL_S = 4.0
"""The longest sleep between two checks of AND WAIT, so a finished compaction is reported within a few seconds
(Hive's doubling up to hive.compactor.wait.timeout reported one minutes after it ended). A smaller
hive.compactor.wait.timeout lowers it further."""
WAITING_STATES = (CompactionState.INITIATED, CompactionState.WORKING)
NOT_QUEUED = "not queued"
"""RequestedCompaction.state of a request the Worker would refuse, checked before queueing (``queue_anyway`` off)."""


@dataclass(frozen=True)
class RequestedCompaction:
    """What a request did for one table/partition."""

    database: str
    table: str
    partition: str | None
    type: str | None
    """'MAJOR'/'MINOR' (the Initiator's choice for a partitioned table without PARTITION); None when skipped."""
    compaction_id: int | None
    """The queued compaction, or None (refused, below the thresholds, error)."""
    state: str
    """'initiated' when queued; 'refused' (Hive refused it: already scheduled), 'not queued' (the Worker would
    refuse it), 'not needed' (below the thresholds) or 'error' otherwise."""
    message: str
    existing_id: int | None = None
    """Refused as already scheduled: the compaction that is (Hive's "already scheduled with state=… and id=…")."""

    @property
    def queued(self) -> bool:
        return self.compaction_id is not None

    @property
    def entity(self) -> str:
        """``db.table[/partition]``."""
        return entity_name(self.database, self.table, self.partition or None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def requester_id(surface: str, user: str | None) -> str:
    """CQ_INITIATOR_ID of a manual request: ``<host>-<surface>:<user>`` (``<host>-<surface>`` without a user), e.g.
    ``web1-ui:alice`` from the console, ``web1-dag:alice`` from a DAG run alice triggered. SHOW COMPACTIONS splits it
    into initiator host and id, so the id names who asked."""
    who = f":{re.sub(r'[^A-Za-z0-9_.@:]', '_', user)}" if user else ""
    return f"{socket.gethostname()}-{surface}{who}"[:128]


def parse_compaction_type(text: str) -> CompactionType:
    """'major' or 'minor' (any case); InvalidInputError for anything else (REBALANCE is requested only with the
    ALTER TABLE statement, whose options it needs)."""
    try:
        ctype = CompactionType.parse(str(text))
    except ValueError:
        ctype = None
    if ctype not in (CompactionType.MAJOR, CompactionType.MINOR):
        raise InvalidInputError(f"compaction type {text!r} is not supported; use 'major' or 'minor'")
    return ctype


def request_compaction(warehouse: AcidWarehouse, table: str, partition: Mapping[str, Any] | str | None = None,
                       compaction_type: str | CompactionType = "major", *, pool: str | None = None,
                       properties: Mapping[str, Any] | None = None, initiator_id: str | None = None,
                       number_of_buckets: int | None = None, order_by: Sequence[tuple[str, bool]] = (),
                       queue_anyway: bool = True) -> list[RequestedCompaction]:
    """Queue compactions as ALTER TABLE … COMPACT does (see the module doc); one result per table/partition.

    ``queue_anyway`` False (the DAG's and the console's requests) first asks the planner what the Worker would do
    with a named table/partition and does not queue what it would refuse (state 'not queued', the Worker's reason);
    True (the statement's default) queues as Hive does.

    Errors before anything is queued: NoSuchObjectError (table, partition), NotTransactionalError,
    InvalidInputError (type, partition spec, WITH OVERWRITE TBLPROPERTIES).
    """
    ms = warehouse.metastore
    ctype = compaction_type if isinstance(compaction_type, CompactionType) else parse_compaction_type(compaction_type)
    if ctype not in (CompactionType.MAJOR, CompactionType.MINOR, CompactionType.REBALANCE):
        raise InvalidInputError(f"compaction type {ctype.display} is not supported; use 'major' or 'minor'")
    info = warehouse.transactional_table(table)
    props = validate_request_properties(dict(properties or {}), table=info.full_name)
    db, name = info.database, info.name
    if ctype is CompactionType.REBALANCE:
        _check_rebalance(info, partition, number_of_buckets, order_by)
    elif number_of_buckets is not None or order_by:
        raise InvalidInputError("CLUSTERED INTO … BUCKETS and ORDER BY are only allowed for a 'rebalance' compaction")
    if partition is None and info.is_partitioned:
        results = Initiator(ms).evaluate_table(db, name, pool=pool, properties=props)
        return [RequestedCompaction(db, name, r.partition, r.type.display if r.type else None, r.compaction_id,
                                    _STATE_OF_OUTCOME.get(r.outcome, r.outcome.display),
                                    f"Compaction enqueued with id {r.compaction_id}" if r.compaction_id is not None
                                    else r.reason)
                for r in results]
    part_name = None
    if partition is not None:
        spec = parse_partition_name(partition) if isinstance(partition, str) else dict(partition)
        part_name = ms.catalog.get_partition(db, name, info.partition_spec(spec)).name
    if not queue_anyway:
        preview = preview_compaction(ms, db, name, part_name, ctype, properties=props,
                                     filesystem=warehouse.filesystem)
        if preview.worker_would_refuse:
            return [RequestedCompaction(
                db, name, part_name, ctype.display, None, NOT_QUEUED,
                f"not queued: the Worker would refuse this {ctype.display} compaction ({preview.nothing_to_do}); "
                "nothing would change. Queue it anyway (as Hive does) with 'queue anyway' if that is what you want")]
    pool = pool or info.property(WORKER_POOL_KEY) or ms.catalog.get_database(db).param(WORKER_POOL_KEY)
    answer = ms.compactions.enqueue(db, name, part_name, ctype, pool=pool, properties=props,
                                    initiator_id=initiator_id or f"{socket.gethostname()}-manual",
                                    initiator_version=__version__, run_as=info.owner,
                                    number_of_buckets=number_of_buckets, order_by=format_order_by(order_by))
    if answer.accepted:
        return [RequestedCompaction(db, name, part_name, ctype.display, answer.id, answer.state.display,
                                    f"Compaction enqueued with id {answer.id}")]
    return [RequestedCompaction(db, name, part_name, ctype.display, None, answer.state.display,
                                answer.message or "refused", existing_id=answer.existing_id)]


def _check_rebalance(info: TableInfo, partition: Mapping[str, Any] | str | None, number_of_buckets: int | None,
                     order_by: Sequence[tuple[str, bool]]) -> None:
    """Hive's rules for REBALANCE requests, checked before anything is queued."""
    if info.num_buckets > 0 and info.bucket_cols:
        raise InvalidInputError(f"REBALANCE compaction of {info.full_name} is refused: the table is bucketed "
                                f"(CLUSTERED BY {', '.join(info.bucket_cols)} INTO {info.num_buckets} BUCKETS) and "
                                "rebalancing would break its bucketing; request MAJOR instead")
    if partition is None and info.is_partitioned:
        raise InvalidInputError(f"REBALANCE compaction of the partitioned table {info.full_name} needs a partition: "
                                "ALTER TABLE … PARTITION (key='value') COMPACT 'rebalance'")
    if number_of_buckets is not None and number_of_buckets <= 0:
        raise InvalidInputError(f"CLUSTERED INTO needs a positive number of buckets, not {number_of_buckets}")
    columns = {c.name.lower(): c for c in info.columns}
    for column, _ in order_by:
        if column.lower() not in columns:
            raise InvalidInputError(f"REBALANCE … ORDER BY {column}: {info.full_name} has no column {column!r}; "
                                    f"order by one of {', '.join(columns)}")
        ctype = columns[column.lower()].type.lower()
        if ctype.startswith(("struct", "array", "map", "uniontype")):
            raise InvalidInputError(f"REBALANCE … ORDER BY {column}: a {ctype} column cannot be ordered; order by "
                                    "primitive columns")


_STATE_OF_OUTCOME = {Outcome.QUEUED: CompactionState.INITIATED.display, Outcome.REFUSED: "refused",
                     Outcome.NOT_NEEDED: "not needed", Outcome.ERROR: "error"}


def wait_for_compactions(metastore: Metastore, ids: Iterable[int], *, first_poll_s: float = FIRST_POLL_S,
                         max_poll_s: float | None = None, timeout_s: float | None = None,
                         sleep: Callable[[float], None] = time.sleep,
                         clock: Callable[[], float] = time.monotonic) -> dict[int, CompactionInfo]:
    """Poll until no compaction in ``ids`` is 'initiated' or 'working'; their final rows by id.

    Sleeps ``first_poll_s`` then doubles, each sleep capped at ``max_poll_s`` (default: :data:`MAX_POLL_S`, or
    hive.compactor.wait.timeout when that is shorter).
    ``timeout_s`` None waits as long as it takes (Hive); otherwise CompactionWaitTimeout when it runs out.
    """
    wanted = list(dict.fromkeys(int(i) for i in ids))
    cap = max_poll_s if max_poll_s is not None else min(MAX_POLL_S, metastore.conf.wait_timeout_ms / 1000)
    start, delay = clock(), first_poll_s
    while True:
        rows = {i: metastore.compactions.get(i) for i in wanted}
        pending = [i for i, row in rows.items() if row.state in WAITING_STATES]
        if not pending:
            return rows
        waited = clock() - start
        if timeout_s is not None and waited >= timeout_s:
            raise CompactionWaitTimeout(pending, round(waited, 3))
        pause = min(delay, cap)
        if timeout_s is not None:
            pause = min(pause, max(0.0, timeout_s - waited))
        sleep(pause)
        delay *= 2


__all__ = ["FIRST_POLL_S", "MAX_POLL_S", "NOT_QUEUED", "CompactionWaitTimeout", "RequestedCompaction",
           "parse_compaction_type", "request_compaction", "requester_id", "wait_for_compactions"]
