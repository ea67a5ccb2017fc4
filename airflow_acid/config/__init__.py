"""One parser for every ``[acid]`` option, Airflow-free: :class:`AcidConfig` from a section's text, from airflow.cfg
and the environment, and the option descriptions the provider info and docs/configuration.md are generated from.

Imports only the table format, the metastore layer, the job contract and the errors, so every layer above (the
compactor, the services, the CLI, the Airflow adapters, the console) may read it.
"""

from __future__ import annotations

from airflow_acid.config.acid_config import AcidConfig
from airflow_acid.config.alert_limits import BacklogLimits
from airflow_acid.config.budgets import Budgets, budgets_from_mapping
from airflow_acid.config.hive import settings_from_mapping
from airflow_acid.config.options import ACID_SECTION, OPTIONS, Option
from airflow_acid.config.sources import config_from_environment
from airflow_acid.metastore.errors import InvalidSettingError

__all__ = ["ACID_SECTION", "OPTIONS", "AcidConfig", "BacklogLimits", "Budgets", "InvalidSettingError", "Option",
           "budgets_from_mapping", "config_from_environment", "settings_from_mapping"]
