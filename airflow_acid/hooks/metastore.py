"""The ``acid_metastore`` connection: which metastore database and warehouse a DAG works on.

The connection's SQLAlchemy URL comes from its host (``sqlite:////…``, ``postgresql+psycopg://…``), its
``metastore_uri`` extra, or — for a connection written as a URI such as ``postgresql://user:pw@host/db`` — from
its parts. Hive's settings and the storage options come from the ``[acid]`` section
(:mod:`airflow_acid.airflow_config`). With no connection configured, the embedded SQLite metastore and warehouse under
``$AIRFLOW_ACID_HOME`` (default ``$AIRFLOW_HOME/acid``) are used, so a fresh ``airflow standalone`` works without
set-up.
"""

from __future__ import annotations

import logging
import os
from functools import cached_property
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from airflow.sdk import BaseHook

from airflow_acid.acid.storage_options import StorageOptions, protocols_for
from airflow_acid.airflow_compat import AirflowNotFoundException
from airflow_acid.airflow_config import acid_config
from airflow_acid.hooks.errors import AcidMetastoreConnectionError
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.store import HOME_ENV, METASTORE_FILE

log = logging.getLogger(__name__)

WAREHOUSE_DIR = "warehouse"
# Connection types whose URI form names a database server; value = SQLAlchemy driver name.
_DRIVERS = {"postgres": "postgresql+psycopg", "postgresql": "postgresql+psycopg", "mysql": "mysql+pymysql",
            "mariadb": "mysql+pymysql", "sqlite": "sqlite"}


def embedded_home() -> Path:
    """Where the embedded metastore and warehouse live: ``$AIRFLOW_ACID_HOME`` or ``$AIRFLOW_HOME/acid``."""
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return Path(explicit).expanduser()
    from airflow.configuration import AIRFLOW_HOME

    return Path(AIRFLOW_HOME).expanduser() / "acid"


def sqlalchemy_url_of(conn: Any) -> str:
    """The SQLAlchemy URL an Airflow connection points at (host, ``metastore_uri`` extra, or the URI parts)."""
    extra = conn.extra_dejson or {}
    explicit = extra.get("metastore_uri") or (conn.host if conn.host and "://" in conn.host else None)
    if explicit:
        url = sa.engine.make_url(explicit)
        if conn.login and url.username is None:
            url = url.set(username=conn.login)
        if conn.password and url.password is None:
            url = url.set(password=conn.password)
        return url.render_as_string(hide_password=False)
    driver = _DRIVERS.get((conn.conn_type or "").lower())
    if driver is None or (driver != "sqlite" and not conn.host):
        raise AcidMetastoreConnectionError(
            f"connection {conn.conn_id!r} (type {conn.conn_type!r}) names no metastore database; put the "
            "SQLAlchemy URL (e.g. postgresql+psycopg://user@host:5432/metastore or sqlite:////path/metastore.db) "
            "into its host field or its metastore_uri extra")
    if driver == "sqlite":
        path = conn.schema or conn.host
        return f"sqlite:///{path}" if path else "sqlite://"
    return sa.URL.create(driver, username=conn.login or None, password=conn.password or None, host=conn.host,
                         port=conn.port or None, database=conn.schema or None).render_as_string(hide_password=False)


class AcidMetastoreHook(BaseHook):
    """The metastore of one ``acid_metastore`` connection (default ``acid_metastore_default``), with the
    ``[acid]`` settings; falls back to the embedded SQLite metastore when the connection does not exist."""

    conn_name_attr = "acid_conn_id"
    default_conn_name = "acid_metastore_default"
    conn_type = "acid_metastore"
    hook_name = "ACID Metastore"

    def __init__(self, acid_conn_id: str = default_conn_name, *, settings: MetastoreConf | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.acid_conn_id = acid_conn_id
        self._settings = settings
        self._metastore: Metastore | None = None

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Connection form: the URL goes into host (relabelled), the warehouse into an extra field."""
        return {"hidden_fields": ["schema", "port", "login", "password"],
                "relabeling": {"host": "Metastore URI"},
                "placeholders": {"host": "postgresql+psycopg://user:password@db:5432/metastore"}}

    @cached_property
    def connection(self) -> Any | None:
        """The Airflow connection, or None when it is not configured (embedded fallback)."""
        try:
            return self.get_connection(self.acid_conn_id)
        except AirflowNotFoundException:
            if self.acid_conn_id != self.default_conn_name:
                raise AirflowNotFoundException(
                    f"connection {self.acid_conn_id!r} is not defined; create it (type acid_metastore) or leave "
                    f"the connection id at {self.default_conn_name!r} to use the embedded metastore") from None
            return None

    @property
    def is_embedded(self) -> bool:
        """True when no connection is configured and the embedded SQLite metastore is used."""
        return self.connection is None

    def get_uri(self) -> str:
        """The metastore's SQLAlchemy URL (password included: never log it; :attr:`Metastore.url` hides it)."""
        if self.connection is None:
            home = embedded_home()
            home.mkdir(parents=True, exist_ok=True)
            return f"sqlite:///{(home / METASTORE_FILE).resolve()}"
        return sqlalchemy_url_of(self.connection)

    @property
    def warehouse_location(self) -> str:
        """Where new databases and tables go: the ``warehouse`` extra, else ``<embedded home>/warehouse``."""
        extra = self.connection.extra_dejson if self.connection is not None else {}
        return str(extra.get("warehouse") or embedded_home() / WAREHOUSE_DIR)

    @property
    def flavour(self) -> str | None:
        """The ``flavour`` extra: ``hive`` for an existing Hive 4 metastore database, ``acid`` for airflow-acid's own,
        absent or ``auto`` to detect it (Hive's VERSION/CTLGS tables)."""
        extra = self.connection.extra_dejson if self.connection is not None else {}
        return extra.get("flavour") or None

    def get_settings(self) -> MetastoreConf:
        """Hive's settings from the ``[acid]`` section (or the ones given to the hook)."""
        if self._settings is None:
            self._settings = acid_config().settings
        return self._settings

    def get_storage_options(self) -> StorageOptions:
        """Object-store options: ``[acid] storage_options``, overridden by the connection's ``storage_options``
        extra (a JSON object: endpoint_url, region, anonymous, profile …; never credentials)."""
        extra = self.connection.extra_dejson if self.connection is not None else {}
        given = extra.get("storage_options") or {}
        connection_options = StorageOptions.from_json(given) if isinstance(given, str) else \
            StorageOptions.from_mapping(given)
        return acid_config().storage_options.merged(connection_options)

    def get_metastore(self) -> Metastore:
        """The Metastore of this connection; the embedded one is created on first use and migrated when behind
        (checked once per process, :meth:`Metastore.ensure_schema`). The storage
        options are installed into fsspec's config of this process on first use, so the Initiator, Worker and
        Cleaner of any task reach the warehouse's store."""
        if self._metastore is None:
            self.get_storage_options().apply(protocols_for(self.warehouse_location))
            metastore = Metastore(self.get_uri(), self.get_settings(), flavour=self.flavour)
            if self.is_embedded:
                metastore.ensure_schema()
            self.log.info("ACID metastore %s (connection %s%s)", metastore.url, self.acid_conn_id,
                          ", not configured: embedded" if self.is_embedded else "")
            self._metastore = metastore
        return self._metastore

    def get_conn(self) -> Metastore:
        return self.get_metastore()

    def get_warehouse(self):
        """An :class:`AcidWarehouse` on this metastore and warehouse location (client API)."""
        from airflow_acid.client.warehouse import AcidWarehouse

        return AcidWarehouse(self.get_metastore(), self.warehouse_location, conf=self.get_settings(), init=False,
                             storage_options=self.get_storage_options())

    def test_connection(self) -> tuple[bool, str]:
        """Connect and read the database list (the UI's Test button)."""
        try:
            databases = self.get_metastore().catalog.list_databases()
        except Exception as exc:  # noqa: BLE001 - the message is shown to the user
            return False, str(exc)
        return True, f"connected to {self.get_metastore().url}: {len(databases)} database(s)"

    def close(self) -> None:
        """Release the metastore's pooled connections."""
        if self._metastore is not None:
            self._metastore.close()
            self._metastore = None
