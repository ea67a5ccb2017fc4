"""Defaults the airflow-acid DAGs share: settings from the ``[acid]`` section, the compaction pool, retries with
exponential back-off, schedules from Hive's intervals. Reads configuration only, never the metastore, so DAG files
stay cheap to parse."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow_acid.hooks.metastore import CONFIG_SECTION, acid_settings
from airflow_acid.metastore.conf import MetastoreConf

START_DATE = datetime(2024, 1, 1)
TAGS = ["acid"]
DEFAULT_POOL = "default_pool"


def compaction_pool() -> str:
    """``[acid] compaction_pool``: the Airflow pool whose slots cap parallel compactions."""
    from airflow.configuration import conf

    return conf.get(CONFIG_SECTION, "compaction_pool", fallback=DEFAULT_POOL) or DEFAULT_POOL


def default_args(retries: int = 3) -> dict[str, Any]:
    """Transient failures (metastore or Spark briefly unavailable) are retried with exponential back-off."""
    return {"owner": "airflow-acid", "retries": retries, "retry_delay": timedelta(seconds=30),
            "retry_exponential_backoff": True, "max_retry_delay": timedelta(minutes=30)}


def interval(seconds: float, minimum: float = 60.0) -> timedelta:
    """A DAG schedule from a Hive interval, never shorter than ``minimum`` (Airflow runs are not sub-minute)."""
    return timedelta(seconds=max(float(seconds), minimum))


def settings() -> MetastoreConf:
    """Hive's settings from the ``[acid]`` section."""
    return acid_settings()
