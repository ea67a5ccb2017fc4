"""The shadow report's categories from a decision history (no database): whatever airflow-acid decided after Hive
first acted never changes an "earlier"/"later" verdict, which follows its decision at the last look before; without
Hive acting, the latest decision tells "hive never compacted" from "agreed"."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.metastore.initiator_store import InitiatorDecisionRecord, Outcome
from airflow_acid.metastore.shadow import WANTS_COMPACTION, DecisionHistory, HiveCompaction
from airflow_acid.services.shadow import ShadowCategory, categorize, compare

HIVE_AT = 10_000
OUTCOMES = st.sampled_from([Outcome.WOULD_QUEUE, Outcome.NOT_NEEDED, Outcome.SKIPPED, Outcome.QUEUED])


def _history(outcomes: list[Outcome], start: int) -> list[InitiatorDecisionRecord]:
    return [InitiatorDecisionRecord("db", "t", None, o, "why", decided_at=start + 10 * i, delta_count=i)
            for i, o in enumerate(outcomes)]


def _hive(state: CompactionState, at: int = HIVE_AT) -> HiveCompaction:
    return HiveCompaction(1, "db", "t", None, state, CompactionType.MAJOR, at, at + 5, "hms-1", 7, None, False)


@given(before=st.lists(OUTCOMES, min_size=1, max_size=6), after=st.lists(OUTCOMES, max_size=6))
def test_decisions_after_hive_acted_never_change_earlier_or_later(before, after):
    hive = [_hive(CompactionState.SUCCEEDED)]
    looked = _history(before, 0)
    category, compact_at = categorize(DecisionHistory.of(looked), hive)
    assert categorize(DecisionHistory.of(looked + _history(after, HIVE_AT + 1)), hive)[0] is category
    if before[-1] in WANTS_COMPACTION:
        run = len(before) - 1
        while run > 0 and before[run - 1] in WANTS_COMPACTION:
            run -= 1
        assert category is ShadowCategory.EARLIER and compact_at == 10 * run
    else:
        assert category is ShadowCategory.LATER


@given(outcomes=st.lists(OUTCOMES, min_size=1, max_size=8))
def test_without_hive_the_latest_decision_decides(outcomes):
    history = DecisionHistory.of(_history(outcomes, 0))
    wants = outcomes[-1] in WANTS_COMPACTION
    assert categorize(history, [])[0] is (ShadowCategory.STARVED if wants else ShadowCategory.AGREED)
    assert categorize(history, [_hive(CompactionState.REFUSED)])[0] is ShadowCategory.HIVE_REFUSED
    assert history.decisions == len(outcomes)
    assert history.flips == sum((a in WANTS_COMPACTION) != (b in WANTS_COMPACTION)
                                for a, b in zip(outcomes, outcomes[1:]))


def test_a_first_look_after_hive_acted_agrees_only_if_it_wanted_to_compact_at_some_point():
    hive = [_hive(CompactionState.WORKING)]
    assert categorize(DecisionHistory.of(_history([Outcome.NOT_NEEDED, Outcome.WOULD_QUEUE], HIVE_AT + 1)),
                      hive) == (ShadowCategory.AGREED, HIVE_AT + 11)
    assert categorize(DecisionHistory.of(_history([Outcome.NOT_NEEDED], HIVE_AT + 1)), hive) == \
        (ShadowCategory.LATER, None)
    assert categorize(None, hive) == (ShadowCategory.NOT_EVALUATED, None)


def test_the_log_wins_over_the_latest_decision_and_the_latest_fills_in():
    logged = _history([Outcome.WOULD_QUEUE, Outcome.NOT_NEEDED], 0)
    latest_only = InitiatorDecisionRecord("db", "u", None, Outcome.NOT_NEEDED, "why", decided_at=5)
    report = compare([logged[-1], latest_only], [_hive(CompactionState.SUCCEEDED, at=5)], 0, HIVE_AT,
                     {("db", "t", None): DecisionHistory.of(logged)})
    got = {r.table: r for r in report.rows}
    assert got["t"].category is ShadowCategory.EARLIER and got["t"].history.decisions == 2
    assert got["u"].category is ShadowCategory.AGREED and got["u"].history.decisions == 1


def test_the_basis_is_a_decision_taken_before_hive_acted():
    looked = _history([Outcome.NOT_NEEDED, Outcome.WOULD_QUEUE, Outcome.WOULD_QUEUE, Outcome.WOULD_QUEUE], 0)
    crossing = compare([], [_hive(CompactionState.SUCCEEDED, at=15)], 0, HIVE_AT,
                       {("db", "t", None): DecisionHistory.of(looked)}).rows[0]
    assert crossing.category is ShadowCategory.EARLIER and crossing.compact_at == 10 and crossing.lead_ms == 5
    assert crossing.basis.decided_at == 10 and crossing.decision.decided_at == 30  # the run went on after Hive
    later = compare([], [_hive(CompactionState.SUCCEEDED, at=35)], 0, HIVE_AT,
                    {("db", "t", None): DecisionHistory.of(looked)}).rows[0]
    assert later.basis.decided_at == 30 and later.basis.delta_count == 3
