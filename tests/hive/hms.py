"""Test helpers that stand in for Hive: load Hive's own schema scripts (what ``schematool -initSchema`` runs) into a
fresh database, register tables and partitions with every row HMS writes (ids from SEQUENCE_TABLE), write the
transactional rows Hive's clients write, and fingerprint Hive's schema from information_schema."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from tests.external_fixtures import HIVE_SCHEMA_DIR

VERSIONS = ("4.0.0", "4.1.0", "4.2.0")
ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
ORC_INPUT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUTPUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
_MODEL = "org.apache.hadoop.hive.metastore.model."


def script_name(backend: str, version: str) -> str:
    """Where Hive's schema script of ``version`` for ``backend`` is, relative to the external fixture folder."""
    kind = "postgres" if backend == "postgresql" else "mysql"
    return f"{HIVE_SCHEMA_DIR}/hive-schema-{version}.{kind}.sql"


def load_schema(url: str, script: Path) -> None:
    """Run one of Hive's schema scripts as schematool does: the whole file, statement after statement."""
    engine = sa.create_engine(url)
    try:
        raw = engine.raw_connection()
        try:
            text = script.read_text()
            if engine.dialect.name == "postgresql":
                with raw.cursor() as cur:  # psycopg2 runs a multi-statement script in one simple-query call
                    cur.execute(text)
            else:
                with raw.cursor() as cur:
                    for statement in split_mysql(text):
                        cur.execute(statement)
            raw.commit()
        finally:
            raw.close()
    finally:
        engine.dispose()


def split_mysql(text: str) -> list[str]:
    """Split a MySQL script on ``;`` outside quotes and comments (Hive's scripts have no DELIMITER blocks);
    ``/*! … */`` version comments are statements the server runs, so they stay."""
    statements, current, i, quote = [], [], 0, None
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\":
                current.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in ("'", '"', "`"):
            quote = ch
            current.append(ch)
        elif text.startswith("--", i) or ch == "#":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif text.startswith("/*", i) and not text.startswith("/*!", i):
            end = text.find("*/", i)
            i = end + 2
            continue
        elif ch == ";":
            statement = "".join(current).strip()
            if statement:
                statements.append(statement)
            current = []
        else:
            current.append(ch)
        i += 1
    tail = "".join(current).strip()
    if tail:
        statements.append(tail)
    return statements


# --- HMS-style registration --------------------------------------------------------------------------------------


def _t(name: str, *columns: str) -> sa.TableClause:
    return sa.table(name, *[sa.column(c) for c in columns])


def next_id(conn: Connection, model: str) -> int:
    """An id from SEQUENCE_TABLE the way DataNucleus hands them out (row per model class, created at first use)."""
    seq = _t("SEQUENCE_TABLE", "SEQUENCE_NAME", "NEXT_VAL")
    name = _MODEL + model
    value = conn.execute(sa.select(seq.c.NEXT_VAL).where(seq.c.SEQUENCE_NAME == name).with_for_update()).scalar()
    if value is None:
        value = 1
        conn.execute(sa.insert(seq).values(SEQUENCE_NAME=name, NEXT_VAL=2))
    else:
        conn.execute(sa.update(seq).where(seq.c.SEQUENCE_NAME == name).values(NEXT_VAL=value + 1))
    return int(value)


def register_database(engine: Engine, name: str, location: str, owner: str = "hive") -> int:
    """CREATE DATABASE as HMS records it: DBS (catalog 'hive', seconds, type NATIVE)."""
    with engine.begin() as conn:
        db_id = next_id(conn, "MDatabase")
        conn.execute(sa.insert(_t("DBS", "DB_ID", "DESC", "DB_LOCATION_URI", "NAME", "OWNER_NAME", "OWNER_TYPE",
                                  "CTLG_NAME", "CREATE_TIME", "TYPE")).values(
            DB_ID=db_id, DESC=None, DB_LOCATION_URI=location, NAME=name, OWNER_NAME=owner, OWNER_TYPE="USER",
            CTLG_NAME="hive", CREATE_TIME=int(time.time()), TYPE="NATIVE"))
        return db_id


def _storage(conn: Connection, location: str, cd_id: int, num_buckets: int) -> int:
    serde_id = next_id(conn, "MSerDeInfo")
    conn.execute(sa.insert(_t("SERDES", "SERDE_ID", "NAME", "SLIB")).values(SERDE_ID=serde_id, NAME=None,
                                                                             SLIB=ORC_SERDE))
    conn.execute(sa.insert(_t("SERDE_PARAMS", "SERDE_ID", "PARAM_KEY", "PARAM_VALUE")).values(
        SERDE_ID=serde_id, PARAM_KEY="serialization.format", PARAM_VALUE="1"))
    sd_id = next_id(conn, "MStorageDescriptor")
    conn.execute(sa.insert(_t("SDS", "SD_ID", "CD_ID", "INPUT_FORMAT", "IS_COMPRESSED", "IS_STOREDASSUBDIRECTORIES",
                              "LOCATION", "NUM_BUCKETS", "OUTPUT_FORMAT", "SERDE_ID")).values(
        SD_ID=sd_id, CD_ID=cd_id, INPUT_FORMAT=ORC_INPUT, IS_COMPRESSED=False, IS_STOREDASSUBDIRECTORIES=False,
        LOCATION=location, NUM_BUCKETS=num_buckets, OUTPUT_FORMAT=ORC_OUTPUT, SERDE_ID=serde_id))
    return sd_id


def register_table(engine: Engine, db_id: int, name: str, columns: Sequence[tuple[str, str]], location: str, *,
                   partition_keys: Sequence[tuple[str, str]] = (), bucket_cols: Sequence[str] = (),
                   num_buckets: int = -1, properties: dict[str, str] | None = None) -> int:
    """CREATE TABLE … STORED AS ORC TBLPROPERTIES ('transactional'='true') as HMS records it: CDS, COLUMNS_V2,
    SERDES/SERDE_PARAMS, SDS (→ CD_ID, SERDE_ID), BUCKETING_COLS, TBLS (seconds), TABLE_PARAMS, PARTITION_KEYS."""
    now = int(time.time())
    params = {"transactional": "true", "bucketing_version": "2", "transient_lastDdlTime": str(now),
              "numFiles": "0", "totalSize": "0", **(properties or {})}
    with engine.begin() as conn:
        cd_id = next_id(conn, "MColumnDescriptor")
        conn.execute(sa.insert(_t("CDS", "CD_ID")).values(CD_ID=cd_id))
        conn.execute(sa.insert(_t("COLUMNS_V2", "CD_ID", "COMMENT", "COLUMN_NAME", "TYPE_NAME", "INTEGER_IDX")), [
            {"CD_ID": cd_id, "COMMENT": None, "COLUMN_NAME": c, "TYPE_NAME": t, "INTEGER_IDX": i}
            for i, (c, t) in enumerate(columns)])
        sd_id = _storage(conn, location, cd_id, num_buckets)
        if bucket_cols:
            conn.execute(sa.insert(_t("BUCKETING_COLS", "SD_ID", "BUCKET_COL_NAME", "INTEGER_IDX")), [
                {"SD_ID": sd_id, "BUCKET_COL_NAME": c, "INTEGER_IDX": i} for i, c in enumerate(bucket_cols)])
        tbl_id = next_id(conn, "MTable")
        conn.execute(sa.insert(_t("TBLS", "TBL_ID", "CREATE_TIME", "DB_ID", "LAST_ACCESS_TIME", "OWNER", "OWNER_TYPE",
                                  "RETENTION", "SD_ID", "TBL_NAME", "TBL_TYPE", "IS_REWRITE_ENABLED", "WRITE_ID")).values(
            TBL_ID=tbl_id, CREATE_TIME=now, DB_ID=db_id, LAST_ACCESS_TIME=0, OWNER="hive", OWNER_TYPE="USER",
            RETENTION=0, SD_ID=sd_id, TBL_NAME=name, TBL_TYPE="MANAGED_TABLE", IS_REWRITE_ENABLED=False, WRITE_ID=0))
        conn.execute(sa.insert(_t("TABLE_PARAMS", "TBL_ID", "PARAM_KEY", "PARAM_VALUE")), [
            {"TBL_ID": tbl_id, "PARAM_KEY": k, "PARAM_VALUE": v} for k, v in params.items()])
        if partition_keys:
            conn.execute(sa.insert(_t("PARTITION_KEYS", "TBL_ID", "PKEY_COMMENT", "PKEY_NAME", "PKEY_TYPE",
                                      "INTEGER_IDX")), [
                {"TBL_ID": tbl_id, "PKEY_COMMENT": None, "PKEY_NAME": k, "PKEY_TYPE": t, "INTEGER_IDX": i}
                for i, (k, t) in enumerate(partition_keys)])
        return tbl_id


def register_partition(engine: Engine, tbl_id: int, values: Sequence[str], name: str, location: str) -> int:
    """ALTER TABLE … ADD PARTITION as HMS's add_partitions records it: SERDES, SDS (sharing the table's CD_ID),
    PARTITIONS (seconds), PARTITION_KEY_VALS, PARTITION_PARAMS."""
    now = int(time.time())
    with engine.begin() as conn:
        tbls, sds = _t("TBLS", "TBL_ID", "SD_ID"), _t("SDS", "SD_ID", "CD_ID", "NUM_BUCKETS")
        table_sd = conn.execute(sa.select(sds.c.CD_ID, sds.c.NUM_BUCKETS).select_from(
            tbls.join(sds, tbls.c.SD_ID == sds.c.SD_ID)).where(tbls.c.TBL_ID == tbl_id)).one()
        sd_id = _storage(conn, location, table_sd.CD_ID, table_sd.NUM_BUCKETS)
        part_id = next_id(conn, "MPartition")
        conn.execute(sa.insert(_t("PARTITIONS", "PART_ID", "CREATE_TIME", "LAST_ACCESS_TIME", "PART_NAME", "SD_ID",
                                  "TBL_ID", "WRITE_ID")).values(
            PART_ID=part_id, CREATE_TIME=now, LAST_ACCESS_TIME=0, PART_NAME=name, SD_ID=sd_id, TBL_ID=tbl_id,
            WRITE_ID=0))
        conn.execute(sa.insert(_t("PARTITION_KEY_VALS", "PART_ID", "PART_KEY_VAL", "INTEGER_IDX")), [
            {"PART_ID": part_id, "PART_KEY_VAL": v, "INTEGER_IDX": i} for i, v in enumerate(values)])
        conn.execute(sa.insert(_t("PARTITION_PARAMS", "PART_ID", "PARAM_KEY", "PARAM_VALUE")), [
            {"PART_ID": part_id, "PARAM_KEY": "transient_lastDdlTime", "PARAM_VALUE": str(now)}])
        return part_id


# --- rows Hive's clients write -----------------------------------------------------------------------------------


def hive_open_txn(engine: Engine, *, user: str = "hive", host: str = "hs2.example", agent: str = "hive_query_1",
                  read_only: bool = True) -> int:
    """A transaction opened by HiveServer2 (TxnHandler.openTxns): TXNS row in state 'o' with the database clock in
    epoch ms, TXN_TYPE 0 (DEFAULT) or 2 (READ_ONLY), and its MIN_HISTORY_LEVEL row."""
    txns, mhl = _t("TXNS", "TXN_ID", "TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER", "TXN_HOST",
                   "TXN_AGENT_INFO", "TXN_TYPE"), _t("MIN_HISTORY_LEVEL", "MHL_TXNID", "MHL_MIN_OPEN_TXNID")
    now = int(time.time() * 1000)
    values = dict(TXN_STATE="o", TXN_STARTED=now, TXN_LAST_HEARTBEAT=now, TXN_USER=user, TXN_HOST=host,
                  TXN_AGENT_INFO=agent, TXN_TYPE=2 if read_only else 0)
    with engine.begin() as conn:  # TXN_ID is the table's identity (bigserial / AUTO_INCREMENT), as Hive relies on
        if engine.dialect.name == "postgresql":
            txn_id = conn.execute(sa.insert(txns).values(values).returning(txns.c.TXN_ID)).scalar_one()
        else:
            txn_id = conn.execute(sa.insert(txns).values(values)).lastrowid
        min_open = conn.execute(sa.select(sa.func.min(txns.c.TXN_ID)).where(txns.c.TXN_STATE == "o")).scalar()
        conn.execute(sa.insert(mhl).values(MHL_TXNID=txn_id, MHL_MIN_OPEN_TXNID=min_open))
        return int(txn_id)


def hive_end_txn(engine: Engine, txn_id: int) -> None:
    """Hive ends a read-only txn: its TXNS row goes (commit of a read-only txn deletes it) and MIN_HISTORY_LEVEL too."""
    with engine.begin() as conn:
        conn.execute(sa.delete(_t("MIN_HISTORY_LEVEL", "MHL_TXNID")).where(sa.column("MHL_TXNID") == txn_id))
        conn.execute(sa.delete(_t("TXNS", "TXN_ID")).where(sa.column("TXN_ID") == txn_id))


def hive_compact_request(engine: Engine, db: str, table: str, partition: str | None, type_code: str = "a",
                         meta_info: bytes | None = None) -> int:
    """ALTER TABLE … COMPACT as Hive 4's CompactionTxnHandler.compact() inserts it: id from NEXT_COMPACTION_QUEUE_ID,
    state 'i', enqueue time from the database clock (epoch ms), CQ_RUN_AS, initiator id/version, no worker."""
    ncq = _t("NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT")
    cq = _t("COMPACTION_QUEUE", "CQ_ID", "CQ_DATABASE", "CQ_TABLE", "CQ_PARTITION", "CQ_STATE", "CQ_TYPE",
            "CQ_ENQUEUE_TIME", "CQ_RUN_AS", "CQ_INITIATOR_ID", "CQ_INITIATOR_VERSION", "CQ_META_INFO")
    with engine.begin() as conn:
        cq_id = int(conn.execute(sa.select(ncq.c.NCQ_NEXT).with_for_update()).scalar_one())
        conn.execute(sa.update(ncq).values(NCQ_NEXT=cq_id + 1))
        conn.execute(sa.insert(cq).values(
            CQ_ID=cq_id, CQ_DATABASE=db, CQ_TABLE=table, CQ_PARTITION=partition, CQ_STATE="i", CQ_TYPE=type_code,
            CQ_ENQUEUE_TIME=int(time.time() * 1000), CQ_RUN_AS="hive", CQ_INITIATOR_ID="hs2.example-manual",
            CQ_INITIATOR_VERSION="4.2.0", CQ_META_INFO=sa.literal(meta_info, sa.LargeBinary)
            if meta_info is not None else None))
        return cq_id


# --- schema fingerprint -------------------------------------------------------------------------------------------


def schema_fingerprint(engine: Engine, tables: set[str] | None = None) -> dict:
    """Columns (type, width, nullability, default, collation), indexes and constraints of every table (or of
    ``tables``), from information_schema / pg_catalog: identical before and after a run means nothing was altered."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            columns = conn.execute(sa.text(
                "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default, "
                "ordinal_position FROM information_schema.columns WHERE table_schema = 'public' "
                "ORDER BY table_name, ordinal_position")).all()
            indexes = conn.execute(sa.text(
                "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' "
                "ORDER BY tablename, indexname")).all()
            constraints = conn.execute(sa.text(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2")).all()
        else:
            columns = conn.execute(sa.text(
                "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, CHARACTER_SET_NAME, "
                "COLLATION_NAME, ORDINAL_POSITION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
                "ORDER BY TABLE_NAME, ORDINAL_POSITION")).all()
            indexes = conn.execute(sa.text(
                "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME, SUB_PART FROM "
                "information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1, 2, 4")).all()
            constraints = conn.execute(sa.text(
                "SELECT TABLE_NAME, CONSTRAINT_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS "
                "WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1, 2")).all()
            collations = conn.execute(sa.text(
                "SELECT TABLE_NAME, TABLE_COLLATION, ENGINE FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1")).all()
            constraints = [*constraints, *collations]

    def keep(rows):
        return [tuple(r) for r in rows if tables is None or str(r[0]).strip('"') in tables]

    return {"columns": keep(columns), "indexes": keep(indexes), "constraints": keep(constraints)}
