"""Provider metadata Airflow reads through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_acid import __version__


def get_provider_info() -> dict[str, Any]:
    # package-name must be the canonical distribution name (dashes), or `airflow providers list` fails.
    return {
        "package-name": "airflow-acid",
        "name": "Airflow ACID",
        "description": "Hive-style ACID tables on plain files: Initiator sensors, Spark compaction operators, "
        "cleanup and housekeeping DAGs.",
        "versions": [__version__],
        "plugins": [{"name": "airflow_acid", "plugin-class": "airflow_acid.plugins.AcidPlugin"}],
    }
