"""Initial metastore schema: Hive 4's transactional tables and the reduced catalog (schema.py at 0.1.0).

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('AUX_TABLE',
        sa.Column('MT_KEY1', sa.String(length=128), nullable=False),
        sa.Column('MT_KEY2', sa.BigInteger(), nullable=False),
        sa.Column('MT_COMMENT', sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint('MT_KEY1', 'MT_KEY2', name=op.f('PK_AUX_TABLE'))
    )
    op.create_table('COMPACTION_QUEUE',
        sa.Column('CQ_ID', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('CQ_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('CQ_TABLE', sa.String(length=256), nullable=False),
        sa.Column('CQ_PARTITION', sa.String(length=767), nullable=True),
        sa.Column('CQ_STATE', sa.CHAR(length=1), nullable=False),
        sa.Column('CQ_TYPE', sa.CHAR(length=1), nullable=False),
        sa.Column('CQ_TBLPROPERTIES', sa.String(length=2048), nullable=True),
        sa.Column('CQ_WORKER_ID', sa.String(length=128), nullable=True),
        sa.Column('CQ_ENQUEUE_TIME', sa.BigInteger(), nullable=True),
        sa.Column('CQ_START', sa.BigInteger(), nullable=True),
        sa.Column('CQ_RUN_AS', sa.String(length=128), nullable=True),
        sa.Column('CQ_HIGHEST_WRITE_ID', sa.BigInteger(), nullable=True),
        sa.Column('CQ_HADOOP_JOB_ID', sa.String(length=128), nullable=True),
        sa.Column('CQ_ERROR_MESSAGE', sa.Text(), nullable=True),
        sa.Column('CQ_NEXT_TXN_ID', sa.BigInteger(), nullable=True),
        sa.Column('CQ_TXN_ID', sa.BigInteger(), nullable=True),
        sa.Column('CQ_COMMIT_TIME', sa.BigInteger(), nullable=True),
        sa.Column('CQ_INITIATOR_ID', sa.String(length=128), nullable=True),
        sa.Column('CQ_INITIATOR_VERSION', sa.String(length=128), nullable=True),
        sa.Column('CQ_WORKER_VERSION', sa.String(length=128), nullable=True),
        sa.Column('CQ_POOL_NAME', sa.String(length=128), nullable=True),
        sa.Column('CQ_NUMBER_OF_BUCKETS', sa.Integer(), nullable=True),
        sa.Column('CQ_ORDER_BY', sa.String(length=4000), nullable=True),
        sa.Column('CQ_CLEANER_START', sa.BigInteger(), nullable=True),
        sa.Column('CQ_RETRY_RETENTION', sa.BigInteger(), server_default='0', nullable=False),
        sa.PrimaryKeyConstraint('CQ_ID', name=op.f('PK_COMPACTION_QUEUE'))
    )
    op.create_index(op.f('IX_COMPACTION_QUEUE_CQ_STATE_CQ_ID'), 'COMPACTION_QUEUE', ['CQ_STATE', 'CQ_ID'], unique=False)
    op.create_table('COMPLETED_COMPACTIONS',
        sa.Column('CC_ID', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('CC_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('CC_TABLE', sa.String(length=256), nullable=False),
        sa.Column('CC_PARTITION', sa.String(length=767), nullable=True),
        sa.Column('CC_STATE', sa.CHAR(length=1), nullable=False),
        sa.Column('CC_TYPE', sa.CHAR(length=1), nullable=False),
        sa.Column('CC_TBLPROPERTIES', sa.String(length=2048), nullable=True),
        sa.Column('CC_WORKER_ID', sa.String(length=128), nullable=True),
        sa.Column('CC_ENQUEUE_TIME', sa.BigInteger(), nullable=True),
        sa.Column('CC_START', sa.BigInteger(), nullable=True),
        sa.Column('CC_RUN_AS', sa.String(length=128), nullable=True),
        sa.Column('CC_HIGHEST_WRITE_ID', sa.BigInteger(), nullable=True),
        sa.Column('CC_HADOOP_JOB_ID', sa.String(length=128), nullable=True),
        sa.Column('CC_ERROR_MESSAGE', sa.Text(), nullable=True),
        sa.Column('CC_NEXT_TXN_ID', sa.BigInteger(), nullable=True),
        sa.Column('CC_TXN_ID', sa.BigInteger(), nullable=True),
        sa.Column('CC_COMMIT_TIME', sa.BigInteger(), nullable=True),
        sa.Column('CC_INITIATOR_ID', sa.String(length=128), nullable=True),
        sa.Column('CC_INITIATOR_VERSION', sa.String(length=128), nullable=True),
        sa.Column('CC_WORKER_VERSION', sa.String(length=128), nullable=True),
        sa.Column('CC_POOL_NAME', sa.String(length=128), nullable=True),
        sa.Column('CC_NUMBER_OF_BUCKETS', sa.Integer(), nullable=True),
        sa.Column('CC_ORDER_BY', sa.String(length=4000), nullable=True),
        sa.Column('CC_END', sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint('CC_ID', name=op.f('PK_COMPLETED_COMPACTIONS'))
    )
    op.create_index('COMPLETED_COMPACTIONS_RES', 'COMPLETED_COMPACTIONS', ['CC_DATABASE', 'CC_TABLE', 'CC_PARTITION'], unique=False, mysql_length={'CC_DATABASE': 128, 'CC_TABLE': 256, 'CC_PARTITION': 300})
    op.create_table('COMPLETED_TXN_COMPONENTS',
        sa.Column('CTC_TXNID', sa.BigInteger(), nullable=False),
        sa.Column('CTC_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('CTC_TABLE', sa.String(length=256), nullable=True),
        sa.Column('CTC_PARTITION', sa.String(length=767), nullable=True),
        sa.Column('CTC_TIMESTAMP', sa.BigInteger(), nullable=False),
        sa.Column('CTC_WRITEID', sa.BigInteger(), nullable=True),
        sa.Column('CTC_UPDATE_DELETE', sa.CHAR(length=1), nullable=False)
    )
    op.create_index('COMPLETED_TXN_COMPONENTS_IDX', 'COMPLETED_TXN_COMPONENTS', ['CTC_DATABASE', 'CTC_TABLE', 'CTC_PARTITION'], unique=False, mysql_length={'CTC_DATABASE': 128, 'CTC_TABLE': 256, 'CTC_PARTITION': 300})
    op.create_table('DBS',
        sa.Column('DB_ID', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('NAME', sa.String(length=128), nullable=False),
        sa.Column('DESC', sa.String(length=4000), nullable=True),
        sa.Column('DB_LOCATION_URI', sa.String(length=4000), nullable=False),
        sa.Column('OWNER_NAME', sa.String(length=128), nullable=True),
        sa.Column('CREATE_TIME', sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint('DB_ID', name=op.f('PK_DBS')),
        sa.UniqueConstraint('NAME', name=op.f('UQ_DBS_NAME')),
        sqlite_autoincrement=True
    )
    op.create_table('HIVE_LOCKS',
        sa.Column('HL_LOCK_EXT_ID', sa.BigInteger(), nullable=False),
        sa.Column('HL_LOCK_INT_ID', sa.BigInteger(), nullable=False),
        sa.Column('HL_TXNID', sa.BigInteger(), nullable=False),
        sa.Column('HL_DB', sa.String(length=128), nullable=False),
        sa.Column('HL_TABLE', sa.String(length=256), nullable=True),
        sa.Column('HL_PARTITION', sa.String(length=767), nullable=True),
        sa.Column('HL_LOCK_STATE', sa.CHAR(length=1), nullable=False),
        sa.Column('HL_LOCK_TYPE', sa.CHAR(length=1), nullable=False),
        sa.Column('HL_LAST_HEARTBEAT', sa.BigInteger(), nullable=False),
        sa.Column('HL_ACQUIRED_AT', sa.BigInteger(), nullable=True),
        sa.Column('HL_USER', sa.String(length=128), nullable=False),
        sa.Column('HL_HOST', sa.String(length=128), nullable=False),
        sa.Column('HL_HEARTBEAT_COUNT', sa.Integer(), nullable=True),
        sa.Column('HL_AGENT_INFO', sa.String(length=128), nullable=True),
        sa.Column('HL_BLOCKEDBY_EXT_ID', sa.BigInteger(), nullable=True),
        sa.Column('HL_BLOCKEDBY_INT_ID', sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint('HL_LOCK_EXT_ID', 'HL_LOCK_INT_ID', name=op.f('PK_HIVE_LOCKS'))
    )
    op.create_index(op.f('IX_HIVE_LOCKS_HL_TXNID'), 'HIVE_LOCKS', ['HL_TXNID'], unique=False)
    op.create_table('MIN_HISTORY_LEVEL',
        sa.Column('MHL_TXNID', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('MHL_MIN_OPEN_TXNID', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('MHL_TXNID', name=op.f('PK_MIN_HISTORY_LEVEL'))
    )
    op.create_index(op.f('IX_MIN_HISTORY_LEVEL_MHL_MIN_OPEN_TXNID'), 'MIN_HISTORY_LEVEL', ['MHL_MIN_OPEN_TXNID'], unique=False)
    op.create_table('NEXT_COMPACTION_QUEUE_ID',
        sa.Column('NCQ_NEXT', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint('NCQ_NEXT', name=op.f('PK_NEXT_COMPACTION_QUEUE_ID'))
    )
    op.create_table('NEXT_LOCK_ID',
        sa.Column('NL_NEXT', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint('NL_NEXT', name=op.f('PK_NEXT_LOCK_ID'))
    )
    op.create_table('NEXT_WRITE_ID',
        sa.Column('NWI_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('NWI_TABLE', sa.String(length=256), nullable=False),
        sa.Column('NWI_NEXT', sa.BigInteger(), nullable=False),
        sa.UniqueConstraint('NWI_DATABASE', 'NWI_TABLE', name=op.f('UQ_NEXT_WRITE_ID_NWI_DATABASE_NWI_TABLE'))
    )
    op.create_table('SDS',
        sa.Column('SD_ID', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('LOCATION', sa.String(length=4000), nullable=False),
        sa.Column('INPUT_FORMAT', sa.String(length=4000), nullable=True),
        sa.Column('OUTPUT_FORMAT', sa.String(length=4000), nullable=True),
        sa.Column('NUM_BUCKETS', sa.Integer(), server_default='-1', nullable=False),
        sa.PrimaryKeyConstraint('SD_ID', name=op.f('PK_SDS')),
        sqlite_autoincrement=True
    )
    op.create_table('TXNS',
        sa.Column('TXN_ID', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('TXN_STATE', sa.CHAR(length=1), nullable=False),
        sa.Column('TXN_STARTED', sa.BigInteger(), nullable=False),
        sa.Column('TXN_LAST_HEARTBEAT', sa.BigInteger(), nullable=False),
        sa.Column('TXN_USER', sa.String(length=128), nullable=False),
        sa.Column('TXN_HOST', sa.String(length=128), nullable=False),
        sa.Column('TXN_AGENT_INFO', sa.String(length=128), nullable=True),
        sa.Column('TXN_META_INFO', sa.String(length=128), nullable=True),
        sa.Column('TXN_HEARTBEAT_COUNT', sa.Integer(), nullable=True),
        sa.Column('TXN_TYPE', sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint('TXN_ID', name=op.f('PK_TXNS')),
        sqlite_autoincrement=True
    )
    op.create_index(op.f('IX_TXNS_TXN_STATE'), 'TXNS', ['TXN_STATE'], unique=False)
    op.create_table('TXN_LOCK_TBL',
        sa.Column('TXN_LOCK', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint('TXN_LOCK', name=op.f('PK_TXN_LOCK_TBL'))
    )
    op.create_table('TXN_TO_WRITE_ID',
        sa.Column('T2W_TXNID', sa.BigInteger(), nullable=False),
        sa.Column('T2W_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('T2W_TABLE', sa.String(length=256), nullable=False),
        sa.Column('T2W_WRITEID', sa.BigInteger(), nullable=False),
        sa.UniqueConstraint('T2W_DATABASE', 'T2W_TABLE', 'T2W_TXNID', name=op.f('UQ_TXN_TO_WRITE_ID_T2W_DATABASE_T2W_TABLE_T2W_TXNID')),
        sa.UniqueConstraint('T2W_DATABASE', 'T2W_TABLE', 'T2W_WRITEID', name=op.f('UQ_TXN_TO_WRITE_ID_T2W_DATABASE_T2W_TABLE_T2W_WRITEID'))
    )
    op.create_table('WRITE_SET',
        sa.Column('WS_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('WS_TABLE', sa.String(length=256), nullable=False),
        sa.Column('WS_PARTITION', sa.String(length=767), nullable=True),
        sa.Column('WS_TXNID', sa.BigInteger(), nullable=False),
        sa.Column('WS_COMMIT_ID', sa.BigInteger(), nullable=False),
        sa.Column('WS_OPERATION_TYPE', sa.CHAR(length=1), nullable=False)
    )
    op.create_table('BUCKETING_COLS',
        sa.Column('SD_ID', sa.BigInteger(), nullable=False),
        sa.Column('BUCKET_COL_NAME', sa.String(length=256), nullable=True),
        sa.Column('INTEGER_IDX', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['SD_ID'], ['SDS.SD_ID'], name=op.f('FK_BUCKETING_COLS_SD_ID'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('SD_ID', 'INTEGER_IDX', name=op.f('PK_BUCKETING_COLS'))
    )
    op.create_table('COLUMNS_V2',
        sa.Column('CD_ID', sa.BigInteger(), nullable=False),
        sa.Column('COMMENT', sa.String(length=4000), nullable=True),
        sa.Column('COLUMN_NAME', sa.String(length=256), nullable=False),
        sa.Column('TYPE_NAME', sa.Text(), nullable=False),
        sa.Column('INTEGER_IDX', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['CD_ID'], ['SDS.SD_ID'], name=op.f('FK_COLUMNS_V2_CD_ID'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('CD_ID', 'COLUMN_NAME', name=op.f('PK_COLUMNS_V2'))
    )
    op.create_table('DATABASE_PARAMS',
        sa.Column('DB_ID', sa.BigInteger(), nullable=False),
        sa.Column('PARAM_KEY', sa.String(length=180), nullable=False),
        sa.Column('PARAM_VALUE', sa.String(length=4000), nullable=True),
        sa.ForeignKeyConstraint(['DB_ID'], ['DBS.DB_ID'], name=op.f('FK_DATABASE_PARAMS_DB_ID'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('DB_ID', 'PARAM_KEY', name=op.f('PK_DATABASE_PARAMS'))
    )
    op.create_table('TBLS',
        sa.Column('TBL_ID', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('DB_ID', sa.BigInteger(), nullable=False),
        sa.Column('TBL_NAME', sa.String(length=256), nullable=False),
        sa.Column('TBL_TYPE', sa.String(length=128), nullable=False),
        sa.Column('OWNER', sa.String(length=767), nullable=True),
        sa.Column('CREATE_TIME', sa.BigInteger(), nullable=True),
        sa.Column('SD_ID', sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(['DB_ID'], ['DBS.DB_ID'], name=op.f('FK_TBLS_DB_ID')),
        sa.ForeignKeyConstraint(['SD_ID'], ['SDS.SD_ID'], name=op.f('FK_TBLS_SD_ID')),
        sa.PrimaryKeyConstraint('TBL_ID', name=op.f('PK_TBLS')),
        sa.UniqueConstraint('DB_ID', 'TBL_NAME', name=op.f('UQ_TBLS_DB_ID_TBL_NAME')),
        sqlite_autoincrement=True
    )
    op.create_table('TXN_COMPONENTS',
        sa.Column('TC_TXNID', sa.BigInteger(), nullable=False),
        sa.Column('TC_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('TC_TABLE', sa.String(length=256), nullable=True),
        sa.Column('TC_PARTITION', sa.String(length=767), nullable=True),
        sa.Column('TC_OPERATION_TYPE', sa.CHAR(length=1), nullable=False),
        sa.Column('TC_WRITEID', sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(['TC_TXNID'], ['TXNS.TXN_ID'], name=op.f('FK_TXN_COMPONENTS_TC_TXNID'))
    )
    op.create_index(op.f('IX_TXN_COMPONENTS_TC_TXNID'), 'TXN_COMPONENTS', ['TC_TXNID'], unique=False)
    op.create_table('PARTITIONS',
        sa.Column('PART_ID', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('CREATE_TIME', sa.BigInteger(), nullable=False),
        sa.Column('PART_NAME', sa.String(length=767), nullable=True),
        sa.Column('SD_ID', sa.BigInteger(), nullable=True),
        sa.Column('TBL_ID', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['SD_ID'], ['SDS.SD_ID'], name=op.f('FK_PARTITIONS_SD_ID')),
        sa.ForeignKeyConstraint(['TBL_ID'], ['TBLS.TBL_ID'], name=op.f('FK_PARTITIONS_TBL_ID')),
        sa.PrimaryKeyConstraint('PART_ID', name=op.f('PK_PARTITIONS')),
        sqlite_autoincrement=True
    )
    op.create_index('UNIQUEPARTITION', 'PARTITIONS', ['PART_NAME', 'TBL_ID'], unique=True, mysql_length={'PART_NAME': 500})
    op.create_table('PARTITION_KEYS',
        sa.Column('TBL_ID', sa.BigInteger(), nullable=False),
        sa.Column('PKEY_COMMENT', sa.String(length=4000), nullable=True),
        sa.Column('PKEY_NAME', sa.String(length=128), nullable=False),
        sa.Column('PKEY_TYPE', sa.String(length=767), nullable=False),
        sa.Column('INTEGER_IDX', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['TBL_ID'], ['TBLS.TBL_ID'], name=op.f('FK_PARTITION_KEYS_TBL_ID'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('TBL_ID', 'PKEY_NAME', name=op.f('PK_PARTITION_KEYS'))
    )
    op.create_table('TABLE_PARAMS',
        sa.Column('TBL_ID', sa.BigInteger(), nullable=False),
        sa.Column('PARAM_KEY', sa.String(length=256), nullable=False),
        sa.Column('PARAM_VALUE', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['TBL_ID'], ['TBLS.TBL_ID'], name=op.f('FK_TABLE_PARAMS_TBL_ID'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('TBL_ID', 'PARAM_KEY', name=op.f('PK_TABLE_PARAMS'))
    )
    op.create_table('PARTITION_PARAMS',
        sa.Column('PART_ID', sa.BigInteger(), nullable=False),
        sa.Column('PARAM_KEY', sa.String(length=256), nullable=False),
        sa.Column('PARAM_VALUE', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['PART_ID'], ['PARTITIONS.PART_ID'], name=op.f('FK_PARTITION_PARAMS_PART_ID'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('PART_ID', 'PARAM_KEY', name=op.f('PK_PARTITION_PARAMS'))
    )
    seed()


def seed() -> None:
    """Rows Hive inserts at install: the id counters, the TXN_LOCK_TBL mutex row and TXNS row 0 ('c'), which
    keeps MAX(TXN_ID) defined and bounds the open-txn gap window of the first snapshots."""
    bind = op.get_bind()
    for table, column in (("NEXT_LOCK_ID", "NL_NEXT"), ("NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT"),
                          ("TXN_LOCK_TBL", "TXN_LOCK")):
        op.bulk_insert(sa.table(table, sa.column(column, sa.BigInteger)), [{column: 1}])
    if bind.dialect.name == "mysql":
        # Without NO_AUTO_VALUE_ON_ZERO an explicit 0 in an AUTO_INCREMENT column means "generate an id".
        bind.exec_driver_sql("SET @acid_saved_sql_mode = @@SESSION.sql_mode")
        bind.exec_driver_sql("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
    txns = sa.table("TXNS", *(sa.column(c) for c in ("TXN_ID", "TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT",
                                                  "TXN_USER", "TXN_HOST", "TXN_TYPE")))
    op.bulk_insert(txns, [{"TXN_ID": 0, "TXN_STATE": "c", "TXN_STARTED": 0, "TXN_LAST_HEARTBEAT": 0,
                           "TXN_USER": "", "TXN_HOST": "", "TXN_TYPE": 0}])
    if bind.dialect.name == "mysql":
        bind.exec_driver_sql("SET SESSION sql_mode = @acid_saved_sql_mode")


def downgrade() -> None:
    op.drop_table('PARTITION_PARAMS')
    op.drop_table('TABLE_PARAMS')
    op.drop_table('PARTITION_KEYS')
    op.drop_table('PARTITIONS')
    op.drop_table('TXN_COMPONENTS')
    op.drop_table('TBLS')
    op.drop_table('DATABASE_PARAMS')
    op.drop_table('COLUMNS_V2')
    op.drop_table('BUCKETING_COLS')
    op.drop_table('WRITE_SET')
    op.drop_table('TXN_TO_WRITE_ID')
    op.drop_table('TXN_LOCK_TBL')
    op.drop_table('TXNS')
    op.drop_table('SDS')
    op.drop_table('NEXT_WRITE_ID')
    op.drop_table('NEXT_LOCK_ID')
    op.drop_table('NEXT_COMPACTION_QUEUE_ID')
    op.drop_table('MIN_HISTORY_LEVEL')
    op.drop_table('HIVE_LOCKS')
    op.drop_table('DBS')
    op.drop_table('COMPLETED_TXN_COMPONENTS')
    op.drop_table('COMPLETED_COMPACTIONS')
    op.drop_table('COMPACTION_QUEUE')
    op.drop_table('AUX_TABLE')
