"""Undoing a compaction on a Hive 4.2 metastore (issue 30 item 2): the history row is one Hive's SHOW COMPACTIONS
reads ('x', aborted), the compactor transaction turns aborted in Hive's TXNS, and readers get the replaced files back;
on PostgreSQL and MariaDB."""

from __future__ import annotations

import uuid

import pyarrow.compute as pc
import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import CompactionType, TxnState
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.services import undo_compaction
from airflow_acid.spark.runners import LocalRunner
from tests.hive import hms

CONF = MetastoreConf(opentxn_timeout_ms=0, delayed_cleanup_enabled=True, cleaner_retention_time_s=3600.0)
COLUMNS = [("id", "int"), ("name", "string")]


@pytest.fixture
def ms(hive_42_url):
    metastore = Metastore(hive_42_url, CONF)
    yield metastore
    metastore.close()


def test_undo_on_a_hive_metastore(hive_42_url, ms, tmp_path):
    engine = sa.create_engine(hive_42_url)
    try:
        db = f"u{uuid.uuid4().hex[:8]}"
        db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
        hms.register_table(engine, db_id, "t", COLUMNS, str(tmp_path / f"{db}.db" / "t"))
        wh = AcidWarehouse(ms, tmp_path, host="testhost")
        table = f"{db}.t"
        for i in range(3):
            with wh.transaction() as t:
                t.insert(table, [{"id": i, "name": "x"}, {"id": i + 10, "name": "y"}])
        cq = ms.compactions.enqueue(db, "t", None, CompactionType.MAJOR).id
        assert Worker(ms, runner=LocalRunner()).run_next().status == WorkerStatus.COMPACTED
        with wh.transaction() as t:
            t.delete(table, where=pc.field("id") == 11)
        model = sorted(tuple(r.values()) for r in wh.read(table).to_pylist())
        c = ms.compactions.get(cq).txn_id

        result = undo_compaction(wh, cq, user="ops")
        assert result.undone is True and result.removed, result.message
        assert sorted(tuple(r.values()) for r in wh.read(table).to_pylist()) == model
        assert ms.txns.txn_state(c) is TxnState.ABORTED
        cc = sa.table("COMPLETED_COMPACTIONS", sa.column("CC_ID"), sa.column("CC_STATE"), sa.column("CC_TXN_ID"))
        with engine.connect() as conn:
            assert conn.execute(sa.select(cc.c.CC_STATE, cc.c.CC_TXN_ID).where(cc.c.CC_ID == cq)).one() == ("x", c)
        (row,) = ms.compactions.show_compactions(db=db, table="t")
        assert (row.state, row.errormessage.split(":")[0]) == ("aborted", "Undone by ops")
        assert Cleaner(ms, CONF).run_cycle().entries == []
        assert sorted(tuple(r.values()) for r in wh.read(table).to_pylist()) == model
    finally:
        engine.dispose()
