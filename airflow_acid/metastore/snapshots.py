"""Snapshots from the metastore: the global ValidTxnList, per-table reader and compactor ValidWriteIdLists, and
the min-open-txn watermarks the Cleaner waits on (docs/hive-acid.md#building-snapshots,
docs/hive-acid.md#reader-snapshot-rule, docs/hive-acid.md#metastore-tables MIN_HISTORY_LEVEL)."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.acid.codes import TxnState
from airflow_acid.acid.writeids import (
    LONG_MAX,
    ValidCompactorWriteIdList,
    ValidReaderWriteIdList,
    ValidTxnList,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database, now_ms
from airflow_acid.metastore.schema import MIN_HISTORY_LEVEL, NEXT_WRITE_ID, TXN_TO_WRITE_ID, TXNS
from airflow_acid.metastore.txns import min_open_txn_watermark, split_table_name


def read_valid_txn_list(conn: Connection, opentxn_timeout_ms: int, txn_id: int | None = None) -> ValidTxnList:
    """Build the global snapshot inside ``conn`` (GetOpenTxnsListHandler + createValidReadTxnList).

    HWM = MAX(TXN_ID); exceptions = open and aborted txns. Txn ids are handed out by a sequence and their rows
    may become visible out of order, so every id missing from TXNS above the last txn that started before the
    open-txn timeout window is reported open (it may still appear). For a txn T: HWM = min(T, HWM), only ids
    below T are exceptions, and T itself is not one (it sees its own writes).
    """
    now = now_ms(conn)
    boundary = int(conn.execute(
        sa.select(sa.func.coalesce(sa.func.max(TXNS.c.TXN_ID), 0)).where(TXNS.c.TXN_STARTED <= now - opentxn_timeout_ms)
    ).scalar_one())
    rows = conn.execute(
        sa.select(TXNS.c.TXN_ID, TXNS.c.TXN_STATE)
        .where(sa.or_(TXNS.c.TXN_STATE != TxnState.COMMITTED.value, TXNS.c.TXN_ID > boundary))
        .order_by(TXNS.c.TXN_ID)
    ).all()
    # HWM from the same rows (every id above the boundary is among them): a separate MAX(TXN_ID) query could see
    # a txn opened after the rows were read and so count it as committed.
    hwm = max([boundary] + [int(r.TXN_ID) for r in rows[-1:]])
    open_ids: list[int] = []
    aborted: list[int] = []
    expected = boundary + 1  # next id that must exist inside the window
    for row in rows:
        tid = int(row.TXN_ID)
        if tid > boundary:
            open_ids.extend(range(expected, tid))  # ids not (yet) visible inside the window: treat as open
            expected = tid + 1
        if row.TXN_STATE == TxnState.OPEN.value:
            open_ids.append(tid)
        elif row.TXN_STATE == TxnState.ABORTED.value:
            aborted.append(tid)
    if txn_id is not None:
        hwm = min(int(txn_id), hwm)
        open_ids = [t for t in open_ids if t < txn_id]
        aborted = [t for t in aborted if t < txn_id]
    open_ids = [t for t in open_ids if t <= hwm]
    aborted = [t for t in aborted if t <= hwm]
    min_open = min(open_ids) if open_ids else LONG_MAX
    return ValidTxnList(high_watermark=hwm, open=tuple(open_ids), aborted=tuple(aborted), min_open_txn=min_open)


def read_valid_write_ids(conn: Connection, full_table_name: str, txn_list: ValidTxnList) -> ValidReaderWriteIdList:
    """Build one table's reader snapshot for ``txn_list`` inside ``conn`` (GetValidWriteIdsForTableFunction)."""
    db, table = split_table_name(full_table_name)
    name = f"{db}.{table}"
    t2w = TXN_TO_WRITE_ID
    of_table = (t2w.c.T2W_DATABASE == db, t2w.c.T2W_TABLE == table)
    hwm = conn.execute(
        sa.select(sa.func.max(t2w.c.T2W_WRITEID)).where(*of_table, t2w.c.T2W_TXNID <= txn_list.high_watermark)
    ).scalar()
    if hwm is None or hwm <= 0:
        nxt = conn.execute(
            sa.select(NEXT_WRITE_ID.c.NWI_NEXT).where(NEXT_WRITE_ID.c.NWI_DATABASE == db,
                                                      NEXT_WRITE_ID.c.NWI_TABLE == table)
        ).scalar()
        hwm = 0 if nxt is None else int(nxt) - 1
    hwm = int(hwm)
    invalid: list[tuple[int, bool]] = []  # (write id, aborted?)
    min_open = LONG_MAX
    found_valid = False
    for txn, wid in conn.execute(
        sa.select(t2w.c.T2W_TXNID, t2w.c.T2W_WRITEID).where(*of_table, t2w.c.T2W_WRITEID <= hwm)
        .order_by(t2w.c.T2W_WRITEID)
    ):
        txn, wid = int(txn), int(wid)
        if txn_list.is_txn_valid(txn):
            found_valid = True
            continue
        is_aborted = txn_list.is_txn_aborted(txn)
        invalid.append((wid, is_aborted))
        if not is_aborted:
            min_open = min(min_open, wid)
    if not found_valid and invalid:
        # Earlier committed writes were already cleaned from TXN_TO_WRITE_ID: keep only the lowest invalid
        # write id and make it the HWM (Hive's special case).
        lowest = invalid[0][0]
        invalid = [(lowest, lowest != min_open)]
        hwm = lowest
    obj = ValidReaderWriteIdList(
        table=name, high_watermark=hwm,
        open=tuple(w for w, a in invalid if not a), aborted=tuple(w for w, a in invalid if a),
    )
    # Hive records the min open write id it saw even when the special case dropped that id from the list.
    object.__setattr__(obj, "min_open_write_id", min_open)
    return obj


class Snapshots:
    """Snapshot queries over one metastore database."""

    def __init__(self, db: Database, conf: MetastoreConf | None = None) -> None:
        self.db = db
        self.conf = conf or MetastoreConf()

    def valid_txn_list(self, txn_id: int | None = None) -> ValidTxnList:
        """The global snapshot now, or the snapshot of transaction ``txn_id``."""
        return self.db.run(lambda conn: read_valid_txn_list(conn, self.conf.opentxn_timeout_ms, txn_id),
                           what="valid txn list")

    def valid_write_ids(self, tables: Iterable[str], txn_list: ValidTxnList) -> dict[str, ValidReaderWriteIdList]:
        """Reader snapshots of ``"db.table"`` names for ``txn_list``, keyed by lower-cased name."""
        names = list(dict.fromkeys(".".join(split_table_name(t)) for t in tables))

        def work(conn: Connection) -> dict[str, ValidReaderWriteIdList]:
            return {n: read_valid_write_ids(conn, n, txn_list) for n in names}

        return self.db.run(work, what="valid write ids")

    def valid_write_id_list(self, table: str, txn_list: ValidTxnList) -> ValidReaderWriteIdList:
        """One table's reader snapshot."""
        return next(iter(self.valid_write_ids([table], txn_list).values()))

    def compactor_write_ids(self, table: str, txn_list: ValidTxnList) -> ValidCompactorWriteIdList:
        """The compactor's view of ``table``: HWM stops below the lowest open write id, only aborted exceptions."""
        return ValidCompactorWriteIdList.from_reader(self.valid_write_id_list(table, txn_list))

    def min_open_txn_id(self) -> int:
        """docs/hive-acid.md#reader-snapshot-rule step 1: min(lowest open txn, 1 + highest txn started before the open-txn
        timeout window)."""
        return self.db.run(lambda conn: min_open_txn_watermark(conn, self.conf.opentxn_timeout_ms),
                           what="min open txn id")

    def min_history_level(self) -> int | None:
        """MIN(MHL_MIN_OPEN_TXNID): the lowest txn any open txn's snapshot may still treat as open, or None."""
        value = self.db.run(
            lambda conn: conn.execute(sa.select(sa.func.min(MIN_HISTORY_LEVEL.c.MHL_MIN_OPEN_TXNID))).scalar(),
            what="min history level")
        return None if value is None else int(value)

    def cleaner_watermark(self) -> int:
        """docs/hive-acid.md#reader-snapshot-rule step 4: min(min open txn id, MIN_HISTORY_LEVEL minimum) — txns below it are
        invisible to no one."""
        def work(conn: Connection) -> int:
            mark = min_open_txn_watermark(conn, self.conf.opentxn_timeout_ms)
            if self.conf.use_min_history_level:
                mhl = conn.execute(sa.select(sa.func.min(MIN_HISTORY_LEVEL.c.MHL_MIN_OPEN_TXNID))).scalar()
                if mhl is not None:
                    mark = min(mark, int(mhl))
            return mark

        return self.db.run(work, what="cleaner watermark")
