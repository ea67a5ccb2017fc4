"""KEY_CONSTRAINTS: column DEFAULT constraints as Hive 4 stores them (CONSTRAINT_TYPE 4, DEFAULT_VALUE), keyed by the
table (PARENT_TBL_ID) and the column's position (PARENT_INTEGER_IDX); TBLS.VIEW_ORIGINAL_TEXT / VIEW_EXPANDED_TEXT:
a view's query, as Hive keeps it.

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
    inspector = sa.inspect(op.get_bind())
    present = {c["name"] for c in inspector.get_columns("TBLS")}
    for column in ("VIEW_ORIGINAL_TEXT", "VIEW_EXPANDED_TEXT"):
        if column not in present:  # a database made by metadata.create_all already has them
            op.add_column("TBLS", sa.Column(column, sa.Text(), nullable=True))
    if inspector.has_table("KEY_CONSTRAINTS"):
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
    with op.batch_alter_table("TBLS") as batch:
        batch.drop_column("VIEW_EXPANDED_TEXT")
        batch.drop_column("VIEW_ORIGINAL_TEXT")
