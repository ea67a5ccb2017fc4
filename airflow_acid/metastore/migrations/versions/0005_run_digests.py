"""ACID_COMPACTION_RUNS.ACR_DIGEST_IN / ACR_DIGEST_OUT: the content digests a compaction proved before it committed.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_COLUMNS = ("ACR_DIGEST_IN", "ACR_DIGEST_OUT")


def upgrade() -> None:
    present = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("ACID_COMPACTION_RUNS")}
    with op.batch_alter_table("ACID_COMPACTION_RUNS") as batch:
        for column in _COLUMNS:
            if column not in present:  # a database made by metadata.create_all already has them
                batch.add_column(sa.Column(column, sa.String(length=80), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ACID_COMPACTION_RUNS") as batch:
        for column in reversed(_COLUMNS):
            batch.drop_column(column)
