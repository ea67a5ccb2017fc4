"""MySQL/MariaDB: partition names compare byte for byte (binary, no-pad collation), as in Hive.

A server's default collation (e.g. MariaDB's utf8mb4_general_ci) makes ``p=a`` equal ``p=A``, ``p=e`` equal
``p=é`` and ``p=a `` equal ``p=a``: a write to one partition was registered as the other and its rows were never
read again. Hive's own MySQL schema declares these columns ``latin1_bin`` for the same reason. Other databases
compare strings exactly already; nothing changes there.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

PARTITION_COLUMNS = (
    ("TXN_COMPONENTS", "TC_PARTITION"),
    ("COMPLETED_TXN_COMPONENTS", "CTC_PARTITION"),
    ("WRITE_SET", "WS_PARTITION"),
    ("HIVE_LOCKS", "HL_PARTITION"),
    ("COMPACTION_QUEUE", "CQ_PARTITION"),
    ("COMPLETED_COMPACTIONS", "CC_PARTITION"),
    ("ACID_INITIATOR_DECISIONS", "AID_PARTITION"),
    ("PARTITIONS", "PART_NAME"),
)
# No-pad first: under a PAD SPACE collation (utf8mb4_bin) 'p=a ' still equals 'p=a'.
_BINARY_COLLATIONS = ("utf8mb4_nopad_bin", "utf8mb4_0900_bin", "utf8mb4_bin")


def _binary_collation() -> str:
    available = {row[0] for row in op.get_bind().exec_driver_sql(
        "SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE CHARACTER_SET_NAME = 'utf8mb4'")}
    return next(name for name in _BINARY_COLLATIONS if name in available)


def upgrade() -> None:
    if op.get_bind().dialect.name != "mysql":
        return
    collation = _binary_collation()
    for table, column in PARTITION_COLUMNS:
        op.execute(f"ALTER TABLE {table} MODIFY {column} VARCHAR(767) CHARACTER SET utf8mb4 COLLATE {collation} NULL")


def downgrade() -> None:
    if op.get_bind().dialect.name != "mysql":
        return
    for table, column in PARTITION_COLUMNS:
        op.execute(f"ALTER TABLE {table} MODIFY {column} VARCHAR(767) NULL")
