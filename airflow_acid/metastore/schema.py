"""The metastore schema: Hive 4's transactional tables and a reduced catalog, with Hive's names.

Table and column names are Hive's (docs/hive-acid.md#metastore-tables) so the same queries can run against a real
Hive metastore database. Alembic migrations in ``migrations/`` create exactly this ``metadata``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    CHAR,
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)

NAMING_CONVENTION = {
    "ix": "IX_%(table_name)s_%(column_0_N_name)s",
    "uq": "UQ_%(table_name)s_%(column_0_N_name)s",
    "fk": "FK_%(table_name)s_%(column_0_name)s",
    "pk": "PK_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

# SQLite only auto-increments an INTEGER PRIMARY KEY; BIGINT elsewhere.
Id = BigInteger().with_variant(Integer(), "sqlite")

DB_NAME = String(128)
TABLE_NAME = String(256)
PART_NAME = String(767)
"""Partition names; on MySQL/MariaDB migration 0003 gives these columns a binary no-pad collation (byte-exact, as Hive)."""
# MariaDB/MySQL cap index keys at 3072 bytes (utf8mb4: 4 bytes a character): index prefixes there.
_MYSQL_ENTITY_PREFIX: dict[str, Any] = {"mysql_length": {"CTC_DATABASE": 128, "CTC_TABLE": 256, "CTC_PARTITION": 300}}

# --- transactions -----------------------------------------------------------------------------------

TXNS = Table(
    "TXNS", metadata,
    Column("TXN_ID", Id, primary_key=True, autoincrement=True),
    Column("TXN_STATE", CHAR(1), nullable=False),
    Column("TXN_STARTED", BigInteger, nullable=False),
    Column("TXN_LAST_HEARTBEAT", BigInteger, nullable=False),
    Column("TXN_USER", String(128), nullable=False),
    Column("TXN_HOST", String(128), nullable=False),
    Column("TXN_AGENT_INFO", String(128)),
    Column("TXN_META_INFO", String(128)),
    Column("TXN_HEARTBEAT_COUNT", Integer),
    Column("TXN_TYPE", Integer),
    Index(None, "TXN_STATE"),
    sqlite_autoincrement=True,
)

TXN_COMPONENTS = Table(
    "TXN_COMPONENTS", metadata,
    Column("TC_TXNID", BigInteger, ForeignKey("TXNS.TXN_ID"), nullable=False),
    Column("TC_DATABASE", DB_NAME, nullable=False),
    Column("TC_TABLE", TABLE_NAME),
    Column("TC_PARTITION", PART_NAME),
    Column("TC_OPERATION_TYPE", CHAR(1), nullable=False),
    Column("TC_WRITEID", BigInteger),
    Index(None, "TC_TXNID"),
)

COMPLETED_TXN_COMPONENTS = Table(
    "COMPLETED_TXN_COMPONENTS", metadata,
    Column("CTC_TXNID", BigInteger, nullable=False),
    Column("CTC_DATABASE", DB_NAME, nullable=False),
    Column("CTC_TABLE", TABLE_NAME),
    Column("CTC_PARTITION", PART_NAME),
    Column("CTC_TIMESTAMP", BigInteger, nullable=False),  # epoch ms (Hive: timestamp default now)
    Column("CTC_WRITEID", BigInteger),
    Column("CTC_UPDATE_DELETE", CHAR(1), nullable=False),
    Index("COMPLETED_TXN_COMPONENTS_IDX", "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION", **_MYSQL_ENTITY_PREFIX),
)

TXN_LOCK_TBL = Table(
    "TXN_LOCK_TBL", metadata,
    Column("TXN_LOCK", BigInteger, nullable=False, primary_key=True, autoincrement=False),
)

NEXT_WRITE_ID = Table(
    "NEXT_WRITE_ID", metadata,
    Column("NWI_DATABASE", DB_NAME, nullable=False),
    Column("NWI_TABLE", TABLE_NAME, nullable=False),
    Column("NWI_NEXT", BigInteger, nullable=False),
    UniqueConstraint("NWI_DATABASE", "NWI_TABLE"),
)

TXN_TO_WRITE_ID = Table(
    "TXN_TO_WRITE_ID", metadata,
    Column("T2W_TXNID", BigInteger, nullable=False),
    Column("T2W_DATABASE", DB_NAME, nullable=False),
    Column("T2W_TABLE", TABLE_NAME, nullable=False),
    Column("T2W_WRITEID", BigInteger, nullable=False),
    UniqueConstraint("T2W_DATABASE", "T2W_TABLE", "T2W_TXNID"),
    UniqueConstraint("T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID"),
)

MIN_HISTORY_LEVEL = Table(
    "MIN_HISTORY_LEVEL", metadata,
    Column("MHL_TXNID", BigInteger, primary_key=True, autoincrement=False),
    Column("MHL_MIN_OPEN_TXNID", BigInteger, nullable=False),
    Index(None, "MHL_MIN_OPEN_TXNID"),
)

WRITE_SET = Table(
    "WRITE_SET", metadata,
    Column("WS_DATABASE", DB_NAME, nullable=False),
    Column("WS_TABLE", TABLE_NAME, nullable=False),
    Column("WS_PARTITION", PART_NAME),
    Column("WS_TXNID", BigInteger, nullable=False),
    Column("WS_COMMIT_ID", BigInteger, nullable=False),
    Column("WS_OPERATION_TYPE", CHAR(1), nullable=False),
)

# --- locks ------------------------------------------------------------------------------------------

HIVE_LOCKS = Table(
    "HIVE_LOCKS", metadata,
    Column("HL_LOCK_EXT_ID", BigInteger, nullable=False),
    Column("HL_LOCK_INT_ID", BigInteger, nullable=False),
    Column("HL_TXNID", BigInteger, nullable=False),
    Column("HL_DB", DB_NAME, nullable=False),
    Column("HL_TABLE", TABLE_NAME),
    Column("HL_PARTITION", PART_NAME),
    Column("HL_LOCK_STATE", CHAR(1), nullable=False),
    Column("HL_LOCK_TYPE", CHAR(1), nullable=False),
    Column("HL_LAST_HEARTBEAT", BigInteger, nullable=False),
    Column("HL_ACQUIRED_AT", BigInteger),
    Column("HL_USER", String(128), nullable=False),
    Column("HL_HOST", String(128), nullable=False),
    Column("HL_HEARTBEAT_COUNT", Integer),
    Column("HL_AGENT_INFO", String(128)),
    Column("HL_BLOCKEDBY_EXT_ID", BigInteger),
    Column("HL_BLOCKEDBY_INT_ID", BigInteger),
    PrimaryKeyConstraint("HL_LOCK_EXT_ID", "HL_LOCK_INT_ID"),
    Index(None, "HL_TXNID"),
)

NEXT_LOCK_ID = Table(
    "NEXT_LOCK_ID", metadata,
    Column("NL_NEXT", BigInteger, nullable=False, primary_key=True, autoincrement=False),
)

# --- compaction -------------------------------------------------------------------------------------


def _compaction_columns(prefix: str) -> list[Column[Any]]:
    p = prefix
    return [
        Column(f"{p}_ID", BigInteger, primary_key=True, autoincrement=False),
        Column(f"{p}_DATABASE", DB_NAME, nullable=False),
        Column(f"{p}_TABLE", TABLE_NAME, nullable=False),
        Column(f"{p}_PARTITION", PART_NAME),
        Column(f"{p}_STATE", CHAR(1), nullable=False),
        Column(f"{p}_TYPE", CHAR(1), nullable=False),
        Column(f"{p}_TBLPROPERTIES", String(2048)),
        Column(f"{p}_WORKER_ID", String(128)),
        Column(f"{p}_ENQUEUE_TIME", BigInteger),
        Column(f"{p}_START", BigInteger),
        Column(f"{p}_RUN_AS", String(128)),
        Column(f"{p}_HIGHEST_WRITE_ID", BigInteger),
        Column(f"{p}_HADOOP_JOB_ID", String(128)),
        Column(f"{p}_ERROR_MESSAGE", Text),
        Column(f"{p}_NEXT_TXN_ID", BigInteger),
        Column(f"{p}_TXN_ID", BigInteger),
        Column(f"{p}_COMMIT_TIME", BigInteger),
        Column(f"{p}_INITIATOR_ID", String(128)),
        Column(f"{p}_INITIATOR_VERSION", String(128)),
        Column(f"{p}_WORKER_VERSION", String(128)),
        Column(f"{p}_POOL_NAME", String(128)),
        Column(f"{p}_NUMBER_OF_BUCKETS", Integer),
        Column(f"{p}_ORDER_BY", String(4000)),
    ]


COMPACTION_QUEUE = Table(
    "COMPACTION_QUEUE", metadata,
    *_compaction_columns("CQ"),
    Column("CQ_CLEANER_START", BigInteger),
    Column("CQ_RETRY_RETENTION", BigInteger, nullable=False, server_default="0"),
    Index(None, "CQ_STATE", "CQ_ID"),  # claim-next scans initiated rows in id order
)

NEXT_COMPACTION_QUEUE_ID = Table(
    "NEXT_COMPACTION_QUEUE_ID", metadata,
    Column("NCQ_NEXT", BigInteger, nullable=False, primary_key=True, autoincrement=False),
)

COMPLETED_COMPACTIONS = Table(
    "COMPLETED_COMPACTIONS", metadata,
    *_compaction_columns("CC"),
    Column("CC_END", BigInteger),
    Index("COMPLETED_COMPACTIONS_RES", "CC_DATABASE", "CC_TABLE", "CC_PARTITION",
          mysql_length={"CC_DATABASE": 128, "CC_TABLE": 256, "CC_PARTITION": 300}),
)

AUX_TABLE = Table(
    "AUX_TABLE", metadata,
    Column("MT_KEY1", String(128), nullable=False),
    Column("MT_KEY2", BigInteger, nullable=False),
    Column("MT_COMMENT", String(255)),
    PrimaryKeyConstraint("MT_KEY1", "MT_KEY2"),
)

# Not a Hive table: the Initiator's latest decision per table/partition (queued, declined or skipped, with the
# reason), so "why was this partition not compacted?" has an answer without a history row per cycle.
ACID_INITIATOR_DECISIONS = Table(
    "ACID_INITIATOR_DECISIONS", metadata,
    Column("AID_ID", Id, primary_key=True, autoincrement=True),
    Column("AID_DATABASE", DB_NAME, nullable=False),
    Column("AID_TABLE", TABLE_NAME, nullable=False),
    Column("AID_PARTITION", PART_NAME),
    Column("AID_DECIDED_AT", BigInteger, nullable=False),  # epoch ms, database clock
    Column("AID_OUTCOME", CHAR(1), nullable=False),
    Column("AID_TYPE", CHAR(1)),
    Column("AID_RULE", String(32)),
    Column("AID_REASON", Text, nullable=False),
    Column("AID_COMPACTION_ID", BigInteger),
    Column("AID_INITIATOR_ID", String(128)),
    Column("AID_BASE_SIZE", BigInteger),
    Column("AID_DELTA_SIZE", BigInteger),
    Column("AID_DELTA_COUNT", Integer),
    Index("ACID_INITIATOR_DECISIONS_ENTITY", "AID_DATABASE", "AID_TABLE", "AID_PARTITION",
          mysql_length={"AID_DATABASE": 128, "AID_TABLE": 256, "AID_PARTITION": 300}),
)

# Not a Hive table: one row per table/partition per shadow Initiator cycle (ACID_INITIATOR_DECISIONS keeps only the
# latest), so the shadow report can tell when airflow-acid first wanted a compaction and how its decisions changed
# over a time range. Rows older than airflow.acid.initiator.decision.log.retention are deleted by each shadow cycle
# and by the HouseKeeper.
ACID_INITIATOR_DECISION_LOG = Table(
    "ACID_INITIATOR_DECISION_LOG", metadata,
    Column("ADL_ID", Id, primary_key=True, autoincrement=True),
    Column("ADL_DATABASE", DB_NAME, nullable=False),
    Column("ADL_TABLE", TABLE_NAME, nullable=False),
    Column("ADL_PARTITION", PART_NAME),
    Column("ADL_DECIDED_AT", BigInteger, nullable=False),  # epoch ms, database clock; one value per cycle
    Column("ADL_OUTCOME", CHAR(1), nullable=False),
    Column("ADL_TYPE", CHAR(1)),
    Column("ADL_RULE", String(32)),
    Column("ADL_REASON", Text, nullable=False),
    Column("ADL_INITIATOR_ID", String(128)),
    Column("ADL_BASE_SIZE", BigInteger),
    Column("ADL_DELTA_SIZE", BigInteger),
    Column("ADL_DELTA_COUNT", Integer),
    Index("ACID_INITIATOR_DECISION_LOG_TIME", "ADL_DECIDED_AT"),
)

# Not a Hive table: the figures of each compaction run (files/bytes/rows in and out, deltas before/after, Spark
# application, executor core-seconds, wall time), keyed by the compaction id; trimmed with the history rows.
ACID_COMPACTION_RUNS = Table(
    "ACID_COMPACTION_RUNS", metadata,
    Column("ACR_CQ_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("ACR_RECORDED_AT", BigInteger, nullable=False),  # epoch ms, database clock
    Column("ACR_FILES_IN", BigInteger),
    Column("ACR_BYTES_IN", BigInteger),
    Column("ACR_ROWS_IN", BigInteger),
    Column("ACR_FILES_OUT", BigInteger),
    Column("ACR_BYTES_OUT", BigInteger),
    Column("ACR_ROWS_OUT", BigInteger),
    Column("ACR_DELTAS_BEFORE", Integer),
    Column("ACR_DELTAS_AFTER", Integer),
    Column("ACR_APP_ID", String(128)),
    Column("ACR_CORE_SECONDS", Float),
    Column("ACR_WALL_SECONDS", Float),
    Column("ACR_DIGEST_IN", String(80)),  # rows read at the snapshot: count:sum:xor (acid/digest.py), final step
    Column("ACR_DIGEST_OUT", String(80)),  # the same of the committed files as read back from storage
    # the Airflow task instance that ran the compaction (recorded when the Worker claims the row), for links to its log
    Column("ACR_DAG_ID", String(250)),
    Column("ACR_RUN_ID", String(250)),
    Column("ACR_TASK_ID", String(250)),
    Column("ACR_MAP_INDEX", Integer),
    Column("ACR_TRY_NUMBER", Integer),
)

# --- catalog (reduced) ------------------------------------------------------------------------------

DBS = Table(
    "DBS", metadata,
    Column("DB_ID", Id, primary_key=True, autoincrement=True),
    Column("NAME", DB_NAME, nullable=False, unique=True),
    Column("DESC", String(4000)),
    Column("DB_LOCATION_URI", String(4000), nullable=False),
    Column("OWNER_NAME", String(128)),
    Column("CREATE_TIME", BigInteger),
    sqlite_autoincrement=True,
)

DATABASE_PARAMS = Table(
    "DATABASE_PARAMS", metadata,
    Column("DB_ID", BigInteger, ForeignKey("DBS.DB_ID", ondelete="CASCADE"), nullable=False),
    Column("PARAM_KEY", String(180), nullable=False),
    Column("PARAM_VALUE", String(4000)),
    PrimaryKeyConstraint("DB_ID", "PARAM_KEY"),
)

SDS = Table(
    "SDS", metadata,
    Column("SD_ID", Id, primary_key=True, autoincrement=True),
    Column("LOCATION", String(4000), nullable=False),
    Column("INPUT_FORMAT", String(4000)),
    Column("OUTPUT_FORMAT", String(4000)),
    Column("NUM_BUCKETS", Integer, nullable=False, server_default="-1"),
    sqlite_autoincrement=True,
)

SERDES = Table(
    "SERDES", metadata,
    Column("SERDE_ID", BigInteger, ForeignKey("SDS.SD_ID", ondelete="CASCADE"), primary_key=True,
           autoincrement=False),
    Column("NAME", String(128)),
    Column("SLIB", String(4000)),
)
"""A table's SerDe (Hive's SERDES); airflow-acid's own schema keys it by the storage descriptor's SD_ID (as it keys
COLUMNS_V2), Hive by ``SDS.SERDE_ID``. Written for tables created with a storage format (text tables)."""

SERDE_PARAMS = Table(
    "SERDE_PARAMS", metadata,
    Column("SERDE_ID", BigInteger, ForeignKey("SERDES.SERDE_ID", ondelete="CASCADE"), nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", Text),
    PrimaryKeyConstraint("SERDE_ID", "PARAM_KEY"),
)
"""The SerDe's parameters (``field.delim``, ``serialization.format``, ``escape.delim``, …) as Hive stores them."""

TBLS = Table(
    "TBLS", metadata,
    Column("TBL_ID", Id, primary_key=True, autoincrement=True),
    Column("DB_ID", BigInteger, ForeignKey("DBS.DB_ID"), nullable=False),
    Column("TBL_NAME", TABLE_NAME, nullable=False),
    Column("TBL_TYPE", String(128), nullable=False),
    Column("OWNER", String(767)),
    Column("CREATE_TIME", BigInteger),
    Column("SD_ID", BigInteger, ForeignKey("SDS.SD_ID")),
    Column("VIEW_ORIGINAL_TEXT", Text),
    Column("VIEW_EXPANDED_TEXT", Text),
    UniqueConstraint("DB_ID", "TBL_NAME"),
    sqlite_autoincrement=True,
)

COLUMNS_V2 = Table(
    "COLUMNS_V2", metadata,
    Column("CD_ID", BigInteger, ForeignKey("SDS.SD_ID", ondelete="CASCADE"), nullable=False),
    Column("COMMENT", String(4000)),
    Column("COLUMN_NAME", String(256), nullable=False),
    Column("TYPE_NAME", Text, nullable=False),
    Column("INTEGER_IDX", Integer, nullable=False),
    PrimaryKeyConstraint("CD_ID", "COLUMN_NAME"),
)

KEY_CONSTRAINTS = Table(
    "KEY_CONSTRAINTS", metadata,
    Column("CHILD_CD_ID", BigInteger),
    Column("CHILD_INTEGER_IDX", Integer),
    Column("CHILD_TBL_ID", BigInteger),
    Column("PARENT_CD_ID", BigInteger),
    Column("PARENT_INTEGER_IDX", Integer, nullable=False),
    Column("PARENT_TBL_ID", BigInteger, ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), nullable=False),
    Column("POSITION", BigInteger, nullable=False),
    Column("CONSTRAINT_NAME", String(400), nullable=False),
    Column("CONSTRAINT_TYPE", SmallInteger, nullable=False),
    Column("UPDATE_RULE", SmallInteger),
    Column("DELETE_RULE", SmallInteger),
    Column("ENABLE_VALIDATE_RELY", SmallInteger, nullable=False),
    Column("DEFAULT_VALUE", String(400)),
    PrimaryKeyConstraint("PARENT_TBL_ID", "CONSTRAINT_NAME", "POSITION"),
)
"""Column constraints as Hive 4 stores them; airflow-acid writes DEFAULT constraints (CONSTRAINT_TYPE 4, the value's
text in DEFAULT_VALUE, the column by PARENT_INTEGER_IDX; PARENT_CD_ID is the table's SD_ID, as COLUMNS_V2's CD_ID)."""

PARTITION_KEYS = Table(
    "PARTITION_KEYS", metadata,
    Column("TBL_ID", BigInteger, ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), nullable=False),
    Column("PKEY_COMMENT", String(4000)),
    Column("PKEY_NAME", String(128), nullable=False),
    Column("PKEY_TYPE", String(767), nullable=False),
    Column("INTEGER_IDX", Integer, nullable=False),
    PrimaryKeyConstraint("TBL_ID", "PKEY_NAME"),
)

BUCKETING_COLS = Table(
    "BUCKETING_COLS", metadata,
    Column("SD_ID", BigInteger, ForeignKey("SDS.SD_ID", ondelete="CASCADE"), nullable=False),
    Column("BUCKET_COL_NAME", String(256)),
    Column("INTEGER_IDX", Integer, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX"),
)

TABLE_PARAMS = Table(
    "TABLE_PARAMS", metadata,
    Column("TBL_ID", BigInteger, ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", Text),
    PrimaryKeyConstraint("TBL_ID", "PARAM_KEY"),
)

PARTITIONS = Table(
    "PARTITIONS", metadata,
    Column("PART_ID", Id, primary_key=True, autoincrement=True),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("PART_NAME", PART_NAME),
    Column("SD_ID", BigInteger, ForeignKey("SDS.SD_ID")),
    Column("TBL_ID", BigInteger, ForeignKey("TBLS.TBL_ID"), nullable=False),
    Index("UNIQUEPARTITION", "PART_NAME", "TBL_ID", unique=True, mysql_length={"PART_NAME": 500}),
    sqlite_autoincrement=True,
)

PARTITION_PARAMS = Table(
    "PARTITION_PARAMS", metadata,
    Column("PART_ID", BigInteger, ForeignKey("PARTITIONS.PART_ID", ondelete="CASCADE"), nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", Text),
    PrimaryKeyConstraint("PART_ID", "PARAM_KEY"),
)
