"""The metastore backends of the tests: SQLite (a file, always there) and the PostgreSQL and MariaDB servers.

A server backend is a ``pytest.param`` carrying the ``servers`` mark, so ``pytest -m "not servers"`` runs the
suite on a machine without those services. Parametrize over backends with :func:`backends` (directly or through
``empty_db_url`` with ``indirect=True``), never with bare names. Server admin URLs: $AIRFLOW_ACID_TEST_PG and
$AIRFLOW_ACID_TEST_MYSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

import pytest
import sqlalchemy as sa

PG_ADMIN_URL = os.environ.get("AIRFLOW_ACID_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MYSQL_ADMIN_URL = os.environ.get("AIRFLOW_ACID_TEST_MYSQL", "mysql+pymysql://root@127.0.0.1:3306/test")
SERVER_BACKENDS = ("postgresql", "mariadb")


def backends(*names: str) -> list[pytest.ParameterSet]:
    """``names`` as pytest parameters, the server ones marked ``servers`` (ids stay the bare names)."""
    return [pytest.param(name, marks=pytest.mark.servers) if name in SERVER_BACKENDS else pytest.param(name)
            for name in names]


BACKENDS = backends("sqlite", *SERVER_BACKENDS)
"""Every backend: what ``empty_db_url`` and the module-wide metastores run on."""


def server_database(backend: str) -> tuple[str, Callable[[], None]]:
    """Create a uniquely named empty database on a server; return (url, drop callable)."""
    name = f"acid_test_{uuid.uuid4().hex[:12]}"
    admin_url = PG_ADMIN_URL if backend == "postgresql" else MYSQL_ADMIN_URL
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = sa.engine.make_url(admin_url).set(database=name).render_as_string(hide_password=False)

    def drop() -> None:
        with admin.connect() as conn:
            if backend == "postgresql":
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            else:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()

    return url, drop
