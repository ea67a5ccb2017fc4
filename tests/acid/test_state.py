"""getAcidState: every rule of docs/hive-acid.md#directory-selection on worked examples, plus properties of random
layouts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_acid.acid.errors import AcidNameError, AcidStateError, NotEnoughHistoryError
from airflow_acid.acid.names import LONG_MIN, format_base, format_delta, parse_dir
from airflow_acid.acid.state import AcidFile, AcidState, DataFormat, get_acid_state, parse_metadata_acid
from airflow_acid.acid.writeids import (
    RangeResponse,
    ValidCompactorWriteIdList,
    ValidReaderWriteIdList,
    txn_list,
)


def wil(hwm: int, open: tuple[int, ...] = (), aborted: tuple[int, ...] = ()) -> ValidReaderWriteIdList:
    return ValidReaderWriteIdList(table="default.t", high_watermark=hwm, open=open, aborted=aborted)


def d(lo: int, hi: int, stmt: int | None = None, vis: int = 0) -> str:
    return format_delta(lo, hi, stmt, vis)


def dd(lo: int, hi: int, stmt: int | None = None, vis: int = 0) -> str:
    return format_delta(lo, hi, stmt, vis, delete=True)


def b(w: int, vis: int = 0) -> str:
    return format_base(w, vis)


def listing(*dirs: str, size: int = 100) -> list[AcidFile]:
    """One bucket file and the version marker in every directory."""
    out = []
    for name in dirs:
        out.append(AcidFile(f"{name}/bucket_00000", size))
        out.append(AcidFile(f"{name}/_orc_acid_version", 1))
    return out


def select(dirs, write_ids=None, txns=None, **kw) -> AcidState:
    files = listing(*dirs) if dirs and isinstance(dirs[0], str) else dirs
    return get_acid_state(files, write_ids if write_ids is not None else wil(100), txns, **kw)


# --- Rule 11: consequences of the cover walk ------------------------------------------------------

def test_compacted_range_obsoletes_covered_deltas() -> None:
    s = select([d(1, 5), d(3, 3, 0), dd(4, 4, 0), d(5, 5, 0), d(6, 6, 0)])
    assert s.current_deltas == (d(1, 5), d(6, 6, 0))
    assert s.obsolete == tuple(sorted([d(3, 3, 0), dd(4, 4, 0), d(5, 5, 0)]))
    assert s.base is None and s.aborted == ()


def test_deltas_at_or_below_base_are_obsolete() -> None:
    s = select([b(5), d(3, 3, 0), dd(5, 5, 0), d(5, 5, 0), d(6, 6, 0), dd(6, 6, 0)])
    assert s.base == b(5)
    assert s.current_deltas == (dd(6, 6, 0), d(6, 6, 0))
    assert set(s.obsolete) == {d(3, 3, 0), dd(5, 5, 0), d(5, 5, 0)}


def test_all_statements_of_one_txn_are_read() -> None:
    s = select([d(5, 5, 2), d(5, 5, 0), dd(5, 5, 1), d(5, 5, 1), d(4, 4, 0)])
    assert s.current_deltas == (d(4, 4, 0), d(5, 5, 0), dd(5, 5, 1), d(5, 5, 1), d(5, 5, 2))
    assert s.obsolete == ()


def test_compacted_single_txn_delta_sorts_first_and_obsoletes_statements() -> None:
    s = select([d(5, 5, 0), d(5, 5, 1), d(5, 5, 2), d(5, 5, vis=30), dd(5, 5, vis=30)])
    assert s.current_deltas == (dd(5, 5, vis=30), d(5, 5, vis=30))
    assert set(s.obsolete) == {d(5, 5, 0), d(5, 5, 1), d(5, 5, 2)}


def test_partially_overlapping_ranges_are_both_read() -> None:
    s = select([d(3, 7), d(1, 5)])
    assert s.current_deltas == (d(1, 5), d(3, 7))
    assert s.obsolete == ()


def test_sort_order_rule_9() -> None:
    dirs = [d(6, 6, 0), d(1, 1, 0), dd(2, 2, 1), d(2, 2, 1), d(2, 2, 0), dd(2, 2, 0), d(3, 4), dd(3, 4)]
    s = select(dirs)
    assert s.current_deltas == (d(1, 1, 0), dd(2, 2, 0), d(2, 2, 0), dd(2, 2, 1), d(2, 2, 1),
                                dd(3, 4), d(3, 4), d(6, 6, 0))
    assert [e.name for e in s.deltas] == list(s.current_deltas)
    assert [e.is_delete for e in s.deltas] == [n.startswith("delete_") for n in s.current_deltas]


def test_wider_delta_first_for_same_min() -> None:
    s = select([d(5, 10), d(5, 20), d(11, 20), d(21, 21, 0)])
    assert s.current_deltas == (d(5, 20), d(21, 21, 0))
    assert set(s.obsolete) == {d(5, 10), d(11, 20)}


def test_delete_insert_twins_of_compacted_range() -> None:
    s = select([d(1, 5), dd(1, 5), d(2, 2, 0), dd(2, 2, 0)])
    assert s.current_deltas == (dd(1, 5), d(1, 5))
    assert set(s.obsolete) == {d(2, 2, 0), dd(2, 2, 0)}


# --- Rule 2: visibility gate ----------------------------------------------------------------------

def test_uncommitted_compaction_output_is_invisible() -> None:
    dirs = [d(1, 1, 0), d(2, 2, 0), d(1, 2, vis=50), dd(1, 2, vis=50)]
    s = select(dirs, txns=txn_list(60, open=[50]))
    assert s.current_deltas == (d(1, 1, 0), d(2, 2, 0))
    assert s.obsolete == () and s.aborted == ()
    later = select(dirs, txns=txn_list(49))  # compaction txn above the snapshot's HWM
    assert later.current_deltas == (d(1, 1, 0), d(2, 2, 0)) and later.aborted == ()


def test_committed_compaction_output_is_used() -> None:
    dirs = [d(1, 1, 0), d(2, 2, 0), d(1, 2, vis=50), dd(1, 2, vis=50)]
    s = select(dirs, txns=txn_list(60))
    assert s.current_deltas == (dd(1, 2, vis=50), d(1, 2, vis=50))
    assert set(s.obsolete) == {d(1, 1, 0), d(2, 2, 0)}


def test_failed_compaction_output_is_aborted() -> None:
    dirs = [d(1, 1, 0), d(2, 2, 0), d(1, 2, vis=50), b(2, 50)]
    s = select(dirs, txns=txn_list(60, aborted=[50]))
    assert s.current_deltas == (d(1, 1, 0), d(2, 2, 0))
    assert s.aborted == tuple(sorted([d(1, 2, vis=50), b(2, 50)]))
    assert s.base is None and s.aborted_write_ids == ()


def test_no_txn_list_counts_every_visibility_as_committed() -> None:
    s = select([d(1, 1, 0), d(1, 1, vis=10**12), b(1, 99)])
    assert s.base == b(1, 99)
    assert set(s.obsolete) == {d(1, 1, 0), d(1, 1, vis=10**12)}


# --- Rules 3-6: bases -----------------------------------------------------------------------------

@pytest.mark.parametrize("order", [1, -1])
def test_compacted_base_wins_tie_with_insert_overwrite(order: int) -> None:
    s = select([b(5), b(5, 20), d(6, 6, 0)][::order], txns=txn_list(30))
    assert s.base == b(5, 20)
    assert s.base_directory is not None and s.base_directory.is_compacted
    assert s.obsolete == (b(5),)
    assert s.has_obsolete_base


def test_unusable_compacted_twin_of_chosen_iow_base_is_not_obsolete() -> None:
    # write id 3 is open: the compacted base_5 is unusable, the committed IOW base_5 is read.
    s = select([b(5), b(5, 20)], write_ids=wil(9, open=(3,)))
    assert s.base == b(5)
    assert s.obsolete == ()


def test_highest_usable_base_is_chosen_and_lower_bases_obsolete() -> None:
    s = select([b(2), b(4, 11), b(7, 12), d(8, 8, 0)], write_ids=wil(9))
    assert s.base == b(7, 12)
    assert set(s.obsolete) == {b(2), b(4, 11)}
    assert s.current_deltas == (d(8, 8, 0),)


def test_open_write_id_makes_compacted_base_unusable() -> None:
    s = select([b(4, 15), b(8, 20), d(5, 5, 0), d(7, 7, 0), d(9, 9, 0)], write_ids=wil(9, open=(6,)))
    assert s.base == b(4, 15)  # 4 <= min open 6
    assert b(8, 20) not in s.obsolete + s.aborted  # unusable but newer: ignored
    assert s.current_deltas == (d(5, 5, 0), d(7, 7, 0), d(9, 9, 0))


def test_base_at_min_open_write_id_is_usable_as_hive_codes_it() -> None:
    # Rule 5 as coded: writeId <= minOpenWriteId is enough, even for the open write id itself.
    s = select([b(6), d(5, 5, 0)], write_ids=wil(9, open=(6,)))
    assert s.base == b(6)
    s = select([b(7), d(5, 5, 0)], write_ids=wil(9, open=(6, 7)))  # uncommitted IOW above min open: unusable
    assert s.base is None and s.current_deltas == (d(5, 5, 0),)


def test_long_min_base_is_always_usable() -> None:
    s = select([b(LONG_MIN), d(1, 1, 0)], write_ids=wil(0, open=()))
    assert s.base == "base_-9223372036854775808"
    assert s.current_deltas == ()  # write id 1 is above the HWM


def test_aborted_insert_overwrite_base_goes_to_aborted() -> None:
    s = select([b(3, 10), b(5), d(4, 4, 0), d(6, 6, 0)], write_ids=wil(9, aborted=(5,)), txns=txn_list(20))
    assert s.base == b(3, 10)
    assert s.aborted == (b(5),)
    assert s.aborted_write_ids == (5,)
    assert s.current_deltas == (d(4, 4, 0), d(6, 6, 0))


def test_aborted_write_id_does_not_abort_compacted_base() -> None:
    s = select([b(5, 10)], write_ids=wil(9, aborted=(5,)), txns=txn_list(20))
    assert s.base == b(5, 10) and s.aborted == ()


# --- Rule 12: not enough history ------------------------------------------------------------------

def test_not_enough_history() -> None:
    snapshot = wil(9, open=(6,))
    with pytest.raises(NotEnoughHistoryError) as info:
        select([b(8, 20), d(9, 9, 0)], write_ids=snapshot)
    message = str(info.value)
    assert b(8, 20) in message
    assert snapshot.to_string() in message
    assert "fresh snapshot" in message
    assert isinstance(info.value, AcidStateError) and isinstance(info.value, ValueError)


def test_insert_overwrite_base_never_means_not_enough_history() -> None:
    s = select([b(8), d(5, 5, 0), d(9, 9, 0)], write_ids=wil(9, open=(6, 8)))
    assert s.base is None
    assert s.current_deltas == (d(5, 5, 0), d(9, 9, 0))


def test_only_the_oldest_base_decides_not_enough_history() -> None:
    s = select([b(2), b(8, 20), d(9, 9, 0)], write_ids=wil(9, aborted=(2,), open=(6,)), txns=txn_list(30))
    assert s.base is None and s.aborted == (b(2),)


def test_hive3_compacted_base_from_metadata_file() -> None:
    files = [AcidFile(f"{b(10)}/_metadata_acid", 40), AcidFile(f"{b(10)}/bucket_00000", 500)]
    seen: list[str] = []

    def reader(path: str) -> str:
        seen.append(path)
        return '{"dataFormat":"compacted","thisFileVersion":"0"}'

    snapshot = wil(12, open=(3,))
    with pytest.raises(NotEnoughHistoryError):
        get_acid_state(files, snapshot, metadata_reader=reader)
    assert seen == [f"{b(10)}/_metadata_acid"]
    # Without the reader the base counts as an insert-overwrite base: write id 10 committed -> usable.
    assert get_acid_state(files, snapshot).base == b(10)


def test_truncated_base_holds_only_metadata() -> None:
    files = [f"{d(1, 1, 0)}/bucket_00000", f"{b(2)}/_metadata_acid"]
    s = get_acid_state(files, wil(5), metadata_reader=lambda p: '{"thisFileVersion":"0","dataFormat":"truncated"}')
    assert s.base == b(2)
    assert s.base_directory is not None
    assert s.base_directory.files == () and s.base_size == 0
    assert s.base_directory.metadata is not None and s.base_directory.metadata.data_format is DataFormat.TRUNCATED
    assert not s.base_directory.is_compacted
    assert s.obsolete == (d(1, 1, 0),)


@pytest.mark.parametrize(("text", "match"), [
    ('{"thisFileVersion":"1","dataFormat":"compacted"}', "thisFileVersion is '1'"),
    ('{"dataFormat":"compacted"}', "thisFileVersion is None"),
    ('{"thisFileVersion":"0","dataFormat":"exploded"}', "dataFormat 'exploded'"),
    ("not json", "not valid JSON"),
    ("[1]", "JSON object"),
])
def test_bad_metadata_file(text: str, match: str) -> None:
    with pytest.raises(AcidStateError, match=match) as info:
        get_acid_state([f"{b(2)}/_metadata_acid"], wil(5), metadata_reader=lambda p: text)
    assert f"{b(2)}/_metadata_acid" in str(info.value)


def test_metadata_round_trip() -> None:
    meta = parse_metadata_acid('{"thisFileVersion":"0","dataFormat":"dropped"}')
    assert meta.data_format is DataFormat.DROPPED
    assert json.loads(meta.to_json()) == {"thisFileVersion": "0", "dataFormat": "dropped"}
    assert parse_metadata_acid(meta.to_json()) == meta


# --- Rule 7: originals ----------------------------------------------------------------------------

ORIGINALS = [AcidFile("000001_0", 10), AcidFile("000000_0", 20), AcidFile("sub/000000_0_copy_1", 30),
             AcidFile("sub/deeper/000002_0", 40), AcidFile("000000_0_copy_1", 50), AcidFile("sub/_SUCCESS", 0)]


def test_originals_without_base_are_read_sorted_by_path() -> None:
    s = get_acid_state(ORIGINALS + listing(d(1, 1, 0)), wil(5))
    assert s.original_files == ("000000_0", "000000_0_copy_1", "000001_0", "sub/000000_0_copy_1",
                                "sub/deeper/000002_0")
    assert s.original_directories == ("sub",)
    assert s.base_size == 150
    assert s.current_deltas == (d(1, 1, 0),)


def test_base_makes_originals_obsolete() -> None:
    s = get_acid_state(ORIGINALS + listing(b(1, 7)), wil(5))
    assert s.original_files == () and s.originals == ()
    assert set(s.obsolete) == {"000000_0", "000000_0_copy_1", "000001_0", "sub"}
    assert s.base_size == 100


def test_ignore_empty_original_files() -> None:
    files = [AcidFile("000000_0", 0), AcidFile("000001_0", 5), AcidFile("sub/000002_0", 0)]
    assert get_acid_state(files, wil(1)).original_files == ("000000_0", "000001_0", "sub/000002_0")
    assert get_acid_state(files, wil(1), ignore_empty_files=True).original_files == ("000001_0",)


def test_root_file_with_acid_prefix_is_an_original_file() -> None:
    s = get_acid_state(["delta_garbage", "base_7"], wil(1))
    assert s.original_files == ("base_7", "delta_garbage")


# --- Hidden files, markers, side files ------------------------------------------------------------

def test_hidden_entries_are_ignored() -> None:
    files = [
        AcidFile("_tmp.delta_0000002_0000002_0000/bucket_00000", 5),
        AcidFile(".hive-staging_hive_1/-ext-10000/000000_0", 5),
        AcidFile("_SUCCESS", 0),
        AcidFile(".000000_0.crc", 1),
        AcidFile("_orc_acid_version", 1),
        AcidFile(f"{d(1, 1, 0)}/.bucket_00000.crc", 1),
        AcidFile(f"{d(1, 1, 0)}/bucket_00000", 7),
        AcidFile(f"{d(1, 1, 0)}/_orc_acid_version", 1),
    ]
    s = get_acid_state(files, wil(5))
    assert s.current_deltas == (d(1, 1, 0),)
    assert s.original_files == () and s.original_directories == ()
    entry = s.deltas[0]
    assert entry.files == (AcidFile(f"{d(1, 1, 0)}/bucket_00000", 7),)
    assert entry.has_acid_version_file


def test_side_files_are_not_data() -> None:
    name = d(1, 5)
    files = [AcidFile(f"{name}/bucket_00001", 100), AcidFile(f"{name}/bucket_00001_flush_length", 16),
             AcidFile(f"{name}/bucket_00000", 50), AcidFile("bucket_00000_flush_length", 8)]
    s = get_acid_state(files, wil(5))
    entry = s.deltas[0]
    assert [f.path for f in entry.files] == [f"{name}/bucket_00000", f"{name}/bucket_00001"]
    assert entry.flush_length_files == (AcidFile(f"{name}/bucket_00001_flush_length", 16),)
    assert s.delta_size == 150
    assert s.original_files == ()


def test_empty_directories_exist() -> None:
    s = get_acid_state([f"{b(3)}/", f"{d(4, 4, 0)}/", "empty_original_dir/"], wil(5))
    assert s.base == b(3) and s.current_deltas == (d(4, 4, 0),)
    assert s.obsolete == ("empty_original_dir",)


def test_unparseable_acid_directory_raises_naming_it() -> None:
    with pytest.raises(AcidNameError, match="'delta_x_y'.*delta_"):
        get_acid_state(["delta_x_y/bucket_00000"], wil(5))
    with pytest.raises(AcidNameError, match="'base_1_2'"):
        get_acid_state(["base_1_2/bucket_00000"], wil(5))


def test_listing_entry_forms() -> None:
    class Status:
        def __init__(self, path: str, size: int) -> None:
            self.path, self.size = path, size

    forms = [Status(f"{d(1, 1, 0)}/bucket_00000", 11), (f"{d(2, 2, 0)}/bucket_00000", 22),
             f"{d(3, 3, 0)}/bucket_00000", f"./{d(4, 4, 0)}//bucket_00000"]
    s = get_acid_state(forms, wil(5))
    assert s.current_deltas == (d(1, 1, 0), d(2, 2, 0), d(3, 3, 0), d(4, 4, 0))
    assert [e.size for e in s.deltas] == [11, 22, 0, 0]
    for bad in (["../x"], [""], [object()]):
        with pytest.raises(AcidStateError):
            get_acid_state(bad, wil(5))


# --- Rule 8: delta filtering ----------------------------------------------------------------------

def test_all_aborted_delta_goes_to_aborted_with_its_write_ids() -> None:
    s = select([d(3, 3, 0), dd(3, 3, 0), d(4, 6), d(7, 7, 0)], write_ids=wil(9, aborted=(3, 4, 5, 6)))
    assert set(s.aborted) == {d(3, 3, 0), dd(3, 3, 0), d(4, 6)}
    assert s.aborted_write_ids == (3, 4, 5, 6)
    assert s.current_deltas == (d(7, 7, 0),)
    assert not s.has_uncompacted_aborts


def test_partly_aborted_delta_flags_uncompacted_aborts() -> None:
    s = select([d(1, 5)], write_ids=wil(9, aborted=(3,)))
    assert s.current_deltas == (d(1, 5),)
    assert s.has_uncompacted_aborts and s.aborted == ()


def test_delta_of_open_txn_is_silently_ignored() -> None:
    s = select([d(5, 5, 0), d(6, 6, 0), d(11, 11, 0)], write_ids=wil(9, open=(6,)))
    assert s.current_deltas == (d(5, 5, 0),)
    assert s.obsolete == () and s.aborted == ()


def test_streaming_delta_straddling_open_write_id() -> None:
    reader = wil(5, open=(4,))
    dirs = [d(1, 5), dd(3, 3, 0)]
    assert reader.is_write_id_range_valid(1, 5) is RangeResponse.SOME
    s = select(dirs, write_ids=reader)
    assert s.current_deltas == (d(1, 5),)
    assert s.obsolete == (dd(3, 3, 0),)
    compactor = ValidCompactorWriteIdList.from_reader(reader)
    c = select(dirs, write_ids=compactor)
    assert c.current_deltas == (dd(3, 3, 0),)  # the straddling delta is never compacted
    assert c.obsolete == () and c.aborted == ()


def test_cover_walk_skips_delta_whose_new_ids_are_all_invalid() -> None:
    # delta_1_3 then delta_2_5: ids 4..5 are aborted -> delta_2_5 is dropped, not obsolete.
    s = select([d(1, 3), d(2, 5)], write_ids=wil(9, aborted=(4, 5)))
    assert s.current_deltas == (d(1, 3),)
    assert s.obsolete == () and s.has_uncompacted_aborts


# --- Rule 13 / docs/hive-acid.md#compaction-type step 3: sizes and counts -------------------------

def test_sizes_and_counts() -> None:
    files = [
        AcidFile(f"{b(3, 9)}/bucket_00000", 1000), AcidFile(f"{b(3, 9)}/bucket_00001", 500),
        AcidFile(f"{b(3, 9)}/_orc_acid_version", 1),
        AcidFile(f"{d(4, 4, 0)}/bucket_00000", 40), AcidFile(f"{dd(4, 4, 0)}/bucket_00000", 4),
        AcidFile(f"{d(5, 6)}/bucket_00000", 60), AcidFile(f"{d(5, 6)}/bucket_00000_flush_length", 8),
        AcidFile(f"{d(2, 2, 0)}/bucket_00000", 7777),  # obsolete: not counted
        AcidFile("000000_0", 5555),  # original, obsolete under a base
    ]
    s = get_acid_state(files, wil(9))
    assert s.base_size == 1500
    assert s.delta_size == 104
    assert s.delta_count == 3
    assert [e.name for e in s.insert_deltas] == [d(4, 4, 0), d(5, 6)]
    assert [e.name for e in s.delete_deltas] == [dd(4, 4, 0)]


def test_sizes_without_base() -> None:
    files = [AcidFile("000000_0", 300), AcidFile("x/000001_0", 200), AcidFile(f"{d(1, 1, 0)}/bucket_00000", 50)]
    s = get_acid_state(files, wil(9))
    assert (s.base_size, s.delta_size, s.delta_count) == (500, 50, 1)


def test_raw_format_delta_files() -> None:
    files = [AcidFile(f"{d(2, 2, 0)}/000000_0", 70), AcidFile(f"{d(2, 2, 0)}/000000_0_copy_1", 30)]
    s = get_acid_state(files, wil(9))
    entry = s.deltas[0]
    assert entry.files == () and [f.name for f in entry.original_files] == ["000000_0", "000000_0_copy_1"]
    assert s.delta_size == 100


# --- Real Hive layout ------------------------------------------------------------------------------

def test_trino_delete_delta_fixture(interop: Path) -> None:
    root = interop / "trino-fullacid-delete-delta-test"
    files = [AcidFile(p.relative_to(root).as_posix(), p.stat().st_size) for p in root.rglob("*") if p.is_file()]
    s = get_acid_state(files, wil(10))
    assert s.current_deltas == ("delete_delta_0000004_0000004", "delete_delta_0000007_0000007_0000")
    assert s.obsolete == ("delete_delta_0000004_0000004_0000",)
    assert s.delta_size == sum(f.size for f in files if "0000004_0000004/" in f.path or "0000007" in f.path)


# --- Scale ----------------------------------------------------------------------------------------

def test_thousands_of_deltas() -> None:
    """Selection stays right at scale (its speed is bench/'s business: a timed assertion here failed under load)."""
    n = 20_000
    files = [f"{d(w, w, 0)}/bucket_00000" for w in range(n, 0, -1)]
    files += [f"{d(1, n // 2, vis=n + 1)}/bucket_00000"] + [f"{dd(w, w, 0)}/bucket_00000" for w in range(1, n, 3)]
    s = get_acid_state(files, wil(n, open=(n - 1,), aborted=(7,)), txn_list(n + 5))
    later = [w for w in range(n // 2 + 1, n + 1) if w != n - 1]
    assert s.current_deltas[0] == d(1, n // 2, vis=n + 1)
    assert s.delta_count == 1 + len(later) + sum(1 for w in later if w % 3 == 1)
    assert s.aborted == (dd(7, 7, 0), d(7, 7, 0))  # aborted write id 7: aborted, not obsolete
    assert len(s.obsolete) == n // 2 + sum(1 for w in range(1, n // 2 + 1) if w % 3 == 1) - 2


# --- Properties of random layouts -----------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    n: int
    dirs: tuple[str, ...]
    snapshot: ValidReaderWriteIdList
    txns: object


TXN_STATES = {100 + i: s for i, s in enumerate("ccccoa")}


@st.composite
def laminar_ranges(draw, lo: int, hi: int, depth: int = 0) -> list[tuple[int, int]]:
    """Distinct ranges in [lo, hi], pairwise nested or disjoint — the shapes compaction produces."""
    out: list[tuple[int, int]] = []
    start = lo
    while start <= hi and depth < 3:
        end = draw(st.integers(start, min(hi, start + 6)))
        if draw(st.booleans()) and (start, end) != (lo, hi) or depth == 0:
            if draw(st.booleans()):
                out.append((start, end))
            if end > start:
                out.extend(draw(laminar_ranges(start, end, depth + 1)))
        start = end + 1
    return out


@st.composite
def layouts(draw) -> Layout:
    n = draw(st.integers(1, 12))
    vis = st.sampled_from([0, *TXN_STATES])
    dirs: set[str] = set()
    ranges = draw(laminar_ranges(1, n))
    for lo, hi in ranges:
        v = draw(vis)
        dirs.add(d(lo, hi, vis=v))
        if draw(st.booleans()):
            dirs.add(dd(lo, hi, vis=v))
    for w in range(1, n + 1):
        for stmt in draw(st.sets(st.integers(0, 2), max_size=3)):
            dirs.add(d(w, w, stmt))
            if draw(st.booleans()):
                dirs.add(dd(w, w, stmt))
    # Bases never cut through a multi-id delta (Hive never writes such a pair).
    cuts = [c for c in range(1, n + 1) if not any(lo <= c < hi for lo, hi in ranges)]
    if cuts:
        for c in draw(st.sets(st.sampled_from(cuts), max_size=3)):
            dirs.add(b(c, draw(vis)))
    hwm = draw(st.integers(0, n + 1))
    states = draw(st.lists(st.sampled_from("ccoa"), min_size=hwm, max_size=hwm))
    snapshot = wil(hwm, open=tuple(w for w, s in enumerate(states, 1) if s == "o"),
                   aborted=tuple(w for w, s in enumerate(states, 1) if s == "a"))
    txns = txn_list(105, open=[t for t, s in TXN_STATES.items() if s == "o"],
                    aborted=[t for t, s in TXN_STATES.items() if s == "a"])
    return Layout(n, tuple(sorted(dirs)), snapshot, draw(st.sampled_from([txns, None])))


def _run(layout: Layout, compactor: bool) -> AcidState | None:
    snapshot = ValidCompactorWriteIdList.from_reader(layout.snapshot) if compactor else layout.snapshot
    try:
        return get_acid_state(listing(*layout.dirs), snapshot, layout.txns)
    except NotEnoughHistoryError:
        return None


def _overlaps(x, y) -> bool:
    return x.min_write_id <= y.max_write_id and y.min_write_id <= x.max_write_id


@settings(max_examples=300, deadline=None)
@given(layouts(), st.booleans())
def test_property_each_write_id_read_at_most_once(layout: Layout, compactor: bool) -> None:
    s = _run(layout, compactor)
    if s is None:
        return
    inserts = s.insert_deltas
    for i, x in enumerate(inserts):
        if s.base_directory is not None:
            assert x.min_write_id > s.base_directory.write_id, (x.name, s.base)
        for y in inserts[i + 1:]:
            if _overlaps(x, y):
                # Only distinct statements of the same single write id may share ids.
                assert x.statement_id is not None and y.statement_id is not None, (x.name, y.name)
                assert x.statement_id != y.statement_id and x.min_write_id == x.max_write_id == y.max_write_id
    for x in s.delete_deltas:
        if s.base_directory is not None:
            assert x.min_write_id > s.base_directory.write_id


@settings(max_examples=300, deadline=None)
@given(layouts(), st.booleans())
def test_property_covered_deltas_are_obsolete(layout: Layout, compactor: bool) -> None:
    s = _run(layout, compactor)
    if s is None:
        return
    snapshot = ValidCompactorWriteIdList.from_reader(layout.snapshot) if compactor else layout.snapshot
    compacted = [x for x in s.deltas if x.statement_id is None]
    for name in layout.dirs:
        parsed = parse_dir(name)
        if parsed is None or not hasattr(parsed, "min_write_id"):
            continue
        for big in compacted:
            if name == big.name:
                continue
            inside = big.min_write_id <= parsed.min_write_id and parsed.max_write_id <= big.max_write_id
            twin = (parsed.min_write_id, parsed.max_write_id, parsed.statement_id) == (
                big.min_write_id, big.max_write_id, None)
            if not inside or twin:
                continue
            assert name not in s.current_deltas, (name, big.name)
            gated = layout.txns is None or parsed.visibility_txn_id == 0 or layout.txns.is_txn_valid(
                parsed.visibility_txn_id)
            reached = (gated and snapshot.is_write_id_range_aborted(parsed.min_write_id, parsed.max_write_id)
                       is not RangeResponse.ALL
                       and snapshot.is_write_id_range_valid(parsed.min_write_id, parsed.max_write_id)
                       is not RangeResponse.NONE)
            assert (name in s.obsolete) is reached, (name, big.name)


@settings(max_examples=300, deadline=None)
@given(layouts(), st.booleans())
def test_property_outputs_are_disjoint_ordered_and_round_trip(layout: Layout, compactor: bool) -> None:
    s = _run(layout, compactor)
    if s is None:
        return
    groups = [(s.base,) if s.base else (), s.current_deltas, s.obsolete, s.aborted]
    flat = [name for g in groups for name in g]
    assert len(flat) == len(set(flat))
    assert set(flat) <= set(layout.dirs)
    assert list(s.current_deltas) == [e.name for e in sorted(s.deltas, key=lambda e: e.sort_key())]
    for e in s.deltas:
        assert e.dir.name == e.name and parse_dir(e.name) == e.dir
    if s.base_directory is not None:
        assert s.base_directory.dir.name == s.base
    if layout.txns is not None:
        for name in layout.dirs:
            vis = parse_dir(name).visibility_txn_id
            if vis and layout.txns.is_txn_aborted(vis):
                assert name in s.aborted
            elif vis and not layout.txns.is_txn_valid(vis):
                assert name not in flat
    assert s.aborted_write_ids == tuple(sorted(set(s.aborted_write_ids)))


@pytest.mark.parametrize("order", [1, -1])
def test_oldest_base_tie_counts_the_compacted_one(order: int) -> None:
    # base_5 (insert overwrite, aborted) and base_5_v20 (compaction, unusable: write id 3 is open).
    with pytest.raises(NotEnoughHistoryError, match=b(5, 20)):
        select([b(5), b(5, 20), d(6, 6, 0)][::order], write_ids=wil(9, open=(3,), aborted=(5,)), txns=txn_list(30))


# --- Simulation: consistent histories of writers, readers, compactions and a cleaner ----------------

Event = tuple[str, int, int]  # ('i' insert | 'd' delete, write id, statement id)


def _enough_to_compact(major: bool, s: AcidState) -> bool:
    """The Worker's isEnoughToCompact: without it a minor could rewrite one compacted range into a duplicate."""
    if major:
        return bool(s.originals) or s.delta_count + (s.base is not None) > 1
    if s.delta_count == 2:
        return len({x.is_delete for x in s.deltas}) == 1  # not just one delta/delete-delta pair
    return s.delta_count > 1


class History:
    """A table directory plus the metastore facts getAcidState's inputs are built from (docs/hive-acid.md#building-snapshots,
    simplified)."""

    def __init__(self) -> None:
        self.next_txn = 1
        self.txn_state: dict[int, str] = {}  # 'o' open, 'c' committed, 'a' aborted
        self.write_id_txn: dict[int, int] = {}
        self.dirs: dict[str, frozenset[Event]] = {}
        self.events: dict[int, set[Event]] = {}  # write id -> events it wrote

    def open_txn(self) -> int:
        txn, self.next_txn = self.next_txn, self.next_txn + 1
        self.txn_state[txn] = "o"
        return txn

    def snapshot(self, own_txn: int | None = None):
        """Reader snapshot: (ValidTxnList, ValidReaderWriteIdList); ``own_txn`` is left out like Hive does."""
        others = {t: s for t, s in self.txn_state.items() if t != own_txn}
        txns = txn_list(max(self.txn_state, default=0), open=[t for t, s in others.items() if s == "o"],
                        aborted=[t for t, s in others.items() if s == "a"])
        hwm = max(self.write_id_txn, default=0)
        state = {w: self.txn_state[t] for w, t in self.write_id_txn.items()}
        return txns, wil(hwm, open=tuple(w for w, s in state.items() if s == "o"),
                         aborted=tuple(w for w, s in state.items() if s == "a"))

    def state(self, write_ids, txns) -> AcidState:
        return get_acid_state(listing(*self.dirs), write_ids, txns)

    def write(self, statements: int, deletes: bool) -> int:
        txn = self.open_txn()
        w = max(self.write_id_txn, default=0) + 1
        self.write_id_txn[w] = txn
        self.events[w] = set()
        for s in range(statements):
            self.dirs[d(w, w, s)] = frozenset({("i", w, s)})
            self.events[w].add(("i", w, s))
            if deletes:
                self.dirs[dd(w, w, s)] = frozenset({("d", w, s)})
                self.events[w].add(("d", w, s))
        return txn

    def compact(self, major: bool) -> int | None:
        txn = self.open_txn()
        txns, reader = self.snapshot(own_txn=txn)
        comp = ValidCompactorWriteIdList.from_reader(reader)
        s = self.state(comp, txns)
        inputs = list(s.deltas)
        if not _enough_to_compact(major, s) or (major and comp.high_watermark < 1):
            self.txn_state[txn] = "a"
            return None
        valid = {e for x in inputs for e in self.dirs[x.name] if comp.is_write_id_valid(e[1])}
        if major:
            if s.base is not None:
                valid |= self.dirs[s.base]
            self.dirs[b(comp.high_watermark, txn)] = frozenset(valid)
        else:
            lo, hi = min(x.min_write_id for x in inputs), max(x.max_write_id for x in inputs)
            self.dirs[d(lo, hi, vis=txn)] = frozenset(e for e in valid if e[0] == "i")
            if any(x.is_delete for x in inputs):
                self.dirs[dd(lo, hi, vis=txn)] = frozenset(e for e in valid if e[0] == "d")
        return txn

    def clean(self) -> None:
        """Delete obsolete and aborted directories — only when no transaction is open (the Cleaner's wait)."""
        if "o" in self.txn_state.values():
            return
        txns, reader = self.snapshot()
        s = self.state(reader, txns)
        for name in s.obsolete + s.aborted:
            del self.dirs[name]

    def expected(self, write_ids) -> set[Event]:
        return {e for w, evs in self.events.items() if write_ids.is_write_id_valid(w) for e in evs}

    def seen(self, write_ids, txns) -> list[Event]:
        s = self.state(write_ids, txns)
        out = list(self.dirs[s.base]) if s.base else []
        for x in s.deltas:
            out.extend(e for e in self.dirs[x.name] if write_ids.is_write_id_valid(e[1]))
        return out


operations = st.lists(st.tuples(st.sampled_from(["write", "write", "commit", "commit", "abort", "minor",
                                                 "major", "read", "close", "clean"]),
                                st.integers(0, 7), st.booleans()), max_size=40)


@settings(max_examples=200, deadline=None)
@given(operations)
def test_simulation_readers_see_exactly_their_snapshot(ops) -> None:
    h = History()
    busy: list[int] = []  # open writer and compactor txns
    compactions: set[int] = set()  # compactor txns (one partition is compacted by one worker at a time)
    readers: list[tuple[int, object, object, set[Event]]] = []
    for op, k, flag in ops:
        if op == "write":
            busy.append(h.write(statements=1 + k % 3, deletes=flag))
        elif op in ("commit", "abort") and busy:
            txn = busy.pop(k % len(busy))
            h.txn_state[txn] = "c" if op == "commit" else "a"
        elif op in ("minor", "major") and not any(h.txn_state[c] == "o" for c in compactions):
            txn = h.compact(major=op == "major")
            if txn is not None:
                compactions.add(txn)
                if flag:
                    busy.append(txn)  # the compaction stays open: its output must stay invisible
                else:
                    h.txn_state[txn] = "c" if k % 4 else "a"
        elif op == "read":
            txn = h.open_txn()
            txns, write_ids = h.snapshot(own_txn=txn)
            readers.append((txn, txns, write_ids, h.expected(write_ids)))
        elif op == "close" and readers:
            txn = readers.pop(k % len(readers))[0]
            h.txn_state[txn] = "c"
        elif op == "clean":
            h.clean()
        for _txn, txns, write_ids, expected in readers:
            seen = h.seen(write_ids, txns)
            assert len(seen) == len(set(seen)), f"duplicate events for {write_ids}: {sorted(seen)}"
            assert set(seen) == expected, (write_ids.to_string(), sorted(h.dirs))
        txns, write_ids = h.snapshot()
        seen = h.seen(write_ids, txns)
        assert len(seen) == len(set(seen)) and set(seen) == h.expected(write_ids), sorted(h.dirs)
