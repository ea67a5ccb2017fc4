"""A text table Hive created (LazySimpleSerDe, SERDE_PARAMS through SDS.SERDE_ID) read by airflow-acid's SQL on a
Hive 4.2.0 metastore, joined with an ACID table Hive created."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.catalog import LAZY_SIMPLE_SERDE, TEXT_INPUT_FORMAT, TEXT_OUTPUT_FORMAT
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.statements import StatementExecutor, parse_statement
from tests.hive import hms

pytestmark = pytest.mark.slow


def _as_text_table(engine: sa.Engine, tbl_id: int, delimiter: str) -> None:
    """What CREATE EXTERNAL TABLE … ROW FORMAT DELIMITED FIELDS TERMINATED BY … STORED AS TEXTFILE leaves in
    Hive's SDS / SERDES / SERDE_PARAMS / TBLS / TABLE_PARAMS."""
    tbls = sa.table("TBLS", sa.column("TBL_ID"), sa.column("SD_ID"), sa.column("TBL_TYPE"))
    sds = sa.table("SDS", sa.column("SD_ID"), sa.column("SERDE_ID"), sa.column("INPUT_FORMAT"),
                   sa.column("OUTPUT_FORMAT"))
    serdes = sa.table("SERDES", sa.column("SERDE_ID"), sa.column("SLIB"))
    params = sa.table("SERDE_PARAMS", sa.column("SERDE_ID"), sa.column("PARAM_KEY"), sa.column("PARAM_VALUE"))
    table_params = sa.table("TABLE_PARAMS", sa.column("TBL_ID"), sa.column("PARAM_KEY"), sa.column("PARAM_VALUE"))
    with engine.begin() as conn:
        sd_id = conn.execute(sa.select(tbls.c.SD_ID).where(tbls.c.TBL_ID == tbl_id)).scalar_one()
        serde_id = conn.execute(sa.select(sds.c.SERDE_ID).where(sds.c.SD_ID == sd_id)).scalar_one()
        conn.execute(sa.update(sds).where(sds.c.SD_ID == sd_id).values(INPUT_FORMAT=TEXT_INPUT_FORMAT,
                                                                       OUTPUT_FORMAT=TEXT_OUTPUT_FORMAT))
        conn.execute(sa.update(serdes).where(serdes.c.SERDE_ID == serde_id).values(SLIB=LAZY_SIMPLE_SERDE))
        conn.execute(sa.delete(params).where(params.c.SERDE_ID == serde_id))
        conn.execute(sa.insert(params), [{"SERDE_ID": serde_id, "PARAM_KEY": k, "PARAM_VALUE": delimiter}
                                         for k in ("field.delim", "serialization.format")])
        conn.execute(sa.update(tbls).where(tbls.c.TBL_ID == tbl_id).values(TBL_TYPE="EXTERNAL_TABLE"))
        conn.execute(sa.update(table_params).where(table_params.c.TBL_ID == tbl_id,
                                                   table_params.c.PARAM_KEY == "transactional")
                     .values(PARAM_VALUE="false"))


def test_a_text_table_hive_created_joins_an_acid_table(hive_42_url, tmp_path):
    engine = sa.create_engine(hive_42_url)
    ms = Metastore(hive_42_url, MetastoreConf(opentxn_timeout_ms=0))
    try:
        db = f"x{uuid.uuid4().hex[:8]}"
        db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
        text_root = tmp_path / "ext" / "names"
        text_root.mkdir(parents=True)
        (text_root / "000000_0").write_bytes(b"1,one\n2,\\N\nbad,three\n")
        (text_root / "_SUCCESS").write_bytes(b"")
        names = hms.register_table(engine, db_id, "names", [("id", "int"), ("name", "string")], str(text_root))
        _as_text_table(engine, names, ",")
        hms.register_table(engine, db_id, "scores", [("id", "int"), ("score", "int")],
                           str(tmp_path / f"{db}.db" / "scores"))
        ex = StatementExecutor(AcidWarehouse(ms, tmp_path, host="testhost"))
        ex.run(parse_statement(f"INSERT INTO {db}.scores VALUES (1, 10), (2, 20)"))
        info = ms.catalog.get_table(db, "names")
        assert (info.serde, info.serde_params) == (LAZY_SIMPLE_SERDE, {"field.delim": ",",
                                                                       "serialization.format": ","})
        result = ex.run(parse_statement(f"SELECT n.id, n.name, s.score FROM {db}.names n "
                                        f"JOIN {db}.scores s ON n.id = s.id ORDER BY n.id"))
        assert result.rows == [[1, "one", 10], [2, None, 20]]
        assert sorted(map(tuple, ex.run(parse_statement(f"SELECT * FROM {db}.names")).rows), key=str) == \
            sorted([(1, "one"), (2, None), (None, "three")], key=str)
    finally:
        ms.close()
        engine.dispose()
