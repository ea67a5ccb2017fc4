"""ACID_INITIATOR_DECISIONS: the Initiator's latest decision and reason per table/partition.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table('ACID_INITIATOR_DECISIONS'):
        return  # a database made by metadata.create_all and adopted at revision 0001 already has it
    op.create_table('ACID_INITIATOR_DECISIONS',
        sa.Column('AID_ID', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('AID_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('AID_TABLE', sa.String(length=256), nullable=False),
        sa.Column('AID_PARTITION', sa.String(length=767), nullable=True),
        sa.Column('AID_DECIDED_AT', sa.BigInteger(), nullable=False),
        sa.Column('AID_OUTCOME', sa.CHAR(length=1), nullable=False),
        sa.Column('AID_TYPE', sa.CHAR(length=1), nullable=True),
        sa.Column('AID_RULE', sa.String(length=32), nullable=True),
        sa.Column('AID_REASON', sa.Text(), nullable=False),
        sa.Column('AID_COMPACTION_ID', sa.BigInteger(), nullable=True),
        sa.Column('AID_INITIATOR_ID', sa.String(length=128), nullable=True),
        sa.Column('AID_BASE_SIZE', sa.BigInteger(), nullable=True),
        sa.Column('AID_DELTA_SIZE', sa.BigInteger(), nullable=True),
        sa.Column('AID_DELTA_COUNT', sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint('AID_ID', name=op.f('PK_ACID_INITIATOR_DECISIONS'))
    )
    op.create_index('ACID_INITIATOR_DECISIONS_ENTITY', 'ACID_INITIATOR_DECISIONS',
                    ['AID_DATABASE', 'AID_TABLE', 'AID_PARTITION'], unique=False,
                    mysql_length={'AID_DATABASE': 128, 'AID_TABLE': 256, 'AID_PARTITION': 300})


def downgrade() -> None:
    op.drop_index('ACID_INITIATOR_DECISIONS_ENTITY', table_name='ACID_INITIATOR_DECISIONS')
    op.drop_table('ACID_INITIATOR_DECISIONS')
