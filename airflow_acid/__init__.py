"""airflow-acid: Hive-style ACID tables on plain files, compacted by Spark and orchestrated by Airflow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_acid.version import __version__

__all__ = ["AcidWarehouse", "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from airflow_acid.client.warehouse import AcidWarehouse


def __getattr__(name: str) -> Any:
    """Import the client API lazily, so ``import airflow_acid`` (e.g. by Airflow's provider discovery) stays light."""
    if name == "AcidWarehouse":
        from airflow_acid.client.warehouse import AcidWarehouse

        return AcidWarehouse
    raise AttributeError(f"module 'airflow_acid' has no attribute {name!r}")
