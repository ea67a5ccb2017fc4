"""The database layer: clock, mutexes, inline IN lists (what its errors mean: test_db_errors.py)."""

from __future__ import annotations

import time

import sqlalchemy as sa

from airflow_acid.metastore.db import acquire_mutex, in_literals, now_ms, set_mutex_value
from airflow_acid.metastore.schema import ACID_INITIATOR_DECISIONS as AID

AWKWARD_NAMES = ["ds=it's", "p=back\\slash", "p=\\'; DROP TABLE x; --", "p=été/q=日本", "p=%(x)s", "p=$1", "plain"]


def test_database_clock_is_epoch_ms(db):
    assert abs(db.run(now_ms) - time.time() * 1000) < 5_000


def test_mutex_value_round_trip(db):
    assert db.run(lambda c: acquire_mutex(c, "Initiator")) == 0

    def store(conn):
        acquire_mutex(conn, "Initiator")
        set_mutex_value(conn, "Initiator", 1234)

    db.run(store)
    assert db.run(lambda c: acquire_mutex(c, "Initiator")) == 1234


def test_inline_in_lists_escape_every_value(db):
    """Values rendered inline by in_literals match exactly themselves on every backend (quotes, backslashes —
    MySQL's escape character —, placeholders, non-ASCII)."""
    rows = [{"AID_DATABASE": "d", "AID_TABLE": "t", "AID_PARTITION": name, "AID_DECIDED_AT": 1, "AID_OUTCOME": "N",
             "AID_REASON": "r"} for name in [*AWKWARD_NAMES, "kept"]]
    db.run(lambda c: c.execute(sa.insert(AID), rows))

    def select(names):
        return db.run(lambda c: sorted(c.execute(sa.select(AID.c.AID_PARTITION).where(
            in_literals(AID.c.AID_PARTITION, names))).scalars()))
    for name in AWKWARD_NAMES:
        assert select([name]) == [name]
    assert select(AWKWARD_NAMES) == sorted(AWKWARD_NAMES)
    deleted = db.run(lambda c: c.execute(sa.delete(AID).where(in_literals(AID.c.AID_PARTITION, AWKWARD_NAMES))).rowcount)
    assert deleted == len(AWKWARD_NAMES)
    assert db.run(lambda c: c.execute(sa.select(AID.c.AID_PARTITION)).scalars().all()) == ["kept"]
