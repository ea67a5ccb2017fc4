"""Helpers for the Initiator and HouseKeeper tests: warehouses on every backend, synthetic writes with exact file
sizes (the Initiator only lists, it never reads data), aborted transactions in bulk, and a filesystem that counts
listings."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import sqlalchemy as sa
from fsspec.implementations.local import LocalFileSystem

from airflow_acid.acid.codes import OperationType, TxnState
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.schema import TXN_COMPONENTS, TXN_TO_WRITE_ID, TXNS
from airflow_acid.metastore.store import Metastore

# Zero open-txn window: a txn committed a moment ago is already outside it (the tests look right after writing).
CONF = MetastoreConf(opentxn_timeout_ms=0)


def warehouse_on(url: str, location: Path, conf: MetastoreConf = CONF) -> AcidWarehouse:
    return AcidWarehouse(url, location, conf=conf, user="tester", host="testhost")


def insert_rows(wh: AcidWarehouse, table: str, n_txns: int, partition: dict | None = None) -> None:
    """``n_txns`` committed one-row inserts: one delta each."""
    for i in range(n_txns):
        with wh.transaction() as txn:
            txn.insert(table, [(i,)], partition=partition)


def synthetic_write(ms: Metastore, location: str | Path, db: str, table: str, partition: str | None, *,
                    kind: str = "delta", size: int = 100) -> int:
    """Commit one write of ``table``/``partition`` whose directory holds one bucket file of exactly ``size`` bytes
    (``kind``: delta, delete_delta or base — a base as INSERT OVERWRITE writes it). Returns the write id."""
    txn = ms.txns.open_txn(user="tester", host="testhost")
    op = OperationType.DELETE if kind == "delete_delta" else OperationType.INSERT
    ms.txns.add_write_components(txn, db, table, [partition] if partition else None, op)
    wid = ms.txns.write_id_of(txn, db, table)
    name = f"base_{wid:07d}" if kind == "base" else f"{kind}_{wid:07d}_{wid:07d}_0000"
    directory = Path(location) / name
    directory.mkdir(parents=True)
    (directory / "bucket_00000").write_bytes(os.urandom(size))
    ms.txns.commit(txn)
    return wid


def aborted_writes(ms: Metastore, db: str, table: str, partition: str | None, count: int, *,
                   started_ms: int | None = None) -> list[int]:
    """``count`` aborted txns that each wrote ``table``/``partition`` (TXN_COMPONENTS kept, as Hive keeps them);
    ``started_ms`` backdates TXN_STARTED."""
    txns: list[int] = []
    for start in range(0, count, 500):
        batch = ms.txns.open_txns(min(500, count - start), user="tester", host="testhost")
        ms.txns.allocate_write_ids(batch, db, table)
        txns += batch
    with ms.db.begin() as conn:
        wids = dict(conn.execute(sa.select(TXN_TO_WRITE_ID.c.T2W_TXNID, TXN_TO_WRITE_ID.c.T2W_WRITEID)
                                 .where(TXN_TO_WRITE_ID.c.T2W_TXNID.in_(txns))).all())
        conn.execute(sa.insert(TXN_COMPONENTS), [
            {"TC_TXNID": t, "TC_DATABASE": db, "TC_TABLE": table, "TC_PARTITION": partition,
             "TC_OPERATION_TYPE": OperationType.INSERT.value, "TC_WRITEID": wids[t]} for t in txns])
        values = {"TXN_STATE": TxnState.ABORTED.value}
        if started_ms is not None:
            values["TXN_STARTED"] = started_ms
        conn.execute(sa.update(TXNS).where(TXNS.c.TXN_ID.in_(txns)).values(values))
    return txns


class CountingFileSystem(LocalFileSystem):
    """The local filesystem, counting listings (outermost ``find``/``ls``/``walk``/``glob`` calls) per path."""

    cachable = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.listed: list[str] = []
        self._local = threading.local()  # nesting depth per thread (the Initiator lists on several threads)

    @property
    def _depth(self) -> int:
        return getattr(self._local, "depth", 0)

    @_depth.setter
    def _depth(self, value: int) -> None:
        self._local.depth = value

    def _counted(self, method, path, *args, **kwargs):
        if self._depth == 0:
            self.listed.append(str(path).rstrip("/"))
        self._depth += 1
        try:
            return method(path, *args, **kwargs)
        finally:
            self._depth -= 1

    def find(self, path, *args, **kwargs):
        return self._counted(super().find, path, *args, **kwargs)

    def ls(self, path, *args, **kwargs):
        return self._counted(super().ls, path, *args, **kwargs)

    def walk(self, path, *args, **kwargs):
        if self._depth == 0:
            self.listed.append(str(path).rstrip("/"))
        self._depth += 1
        try:
            yield from super().walk(path, *args, **kwargs)
        finally:
            self._depth -= 1

    def glob(self, path, *args, **kwargs):
        return self._counted(super().glob, path, *args, **kwargs)
