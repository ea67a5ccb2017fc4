"""Layouts other engines misread (issue 30 item 4): each bad layout is built from files the project's writers wrote,
then renamed, moved or copied (or, for the key index, re-tailed with acid/orc_tail), and must give exactly its finding;
a table as the writers leave it gives none. Hive/Trino/Impala-written interop files are checked too."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.event_schema import insert_events
from airflow_acid.acid.event_writer import AcidStats, acid_metadata
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.layout_check import Problem, Severity, check_layout, has_errors
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.orc_tail import finished_file
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.acid.writeids import ValidReaderWriteIdList
from tests.external_fixtures import INTEROP_DIR, external_fixture

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
DELTA1 = "delta_0000001_0000001_0000"
DELETE2 = "delete_delta_0000002_0000002_0000"


def _rows(keys):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"v{k}" for k in keys]})


@pytest.fixture
def table(tmp_path) -> Path:
    """An insert (write id 1) and a delete of one of its rows (write id 2), as the writers leave them."""
    loc = str(tmp_path / "t")
    write_statement(loc, 1, 0, SCHEMA, inserts=_rows([1, 2, 3]))
    snap = ValidReaderWriteIdList(table="d.t", high_watermark=1)
    keys = read_acid_table(loc, snap, include_row_ids=True).slice(0, 1).select(
        ["originalTransaction", "bucket", "rowId"])
    write_statement(loc, 2, 0, SCHEMA, deletes=keys)
    return Path(loc)


def _check(root: Path, **kwargs):
    return check_layout(storage_for(str(root)), **kwargs)


def _codes(findings) -> list[tuple[str, Problem, Severity]]:
    return sorted((f.path, f.problem, f.severity) for f in findings)


def test_a_table_as_written_gives_no_finding(table):
    assert _check(table) == []


def test_attempt_suffix_in_a_delete_delta_is_an_error_naming_trino(table):
    (table / DELETE2 / "bucket_00000").rename(table / DELETE2 / "bucket_00000_1")
    findings = _check(table)
    assert _codes(findings) == [(f"{DELETE2}/bucket_00000_1", Problem.DELETE_DELTA_ATTEMPT_SUFFIX, Severity.ERROR)]
    f = findings[0]
    assert "attempt suffix (_1)" in f.message and "Trino silently skips it" in f.message
    assert {m.engine for m in f.misread_by} == {"Hive", "Trino"}
    assert "deleted rows reappear" in next(m.effect for m in f.misread_by if m.engine == "Trino")
    assert has_errors(findings)


def test_attempt_suffix_in_an_insert_delta_is_fine(table):
    (table / DELTA1 / "bucket_00000").rename(table / DELTA1 / "bucket_00000_1")
    assert _check(table) == []


@pytest.mark.parametrize("copy_name", ["bucket_00000_copy_1", "000000_0_copy_1"])
def test_copy_n_in_a_full_acid_delta(table, copy_name):
    shutil.copy(table / DELTA1 / "bucket_00000", table / DELTA1 / copy_name)
    findings = _check(table)
    assert _codes(findings) == [(f"{DELTA1}/{copy_name}", Problem.COPY_IN_ACID_DIRECTORY, Severity.ERROR)]
    assert f"a _copy_N file in the full-ACID directory {DELTA1}" in findings[0].message


def test_nested_directory_inside_a_delta(table):
    nested = table / DELTA1 / "HIVE_UNION_SUBDIR_1"
    nested.mkdir()
    (table / DELTA1 / "bucket_00000").rename(nested / "bucket_00000")
    findings = _check(table)
    assert _codes(findings) == [(f"{DELTA1}/HIVE_UNION_SUBDIR_1", Problem.NESTED_DIRECTORY, Severity.ERROR)]
    trino = next(m.effect for f in findings for m in f.misread_by if m.engine == "Trino")
    assert "skips every file below a sub-directory" in trino


def test_original_files_beside_deltas_and_in_a_subdirectory(table):
    po.write_table(_rows([7, 8]), str(table / "000000_0"))
    (table / "old").mkdir()
    po.write_table(_rows([9]), str(table / "old" / "000001_0"))
    findings = _check(table)
    assert _codes(findings) == [(".", Problem.ORIGINALS_BESIDE_DELTAS, Severity.WARNING),
                                ("old", Problem.NESTED_DIRECTORY, Severity.WARNING)]
    beside = next(f for f in findings if f.problem is Problem.ORIGINALS_BESIDE_DELTAS)
    assert "2 original file(s) (000000_0, old/000001_0)" in beside.message
    assert not has_errors(findings)


def test_original_file_without_a_bucket_shaped_name(table):
    po.write_table(_rows([7]), str(table / "part-00000.orc"))
    findings = _check(table)
    assert _codes(findings) == [(".", Problem.ORIGINALS_BESIDE_DELTAS, Severity.WARNING),
                                ("part-00000.orc", Problem.ORIGINAL_NAME_NOT_BUCKET, Severity.ERROR)]
    odd = next(f for f in findings if f.problem is Problem.ORIGINAL_NAME_NOT_BUCKET)
    assert "fails the query" in next(m.effect for m in odd.misread_by if m.engine == "Trino")


def test_a_plain_table_gives_no_original_finding(tmp_path):
    po.write_table(_rows([7]), str(tmp_path / "part-00000.orc"))
    assert _check(tmp_path) == []


def test_original_files_beside_a_base(table):
    shutil.copytree(table / DELTA1, table / "base_0000001")
    po.write_table(_rows([7]), str(table / "000000_0"))
    findings = _check(table)
    assert _codes(findings) == [(".", Problem.ORIGINALS_BESIDE_BASE, Severity.WARNING)]
    assert "beside the base base_0000001" in findings[0].message
    assert any("Cleaner deletes them" in m.effect for m in findings[0].misread_by)


def test_acid_and_plain_files_mixed(table):
    po.write_table(_rows([7]), str(table / DELTA1 / "000001_0"))
    shutil.copy(table / DELTA1 / "bucket_00000", table / "bucket_00000")
    findings = _check(table)
    assert _codes(findings) == [("bucket_00000", Problem.MIXED_FILE_FORMATS, Severity.ERROR),
                                (DELTA1, Problem.MIXED_FILE_FORMATS, Severity.ERROR)]
    in_delta = next(f for f in findings if f.path == DELTA1)
    assert "bucket_00000" in in_delta.message and "000001_0" in in_delta.message


def test_missing_orc_acid_version(table):
    (table / DELTA1 / names.ORC_ACID_VERSION_FILE).unlink()
    findings = _check(table)
    assert _codes(findings) == [(DELTA1, Problem.MISSING_ACID_VERSION, Severity.WARNING)]
    assert "readers fall back to them" in findings[0].message


def _event_file(keys: list[int], key_index: str, stripes: int = 1) -> bytes:
    """An ACID event file of ``stripes`` stripes written by pyarrow, its tail finished by orc_tail with the given
    ``hive.acid.key.index`` (so it can disagree with the stripes)."""
    events = insert_events(_rows(keys), 1, bucket_codec.encode(0, 0))
    sink = io.BytesIO()
    with po.ORCWriter(sink, stripe_size=1 if stripes > 1 else 64 << 20) as writer:
        for part in (events.slice(i * len(keys) // stripes, len(keys) // stripes) for i in range(stripes)):
            writer.write(part)
    return finished_file(sink.getvalue(), acid_metadata(key_index, AcidStats(len(keys), 0, 0)))


@pytest.mark.parametrize(("key_index", "says"), [
    ("1,536870912,2;1,536870912,5;", "has 2 entries but the file has 1 stripes"),
    ("1,536870912,1;", "says stripe 0 ends with ROW__ID (1,536870912,1) but its last row is (1,536870912,2)"),
])
def test_key_index_not_matching_the_stripes(table, key_index, says):
    (table / DELTA1 / "bucket_00000").write_bytes(_event_file([1, 2, 3], key_index))
    findings = _check(table)
    assert _codes(findings) == [(f"{DELTA1}/bucket_00000", Problem.KEY_INDEX_MISMATCH, Severity.ERROR)]
    assert says in findings[0].message
    assert findings[0].misread_by[0].engine == "Hive"


def test_key_index_right_gives_nothing_and_tail_only_check_skips_keys(table):
    (table / DELTA1 / "bucket_00000").write_bytes(_event_file([1, 2, 3], "1,536870912,2;"))
    assert _check(table) == []
    (table / DELTA1 / "bucket_00000").write_bytes(_event_file([1, 2, 3], "1,536870912,1;"))
    assert _check(table, verify_keys=False) == []


def test_directories_limit_the_check(table):
    (table / DELETE2 / "bucket_00000").rename(table / DELETE2 / "bucket_00000_3")
    (table / DELTA1 / names.ORC_ACID_VERSION_FILE).unlink()
    assert [f.problem for f in _check(table, directories=[DELTA1])] == [Problem.MISSING_ACID_VERSION]
    assert [f.problem for f in _check(table, directories=[DELETE2])] == [Problem.DELETE_DELTA_ATTEMPT_SUFFIX]


# --- files Hive, Trino and Impala wrote ----------------------------------------------------------------------------

INTEROP_EXPECTED = {
    # delete deltas as Hive wrote them, copied without _orc_acid_version: files carry hive.acid.version=2
    "trino-fullacid-delete-delta-test": [
        ("delete_delta_0000004_0000004", Problem.MISSING_ACID_VERSION, Severity.WARNING),
        ("delete_delta_0000004_0000004_0000", Problem.MISSING_ACID_VERSION, Severity.WARNING),
        ("delete_delta_0000007_0000007_0000", Problem.MISSING_ACID_VERSION, Severity.WARNING)],
    # a converted table: an original file beside a delete delta
    "trino-fullacid-nation-original-file": [
        (".", Problem.ORIGINALS_BESIDE_DELTAS, Severity.WARNING),
        ("delete_delta_10000001_10000001_0000", Problem.MISSING_ACID_VERSION, Severity.WARNING)],
    "trino-dummy-id-original-files": [
        (".", Problem.ORIGINALS_BESIDE_DELTAS, Severity.WARNING),
        ("delete_delta_10000001_10000001_0000", Problem.MISSING_ACID_VERSION, Severity.WARNING)],
    # folders that are not ACID directory names, holding event files (a delete delta one level too deep): to Hive
    # they are original directories, and ACID files there are misread
    "trino-nation-25k-with-delete-deltas": [
        ("nationFile25kRowsSortedOnNationKey", Problem.NESTED_DIRECTORY, Severity.WARNING),
        ("nationFile25kRowsSortedOnNationKey/bucket_00000", Problem.MIXED_FILE_FORMATS, Severity.ERROR),
        ("nation_delete_deltas", Problem.NESTED_DIRECTORY, Severity.WARNING),
        ("nation_delete_deltas/delete_delta_0000003_0000003_0000/bucket_00000", Problem.MIXED_FILE_FORMATS,
         Severity.ERROR),
        ("nation_delete_deltas/delete_delta_0000004_0000004_0000/bucket_00000", Problem.MIXED_FILE_FORMATS,
         Severity.ERROR)],
}


@pytest.mark.parametrize("fixture", sorted(INTEROP_EXPECTED))
def test_interop_directories(fixture):
    root = external_fixture(f"{INTEROP_DIR}/{fixture}", "interop ORC files")
    assert _codes(_check(root)) == INTEROP_EXPECTED[fixture]


def test_interop_key_indexes_match_their_stripes(tmp_path):
    """Hive's multi-stripe file (5 stripes) and the streaming file (2 stripes, 2 write ids) keep a key index that
    matches every stripe's last ROW__ID."""
    interop = external_fixture(INTEROP_DIR, "interop ORC files")
    delta = tmp_path / "t" / "delta_0000001_0000002"
    delta.mkdir(parents=True)
    shutil.copy(interop / "impala-hive-streaming-two-writeids" / "streaming.orc", delta / "bucket_00000")
    other = tmp_path / "t" / "delta_0000002_0000002_0000"
    other.mkdir()
    shutil.copy(interop / "trino-nation-25k-with-delete-deltas" / "nationFile25kRowsSortedOnNationKey" /
                "bucket_00000", other / "bucket_00000")
    for d in (delta, other):
        (d / names.ORC_ACID_VERSION_FILE).write_text("2")
    assert _check(tmp_path / "t") == []


def test_interop_file_without_acid_version_in_a_delta(tmp_path):
    """Hive 3.1's query-based compaction output (no hive.acid.* metadata) in a delta without _orc_acid_version: an
    error (reads as pre-Hive-3 data); with the marker file: nothing."""
    src = external_fixture(f"{INTEROP_DIR}/impala-full-acid-schema-no-version", "interop ORC files")
    delta = tmp_path / "t" / "delta_0000001_0000003"
    delta.mkdir(parents=True)
    shutil.copy(src / "full_acid_schema_but_no_acid_version.orc", delta / "bucket_00000")
    assert _codes(_check(tmp_path / "t")) == [("delta_0000001_0000003", Problem.MISSING_ACID_VERSION,
                                              Severity.ERROR)]
    (delta / names.ORC_ACID_VERSION_FILE).write_text("2")
    assert _check(tmp_path / "t") == []
