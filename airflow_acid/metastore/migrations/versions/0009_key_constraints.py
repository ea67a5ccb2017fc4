"""KEY_CONSTRAINTS: column DEFAULT constraints as Hive 4 stores them (CONSTRAINT_TYPE 4, DEFAULT_VALUE), keyed by the
table (PARENT_TBL_ID) and the column's position (PARENT_INTEGER_IDX).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table("KEY_CONSTRAINTS"):  # made by metadata.create_all already
        return
    op.create_table("KEY_CONSTRAINTS",
        sa.Column("CHILD_CD_ID", sa.BigInteger(), nullable=True),
        sa.Column("CHILD_INTEGER_IDX", sa.Integer(), nullable=True),
        sa.Column("CHILD_TBL_ID", sa.BigInteger(), nullable=True),
        sa.Column("PARENT_CD_ID", sa.BigInteger(), nullable=True),
        sa.Column("PARENT_INTEGER_IDX", sa.Integer(), nullable=False),
        sa.Column("PARENT_TBL_ID", sa.BigInteger(), nullable=False),
        sa.Column("POSITION", sa.BigInteger(), nullable=False),
        sa.Column("CONSTRAINT_NAME", sa.String(length=400), nullable=False),
        sa.Column("CONSTRAINT_TYPE", sa.SmallInteger(), nullable=False),
        sa.Column("UPDATE_RULE", sa.SmallInteger(), nullable=True),
        sa.Column("DELETE_RULE", sa.SmallInteger(), nullable=True),
        sa.Column("ENABLE_VALIDATE_RELY", sa.SmallInteger(), nullable=False),
        sa.Column("DEFAULT_VALUE", sa.String(length=400), nullable=True),
        sa.ForeignKeyConstraint(["PARENT_TBL_ID"], ["TBLS.TBL_ID"], name=op.f("FK_KEY_CONSTRAINTS_PARENT_TBL_ID"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("PARENT_TBL_ID", "CONSTRAINT_NAME", "POSITION", name=op.f("PK_KEY_CONSTRAINTS")))


def downgrade() -> None:
    op.drop_table("KEY_CONSTRAINTS")
