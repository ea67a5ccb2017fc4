"""ACID_INITIATOR_DECISION_LOG: one row per table/partition per shadow Initiator cycle, for the shadow report over a
time range (ACID_INITIATOR_DECISIONS keeps only the latest decision).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TABLE = "ACID_INITIATOR_DECISION_LOG"
# As migration 0003 does for every partition column: MySQL/MariaDB compare partition names byte for byte.
_BINARY_COLLATIONS = ("utf8mb4_nopad_bin", "utf8mb4_0900_bin", "utf8mb4_bin")


def upgrade() -> None:
    bind = op.get_bind()
    if sa.inspect(bind).has_table(_TABLE):
        return  # a database made by metadata.create_all already has it
    op.create_table(_TABLE,
        sa.Column('ADL_ID', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('ADL_DATABASE', sa.String(length=128), nullable=False),
        sa.Column('ADL_TABLE', sa.String(length=256), nullable=False),
        sa.Column('ADL_PARTITION', sa.String(length=767), nullable=True),
        sa.Column('ADL_DECIDED_AT', sa.BigInteger(), nullable=False),
        sa.Column('ADL_OUTCOME', sa.CHAR(length=1), nullable=False),
        sa.Column('ADL_TYPE', sa.CHAR(length=1), nullable=True),
        sa.Column('ADL_RULE', sa.String(length=32), nullable=True),
        sa.Column('ADL_REASON', sa.Text(), nullable=False),
        sa.Column('ADL_INITIATOR_ID', sa.String(length=128), nullable=True),
        sa.Column('ADL_BASE_SIZE', sa.BigInteger(), nullable=True),
        sa.Column('ADL_DELTA_SIZE', sa.BigInteger(), nullable=True),
        sa.Column('ADL_DELTA_COUNT', sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint('ADL_ID', name=op.f('PK_ACID_INITIATOR_DECISION_LOG'))
    )
    op.create_index('ACID_INITIATOR_DECISION_LOG_TIME', _TABLE, ['ADL_DECIDED_AT'], unique=False)
    if bind.dialect.name == "mysql":
        available = {row[0] for row in bind.exec_driver_sql(
            "SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE CHARACTER_SET_NAME = 'utf8mb4'")}
        collation = next(name for name in _BINARY_COLLATIONS if name in available)
        op.execute(f"ALTER TABLE {_TABLE} MODIFY ADL_PARTITION VARCHAR(767) CHARACTER SET utf8mb4 COLLATE {collation} "
                   "NULL")


def downgrade() -> None:
    op.drop_index('ACID_INITIATOR_DECISION_LOG_TIME', table_name=_TABLE)
    op.drop_table(_TABLE)
