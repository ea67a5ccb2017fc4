"""Snapshots built by the metastore equal Hive's ValidTxnList / ValidWriteIdList, compared in Hive's string form."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid.codes import TxnType
from airflow_acid.acid.writeids import LONG_MAX, ValidCompactorWriteIdList
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.schema import TXN_TO_WRITE_ID, TXNS
from airflow_acid.metastore.snapshots import Snapshots
from airflow_acid.metastore.txns import TxnStore

M = LONG_MAX


@pytest.fixture
def store(db) -> TxnStore:
    return TxnStore(db, MetastoreConf())


@pytest.fixture
def snaps(db) -> Snapshots:
    return Snapshots(db, MetastoreConf())


def _open(store: TxnStore, n: int = 1, **kw) -> list[int]:
    return store.open_txns(n, user="u", host="h", **kw)


def _backdate(db, ms: int = 600_000) -> None:
    """Make every txn look as if it started ``ms`` ago (outside the open-txn timeout window)."""
    with db.begin() as conn:
        conn.execute(sa.update(TXNS).where(TXNS.c.TXN_ID > 0).values(TXN_STARTED=TXNS.c.TXN_STARTED - ms))


def test_interleaving_matches_hive_strings(db, store, snaps):
    t1, t2, t3, t4, t5 = _open(store, 5)
    assert store.allocate_write_id(t1, "db", "t") == 1
    assert store.allocate_write_id(t2, "db", "t") == 2
    assert store.allocate_write_id(t3, "db", "t") == 3
    assert store.allocate_write_id(t5, "db", "t") == 4
    store.commit(t1)
    store.abort(t3)
    store.commit(t5)  # t2 and t4 stay open

    global_tl = snaps.valid_txn_list()
    assert str(global_tl) == f"{t5}:{t2}:{t2},{t4}:{t3}"
    reader_tl = snaps.valid_txn_list(t4)
    assert str(reader_tl) == f"{t4}:{t2}:{t2}:{t3}"  # HWM = T, T itself not an exception
    assert str(snaps.valid_txn_list(t2)) == f"{t2}:{M}::"  # nothing below t2 is open or aborted

    assert str(snaps.valid_write_ids(["DB.T"], global_tl)["db.t"]) == "db.t:4:2:2:3"
    assert str(snaps.valid_write_id_list("db.t", reader_tl)) == "db.t:3:2:2:3"  # t5's write id is above the HWM
    assert str(snaps.valid_write_id_list("db.t", snaps.valid_txn_list(t2))) == "db.t:2:9223372036854775807::"
    compactor = snaps.compactor_write_ids("db.t", global_tl)
    assert isinstance(compactor, ValidCompactorWriteIdList)
    assert str(compactor) == "db.t:1:2::"  # HWM = min open write id - 1

    store.commit(t2)
    store.commit(t4)
    tl = snaps.valid_txn_list()
    assert str(tl) == f"{t5}:{M}::{t3}"
    assert str(snaps.valid_write_id_list("db.t", tl)) == f"db.t:4:{M}::3"
    assert str(snaps.compactor_write_ids("db.t", tl)) == f"db.t:4:{M}::3"


def test_table_never_written(db, snaps):
    tl = snaps.valid_txn_list()
    assert str(snaps.valid_write_id_list("db.nothing", tl)) == f"db.nothing:0:{M}::"
    with pytest.raises(InvalidInputError, match="'nothing' is not of the form 'database.table'"):
        snaps.valid_write_ids(["nothing"], tl)


def test_write_ids_cleaned_from_txn_to_write_id_special_case(db, store, snaps):
    """No committed write left among TXN_TO_WRITE_ID rows: keep only the lowest invalid id and lower the HWM."""
    t1, t2, t3 = _open(store, 3)
    for t in (t1, t2, t3):
        store.allocate_write_id(t, "db", "t")
    store.commit(t1)
    store.abort(t2)
    with db.begin() as conn:  # as the housekeeper does once t1 is below the low-water mark
        conn.execute(sa.delete(TXN_TO_WRITE_ID).where(TXN_TO_WRITE_ID.c.T2W_TXNID == t1))
    tl = snaps.valid_txn_list()
    assert str(snaps.valid_write_id_list("db.t", tl)) == "db.t:2:3::2"
    assert str(snaps.compactor_write_ids("db.t", tl)) == "db.t:2:9223372036854775807::2"
    store.abort(t3)
    (t4,) = _open(store)
    store.allocate_write_id(t4, "db", "t")
    with db.begin() as conn:
        conn.execute(sa.delete(TXN_TO_WRITE_ID).where(TXN_TO_WRITE_ID.c.T2W_TXNID.in_([t2, t3])))
    assert str(snaps.valid_write_id_list("db.t", snaps.valid_txn_list())) == "db.t:4:4:4:"


def test_missing_ids_inside_open_txn_window_count_as_open(db, store, snaps):
    a, b, c = _open(store, 3)
    for t in (a, b, c):
        store.commit(t)
    with db.begin() as conn:  # b's row "not visible yet" (a sequence value whose insert has not committed)
        conn.execute(sa.delete(TXNS).where(TXNS.c.TXN_ID == b))
    assert str(snaps.valid_txn_list()) == f"{c}:{b}:{b}:"
    _backdate(db)  # outside the window a missing id can no longer appear: it is not an exception
    assert str(snaps.valid_txn_list()) == f"{c}:{M}::"


def test_min_open_txn_id_watermark(db, store, snaps):
    a, b, c = _open(store, 3)
    store.commit(a)
    store.commit(c)
    # every txn is inside the open-txn window: nothing above the seed row 0 is safe yet
    assert snaps.min_open_txn_id() == 1
    _backdate(db)
    assert snaps.min_open_txn_id() == b
    store.commit(b)
    assert snaps.min_open_txn_id() == c + 1
    (d,) = _open(store)
    assert snaps.min_open_txn_id() == c + 1  # d is young: ids between may still appear
    _backdate(db)
    assert snaps.min_open_txn_id() == d


def test_min_history_level_tracks_open_snapshots(db, store, snaps):
    a, b = _open(store, 2)
    _backdate(db)
    (c,) = _open(store)  # opened while a is open: its snapshot may treat a as open
    assert snaps.min_history_level() == 1  # a and b started when only row 0 was known
    store.commit(a)
    store.commit(b)
    assert snaps.min_history_level() == a  # c's row remembers the lowest open txn at its start
    assert snaps.cleaner_watermark() == a
    store.commit(c)
    assert snaps.min_history_level() is None


# --- model-based: random interleavings --------------------------------------------------------------------


@dataclass
class _Model:
    """The metastore's txn and write-id state as plain Python, with Hive's snapshot rules applied to it."""

    state: dict[int, str] = field(default_factory=lambda: {0: "c"})
    read_only: set[int] = field(default_factory=set)
    writes: dict[str, dict[int, int]] = field(default_factory=dict)  # table -> txn -> write id
    next_write: dict[str, int] = field(default_factory=dict)

    def open_ids(self) -> list[int]:
        return sorted(t for t, s in self.state.items() if s == "o")

    def txn_list(self, txn: int | None = None) -> str:
        hwm = max(self.state) if txn is None else min(txn, max(self.state))
        limit = hwm if txn is None else txn - 1
        opened = [t for t in sorted(self.state) if self.state[t] == "o" and t <= limit]
        aborted = [t for t in sorted(self.state) if self.state[t] == "a" and t <= limit]
        return f"{hwm}:{opened[0] if opened else M}:{','.join(map(str, opened))}:{','.join(map(str, aborted))}"

    def _valid(self, txn: int, tl_hwm: int, reader: int | None) -> bool:
        return txn <= tl_hwm and (self.state[txn] == "c" or txn == reader)

    def write_id_list(self, table: str, reader: int | None = None) -> tuple[int, list[int], list[int], int]:
        tl_hwm = max(self.state) if reader is None else min(reader, max(self.state))
        writes = self.writes.get(table, {})
        below = [w for t, w in writes.items() if t <= tl_hwm]
        hwm = max(below) if below else self.next_write.get(table, 1) - 1
        opened, aborted, found_valid = [], [], False
        for t, w in sorted(writes.items(), key=lambda kv: kv[1]):
            if w > hwm:
                continue
            if self._valid(t, tl_hwm, reader):
                found_valid = True
            elif self.state[t] == "a" and t <= tl_hwm and (reader is None or t < reader):
                aborted.append(w)
            else:
                opened.append(w)
        min_open = min(opened) if opened else M
        if not found_valid and (opened or aborted):
            lowest = min(opened + aborted)
            opened, aborted = ([lowest], []) if lowest in opened else ([], [lowest])
            hwm = lowest
        return hwm, opened, aborted, min_open

    def reader_string(self, table: str, reader: int | None = None) -> str:
        hwm, opened, aborted, min_open = self.write_id_list(table, reader)
        return f"{table}:{hwm}:{min_open}:{','.join(map(str, opened))}:{','.join(map(str, aborted))}"

    def compactor_string(self, table: str) -> str:
        hwm, opened, aborted, _ = self.write_id_list(table)
        if opened:
            hwm = min(opened) - 1
        kept = [w for w in aborted if w <= hwm]
        return f"{table}:{hwm}:{min(opened) if opened else M}::{','.join(map(str, kept))}"


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("open"), st.integers(1, 3)),
        st.tuples(st.just("open_ro"), st.just(1)),
        st.tuples(st.just("commit"), st.integers(0, 20)),
        st.tuples(st.just("abort"), st.integers(0, 20)),
        st.tuples(st.just("write"), st.integers(0, 20), st.sampled_from(["db.a", "db.b"])),
    ),
    min_size=1, max_size=12,
)


def test_random_interleavings_match_hive_rules(db, store, snaps):
    model = _Model()

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(ops=_OPS)
    def run(ops):
        for op in ops:
            opened = model.open_ids()
            if op[0] in ("open", "open_ro"):
                ro = op[0] == "open_ro"
                for t in _open(store, op[1], txn_type=TxnType.READ_ONLY if ro else TxnType.DEFAULT):
                    model.state[t] = "o"
                    if ro:
                        model.read_only.add(t)
            elif not opened:
                continue
            elif op[0] == "commit":
                t = opened[op[1] % len(opened)]
                store.commit(t)
                model.state[t] = "c"
            elif op[0] == "abort":
                t = opened[op[1] % len(opened)]
                store.abort(t)
                model.state[t] = "a"
            else:
                writers = [t for t in opened if t not in model.read_only]
                if not writers:
                    continue
                t, table = writers[op[1] % len(writers)], op[2]
                got = store.allocate_write_id(t, *table.split("."))
                table_writes = model.writes.setdefault(table, {})
                if t not in table_writes:
                    table_writes[t] = model.next_write.get(table, 1)
                    model.next_write[table] = table_writes[t] + 1
                assert got == table_writes[t]
        tl = snaps.valid_txn_list()
        assert str(tl) == model.txn_list()
        wils = snaps.valid_write_ids(["db.a", "db.b"], tl)
        for table in ("db.a", "db.b"):
            assert str(wils[table]) == model.reader_string(table)
            assert str(snaps.compactor_write_ids(table, tl)) == model.compactor_string(table)
        for t in model.open_ids():
            reader_tl = snaps.valid_txn_list(t)
            assert str(reader_tl) == model.txn_list(t)
            for table in ("db.a", "db.b"):
                assert str(snaps.valid_write_id_list(table, reader_tl)) == model.reader_string(table, t)

    run()
