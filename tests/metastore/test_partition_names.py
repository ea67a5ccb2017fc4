"""Partition names recorded through locks and transaction components are normalized as Hive's
TxnUtils.normalizePartitionCase does (key lower-cased, value kept), on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid.codes import CompactionType, LockType, OperationType
from airflow_acid.metastore.compactions import CompactionQueue
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.locks import LockComponent, LockManager
from airflow_acid.metastore.partitions import (
    escape_path_name,
    make_partition_name,
    normalize_partition_name,
    parse_partition_name,
)
from airflow_acid.metastore.schema import COMPLETED_TXN_COMPONENTS, HIVE_LOCKS, TXN_COMPONENTS, WRITE_SET
from airflow_acid.metastore.txns import TxnStore


@pytest.mark.parametrize(("given_name", "expected"), [
    ("dS=ToDay", "ds=ToDay"),
    ("DS=2024-01-01/HR=Noon", "ds=2024-01-01/hr=Noon"),
    ("ds=ToDay", "ds=ToDay"),
    ("K%3DEY=V%2FAL", "k%3Dey=V%2FAL"),  # escaped key re-escaped after lower-casing; the value is left alone
    (None, None),
])
def test_keys_are_lower_cased_values_kept(given_name, expected):
    assert normalize_partition_name(given_name) == expected


@pytest.mark.parametrize("bad", ["", "ds", "=x", "ds=a=b", "ds=1/DS=2", "ds=1//h=2"])
def test_malformed_names_are_refused(bad):
    with pytest.raises(InvalidInputError, match="partition name"):
        normalize_partition_name(bad)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/"), min_size=1, max_size=8)


@given(st.dictionaries(_TEXT, _TEXT, min_size=1, max_size=3))
def test_normalizing_a_built_name_equals_building_it_from_lower_case_keys(spec):
    """For any spec (distinct keys after lower-casing), normalizing the name built with the keys as given is the
    name built from lower-cased keys, and normalizing is idempotent."""
    lowered = {k.lower(): v for k, v in spec.items()}
    if len(lowered) != len(spec):
        return
    raw = "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in spec.items())
    assert normalize_partition_name(raw) == make_partition_name(lowered)
    assert normalize_partition_name(normalize_partition_name(raw)) == make_partition_name(lowered)
    assert parse_partition_name(normalize_partition_name(raw)) == lowered


def _rows(db, table, column):
    with db.engine.connect() as conn:
        return sorted(conn.execute(sa.select(table.c[column])).scalars())


def test_lock_and_commit_record_the_normalized_name(db):
    txns, locks = TxnStore(db), LockManager(db)
    txn = txns.open_txn(user="hive", host="hs2")
    txns.allocate_write_ids(txn, "D", "T")
    comp = LockComponent(db="D", table="T", partition="dS=ToDay", lock_type=LockType.SHARED_WRITE,
                         operation=OperationType.UPDATE)
    assert comp.partition == "ds=ToDay"
    locks.lock([comp], txn_id=txn, user="hive", host="hs2")
    assert _rows(db, HIVE_LOCKS, "HL_PARTITION") == ["ds=ToDay"]
    assert _rows(db, TXN_COMPONENTS, "TC_PARTITION") == ["ds=ToDay"]
    assert [r.partition for r in locks.show_locks("d", "t", "DS=ToDay")] == ["ds=ToDay"]
    txns.commit(txn)
    assert _rows(db, COMPLETED_TXN_COMPONENTS, "CTC_PARTITION") == ["ds=ToDay"]
    assert _rows(db, WRITE_SET, "WS_PARTITION") == ["ds=ToDay"]


def test_write_components_and_dynamic_partitions_record_the_normalized_name(db):
    txns = TxnStore(db)
    txn = txns.open_txn(user="hive", host="hs2")
    assert txns.add_write_components(txn, "d", "t", ["dS=ToDay", "ds=ToDay", None], OperationType.INSERT) == 2
    dp = txns.open_txn(user="hive", host="hs2")
    txns.add_write_components(dp, "d", "t", None, OperationType.INSERT)
    assert txns.add_dynamic_partitions(dp, "d", "t", ["Ds=A", "dS=A", "DS=b"], OperationType.INSERT) == 2
    with db.engine.connect() as conn:
        got = sorted((r.TC_TXNID, r.TC_PARTITION or "") for r in conn.execute(
            sa.select(TXN_COMPONENTS.c.TC_TXNID, TXN_COMPONENTS.c.TC_PARTITION)))
    assert got == [(txn, ""), (txn, "ds=ToDay"), (dp, "ds=A"), (dp, "ds=b")]
    with pytest.raises(InvalidInputError, match="not of the form"):
        txns.add_write_components(txn, "d", "t", ["ToDay"], OperationType.INSERT)


def test_compaction_request_names_the_normalized_partition(db):
    queue = CompactionQueue(db)
    first = queue.enqueue("d", "t", "dS=ToDay", CompactionType.MAJOR, highest_write_id_now=0)
    assert first.accepted and queue.get(first.id).partition == "ds=ToDay"
    again = queue.enqueue("d", "t", "ds=ToDay", CompactionType.MAJOR, highest_write_id_now=0)
    assert not again.accepted and f"id={first.id}" in again.message
