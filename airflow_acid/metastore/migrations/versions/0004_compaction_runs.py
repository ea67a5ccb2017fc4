"""ACID_COMPACTION_RUNS: the figures of each compaction run, keyed by the compaction id (branch 19sched).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table('ACID_COMPACTION_RUNS'):
        return  # a database made by metadata.create_all already has it
    op.create_table('ACID_COMPACTION_RUNS',
        sa.Column('ACR_CQ_ID', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('ACR_RECORDED_AT', sa.BigInteger(), nullable=False),
        sa.Column('ACR_FILES_IN', sa.BigInteger(), nullable=True),
        sa.Column('ACR_BYTES_IN', sa.BigInteger(), nullable=True),
        sa.Column('ACR_ROWS_IN', sa.BigInteger(), nullable=True),
        sa.Column('ACR_FILES_OUT', sa.BigInteger(), nullable=True),
        sa.Column('ACR_BYTES_OUT', sa.BigInteger(), nullable=True),
        sa.Column('ACR_ROWS_OUT', sa.BigInteger(), nullable=True),
        sa.Column('ACR_DELTAS_BEFORE', sa.Integer(), nullable=True),
        sa.Column('ACR_DELTAS_AFTER', sa.Integer(), nullable=True),
        sa.Column('ACR_APP_ID', sa.String(length=128), nullable=True),
        sa.Column('ACR_CORE_SECONDS', sa.Float(), nullable=True),
        sa.Column('ACR_WALL_SECONDS', sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint('ACR_CQ_ID', name=op.f('PK_ACID_COMPACTION_RUNS'))
    )


def downgrade() -> None:
    op.drop_table('ACID_COMPACTION_RUNS')
