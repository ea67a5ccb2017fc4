"""The Airflow side of the metrics: sends :mod:`airflow_acid.services.metrics` samples through Airflow's metrics
interface (``airflow.sdk`` ``stats``: StatsD, Datadog or OpenTelemetry, whatever ``[metrics]`` configures; nothing
when metrics are off) and logs the threshold findings at their level. Shared by the sensors, triggers and operators;
not part of the connection hook."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from airflow_acid.airflow_compat import airflow_stats
from airflow_acid.services.metrics import Level, MetricKind, MetricsReport

log = logging.getLogger(__name__)


def emit_metrics(report: MetricsReport, logger: Any = None) -> None:
    """Gauges with ``stats.gauge``, counters with ``stats.incr``, timers (ms) with ``stats.timing``; each sample's
    tags go along (StatsD drops them unless InfluxDB/Datadog tagging is on; OpenTelemetry keeps them). A metrics
    backend that fails never fails the task."""
    stats = airflow_stats()

    out = logger or log
    for sample in report.samples:
        tags = dict(sample.tags) or None
        try:
            if sample.kind is MetricKind.GAUGE:
                stats.gauge(sample.stat, sample.value, tags=tags)
            elif sample.kind is MetricKind.COUNTER:
                stats.incr(sample.stat, count=int(sample.value), tags=tags)
            else:
                stats.timing(sample.stat, timedelta(milliseconds=sample.value), tags=tags)
        except Exception as exc:  # noqa: BLE001 - metrics are best effort, as Airflow's own
            out.warning("could not emit metric %s: %s", sample.stat, exc)
    for finding in report.findings:
        (out.error if finding.level is Level.ERROR else out.warning)("%s: %s", finding.metric, finding.message)
