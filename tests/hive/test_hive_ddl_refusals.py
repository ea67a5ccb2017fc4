"""On a Hive 4.2.0 metastore, LOAD DATA, tables with column DEFAULTs and views stay Hive's: refused with the statement
to run in Hive, nothing changed; the DEFAULTs Hive recorded (KEY_CONSTRAINTS) apply to airflow-acid's INSERTs."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.orc as po
import pytest
import sqlalchemy as sa

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import HiveMetastoreError
from airflow_acid.metastore.schema import KEY_CONSTRAINTS
from airflow_acid.statements import StatementExecutor, parse_statement
from tests.hive import hms

pytestmark = pytest.mark.slow


def test_hive_ddl_statements_are_refused(hive_42_url, tmp_path):
    engine = sa.create_engine(hive_42_url)
    ms = Metastore(hive_42_url, MetastoreConf(opentxn_timeout_ms=0))
    try:
        db = f"x{uuid.uuid4().hex[:8]}"
        db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
        tbl_id = hms.register_table(engine, db_id, "t", [("id", "int")], str(tmp_path / f"{db}.db" / "t"))
        ex = StatementExecutor(AcidWarehouse(ms, tmp_path, host="testhost"))
        po.write_table(pa.table({"id": pa.array([1], pa.int32())}), str(tmp_path / "000000_0"))
        for statement, what in [
            (f"LOAD DATA LOCAL INPATH '{tmp_path / '000000_0'}' INTO TABLE {db}.t", f"load data into {db}.t"),
            (f"CREATE TABLE {db}.d (a INT DEFAULT 1)", f"create table {db}.d"),
            (f"CREATE VIEW {db}.v AS SELECT id FROM {db}.t", f"create view {db}.v"),
            (f"DROP VIEW {db}.v", f"drop view {db}.v"),
        ]:
            with pytest.raises(HiveMetastoreError, match=f"cannot {what}: .*run the DDL in Hive"):
                ex.run(parse_statement(statement))
        assert not (tmp_path / f"{db}.db" / "t").exists() and not ms.catalog.table_exists(db, "d")
        assert (tmp_path / "000000_0").exists()
        # a DEFAULT Hive recorded for column id of t (CONSTRAINT_TYPE 4) fills an INSERT that leaves id out
        with engine.begin() as conn:
            conn.execute(sa.insert(KEY_CONSTRAINTS).values(
                PARENT_INTEGER_IDX=0, PARENT_TBL_ID=tbl_id, POSITION=1, CONSTRAINT_NAME="hive_dflt",
                CONSTRAINT_TYPE=4, ENABLE_VALIDATE_RELY=4, DEFAULT_VALUE="42"))
        assert [c.default for c in ms.catalog.get_table(db, "t").columns] == ["42"]
    finally:
        ms.close()
        engine.dispose()
