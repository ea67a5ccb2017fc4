"""The Airflow side of :mod:`airflow_acid.config`: the ``[acid]`` section as Airflow serves it (provider defaults,
airflow.cfg, ``AIRFLOW__ACID__*`` variables) and ``[operators] default_deferrable``, parsed into an AcidConfig.

The one place the hooks, sensors, triggers, operators, DAGs and console read configuration from.
"""

from __future__ import annotations

from airflow_acid.config import ACID_SECTION, AcidConfig


def acid_config() -> AcidConfig:
    """Every ``[acid]`` option as Airflow reads it now (read again on every call: DAG files and tasks see changes)."""
    from airflow.configuration import conf

    section = conf.getsection(ACID_SECTION) or {}
    operators = {"default_deferrable": conf.getboolean("operators", "default_deferrable", fallback=False)}
    return AcidConfig.from_mapping(section, operators=operators, source=f"Airflow config section [{ACID_SECTION}]")
