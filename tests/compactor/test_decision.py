"""The pure compaction type decision against a line-by-line transcription of docs/hive-acid.md#compaction-type."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.writeids import ValidCompactorWriteIdList
from airflow_acid.compactor.decision import DirectoryStats, Rule, decide_compaction

MAJOR, MINOR = CompactionType.MAJOR, CompactionType.MINOR


def spec_4_2(too_many_aborts, has_old_abort, base_size, delta_size, delta_count, multi_base, minor_supported,
             num_threshold, pct_threshold):
    """docs/hive-acid.md#compaction-type as written: returns 'MAJOR', 'MINOR' or None."""
    if too_many_aborts:
        return "MAJOR"
    if has_old_abort:
        return "MINOR"
    no_base = False
    if base_size == 0 and delta_size > 0:
        no_base = True
    else:
        if base_size == 0:
            big_enough = False  # Java: 0f / 0f is NaN, and NaN > x is false
        else:
            big_enough = delta_size / base_size > pct_threshold
        if big_enough or (delta_size == 0 and multi_base):
            return "MAJOR"
    if delta_count <= num_threshold:
        return None
    return "MAJOR" if no_base or not minor_supported else "MINOR"


sizes = st.one_of(st.just(0), st.integers(1, 10**12))


@settings(max_examples=500, deadline=None)
@given(aborts=st.booleans(), old=st.booleans(), base=sizes, delta=sizes, count=st.integers(0, 600),
       multi=st.booleans(), minor=st.booleans(), num=st.integers(0, 500),
       pct=st.floats(0, 5, allow_nan=False, allow_infinity=False))
def test_decision_matches_spec(aborts, old, base, delta, count, multi, minor, num, pct):
    stats = DirectoryStats(base, delta, count, multi, minor)
    decision = decide_compaction(stats, delta_num_threshold=num, delta_pct_threshold=pct, too_many_aborts=aborts,
                                 has_old_abort=old)
    expected = spec_4_2(aborts, old, base, delta, count, multi, minor, num, pct)
    assert (decision.type.display if decision.type else None) == expected
    assert decision.reason.startswith(expected if expected else "not compacted")


@pytest.mark.parametrize("stats, kwargs, expected, rule, text", [
    (DirectoryStats(0, 700, 11), {}, MAJOR, Rule.DELTA_NUM_NO_BASE, "11 current delta(s) > "
     "hive.compactor.delta.num.threshold=10 and no base"),
    (DirectoryStats(100_000, 1_100, 11), {}, MINOR, Rule.DELTA_NUM, "MINOR: 11 current delta(s) >"),
    # sizes in the units the console and CLI write everywhere (never raw byte counts)
    (DirectoryStats(100_000, 1_100, 11), {}, MINOR, Rule.DELTA_NUM, "(base 97.7 KiB, 11 current delta(s) of 1.1 KiB)"),
    (DirectoryStats(818, 819, 2), {}, MAJOR, Rule.DELTA_PCT, "(base 818 B, 2 current delta(s) of 819 B)"),
    (DirectoryStats(10_000, 2_000, 2), {}, MAJOR, Rule.DELTA_PCT, "delta/base size 0.2 > "
     "hive.compactor.delta.pct.threshold=0.1"),
    (DirectoryStats(10_000, 1_000, 2), {}, None, Rule.BELOW_DELTA_NUM, "delta/base size 0.1 ≤"),
    (DirectoryStats(10_000, 0, 0, has_obsolete_base=True), {}, MAJOR, Rule.MULTI_BASE, "more than one base"),
    (DirectoryStats(0, 100, 5), {"delta_num_threshold": 4, "num_source": "compactorthreshold.x"}, MAJOR,
     Rule.DELTA_NUM_NO_BASE, "5 current delta(s) > compactorthreshold.x=4"),
    (DirectoryStats(100_000, 1_100, 11, minor_supported=False), {}, MAJOR, Rule.DELTA_NUM_MAJOR_ONLY,
     "minor compaction is not supported"),
    (None, {"too_many_aborts": True, "aborted_count": 1001, "abortedtxn_threshold": 1000}, MAJOR,
     Rule.TOO_MANY_ABORTS, "MAJOR: 1001 aborted transactions > hive.compactor.abortedtxn.threshold=1000"),
    (None, {"has_old_abort": True, "oldest_abort_age_s": 50_000, "aborted_txn_time_threshold_s": 43_200}, MINOR,
     Rule.OLD_ABORT, "started 50000 s ago > hive.compactor.aborted.txn.time.threshold=43200 s"),
])
def test_examples_with_reasons(stats, kwargs, expected, rule, text):
    args = {"delta_num_threshold": 10, "delta_pct_threshold": 0.1, **kwargs}
    decision = decide_compaction(stats, **args)
    assert (decision.type, decision.rule) == (expected, rule)
    assert text in decision.reason


def test_stats_are_required_without_an_abort_rule():
    with pytest.raises(ValueError, match="needs directory stats"):
        decide_compaction(None, delta_num_threshold=10, delta_pct_threshold=0.1)


def test_stats_from_acid_state():
    files = [("base_0000005/bucket_00000", 1000), ("base_0000002/bucket_00000", 400),
             ("delta_0000006_0000006_0000/bucket_00000", 30), ("delete_delta_0000007_0000007_0000/bucket_00000", 20),
             ("delta_0000003_0000003_0000/bucket_00000", 99)]
    state = get_acid_state(files, ValidCompactorWriteIdList(high_watermark=7, table="default.t"))
    stats = DirectoryStats.of(state)
    assert stats == DirectoryStats(base_size=1000, delta_size=50, delta_count=2, has_obsolete_base=True)
