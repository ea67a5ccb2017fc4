"""Defaults the airflow-acid DAGs share: settings from the ``[acid]`` section (:func:`acid_config`), the compaction
pool, retries with exponential back-off, schedules from Hive's intervals. Reads configuration only, never the
metastore, so DAG files stay cheap to parse."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from airflow_acid.airflow_config import acid_config
from airflow_acid.config import BacklogLimits, Budgets
from airflow_acid.metastore.conf import MetastoreConf

START_DATE = datetime(2024, 1, 1)
TAGS = ["acid"]


def compaction_pool() -> str:
    """``[acid] compaction_pool``: the Airflow pool whose slots cap parallel compactions."""
    return acid_config().compaction_pool


def compaction_pools() -> list[str]:
    """``[acid] compaction_pools``: compaction pools (``hive.compactor.worker.pool``) that get their own Airflow pool
    of the same name; rows of other pools run in :func:`compaction_pool`."""
    return list(acid_config().compaction_pools)


def compaction_batch_size() -> int:
    """``[acid] compaction_batch_size``: queued rows one mapped task compacts in ONE Spark application (1: a task per
    row, as Hive's workers do; more saves a JVM/Spark start-up per row, ~12–16 s, at the cost of coarser retries)."""
    return acid_config().compaction_batch_size


def compaction_verify() -> str:
    """``[acid] compaction_verify``: how a compaction proves its output before it commits (digest, count, off)."""
    return acid_config().compaction_verify


def compaction_budgets() -> Budgets:
    """The ``[acid]`` compaction budgets (compaction_budget_bytes, …_core_seconds, …_pool_bytes, …_table_bytes,
    compaction_aging)."""
    return acid_config().budgets


def batches_of(items: Sequence[Mapping[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """The Initiator sensor's items in consecutive batches of at most ``size`` (one mapped task each)."""
    if size < 1:
        raise ValueError(f"batch size must be positive, got {size}")
    rows = [dict(i) for i in items]
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def rows_for_pool(items: Sequence[Mapping[str, Any]], pool: str | None, dedicated: Sequence[str]) -> list[Any]:
    """The Initiator sensor's items that run in ``pool``: the items of that compaction pool, or (``pool`` None)
    the items of every pool without a dedicated Airflow pool."""
    if pool is not None:
        return [dict(i) for i in items if i.get("pool") == pool]
    return [dict(i) for i in items if i.get("pool") not in dedicated]


def default_args(retries: int = 3) -> dict[str, Any]:
    """Transient failures (metastore or Spark briefly unavailable) are retried with exponential back-off."""
    return {"owner": "airflow-acid", "retries": retries, "retry_delay": timedelta(seconds=30),
            "retry_exponential_backoff": True, "max_retry_delay": timedelta(minutes=30)}


def interval(seconds: float, minimum: float = 60.0) -> timedelta:
    """A DAG schedule from a Hive interval, never shorter than ``minimum`` (Airflow runs are not sub-minute)."""
    return timedelta(seconds=max(float(seconds), minimum))


def settings() -> MetastoreConf:
    """Hive's settings from the ``[acid]`` section."""
    return acid_config().settings


def backlog_limits() -> BacklogLimits:
    """``[acid] alert_max_backlog`` / ``alert_max_ready_for_cleaning_age`` / ``alert_max_initiated_age`` (times in
    seconds or with a unit: ``24h``); unset ones are not checked."""
    return acid_config().alert_limits
