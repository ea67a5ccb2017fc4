"""Alembic environment: runs on the connection handed in by ``airflow_acid.metastore.init`` (or a URL)."""

from __future__ import annotations

from typing import Any

from alembic import context

from airflow_acid.metastore.schema import metadata

config = context.config


def _configure(**kwargs: Any) -> None:
    context.configure(target_metadata=metadata, compare_type=True, **kwargs)


def run_offline() -> None:
    """Emit SQL for ``--sql`` runs instead of executing it."""
    _configure(url=config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _refuse_hive(connection: Any) -> None:
    """Never migrate a Hive metastore (Hive's schematool owns it), however Alembic was started."""
    import sqlalchemy as sa

    from airflow_acid.metastore.errors import HiveMetastoreError

    if {"VERSION", "CTLGS"} <= set(sa.inspect(connection).get_table_names()):
        raise HiveMetastoreError("refusing to run airflow-acid migrations on a Hive metastore (it has Hive's VERSION "
                                 "and CTLGS tables); its schema is managed by Hive's schematool")


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _refuse_hive(connection)
        _configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    from airflow_acid.metastore.db import create_engine

    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("alembic needs a connection (config.attributes['connection']) or a sqlalchemy.url")
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            _refuse_hive(conn)
            _configure(connection=conn)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
