"""The ACID console: a FastAPI app the plugin mounts at ``/acid`` in Airflow's API server.

JSON under ``/acid/api/…`` and server-rendered pages elsewhere, both on the ``acid_metastore_default`` connection;
the CSS and the little JavaScript come from the package, so nothing is loaded from outside (offline sites).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.plugins import errors
from airflow_acid.plugins.access import WarehouseCache
from airflow_acid.plugins.routes import actions, assets, compactions, doctor, health, overview, plan, shadow, transactions
from airflow_acid.version import __version__


def create_app(conn_id: str = AcidMetastoreHook.default_conn_name) -> FastAPI:
    """The console app reading the metastore of ``conn_id``."""
    warehouses = WarehouseCache(conn_id)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        warehouses.close()

    app = FastAPI(title="airflow-acid console", version=__version__, lifespan=lifespan,
                  description="Compaction queue and history, transactions and locks, table health, and compaction "
                              "requests of Hive-style ACID tables. Every route needs an Airflow login.",
                  docs_url=None, redoc_url=None)
    app.state.warehouses = warehouses
    for area in (overview, compactions, transactions, health, assets, plan, shadow, actions, doctor):
        app.include_router(area.router)
    errors.install(app)
    return app
