"""Real Hive-written files (the external fixture folder's interop/, README there; tests/external_fixtures.py) read
to exactly their documented content."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.errors import AcidFileError
from airflow_acid.acid.event_reader import FileFormat, open_orc_file, read_event_file
from airflow_acid.acid.event_schema import insert_events
from airflow_acid.acid.event_writer import write_event_file
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import plan_merge, read_acid_table, read_plan
from airflow_acid.acid.writeids import ValidReaderWriteIdList

B0 = 536870912


def wil(hwm: int, open=(), aborted=()) -> ValidReaderWriteIdList:
    return ValidReaderWriteIdList(table="default.t", high_watermark=hwm, open=tuple(open), aborted=tuple(aborted))


@pytest.fixture
def nation_table(interop, tmp_path):
    """Set 2: the 25k data file placed as delta_0000002_0000002_0000 next to the two delete deltas."""
    src = interop / "trino-nation-25k-with-delete-deltas"
    table = tmp_path / "nation"
    shutil.copytree(src / "nation_delete_deltas", table)
    shutil.copytree(src / "nationFile25kRowsSortedOnNationKey", table / "delta_0000002_0000002_0000")
    return table


def test_set2_nation_with_both_delete_deltas(nation_table):
    t = read_acid_table(str(nation_table), wil(4), include_row_ids=True)
    keys = t["n_nationkey"].to_pylist()
    assert t.num_rows == 23_000
    assert keys == sorted(keys)
    assert sorted(set(keys)) == [k for k in range(25) if k not in (5, 19)]
    assert all(keys.count(k) == 1000 for k in set(keys))
    # surviving ROW__IDs are exactly the original ones minus the deleted ranges
    assert t["rowId"].to_pylist() == [r for r in range(25_000) if not (5000 <= r < 6000 or 19000 <= r < 20000)]
    assert set(t["originalTransaction"].to_pylist()) == {2}


def test_set2_data_alone_and_snapshots(nation_table, interop):
    assert read_acid_table(str(nation_table), wil(2)).num_rows == 25_000      # deletes 3, 4 not yet committed
    assert read_acid_table(str(nation_table), wil(3)).num_rows == 24_000      # only nationkey 5 deleted
    assert read_acid_table(str(nation_table), wil(4, open=[3])).num_rows == 24_000  # delete 3 still open
    shutil.rmtree(nation_table / "delete_delta_0000003_0000003_0000")
    shutil.rmtree(nation_table / "delete_delta_0000004_0000004_0000")
    alone = read_acid_table(str(nation_table), wil(4))
    assert alone.num_rows == 25_000
    assert alone["n_nationkey"].to_pylist() == [k for k in range(25) for _ in range(1000)]
    five = read_acid_table(str(nation_table), wil(4), filter=pc.field("n_nationkey") == 5)
    assert five.num_rows == 1000 and set(five["n_name"].to_pylist()) == {"ETHIOPIA"}
    assert read_acid_table(str(nation_table), wil(4), filter=pc.field("n_nationkey") == 100).num_rows == 0


def test_set1_delete_delta_keys(interop):
    base = interop / "trino-fullacid-delete-delta-test"
    t = read_event_file(str(base / "delete_delta_0000004_0000004_0000" / "bucket_00000"))
    assert [(r["originalTransaction"], r["bucket"], r["rowId"]) for r in t.to_pylist()] == [(2, B0, 0)]
    assert t["operation"].to_pylist() == [2] and t["row"].to_pylist() == [None]


@pytest.mark.parametrize("deltas, kept", [
    (["delete_delta_0000004_0000004_0000", "delete_delta_0000007_0000007_0000"], [0, 1, 3, 4, 5, 7, 8, 9]),
    (["delete_delta_0000004_0000004"], [0, 1, 3, 4, 5, 6, 7, 8, 9]),
])
def test_set1_trino_expectations(interop, tmp_path, deltas, kept):
    """Rows with ROW__ID (originalTransaction 0..19, bucket 0, rowId 0); the delete deltas remove 2 and/or 6.

    Like Trino's test this applies the delete deltas directly (explicit merge plan, no directory selection).
    """
    table = tmp_path / "t"
    events = insert_events(pa.table({"col": pa.array(range(20), pa.int32())}), 0, B0)
    events = events.set_column(1, "originalTransaction", pa.array(range(20), pa.int64()))
    events = events.set_column(3, "rowId", pa.array([0] * 20, pa.int64()))
    events = events.set_column(4, "currentTransaction", pa.array(range(20), pa.int64()))
    write_event_file(str(table / "delta_0000000_0000019"), 0, events)
    for d in deltas:
        shutil.copytree(interop / "trino-fullacid-delete-delta-test" / d, table / d)
    storage = storage_for(str(table))
    plan = plan_merge(storage.list_files(), base=None, original_files=(), deltas=["delta_0000000_0000019", *deltas])
    t = read_plan(storage, plan, wil(19), include_row_ids=True)
    expected = [w for w in range(20) if w in kept or w >= 10]
    assert t["originalTransaction"].to_pylist() == expected
    assert t["col"].to_pylist() == expected


def test_set3_original_file_with_delete_delta(interop):
    t = read_acid_table(str(interop / "trino-fullacid-nation-original-file"), wil(10000001), include_row_ids=True)
    assert t.num_rows == 24
    assert t["n_nationkey"].to_pylist() == list(range(24))
    assert "UNITED STATES" not in t["n_name"].to_pylist()
    assert set(t["originalTransaction"].to_pylist()) == {0} and set(t["bucket"].to_pylist()) == {B0}
    # before the delete commits, all 25
    assert read_acid_table(str(interop / "trino-fullacid-nation-original-file"), wil(10000000)).num_rows == 25


def test_set4_synthetic_row_ids(interop):
    t = read_acid_table(str(interop / "trino-dummy-id-original-files"), wil(10000001), include_row_ids=True)
    rows = [(bucket_codec.decode(r["bucket"]).bucket_id, r["rowId"], r["id"]) for r in t.to_pylist()]
    assert [r for r in rows if r[0] == 0] == [(0, 0, 0), (0, 1, 1), (0, 3, 4)]         # id 3 (rowId 2) deleted
    assert [r for r in rows if r[0] == 1] == [(1, i, 5 + i) for i in range(4)]         # 000001_0 alone starts at 0
    bucket2 = [r for r in rows if r[0] == 2]
    assert bucket2 == [(2, i, 9 + i) for i in range(12)]                               # across the _copy_ files
    assert [r[1] for r in bucket2 if r[2] == 17] == [8]                                # _copy_2 starts at rowId 8
    assert set(t["originalTransaction"].to_pylist()) == {0}
    assert "Hadoopf= configuration" in t.filter(pc.field("id") == 14)["comment"][0].as_py()
    # without the delete's write id committed, id 3 is back
    assert sorted(read_acid_table(str(interop / "trino-dummy-id-original-files"), wil(5))["id"].to_pylist()) == \
        [i for i in range(21) if i != 2]


def test_set5_hive3_file_and_non_acid_file(interop, tmp_path):
    base = interop / "trino-acid-version-validation"
    f = open_orc_file(str(base / "acid_version_hive_3" / "00000_0"), expect=FileFormat.ACID)
    assert f.acid_version == 2
    t = f.read()
    assert t.num_rows == 1 and t["row"].to_pylist() == [{"a": 10}] and t["bucket"].to_pylist() == [537001984]
    plain = str(base / "no_orc_acid_version_in_metadata" / "00000_0")
    with pytest.raises(AcidFileError, match="no_orc_acid_version_in_metadata/00000_0.*expected a Hive ACID event file"):
        open_orc_file(plain, expect=FileFormat.ACID)
    # the same non-ACID file placed where an ACID bucket file belongs
    (tmp_path / "t" / "delta_0000001_0000001_0000").mkdir(parents=True)
    shutil.copy(plain, tmp_path / "t" / "delta_0000001_0000001_0000" / "bucket_00000")
    with pytest.raises(AcidFileError, match=r"delta_0000001_0000001_0000/bucket_00000.*in delta_0000001_0000001_0000"):
        read_acid_table(str(tmp_path / "t"), wil(1))


def test_set5_hive3_file_in_a_delta(interop, tmp_path):
    d = tmp_path / "t" / "delta_0000001_0000001_0000"
    d.mkdir(parents=True)
    shutil.copy(interop / "trino-acid-version-validation" / "acid_version_hive_3" / "00000_0", d / "bucket_00002")
    t = read_acid_table(str(tmp_path / "t"), wil(1), include_row_ids=True)
    assert t.to_pylist() == [{"originalTransaction": 1, "bucket": 537001984, "rowId": 0, "a": 10}]


@pytest.mark.parametrize("snapshot, expected", [
    (wil(0), []),
    (wil(1), [("a1", "b2"), ("a3", "b4")]),
    (wil(2), [("a1", "b2"), ("a3", "b4"), ("a5", "b6"), ("a7", "b8")]),
    (wil(2, open=[1]), [("a5", "b6"), ("a7", "b8")]),
    (wil(2, aborted=[2]), [("a1", "b2"), ("a3", "b4")]),
])
def test_set6_streaming_delta_at_each_snapshot(interop, tmp_path, snapshot, expected):
    d = tmp_path / "t" / "delta_0000001_0000002"
    d.mkdir(parents=True)
    shutil.copy(interop / "impala-hive-streaming-two-writeids" / "streaming.orc", d / "bucket_00000")
    t = read_acid_table(str(tmp_path / "t"), snapshot)
    assert [(r["a"], r["b"]) for r in t.to_pylist()] == expected


def test_set7_lower_case_acid_names_without_metadata(interop, tmp_path):
    (tmp_path / "t").mkdir()
    shutil.copy(interop / "impala-full-acid-schema-no-version" / "full_acid_schema_but_no_acid_version.orc",
                tmp_path / "t" / "bucket_00000")
    t = read_acid_table(str(tmp_path / "t"), wil(3), include_row_ids=True)
    assert t["i"].to_pylist() == [1, 2, 3]
    assert t["originalTransaction"].to_pylist() == [1, 2, 3]
    f = open_orc_file(str(tmp_path / "t" / "bucket_00000"))
    assert f.format is FileFormat.ACID and f.user_metadata == {} and f.key_index is None


def test_set8_alltypes_original_row_ids(interop):
    t = read_acid_table(str(interop / "impala-original-file-alltypes"), wil(0), include_row_ids=True)
    assert t.num_rows == 7300
    assert set(t["originalTransaction"].to_pylist()) == {0} and set(t["bucket"].to_pylist()) == {B0}
    assert t["rowId"].to_pylist() == list(range(7300))
    by_id = dict(zip(t["id"].to_pylist(), t["rowId"].to_pylist()))
    by_row = dict(zip(t["rowId"].to_pylist(), t["id"].to_pylist()))
    assert [by_id[i] for i in range(10)] == list(range(4030, 4040))
    assert [by_id[i] for i in range(991, 1000)] == list(range(6531, 6540))
    assert [by_id[i] for i in range(7201, 7210)] == list(range(2381, 2390))
    assert [by_row[r] for r in range(7201, 7210)] == list(range(491, 500))
    projected = read_acid_table(str(interop / "impala-original-file-alltypes"), wil(0), columns=["id", "string_col"])
    assert projected.column_names == ["id", "string_col"] and projected.num_rows == 7300
