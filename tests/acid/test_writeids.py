"""Snapshots: ValidTxnList and reader/compactor/cleaner ValidWriteIdLists against Hive's semantics
(docs/hive-acid.md#write-id-lists) and strings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid.errors import SnapshotFormatError
from airflow_acid.acid.writeids import (
    LONG_MAX,
    RangeResponse,
    ValidCleanerWriteIdList,
    ValidCompactorWriteIdList,
    ValidReaderWriteIdList,
    ValidTxnList,
    txn_list,
)

ALL, SOME, NONE = RangeResponse.ALL, RangeResponse.SOME, RangeResponse.NONE


def reader(hwm: int, open: tuple[int, ...] = (), aborted: tuple[int, ...] = (), table: str = "default.t"):
    return ValidReaderWriteIdList(table=table, high_watermark=hwm, open=open, aborted=aborted)


# --- Hive's exact string forms --------------------------------------------------------------------

def test_nothing_open_string() -> None:
    wil = reader(5)
    assert wil.to_string() == "default.t:5:9223372036854775807::"
    assert ValidReaderWriteIdList.from_string("default.t:5:9223372036854775807::") == wil
    assert wil.min_open is None


def test_open_and_aborted_string() -> None:
    wil = ValidReaderWriteIdList.from_string("default.t:9:4:4,7:5")
    assert (wil.high_watermark, wil.open, wil.aborted, wil.min_open) == (9, (4, 7), (5,), 4)
    assert wil.exceptions == (4, 5, 7)
    assert wil.to_string() == "default.t:9:4:4,7:5"
    assert str(reader(9, open=(7, 4), aborted=(5,))) == "default.t:9:4:4,7:5"


def test_table_name_is_lower_case_and_null_means_none() -> None:
    assert reader(1, table="Default.T").table == "default.t"
    wil = ValidReaderWriteIdList.from_string("null:3:9223372036854775807::")
    assert wil.table is None
    assert wil.to_string() == "null:3:9223372036854775807::"


def test_txn_list_string() -> None:
    tl = ValidTxnList.from_string("10:3:3:5")
    assert (tl.high_watermark, tl.min_open_txn, tl.open, tl.aborted) == (10, 3, (3,), (5,))
    assert tl.to_string() == "10:3:3:5"
    assert txn_list(10, open=[3], aborted=[5]).to_string() == "10:3:3:5"
    assert txn_list(7).to_string() == "7:9223372036854775807::"
    assert ValidTxnList.from_string("7:9223372036854775807::") == txn_list(7)


@pytest.mark.parametrize("text", ["5", "a:1", "1:2:x:", "1:2:3,,4:", "1:2:3:4:5", "1:2:3:3"])
def test_malformed_txn_strings(text: str) -> None:
    with pytest.raises(SnapshotFormatError, match="snapshot"):
        ValidTxnList.from_string(text)


@pytest.mark.parametrize("text", ["default.t", "default.t:5", "default.t:x:1::", "default.t:5:y::",
                                  "default.t:5:1:a:", "default.t:5:1::b", "t:1:2:3:4:5", "t:9:4:4:4"])
def test_malformed_write_id_strings(text: str) -> None:
    with pytest.raises(SnapshotFormatError, match="snapshot"):
        ValidReaderWriteIdList.from_string(text)


def test_compactor_string_rejects_open_ids() -> None:
    with pytest.raises(SnapshotFormatError, match="open ids"):
        ValidCompactorWriteIdList.from_string("default.t:9:4:4,7:5")


# --- Reader semantics, worked examples ------------------------------------------------------------

def test_reader_examples() -> None:
    wil = reader(9, open=(4, 7), aborted=(5,))
    assert [w for w in range(12) if wil.is_write_id_valid(w)] == [0, 1, 2, 3, 6, 8, 9]
    assert wil.is_write_id_range_valid(1, 3) is ALL
    assert wil.is_write_id_range_valid(1, 5) is SOME
    assert wil.is_write_id_range_valid(4, 5) is NONE
    assert wil.is_write_id_range_valid(8, 12) is SOME  # 10..12 above the HWM
    assert wil.is_write_id_range_valid(10, 12) is NONE
    assert wil.is_write_id_range_aborted(5, 5) is ALL
    assert wil.is_write_id_range_aborted(4, 6) is SOME
    assert wil.is_write_id_range_aborted(6, 9) is NONE
    assert wil.is_write_id_range_aborted(10, 10) is NONE
    assert wil.is_write_id_aborted(5) and not wil.is_write_id_aborted(4)
    assert wil.is_valid_base(3) and not wil.is_valid_base(4) and not wil.is_valid_base(6)


def test_min_open_ignores_aborted() -> None:
    assert reader(9, aborted=(2,)).min_open is None
    assert reader(9, open=(6,), aborted=(2,)).min_open == 6
    assert reader(9, aborted=(2,)).is_valid_base(9)


# --- Compactor list construction (TxnUtils.createValidCompactWriteIdList) -------------------------

def test_compactor_from_reader_example() -> None:
    wil = reader(9, open=(4, 7), aborted=(2, 5))
    comp = ValidCompactorWriteIdList.from_reader(wil)
    assert comp.high_watermark == 3  # min open − 1
    assert comp.aborted == (2,)  # 5 is above the new HWM: dropped
    assert comp.open == ()
    assert comp.min_open_write_id == 4
    assert comp.to_string() == "default.t:3:4::2"
    assert ValidCompactorWriteIdList.from_string(comp.to_string()) == comp
    assert comp.is_write_id_range_valid(1, 3) is ALL  # aborted 2 inside: still ALL
    assert comp.is_write_id_range_valid(3, 4) is NONE  # straddles the open id
    assert comp.is_write_id_range_aborted(2, 2) is ALL
    assert not comp.is_write_id_valid(2) and comp.is_write_id_valid(3) and not comp.is_write_id_valid(4)


def test_compactor_without_open_keeps_hwm() -> None:
    comp = ValidCompactorWriteIdList.from_reader(reader(9, aborted=(5,)))
    assert (comp.high_watermark, comp.aborted, comp.min_open) == (9, (5,), None)
    assert comp.to_string() == "default.t:9:9223372036854775807::5"


def test_compactor_rejects_open_ids() -> None:
    with pytest.raises(ValueError, match="aborted ids only"):
        ValidCompactorWriteIdList(table="t", high_watermark=5, open=(3,))


# --- Brute-force models ---------------------------------------------------------------------------

@st.composite
def snapshots(draw):
    """(hwm, open ids, aborted ids): disjoint exceptions at or below the HWM, as the metastore builds them."""
    hwm = draw(st.integers(min_value=0, max_value=25))
    states = draw(st.lists(st.sampled_from("cccoa"), min_size=hwm, max_size=hwm))
    open_ids = tuple(w for w, s in enumerate(states, 1) if s == "o")
    aborted = tuple(w for w, s in enumerate(states, 1) if s == "a")
    return hwm, open_ids, aborted


def _model_range(flags: list[bool]) -> RangeResponse:
    if all(flags):
        return ALL
    return NONE if not any(flags) else SOME


@given(snapshots())
def test_reader_matches_brute_force_model(snap) -> None:
    hwm, open_ids, aborted = snap
    wil = reader(hwm, open_ids, aborted)

    def valid(w: int) -> bool:
        return w <= hwm and w not in open_ids and w not in aborted

    top = hwm + 3
    for w in range(top + 1):
        assert wil.is_write_id_valid(w) is valid(w)
        assert wil.is_write_id_aborted(w) is (w in aborted)
        assert wil.is_valid_base(w) is (w <= hwm and all(w < o for o in open_ids))
    for a in range(1, top + 1):
        for b in range(a, top + 1):
            ids = range(a, b + 1)
            assert wil.is_write_id_range_valid(a, b) is _model_range([valid(w) for w in ids]), (a, b)
            expected_aborted = NONE if a > hwm else _model_range([w in aborted for w in ids])
            assert wil.is_write_id_range_aborted(a, b) is expected_aborted, (a, b)
    assert wil.min_open == (min(open_ids) if open_ids else None)
    assert ValidReaderWriteIdList.from_string(wil.to_string()) == wil


@given(snapshots())
def test_compactor_matches_model(snap) -> None:
    hwm, open_ids, aborted = snap
    comp = ValidCompactorWriteIdList.from_reader(reader(hwm, open_ids, aborted))
    chwm = min(open_ids) - 1 if open_ids else hwm
    caborted = tuple(w for w in aborted if w <= chwm)
    assert (comp.high_watermark, comp.aborted, comp.open) == (chwm, caborted, ())
    top = hwm + 3
    for w in range(top + 1):
        assert comp.is_write_id_valid(w) is (w <= chwm and w not in caborted)
    for a in range(1, top + 1):
        for b in range(a, top + 1):
            assert comp.is_write_id_range_valid(a, b) is (ALL if b <= chwm else NONE), (a, b)
            expected_aborted = NONE if a > chwm else _model_range([w in caborted for w in range(a, b + 1)])
            assert comp.is_write_id_range_aborted(a, b) is expected_aborted
    assert ValidCompactorWriteIdList.from_string(comp.to_string()) == comp


@given(snapshots())
def test_txn_list_matches_model(snap) -> None:
    hwm, open_ids, aborted = snap
    tl = txn_list(hwm, open=open_ids, aborted=aborted)
    for t in range(hwm + 4):
        assert tl.is_txn_valid(t) is (t <= hwm and t not in open_ids and t not in aborted)
        assert tl.is_txn_aborted(t) is (t in aborted)
        assert tl.is_txn_open(t) is (t > hwm or t in open_ids)
    assert tl.min_open_txn == (min(open_ids) if open_ids else LONG_MAX)
    assert ValidTxnList.from_string(tl.to_string()) == tl


@given(snapshots())
def test_cleaner_matches_model(snap) -> None:
    """ValidCleanerWriteIdList (HIVE-27526): the reader's answers, except that a range reaching above the HWM is
    NONE instead of SOME; single ids and the string form are the reader's."""
    hwm, open_ids, aborted = snap
    plain = reader(hwm, open_ids, aborted)
    cleaner = ValidCleanerWriteIdList(table="default.t", high_watermark=hwm, open=open_ids, aborted=aborted)
    top = hwm + 3
    for w in range(top + 1):
        assert cleaner.is_write_id_valid(w) is plain.is_write_id_valid(w)
    for a in range(1, top + 1):
        for b in range(a, top + 1):
            expected = NONE if b > hwm else plain.is_write_id_range_valid(a, b)
            assert cleaner.is_write_id_range_valid(a, b) is expected, (a, b)
            assert cleaner.is_write_id_range_aborted(a, b) is plain.is_write_id_range_aborted(a, b)
    assert cleaner.to_string() == plain.to_string()
    assert ValidCleanerWriteIdList.from_string(cleaner.to_string()) == cleaner
