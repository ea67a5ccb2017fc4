"""Streaming ingest: one delta_min_max per transaction batch, _flush_length side files while open, visibility
of committed prefixes only, aborts, close/crash behaviour."""

from __future__ import annotations

import struct

import pytest

from airflow_acid.acid.event_reader import read_event_file
from airflow_acid.client.errors import SchemaMismatchError, TransactionClosedError, UnsupportedOperationError
from tests.warehouse_support import tree


@pytest.fixture
def events(warehouse):
    warehouse.create_table("events", [("id", "bigint"), ("msg", "string")], partition_by=[("ds", "string")])
    return warehouse


def _ids(wh) -> list[int]:
    return sorted(wh.read("events").column("id").to_pylist())


def test_batch_shares_one_delta_with_flush_lengths(events, tmp_path):
    part = tmp_path / "wh" / "events" / "ds=d1"
    with events.streaming_connection("events", {"ds": "d1"}, batch_size=3) as conn:
        conn.write([(1, "a"), (2, "b")])
        conn.commit()
        assert conn.directory == "delta_0000001_0000003"
        assert tree(part) == ["delta_0000001_0000003/bucket_00000", "delta_0000001_0000003/bucket_00000_flush_length"]
        side = (part / "delta_0000001_0000003/bucket_00000_flush_length").read_bytes()
        assert len(side) == 8 and struct.unpack(">q", side)[0] > 0
        conn.write([(3, "c")])
        assert _ids(events) == [1, 2]  # the open txn's rows are not visible
        conn.commit()
        assert len((part / "delta_0000001_0000003/bucket_00000_flush_length").read_bytes()) == 16
        assert _ids(events) == [1, 2, 3]
        conn.write([(4, "d")])
        conn.abort()
        assert _ids(events) == [1, 2, 3]
        conn.write([(5, "e")])  # a new batch
        assert conn.directory == "delta_0000004_0000006"
        conn.commit()
    assert tree(part) == ["delta_0000001_0000003/_orc_acid_version", "delta_0000001_0000003/bucket_00000",
                          "delta_0000004_0000006/_orc_acid_version", "delta_0000004_0000006/bucket_00000"]
    ev = read_event_file(str(part / "delta_0000001_0000003/bucket_00000")).to_pylist()
    assert [(e["originalTransaction"], e["rowId"], e["bucket"]) for e in ev] == [
        (1, 0, 536870912), (1, 1, 536870912), (2, 0, 536870912)]  # the aborted txn 3's row never reached the file
    assert _ids(events) == [1, 2, 3, 5]
    assert conn.stats.committed == 3 and conn.stats.aborted == 3 and conn.stats.batches == 2
    assert events.metastore.locks.show_locks() == []
    assert [t.state.value for t in events.metastore.txns.show_transactions()] == ["a", "a", "a"]


def test_close_on_error_aborts_what_is_left(events):
    with pytest.raises(RuntimeError):
        with events.streaming_connection("events", {"ds": "d1"}, batch_size=4) as conn:
            conn.write([(1, "a")])
            conn.commit()
            conn.write([(2, "b")])
            raise RuntimeError("producer failed")
    assert _ids(events) == [1]
    assert conn.stats.aborted == 3
    with pytest.raises(TransactionClosedError):
        conn.write([(3, "c")])


def test_crashed_stream_leaves_side_files_and_only_committed_rows(events, tmp_path):
    conn = events.streaming_connection("events", {"ds": "d1"}, batch_size=2)
    conn.write([(1, "a")])
    conn.commit()
    conn.write([(2, "b")])  # never committed: the process "dies" here
    conn._heartbeater.stop()
    assert _ids(events) == [1]
    assert "ds=d1/delta_0000001_0000002/bucket_00000_flush_length" in tree(tmp_path / "wh" / "events")


def test_bad_input_and_insert_only_tables(events, tmp_path):
    with events.streaming_connection("events", {"ds": "d1"}, batch_size=2) as conn:
        with pytest.raises(SchemaMismatchError):
            conn.write([("x", "a")])
        assert conn.current_txn is None
    events.create_table("mm", [("x", "int")], transactional_properties="insert_only")
    with pytest.raises(UnsupportedOperationError):
        events.streaming_connection("mm")
    assert tree(tmp_path / "wh") == []


@pytest.fixture
def backend_events(empty_db_url, tmp_path):
    """The ``events`` table on each metastore backend (SQLite, PostgreSQL, MariaDB)."""
    from airflow_acid.client.warehouse import AcidWarehouse

    with AcidWarehouse(empty_db_url, tmp_path / "wh") as wh:
        wh.create_table("events", [("id", "bigint"), ("msg", "string")], partition_by=[("ds", "string")])
        yield wh


def test_dynamic_partitions_route_rows_and_add_partitions_at_commit(backend_events, tmp_path):
    """No static partition: each row carries its partition value (Hive Streaming's dynamic partitioning); the
    partitions a transaction wrote are added to the catalog and recorded as its components when it commits."""
    events = backend_events
    root = tmp_path / "wh" / "events"
    ms = events.metastore
    with events.streaming_connection("events", batch_size=2) as conn:
        assert conn.dynamic
        conn.write([{"id": 1, "msg": "a", "ds": "d1"}, {"id": 2, "msg": "b", "ds": "d2"}])
        assert [p.name for p in ms.catalog.list_partitions("default", "events")] == []  # not before the commit
        conn.commit()
        assert sorted(p.name for p in ms.catalog.list_partitions("default", "events")) == ["ds=d1", "ds=d2"]
        conn.write([(3, "c", "d2"), (4, "d", "d3")])
        conn.abort()  # d3 is never added
        conn.write([(5, "e", "d1")])  # a new batch
        conn.commit()
    assert sorted(p.name for p in ms.catalog.list_partitions("default", "events")) == ["ds=d1", "ds=d2"]
    assert sorted(tree(root / "ds=d1")) == ["delta_0000001_0000002/_orc_acid_version",
                                            "delta_0000001_0000002/bucket_00000",
                                            "delta_0000003_0000004/_orc_acid_version",
                                            "delta_0000003_0000004/bucket_00000"]
    table = events.read("events")
    assert sorted(zip(table.column("id").to_pylist(), table.column("ds").to_pylist())) == [
        (1, "d1"), (2, "d2"), (5, "d1")]
    assert events.read("events", {"ds": "d2"}).column("id").to_pylist() == [2]
    candidates, _more = ms.initiator.write_candidates(None, 100)  # COMPLETED_TXN_COMPONENTS: per partition
    assert sorted(c.partition for c in candidates if c.table == "events") == ["ds=d1", "ds=d2"]
    with pytest.raises(SchemaMismatchError, match="partition column"):
        with events.streaming_connection("events") as conn:
            conn.write([(6, "f")])
