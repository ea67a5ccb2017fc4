"""Reference model of the concurrent-load test: a journal of writer transactions and their replay.

Every row carries its identity — key ``k``, value ``v`` naming the statement that wrote it, ``w`` the writing
transaction and partition ``p`` — so the content a snapshot must show is a pure function of the journal: replay, in
transaction-id order, the committed transactions that the snapshot's ValidTxnList calls valid. Writers journal an
*intent* (txn id and its statements) before they commit and the outcome after, so a writer SIGKILLed between the
two leaves an intent whose outcome is settled later from the metastore (see ``load_checks``).

Why id order is a correct serialization here: each writer slot updates, deletes and merges only keys it inserted
itself, one transaction after another, so all transactions touching one row are ordered by id and each one's
snapshot holds its predecessors; transactions of different slots touch different rows and commute.
"""

from __future__ import annotations

import enum
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

Row = tuple[int, str, int, str]
"""(k, v, w, p) — one row of the main table as the model and the check compare it."""
Marker = tuple[int, int]
"""(k = txn id, writer slot) — one row of the marker table."""
State = dict[int, tuple[str, int, str]]
"""Live rows by key: k -> (v, w, p)."""


class Outcome(str, enum.Enum):
    """How a journaled transaction ended."""

    COMMITTED = "committed"
    ABORTED = "aborted"


class Kind(str, enum.Enum):
    """Journal record kinds."""

    STARTED = "started"       # a writer incarnation started: writer, pid, incarnation
    INTENT = "intent"         # about to commit: txn, writer, slot, ops
    COMMITTED = "committed"   # commit returned: txn
    ABORTED = "aborted"       # txn ended without commit: txn, why (deliberate, write_conflict, …)
    RESOLVED = "resolved"     # an intent's outcome settled from the metastore after its writer died: txn, outcome
    ERROR = "error"           # an expected, handled error: writer, error (kind)
    CRASH = "crash"           # an unexpected exception in a writer: writer, error (traceback)


@dataclass(frozen=True)
class Intent:
    """One transaction a writer is about to commit: its statements on the main table, in order."""

    txn: int
    writer: str
    slot: int
    ops: tuple[tuple[Any, ...], ...]


# --- statements -------------------------------------------------------------------------------------------------


def insert_op(rows: Sequence[Row]) -> tuple:
    return ("insert", [list(r) for r in rows])


def update_op(keys: Iterable[int], v: str, w: int) -> tuple:
    return ("update", sorted(keys), v, w)


def delete_op(keys: Iterable[int]) -> tuple:
    return ("delete", sorted(keys))


def merge_op(rows: Sequence[Row]) -> tuple:
    """MERGE ON k: matched keys take the source's v and w, unmatched source rows are inserted."""
    return ("merge", [list(r) for r in rows])


def apply_ops(state: State, ops: Iterable[Sequence[Any]]) -> None:
    """Apply one transaction's statements to ``state`` in place (what the product must do at the writer's snapshot)."""
    for op in ops:
        kind = op[0]
        if kind == "insert":
            for k, v, w, p in op[1]:
                if k in state:
                    raise ValueError(f"model: insert of key {k}, which is live (keys are never reused)")
                state[k] = (v, w, p)
        elif kind == "update":
            _, keys, v, w = op
            for k in keys:
                if k in state:
                    state[k] = (v, w, state[k][2])
        elif kind == "delete":
            for k in op[1]:
                state.pop(k, None)
        elif kind == "merge":
            for k, v, w, p in op[1]:
                state[k] = (v, w, state[k][2] if k in state else p)
        else:
            raise ValueError(f"model: unknown statement {kind!r}")


def as_rows(state: State) -> Counter[Row]:
    return Counter((k, v, w, p) for k, (v, w, p) in state.items())


# --- the journal ------------------------------------------------------------------------------------------------


class Journal:
    """An append-only file of JSON lines shared by processes.

    Each record is one ``write`` on an ``O_APPEND`` descriptor, so records of concurrent processes never interleave
    and a SIGKILL cannot split one. :meth:`records` returns complete lines only; a line that still does not parse is
    counted in :attr:`torn`, which the run reports as an error.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self._fd: int | None = None
        self._lock = threading.Lock()
        self.torn = 0
        """Lines that were not JSON; never expected."""

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps({**record, "at": round(time.time(), 3)}, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            written = os.write(self._fd, line)
        if written != len(line):
            raise OSError(f"journal {self.path}: short write ({written} of {len(line)} bytes)")

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def records(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Complete records from byte ``offset`` on, and the offset after the last complete line."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except FileNotFoundError:
            return [], offset
        end = data.rfind(b"\n") + 1
        out = []
        for raw in data[:end].splitlines():
            try:
                out.append(json.loads(raw))
            except ValueError:
                self.torn += 1
        return out, offset + end


# --- the model --------------------------------------------------------------------------------------------------


class UnresolvedIntent(LookupError):
    """A snapshot sees a transaction whose outcome the journal does not hold yet."""

    def __init__(self, txn: int) -> None:
        super().__init__(f"transaction {txn} is visible but its outcome is not journaled yet")
        self.txn = txn


@dataclass
class Model:
    """Intents and outcomes read from the journal; replays committed transactions for any snapshot."""

    intents: dict[int, Intent] = field(default_factory=dict)
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    why_aborted: Counter = field(default_factory=Counter)
    expected_errors: Counter = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)
    incarnations: Counter = field(default_factory=Counter)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def feed(self, records: Iterable[dict[str, Any]]) -> None:
        """Take journal records in; a later record never contradicts an earlier outcome (checked)."""
        with self._lock:
            for r in records:
                kind = Kind(r["kind"])
                if kind is Kind.INTENT:
                    self.intents[r["txn"]] = Intent(r["txn"], r["writer"], r["slot"],
                                                    tuple(tuple(op) for op in r["ops"]))
                elif kind is Kind.COMMITTED:
                    self.settle(r["txn"], Outcome.COMMITTED)
                elif kind is Kind.ABORTED:
                    self.why_aborted[r.get("why", "?")] += 1
                    if r["txn"] in self.intents:
                        self.settle(r["txn"], Outcome.ABORTED)
                elif kind is Kind.RESOLVED:
                    self.settle(r["txn"], Outcome(r["outcome"]))
                elif kind is Kind.ERROR:
                    self.expected_errors[r["error"]] += 1
                elif kind is Kind.CRASH:
                    self.crashes.append(f"{r['writer']}: {r['error']}")
                elif kind is Kind.STARTED:
                    self.incarnations[r["writer"]] += 1

    def settle(self, txn: int, outcome: Outcome) -> None:
        with self._lock:
            known = self.outcomes.get(txn)
            if known is not None and known is not outcome:
                raise AssertionError(f"model: transaction {txn} recorded both {known.value} and {outcome.value}")
            self.outcomes[txn] = outcome

    def unresolved(self, writer: str | None = None) -> list[int]:
        """Intents without an outcome (of one writer, or all)."""
        with self._lock:
            return sorted(t for t, i in self.intents.items()
                          if t not in self.outcomes and (writer is None or i.writer == writer))

    def committed(self) -> list[int]:
        with self._lock:
            return sorted(t for t, o in self.outcomes.items() if o is Outcome.COMMITTED and t in self.intents)

    def state_at(self, visible: Callable[[int], bool], writer: str | None = None) -> State:
        """Live rows after replaying, by txn id, the committed intents ``visible`` accepts (of one writer or all).
        Raises :class:`UnresolvedIntent` for a visible intent without an outcome."""
        with self._lock:
            chosen = []
            for txn in sorted(self.intents):
                intent = self.intents[txn]
                if (writer is not None and intent.writer != writer) or not visible(txn):
                    continue
                outcome = self.outcomes.get(txn)
                if outcome is None:
                    raise UnresolvedIntent(txn)
                if outcome is Outcome.COMMITTED:
                    chosen.append(intent)
        state: State = {}
        for intent in chosen:
            apply_ops(state, intent.ops)
        return state

    def table_at(self, visible: Callable[[int], bool]) -> Counter[Row]:
        """The main table's rows at a snapshot (a multiset: duplicates would be a bug)."""
        return as_rows(self.state_at(visible))

    def markers_at(self, visible: Callable[[int], bool]) -> Counter[Marker]:
        """The marker table's rows at a snapshot: one (txn, slot) per committed, visible transaction."""
        with self._lock:
            out: Counter[Marker] = Counter()
            for txn, intent in self.intents.items():
                if not visible(txn):
                    continue
                outcome = self.outcomes.get(txn)
                if outcome is None:
                    raise UnresolvedIntent(txn)
                if outcome is Outcome.COMMITTED:
                    out[(txn, intent.slot)] += 1
            return out


def describe_difference(actual: Counter, expected: Counter, limit: int = 5) -> str:
    """'N missing, M unexpected' with a few examples of each (for mismatch reports)."""
    missing = expected - actual
    extra = actual - expected
    parts = []
    if missing:
        parts.append(f"{sum(missing.values())} missing (e.g. {sorted(missing)[:limit]})")
    if extra:
        parts.append(f"{sum(extra.values())} unexpected (e.g. {sorted(extra)[:limit]})")
    return "; ".join(parts) or "equal"


__all__ = ["Intent", "Journal", "Kind", "Marker", "Model", "Outcome", "Row", "State", "UnresolvedIntent",
           "apply_ops", "as_rows", "delete_op", "describe_difference", "insert_op", "merge_op", "update_op"]
