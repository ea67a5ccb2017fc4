"""Reads behind shadow mode and the takeover check: airflow-acid's recorded decisions in a time range (the latest per
table/partition, and every shadow cycle's from ACID_INITIATOR_DECISION_LOG folded into a :class:`DecisionHistory`),
what Hive's compactor did in that range (COMPACTION_QUEUE and COMPLETED_COMPACTIONS, with 'did not initiate',
'refused' and aborted-transaction cleanup rows), and when Hive's own Initiator was last seen. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.metastore import hive_mutex
from airflow_acid.metastore.db import Database
from airflow_acid.metastore.initiator_store import (
    LEASE_SUFFIX,
    Entity,
    InitiatorDecisionRecord,
    Outcome,
    decision_record,
    logged_decision_record,
)
from airflow_acid.metastore.schema import (
    ACID_INITIATOR_DECISION_LOG,
    ACID_INITIATOR_DECISIONS,
    AUX_TABLE,
    COMPACTION_QUEUE,
    COMPLETED_COMPACTIONS,
)

AID, ADL, CQ, CC = ACID_INITIATOR_DECISIONS, ACID_INITIATOR_DECISION_LOG, COMPACTION_QUEUE, COMPLETED_COMPACTIONS
WANTS_COMPACTION = (Outcome.QUEUED, Outcome.WOULD_QUEUE)
"""Outcomes that mean airflow-acid decided to compact."""
_STREAM_ROWS = 5000
OWN_INITIATOR_SUFFIXES = ("-initiator", "-shadow")
"""Initiator ids airflow-acid writes (``<host>-initiator``, ``<host>-shadow``); Hive's are ``<host>-<thread id>``."""


@dataclass(frozen=True)
class HiveCompaction:
    """One row of Hive's queue or history: a compaction (or aborted-txn cleanup), refusal, failure or 'did not
    initiate' of a table/partition."""

    id: int
    database: str
    table: str
    partition: str | None
    state: CompactionState
    type: CompactionType
    enqueued_ms: int | None
    ended_ms: int | None
    initiator_id: str | None
    highest_write_id: int | None
    message: str | None
    queued: bool
    """From COMPACTION_QUEUE (still current) rather than COMPLETED_COMPACTIONS."""


@dataclass
class DecisionSpan:
    """Consecutive decisions of one table/partition with the same outcome: the first and the last of them and how
    many cycles decided so (the figures of both ends show how the deltas grew while the outcome held)."""

    first: InitiatorDecisionRecord
    last: InitiatorDecisionRecord
    cycles: int = 1

    @property
    def outcome(self) -> Outcome:
        return self.first.outcome

    @property
    def wants(self) -> bool:
        return self.outcome in WANTS_COMPACTION

    @property
    def first_ms(self) -> int:
        return self.first.decided_at or 0

    @property
    def last_ms(self) -> int:
        return self.last.decided_at or 0


@dataclass
class DecisionHistory:
    """airflow-acid's decisions about one table/partition over a time range, oldest first, as :class:`DecisionSpan`
    runs of one outcome (a decision that flips — would queue, not needed, would queue — makes three spans)."""

    database: str
    table: str
    partition: str | None
    spans: list[DecisionSpan] = field(default_factory=list)

    @classmethod
    def of(cls, records: list[InitiatorDecisionRecord]) -> DecisionHistory:
        """The history of one entity's records (in time order)."""
        first = records[0]
        history = cls(first.database, first.table, first.partition)
        for record in records:
            history.add(record)
        return history

    def add(self, record: InitiatorDecisionRecord) -> None:
        """Append the next decision (not older than the last one added)."""
        if self.spans and self.spans[-1].outcome is record.outcome:
            span = self.spans[-1]
            span.last, span.cycles = record, span.cycles + 1
        else:
            self.spans.append(DecisionSpan(record, record))

    @property
    def entity(self) -> Entity:
        return self.database, self.table, self.partition

    @property
    def latest(self) -> InitiatorDecisionRecord:
        return self.spans[-1].last

    @property
    def decisions(self) -> int:
        return sum(s.cycles for s in self.spans)

    @property
    def flips(self) -> int:
        """How often the decision changed between "compact" and "do not compact"."""
        return sum(a.wants != b.wants for a, b in zip(self.spans, self.spans[1:]))

    @property
    def first_compact_ms(self) -> int | None:
        """When airflow-acid first decided to compact in the range, or None."""
        return next((s.first_ms for s in self.spans if s.wants), None)

    def last_before(self, moment_ms: int) -> tuple[int, DecisionSpan] | None:
        """The span (with its index) holding the last decision taken before ``moment_ms``, or None."""
        found = None
        for index, span in enumerate(self.spans):
            if span.first_ms >= moment_ms:
                break
            found = index, span
        return found

    def wanting_since(self, index: int) -> int:
        """When the run of "compact" decisions that includes span ``index`` began."""
        while index > 0 and self.spans[index - 1].wants:
            index -= 1
        return self.spans[index].first_ms


def _rows(conn: Connection, table: sa.Table, prefix: str, since_ms: int, until_ms: int) -> list[HiveCompaction]:
    c = table.c
    ended = c[f"{prefix}_END"] if f"{prefix}_END" in c else c[f"{prefix}_COMMIT_TIME"]
    query = sa.select(c[f"{prefix}_ID"], c[f"{prefix}_DATABASE"], c[f"{prefix}_TABLE"], c[f"{prefix}_PARTITION"],
                      c[f"{prefix}_STATE"], c[f"{prefix}_TYPE"], c[f"{prefix}_ENQUEUE_TIME"], ended,
                      c[f"{prefix}_INITIATOR_ID"], c[f"{prefix}_HIGHEST_WRITE_ID"], c[f"{prefix}_ERROR_MESSAGE"]
                      ).where(c[f"{prefix}_ENQUEUE_TIME"] >= since_ms, c[f"{prefix}_ENQUEUE_TIME"] <= until_ms)
    return [HiveCompaction(int(r[0]), r[1], r[2], r[3], CompactionState(r[4]), CompactionType(r[5]),
                           r[6], r[7], r[8], r[9], r[10], table is CQ)
            for r in conn.execute(query.order_by(c[f"{prefix}_ID"]))]


class ShadowStore:
    """The read-only queries of shadow mode and the takeover check on one metastore database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def decisions_between(self, since_ms: int, until_ms: int) -> list[InitiatorDecisionRecord]:
        """airflow-acid's recorded decisions (the latest per table/partition) taken in [since, until]; none on a
        Hive metastore without the decisions table."""
        if not self.db.profile.decisions_table:
            return []

        def work(conn: Connection) -> list[InitiatorDecisionRecord]:
            rows = conn.execute(sa.select(AID).where(AID.c.AID_DECIDED_AT >= since_ms, AID.c.AID_DECIDED_AT <= until_ms)
                                .order_by(AID.c.AID_DATABASE, AID.c.AID_TABLE, AID.c.AID_PARTITION)).all()
            return [decision_record(r) for r in rows]

        return self.db.run(work, what="read Initiator decisions of a time range")

    def decision_histories(self, since_ms: int, until_ms: int) -> dict[Entity, DecisionHistory]:
        """Every shadow cycle's decisions taken in [since, until] (ACID_INITIATOR_DECISION_LOG) folded per
        table/partition, streamed oldest first; empty without the log table (a Hive metastore whose decisions table
        an older release created)."""
        if not self.db.profile.decision_log_table:
            return {}

        def work(conn: Connection) -> dict[Entity, DecisionHistory]:
            histories: dict[Entity, DecisionHistory] = {}
            query = (sa.select(ADL).where(ADL.c.ADL_DECIDED_AT >= since_ms, ADL.c.ADL_DECIDED_AT <= until_ms)
                     .order_by(ADL.c.ADL_DECIDED_AT, ADL.c.ADL_ID).execution_options(yield_per=_STREAM_ROWS))
            for row in conn.execute(query):
                record = logged_decision_record(row)
                history = histories.get(record.entity)
                if history is None:
                    histories[record.entity] = DecisionHistory.of([record])
                else:
                    history.add(record)
            return histories

        return self.db.run(work, what="read the Initiator decision log of a time range")

    def hive_compactions(self, since_ms: int, until_ms: int) -> list[HiveCompaction]:
        """Queue and history rows enqueued in [since, until], oldest id first (queue rows after history rows)."""
        return self.db.run(lambda conn: _rows(conn, CC, "CC", since_ms, until_ms) + _rows(conn, CQ, "CQ", since_ms,
                                                                                            until_ms),
                           what="read Hive's compactions of a time range")

    def hive_initiator_last_seen(self) -> int | None:
        """When Hive's own Initiator last showed itself (epoch ms), or None: the newest queue/history row written by
        an initiator that is not airflow-acid's, and the Initiator mutex's last-run time (AUX_TABLE MT_KEY2) when
        airflow-acid never ran an Initiator here (no lease row; otherwise that time may be airflow-acid's own)."""
        def work(conn: Connection) -> int | None:
            seen: list[int] = []
            for table, p in ((CQ, "CQ"), (CC, "CC")):
                ident = table.c[f"{p}_INITIATOR_ID"]
                foreign = sa.and_(ident.is_not(None), ident != "manual",
                                  *(sa.not_(ident.endswith(s, autoescape=True)) for s in OWN_INITIATOR_SUFFIXES))
                value = conn.execute(sa.select(sa.func.max(table.c[f"{p}_ENQUEUE_TIME"])).where(foreign)).scalar()
                if value is not None:
                    seen.append(int(value))
            ours = conn.execute(sa.select(AUX_TABLE.c.MT_KEY1).where(
                AUX_TABLE.c.MT_KEY1 == hive_mutex.INITIATOR + LEASE_SUFFIX)).first()
            if ours is None:
                mutex = conn.execute(sa.select(sa.func.max(AUX_TABLE.c.MT_KEY2)).where(
                    AUX_TABLE.c.MT_KEY1 == hive_mutex.INITIATOR)).scalar()
                if mutex:
                    seen.append(int(mutex))
            return max(seen) if seen else None

        return self.db.run(work, what="find Hive's Initiator activity")
