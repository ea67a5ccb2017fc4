"""Alembic migrations: an empty database upgraded to head has exactly ``schema.metadata``, on every backend."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from airflow_acid.metastore.db import Database
from airflow_acid.metastore.init import current_revision, downgrade, head_revision, init_schema, upgrade
from airflow_acid.metastore.schema import metadata


def _diff(db: Database) -> list:
    """Alembic's autogenerate comparison of the live database against ``schema.metadata``."""
    with db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
        diff = compare_metadata(ctx, metadata)
        if db.dialect == "mysql":
            diff = [d for d in diff if not _mysql_reflection_blind_spot(conn, d)]
        return diff


def _mysql_reflection_blind_spot(conn, entry) -> bool:
    """SQLAlchemy's MySQL reflection skips SHOW CREATE TABLE lines containing the word PARTITION (it takes them
    for a partitioning clause), so indexes and foreign keys on PARTITION* tables/columns look missing. Check
    those in information_schema instead; anything else stays a real difference."""
    kind, obj = entry[0], entry[1]
    if kind == "add_index":
        rows = conn.execute(sa.text(
            "SELECT COLUMN_NAME, SUB_PART, NON_UNIQUE FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
            "AND TABLE_NAME = :t AND INDEX_NAME = :i ORDER BY SEQ_IN_INDEX"), {"t": obj.table.name, "i": obj.name}).all()
        lengths = obj.dialect_options["mysql"]["length"] or {}
        # A prefix as long as the column is stored as no prefix.
        expected = [(c.name, None if lengths.get(c.name) in (None, getattr(c.type, "length", None)) else lengths[c.name],
                     0 if obj.unique else 1) for c in obj.columns]
        return [(r[0], r[1], int(r[2])) for r in rows] == expected
    if kind == "add_fk":
        rows = conn.execute(sa.text(
            "SELECT COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :t AND CONSTRAINT_NAME = :n ORDER BY ORDINAL_POSITION"),
            {"t": obj.table.name, "n": obj.name}).all()
        expected = [(e.parent.name, e.column.table.name, e.column.name) for e in obj.elements]
        return [tuple(r) for r in rows] == expected
    return False


def _tables(db: Database) -> set[str]:
    return set(sa.inspect(db.engine).get_table_names()) - {"alembic_version"}


def test_upgrade_empty_database_matches_schema(empty_db_url):
    db = Database(empty_db_url)
    try:
        assert current_revision(db) is None
        upgrade(db)
        assert current_revision(db) == head_revision()
        assert _tables(db) == set(metadata.tables)
        inspector = sa.inspect(db.engine)
        for name, table in metadata.tables.items():
            assert [c["name"] for c in inspector.get_columns(name)] == [c.name for c in table.columns], name
        assert _diff(db) == []
    finally:
        db.dispose()


def test_upgrade_seeds_single_row_tables(empty_db_url):
    db = Database(empty_db_url)
    try:
        upgrade(db)
        with db.begin() as conn:
            for table in ("NEXT_LOCK_ID", "NEXT_COMPACTION_QUEUE_ID", "TXN_LOCK_TBL"):
                assert conn.execute(sa.text(f'SELECT COUNT(*) FROM "{table}"' if db.dialect != "mysql"
                                            else f"SELECT COUNT(*) FROM {table}")).scalar_one() == 1
            assert conn.execute(sa.select(metadata.tables["TXNS"].c.TXN_ID, metadata.tables["TXNS"].c.TXN_STATE)).all() \
                == [(0, "c")]
    finally:
        db.dispose()


def test_init_schema_is_idempotent(empty_db_url):
    db = Database(empty_db_url)
    try:
        init_schema(db)
        init_schema(db)
        assert current_revision(db) == head_revision()
        with db.begin() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(metadata.tables["NEXT_LOCK_ID"])).scalar_one() == 1
            assert conn.execute(sa.select(sa.func.count()).select_from(metadata.tables["TXNS"])).scalar_one() == 1
        assert _diff(db) == []
    finally:
        db.dispose()


def test_downgrade_then_upgrade(empty_db_url):
    db = Database(empty_db_url)
    try:
        upgrade(empty_db_url)  # by URL, like the CLI does
        downgrade(db, "base")
        assert _tables(db) == set()
        assert current_revision(db) is None
        upgrade(db)
        assert _tables(db) == set(metadata.tables)
        assert _diff(db) == []
    finally:
        db.dispose()


def test_unversioned_database_is_adopted(empty_db_url):
    """A database made by metadata.create_all before migrations existed is stamped, not re-created."""
    db = Database(empty_db_url)
    try:
        metadata.create_all(db.engine)
        init_schema(db)
        assert current_revision(db) == head_revision()
        assert _diff(db) == []
    finally:
        db.dispose()


def test_ensure_schema_migrates_once_per_process_and_only_when_behind(empty_db_url, monkeypatch, caplog):
    """Tasks call ensure_schema on every start: an empty or older database is migrated (and it says so); a current
    one costs one revision query the first time this process meets it, nothing afterwards, and logs nothing."""
    from airflow_acid.metastore import init

    monkeypatch.setattr(init, "_CURRENT", set())
    db = Database(empty_db_url)
    try:
        assert init.ensure_schema(db) is True and current_revision(db) == head_revision()
        assert init.ensure_schema(db) is False

        def no_query(_db):
            raise AssertionError("the revision was asked again in the same process")

        monkeypatch.setattr(init, "current_revision", no_query)
        assert init.ensure_schema(db) is False
        monkeypatch.undo()

        downgrade(db, "0004")  # another process left it behind: a new process migrates it
        monkeypatch.setattr(init, "_CURRENT", set())
        assert init.ensure_schema(db) is True and current_revision(db) == head_revision()

        monkeypatch.setattr(init, "_CURRENT", set())  # a new process on a current database: checked, silent
        caplog.clear()
        with caplog.at_level("INFO", logger="airflow_acid.metastore.init"):
            assert init.ensure_schema(db) is False
        assert [r.getMessage() for r in caplog.records if r.name == "airflow_acid.metastore.init"] == []
    finally:
        db.dispose()
