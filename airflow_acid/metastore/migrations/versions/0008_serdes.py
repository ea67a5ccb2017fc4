"""SERDES and SERDE_PARAMS: the SerDe of a table created with a storage format (text tables: LazySimpleSerDe and its
``field.delim`` / ``serialization.null.format`` / ``escape.delim`` parameters), keyed by the storage descriptor's SD_ID.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if not inspector.has_table("SERDES"):  # a database made by metadata.create_all already has them
        op.create_table("SERDES",
            sa.Column("SERDE_ID", sa.BigInteger(), autoincrement=False, nullable=False),
            sa.Column("NAME", sa.String(length=128), nullable=True),
            sa.Column("SLIB", sa.String(length=4000), nullable=True),
            sa.ForeignKeyConstraint(["SERDE_ID"], ["SDS.SD_ID"], name=op.f("FK_SERDES_SERDE_ID"),
                                    ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("SERDE_ID", name=op.f("PK_SERDES")))
    if not inspector.has_table("SERDE_PARAMS"):
        op.create_table("SERDE_PARAMS",
            sa.Column("SERDE_ID", sa.BigInteger(), nullable=False),
            sa.Column("PARAM_KEY", sa.String(length=256), nullable=False),
            sa.Column("PARAM_VALUE", sa.Text(), nullable=True),
            sa.ForeignKeyConstraint(["SERDE_ID"], ["SERDES.SERDE_ID"], name=op.f("FK_SERDE_PARAMS_SERDE_ID"),
                                    ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("SERDE_ID", "PARAM_KEY", name=op.f("PK_SERDE_PARAMS")))


def downgrade() -> None:
    op.drop_table("SERDE_PARAMS")
    op.drop_table("SERDES")
