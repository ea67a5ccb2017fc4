"""The Initiator's compaction type decision (docs/hive-acid.md#compaction-type, CompactorUtil.determineCompactionType) as a
pure function that returns the type *and* a sentence saying why, so every decision can be shown to a user."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.state import AcidState
from airflow_acid.units import iec_size


class Rule(str, enum.Enum):
    """Which step of docs/hive-acid.md#compaction-type settled the decision."""

    TOO_MANY_ABORTS = "too_many_aborts"   # step 1 -> MAJOR
    OLD_ABORT = "old_abort"               # step 2 -> MINOR
    DELTA_PCT = "delta_pct"               # step 4, delta/base above the pct threshold -> MAJOR
    MULTI_BASE = "multi_base"             # step 4, no delta bytes but an obsolete base -> MAJOR
    BELOW_DELTA_NUM = "below_delta_num"   # step 5 -> no compaction
    DELTA_NUM_NO_BASE = "delta_num_no_base"  # step 6, no base -> MAJOR
    DELTA_NUM_MAJOR_ONLY = "delta_num_major_only"  # step 6, minor unsupported -> MAJOR
    DELTA_NUM = "delta_num"               # step 6 -> MINOR

    @property
    def display(self) -> str:
        """The rule in words, for people (the value is what the decisions table and the JSON API carry)."""
        return _RULE_WORDS[self]


_RULE_WORDS = {
    Rule.TOO_MANY_ABORTS: "too many aborted transactions", Rule.OLD_ABORT: "an old aborted transaction",
    Rule.DELTA_PCT: "delta/base size above the threshold", Rule.MULTI_BASE: "more than one base",
    Rule.BELOW_DELTA_NUM: "below every threshold", Rule.DELTA_NUM_NO_BASE: "many deltas and no base",
    Rule.DELTA_NUM_MAJOR_ONLY: "many deltas, minor not supported", Rule.DELTA_NUM: "many deltas",
}


@dataclass(frozen=True)
class DirectoryStats:
    """docs/hive-acid.md#compaction-type step 3 inputs from getAcidState under the compactor snapshot."""

    base_size: int
    delta_size: int
    delta_count: int
    has_obsolete_base: bool = False
    minor_supported: bool = True

    @classmethod
    def of(cls, state: AcidState, *, minor_supported: bool = True) -> DirectoryStats:
        return cls(state.base_size, state.delta_size, state.delta_count, state.has_obsolete_base, minor_supported)


@dataclass(frozen=True)
class Decision:
    """The outcome: ``type`` None means "no compaction"; ``reason`` is a readable sentence."""

    type: CompactionType | None
    reason: str
    rule: Rule

    @property
    def compacts(self) -> bool:
        return self.type is not None


def decide_compaction(stats: DirectoryStats | None, *, delta_num_threshold: int, delta_pct_threshold: float,
                      too_many_aborts: bool = False, has_old_abort: bool = False, aborted_count: int | None = None,
                      abortedtxn_threshold: int | None = None, oldest_abort_age_s: float | None = None,
                      aborted_txn_time_threshold_s: float | None = None, num_source: str | None = None,
                      pct_source: str | None = None) -> Decision:
    """docs/hive-acid.md#compaction-type in its order: tooManyAborts → MAJOR; hasOldAbort → MINOR; delta/base > pct → MAJOR
    (skipped without a base; also MAJOR when no delta bytes but an obsolete base); delta count ≤ num threshold → none; else
    MAJOR without a base or when minor is unsupported, otherwise MINOR.

    ``stats`` may be None only when an abort rule decides (the Initiator lists no directory then). The optional
    ``aborted_*``/``oldest_*`` and ``*_source`` values only enrich the reason text.
    """
    if too_many_aborts:
        detail = f"{aborted_count} aborted transactions" if aborted_count is not None else "too many aborted txns"
        limit = f" > hive.compactor.abortedtxn.threshold={abortedtxn_threshold}" if abortedtxn_threshold is not None \
            else ""
        return Decision(CompactionType.MAJOR, f"MAJOR: {detail}{limit}", Rule.TOO_MANY_ABORTS)
    if has_old_abort:
        age = f"the oldest aborted transaction started {oldest_abort_age_s:.0f} s ago" \
            if oldest_abort_age_s is not None else "an aborted transaction is old"
        limit = f" > hive.compactor.aborted.txn.time.threshold={aborted_txn_time_threshold_s:g} s" \
            if aborted_txn_time_threshold_s is not None else ""
        return Decision(CompactionType.MINOR, f"MINOR: {age}{limit}", Rule.OLD_ABORT)
    if stats is None:
        raise ValueError("decide_compaction needs directory stats unless an abort rule applies")
    num_name = num_source or "hive.compactor.delta.num.threshold"
    pct_name = pct_source or "hive.compactor.delta.pct.threshold"
    sizes = f"base {iec_size(stats.base_size)}, {stats.delta_count} current delta(s) of {iec_size(stats.delta_size)}"
    no_base = stats.base_size == 0 and stats.delta_size > 0
    ratio = float("nan")
    if not no_base:
        # Java float division: x/0 is Infinity for x > 0 and NaN for 0/0 (never "big enough").
        ratio = stats.delta_size / stats.base_size if stats.base_size else float("nan")
        if ratio > delta_pct_threshold:
            return Decision(CompactionType.MAJOR, f"MAJOR: delta/base size {ratio:.3g} > {pct_name}="
                            f"{delta_pct_threshold:g} ({sizes})", Rule.DELTA_PCT)
        if stats.delta_size == 0 and stats.has_obsolete_base:
            return Decision(CompactionType.MAJOR, f"MAJOR: no delta data but more than one base ({sizes})",
                            Rule.MULTI_BASE)
    if stats.delta_count <= delta_num_threshold:
        if no_base:
            pct_part = f"no base (the {pct_name} test is skipped) and "
        elif stats.base_size:
            pct_part = f"delta/base size {ratio:.3g} ≤ {pct_name}={delta_pct_threshold:g} and "
        else:
            pct_part = "no data in base or deltas and "
        return Decision(None, f"not compacted: {pct_part}{stats.delta_count} current delta(s) ≤ {num_name}="
                        f"{delta_num_threshold} ({sizes})", Rule.BELOW_DELTA_NUM)
    above = f"{stats.delta_count} current delta(s) > {num_name}={delta_num_threshold}"
    if no_base:
        return Decision(CompactionType.MAJOR, f"MAJOR: {above} and no base ({sizes})", Rule.DELTA_NUM_NO_BASE)
    if not stats.minor_supported:
        return Decision(CompactionType.MAJOR, f"MAJOR: {above}; minor compaction is not supported here ({sizes})",
                        Rule.DELTA_NUM_MAJOR_ONLY)
    return Decision(CompactionType.MINOR, f"MINOR: {above} ({sizes})", Rule.DELTA_NUM)
