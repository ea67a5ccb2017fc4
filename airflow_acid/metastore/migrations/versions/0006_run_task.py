"""ACID_COMPACTION_RUNS.ACR_DAG_ID / ACR_RUN_ID / ACR_TASK_ID / ACR_MAP_INDEX / ACR_TRY_NUMBER: the Airflow task
instance that ran a compaction (the console links to its log).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_COLUMNS = (("ACR_DAG_ID", sa.String(length=250)), ("ACR_RUN_ID", sa.String(length=250)),
            ("ACR_TASK_ID", sa.String(length=250)), ("ACR_MAP_INDEX", sa.Integer()),
            ("ACR_TRY_NUMBER", sa.Integer()))


def upgrade() -> None:
    present = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("ACID_COMPACTION_RUNS")}
    with op.batch_alter_table("ACID_COMPACTION_RUNS") as batch:
        for column, kind in _COLUMNS:
            if column not in present:  # a database made by metadata.create_all already has them
                batch.add_column(sa.Column(column, kind, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ACID_COMPACTION_RUNS") as batch:
        for column, _ in reversed(_COLUMNS):
            batch.drop_column(column)
