"""Hive-only tables and columns of a Hive 4 metastore that airflow-acid's own schema does not have (CDS, SERDES,
PARTITION_KEY_VALS, CTLGS, VERSION, SDS.CD_ID, DBS.CTLG_NAME, CQ_META_INFO …), in a MetaData of their own.

Never created by airflow-acid (no ``create_all`` on this MetaData): they describe what Hive's schematool made, so
queries on a Hive metastore can name them. Each statement uses either these or :mod:`.schema`'s table of the same
name, never both.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, LargeBinary, MetaData, String, Table

hive_metadata = MetaData()

HIVE_DBS = Table(
    "DBS", hive_metadata,
    Column("DB_ID", BigInteger, primary_key=True),
    Column("NAME", String(128)),
    Column("CTLG_NAME", String(256)),
)

HIVE_SDS = Table(
    "SDS", hive_metadata,
    Column("SD_ID", BigInteger, primary_key=True),
    Column("CD_ID", BigInteger),
    Column("SERDE_ID", BigInteger),
)

CDS = Table("CDS", hive_metadata, Column("CD_ID", BigInteger, primary_key=True))

SERDES = Table(
    "SERDES", hive_metadata,
    Column("SERDE_ID", BigInteger, primary_key=True),
    Column("NAME", String(128)),
    Column("SLIB", String(4000)),
)

HIVE_SERDE_PARAMS = Table(
    "SERDE_PARAMS", hive_metadata,
    Column("SERDE_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", String(4000)),
)

PARTITION_KEY_VALS = Table(
    "PARTITION_KEY_VALS", hive_metadata,
    Column("PART_ID", BigInteger, nullable=False),
    Column("PART_KEY_VAL", String(256)),
    Column("INTEGER_IDX", BigInteger, nullable=False),
)

CTLGS = Table(
    "CTLGS", hive_metadata,
    Column("CTLG_ID", BigInteger, primary_key=True),
    Column("NAME", String(256)),
    Column("LOCATION_URI", String(4000)),
)

VERSION = Table(
    "VERSION", hive_metadata,
    Column("VER_ID", BigInteger, primary_key=True),
    Column("SCHEMA_VERSION", String(127)),
    Column("VERSION_COMMENT", String(255)),
)

SEQUENCE_TABLE = Table(
    "SEQUENCE_TABLE", hive_metadata,
    Column("SEQUENCE_NAME", String(255), primary_key=True),
    Column("NEXT_VAL", BigInteger, nullable=False),
)

HIVE_CQ_META = Table(
    "COMPACTION_QUEUE", hive_metadata,
    Column("CQ_ID", BigInteger, primary_key=True),
    Column("CQ_META_INFO", LargeBinary),
)

HIVE_TIME_COLUMNS_IN_SECONDS = ("DBS.CREATE_TIME", "TBLS.CREATE_TIME", "PARTITIONS.CREATE_TIME")
"""Hive stores catalog creation times in seconds (airflow-acid's own schema: milliseconds)."""
