"""The warehouse the console reads: the ``acid_metastore_default`` connection resolved on every request (so an
edited connection takes effect at once), one :class:`AcidWarehouse` kept per metastore URL and warehouse location
(its engine pools the database connections)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from fastapi import Request

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.hooks.metastore import AcidMetastoreHook

KEEP = 4  # distinct metastores kept open (a connection edited back and forth should not leak engines)


class WarehouseCache:
    """Opens the warehouse of one ``acid_metastore`` connection lazily and keeps the last few open."""

    def __init__(self, conn_id: str = AcidMetastoreHook.default_conn_name, keep: int = KEEP) -> None:
        self.conn_id = conn_id
        self.keep = keep
        self._open: OrderedDict[tuple[str, str], AcidWarehouse] = OrderedDict()
        self._lock = threading.Lock()

    def get(self) -> AcidWarehouse:
        """The warehouse the connection points at now (opened, and for the embedded default migrated, once)."""
        hook = AcidMetastoreHook(self.conn_id)
        key = (hook.get_uri(), hook.warehouse_location)
        with self._lock:
            warehouse = self._open.get(key)
            if warehouse is not None:
                self._open.move_to_end(key)
                return warehouse
        warehouse = hook.get_warehouse()
        with self._lock:
            if key in self._open:  # another request opened it meanwhile
                _dispose(warehouse)
                return self._open[key]
            self._open[key] = warehouse
            while len(self._open) > self.keep:
                _, old = self._open.popitem(last=False)
                _dispose(old)
        return warehouse

    def close(self) -> None:
        """Dispose every engine (app shutdown, tests)."""
        with self._lock:
            for warehouse in self._open.values():
                _dispose(warehouse)
            self._open.clear()


def _dispose(warehouse: AcidWarehouse) -> None:
    """Release the warehouse's metastore engine (the hook's metastore is not owned by the warehouse)."""
    warehouse.close()
    warehouse.metastore.close()


def get_warehouse(request: Request) -> AcidWarehouse:
    """FastAPI dependency: the warehouse of the app's connection."""
    return request.app.state.warehouses.get()
