"""Provider metadata Airflow reads through the ``apache_airflow_provider`` entry point.

The ``[acid]`` config section carries every option of :mod:`airflow_acid.config` — each Hive setting under its Hive
key with Hive's default, and the DAGs' options — so ``airflow config get-value acid
hive.compactor.delta.num.threshold`` answers 10 and an ``AIRFLOW__ACID__…`` environment variable or airflow.cfg entry
overrides it.
"""

from __future__ import annotations

from typing import Any

from airflow_acid.config.options import ACID_SECTION
from airflow_acid.config.reference import SECTION_DESCRIPTION, provider_options
from airflow_acid.version import __version__

INTEGRATION = "Airflow ACID"

def get_provider_info() -> dict[str, Any]:
    # package-name must be the canonical distribution name (dashes), or `airflow providers list` fails.
    return {
        "package-name": "airflow-acid",
        "name": INTEGRATION,
        "description": "Hive-style ACID tables on plain files: Initiator sensors, Spark compaction operators, "
        "cleanup and housekeeping DAGs.",
        "versions": [__version__],
        "integrations": [{"integration-name": INTEGRATION, "tags": ["software"]}],
        "hooks": [{"integration-name": INTEGRATION, "python-modules": ["airflow_acid.hooks.metastore"]}],
        "sensors": [{"integration-name": INTEGRATION, "python-modules": ["airflow_acid.sensors.initiator",
                                                                         "airflow_acid.sensors.threshold"]}],
        "operators": [{"integration-name": INTEGRATION, "python-modules": ["airflow_acid.operators.compaction",
                                                                           "airflow_acid.operators.maintenance",
                                                                           "airflow_acid.operators.metrics",
                                                                           "airflow_acid.operators.alerts"]}],
        "triggers": [{"integration-name": INTEGRATION, "python-modules": ["airflow_acid.triggers.threshold",
                                                                          "airflow_acid.triggers.initiator"]}],
        "connection-types": [{
            "connection-type": "acid_metastore",
            "hook-class-name": "airflow_acid.hooks.metastore.AcidMetastoreHook",
            "hook-name": "ACID Metastore",
            "ui-field-behaviour": {
                "hidden-fields": ["schema", "port", "login", "password"],
                "relabeling": {"host": "Metastore URI"},
                "placeholders": {"host": "postgresql+psycopg://user:password@db:5432/metastore",
                                 "extra": '{"warehouse": "/data/warehouse"}'},
            },
            "conn-fields": {
                "warehouse": {"label": "Warehouse location",
                              "description": "Folder or fsspec URL where new databases and tables are created",
                              "schema": {"type": ["string", "null"]}},
                "metastore_uri": {"label": "Metastore URI (alternative)",
                                  "description": "SQLAlchemy URL of the metastore, when not given as host",
                                  "schema": {"type": ["string", "null"]}},
            },
        }],
        "config": {ACID_SECTION: {"description": SECTION_DESCRIPTION, "options": provider_options()}},
        "plugins": [{"name": "airflow_acid", "plugin-class": "airflow_acid.plugins.AcidPlugin"}],
    }
