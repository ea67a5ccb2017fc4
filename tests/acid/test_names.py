"""ACID directory and file names: Hive's formats (minimum widths), parsing by '_' and errors (docs/hive-acid.md#names)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid.errors import AcidNameError
from airflow_acid.acid.names import (
    LONG_MAX,
    LONG_MIN,
    BaseDir,
    BucketFile,
    DeltaDir,
    DirKind,
    OriginalFile,
    dir_kind,
    flush_length_file,
    format_base,
    format_bucket_file,
    format_delta,
    format_original_file,
    is_bucket_file,
    is_hidden,
    parse_base,
    parse_bucket_file,
    parse_delta,
    parse_dir,
    parse_original_file,
)

write_ids = st.integers(min_value=0, max_value=LONG_MAX)
txn_ids = st.integers(min_value=0, max_value=LONG_MAX)
stmt_ids = st.one_of(st.none(), st.integers(min_value=0, max_value=99_999))


@pytest.mark.parametrize(("name", "expected"), [
    ("base_0000007", BaseDir(7, 0)),
    ("base_0000010_v0000123", BaseDir(10, 123)),
    ("base_12345678", BaseDir(12345678, 0)),
    ("base_12345678_v12345678901", BaseDir(12345678, 12345678901)),
    ("base_7", BaseDir(7, 0)),  # padding is a minimum width, not required
    ("base_-9223372036854775808", BaseDir(LONG_MIN, 0)),  # first compaction of a converted table
])
def test_parse_base(name: str, expected: BaseDir) -> None:
    assert parse_base(name) == expected
    assert parse_dir(name) == expected


@pytest.mark.parametrize(("name", "expected"), [
    ("delta_0000003_0000003_0000", DeltaDir(3, 3, 0)),
    ("delta_0000001_0000005", DeltaDir(1, 5, None)),
    ("delta_0000001_0000005_v0000042", DeltaDir(1, 5, None, 42)),
    ("delete_delta_0000004_0000004_0002", DeltaDir(4, 4, 2, 0, True)),
    ("delete_delta_0000001_0000009_v0000100", DeltaDir(1, 9, None, 100, True)),
    ("delta_12345678_12345679_v12345678901", DeltaDir(12345678, 12345679, None, 12345678901)),
    ("delta_12345678_12345679_12345_v12345678901", DeltaDir(12345678, 12345679, 12345, 12345678901)),
    ("delta_5_5_3", DeltaDir(5, 5, 3)),
])
def test_parse_delta(name: str, expected: DeltaDir) -> None:
    assert parse_delta(name) == expected
    assert parse_dir(name) == expected


@pytest.mark.parametrize(("parsed", "name"), [
    (BaseDir(7), "base_0000007"),
    (BaseDir(10, 123), "base_0000010_v0000123"),
    (BaseDir(12345678, 12345678901), "base_12345678_v12345678901"),
    (DeltaDir(3, 3, 0), "delta_0000003_0000003_0000"),
    (DeltaDir(1, 5), "delta_0000001_0000005"),
    (DeltaDir(1, 5, None, 42, True), "delete_delta_0000001_0000005_v0000042"),
    (DeltaDir(12345678, 12345679, None, 12345678901), "delta_12345678_12345679_v12345678901"),
    (DeltaDir(5, 5, 12345), "delta_0000005_0000005_12345"),
])
def test_format_pads_to_minimum_width_only(parsed: BaseDir | DeltaDir, name: str) -> None:
    assert parsed.name == name


def test_statement_id_minus_one_means_none() -> None:
    assert format_delta(5, 5, -1) == "delta_0000005_0000005"
    assert DeltaDir(5, 5).sort_statement_id == -1
    assert DeltaDir(5, 5, 0).sort_statement_id == 0


@pytest.mark.parametrize("name", [
    "base_", "base_abc", "base_5_v", "base_5_vx", "base_5_x", "base_-5", "base_5_v-1",
    "base_99999999999999999999",  # wider than Hive's long
    "delta_", "delta_5", "delta_5_", "delta_a_5", "delta_1_2_3_4", "delta_5_3", "delta_1_2_v",
    "delete_delta_1", "delete_delta_1_2_x", "delta_1_2_v3_v4", "delta_١_٢",
])
def test_bad_acid_names_raise_naming_the_name(name: str) -> None:
    parse = parse_base if name.startswith("base_") else parse_delta
    with pytest.raises(AcidNameError) as info:
        parse(name)
    assert repr(name) in str(info.value)


def test_parse_wrong_prefix() -> None:
    with pytest.raises(AcidNameError, match="'delta_1_1' is not a base"):
        parse_base("delta_1_1")
    with pytest.raises(AcidNameError, match="'base_1' is not a delta"):
        parse_delta("base_1")


@pytest.mark.parametrize(("name", "kind"), [
    ("base_1", DirKind.BASE),
    ("delta_1_1", DirKind.DELTA),
    ("delete_delta_1_1", DirKind.DELETE_DELTA),
    ("deltaX", DirKind.ORIGINAL),
    ("subdir", DirKind.ORIGINAL),
    ("basement", DirKind.ORIGINAL),
    ("base_garbage", DirKind.BASE),  # prefix based, like Hive
])
def test_dir_kind_is_prefix_based(name: str, kind: DirKind) -> None:
    assert dir_kind(name) is kind


def test_parse_dir_original_is_none() -> None:
    assert parse_dir("subdir") is None


@pytest.mark.parametrize(("name", "expected"), [
    ("bucket_00000", BucketFile(0, None)),
    ("bucket_00012", BucketFile(12, None)),
    ("bucket_123456", BucketFile(123456, None)),
    ("bucket_00001_7", BucketFile(1, 7)),
    ("bucket_00001_0", BucketFile(1, 0)),
])
def test_bucket_files(name: str, expected: BucketFile) -> None:
    assert parse_bucket_file(name) == expected
    assert expected.name == name


@pytest.mark.parametrize("name", ["bucket_", "bucket_x", "bucket_00000_flush_length", "000000_0", "bucket_1_2_3"])
def test_bad_bucket_file(name: str) -> None:
    with pytest.raises(AcidNameError, match=repr(name)):
        parse_bucket_file(name)


def test_bucket_file_filter_excludes_side_files() -> None:
    assert is_bucket_file("bucket_00000")
    assert is_bucket_file("bucket_00000_3")
    assert not is_bucket_file(flush_length_file("bucket_00000"))
    assert flush_length_file("bucket_00003") == "bucket_00003_flush_length"
    assert not is_bucket_file("000000_0")


@pytest.mark.parametrize(("name", "expected"), [
    ("000000_0", OriginalFile(0, 0, 0)),
    ("000001_0", OriginalFile(1, 0, 0)),
    ("000002_0_copy_1", OriginalFile(2, 0, 1)),
    ("000002_0_copy_12", OriginalFile(2, 0, 12)),
    ("1234567_3", OriginalFile(1234567, 3, 0)),
])
def test_original_files(name: str, expected: OriginalFile) -> None:
    assert parse_original_file(name) == expected
    assert expected.name == name


@pytest.mark.parametrize("name", ["part-0000.orc", "000000", "000000_0_copy_", "bucket_00000", "000000_0.orc"])
def test_not_original_file(name: str) -> None:
    assert parse_original_file(name) is None


@pytest.mark.parametrize(("name", "hidden"), [
    ("_orc_acid_version", False),
    ("_metadata_acid", False),
    ("_flush_length", True),
    ("_SUCCESS", True),
    (".hive-staging_1", True),
    ("_tmp.delta_0000001_0000001", True),
    ("bucket_00000", False),
    ("000000_0", False),
])
def test_hidden_filter(name: str, hidden: bool) -> None:
    assert is_hidden(name) is hidden


@given(write_ids, txn_ids)
def test_base_round_trip(write_id: int, vis: int) -> None:
    base = BaseDir(write_id, vis)
    assert parse_base(format_base(write_id, vis)) == base
    assert parse_dir(base.name) == base


@given(write_ids, write_ids, stmt_ids, txn_ids, st.booleans())
def test_delta_round_trip(a: int, b: int, stmt: int | None, vis: int, delete: bool) -> None:
    lo, hi = min(a, b), max(a, b)
    delta = DeltaDir(lo, hi, stmt, vis, delete)
    name = format_delta(lo, hi, stmt, vis, delete=delete)
    assert name == delta.name
    assert parse_delta(name) == delta
    assert dir_kind(name) is (DirKind.DELETE_DELTA if delete else DirKind.DELTA)


@given(st.integers(min_value=0, max_value=10**9), st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)))
def test_bucket_file_round_trip(bucket: int, attempt: int | None) -> None:
    assert parse_bucket_file(format_bucket_file(bucket, attempt)) == BucketFile(bucket, attempt)


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=1000),
       st.integers(min_value=0, max_value=10))
def test_original_file_round_trip(bucket: int, copy: int, attempt: int) -> None:
    assert parse_original_file(format_original_file(bucket, copy, attempt)) == OriginalFile(bucket, attempt, copy)
