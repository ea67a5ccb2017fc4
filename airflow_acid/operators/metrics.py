"""The metrics task of the acid_housekeeping DAG: Hive's ACID metrics through Airflow's metrics interface."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_acid.airflow_stats import emit_metrics
from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.services.metrics import acid_metrics


class AcidMetricsOperator(BaseOperator):
    """Reads Hive's ACID metrics (queue counts and ages per state, open/aborted transactions, locks, bookkeeping
    table sizes; with ``metastore.acidmetrics.ext.on`` also the delta metrics, one listing per table/partition),
    sends them as ``acid.*`` through Airflow's metrics (StatsD / OpenTelemetry as ``[metrics]`` says) and logs the
    figures past Hive's warning/error thresholds.

    :param delta_metrics: list directories for the delta metrics (None: ``metastore.acidmetrics.ext.on``).
    :param acid_conn_id: the ``acid_metastore`` connection.
    :return: (XCom) ``{"metrics": {name: value}, "findings": [...]}``.
    """

    template_fields: Sequence[str] = ("delta_metrics",)
    ui_color = "#b5d3e7"

    def __init__(self, *, delta_metrics: bool | None = None,
                 acid_conn_id: str = AcidMetastoreHook.default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delta_metrics = delta_metrics
        self.acid_conn_id = acid_conn_id

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def execute(self, context: Context) -> dict[str, Any]:
        warehouse = self.hook.get_warehouse()
        metastore = warehouse.metastore
        deltas = metastore.conf.acidmetrics_ext_on if self.delta_metrics in (None, "", "None") else \
            self.delta_metrics in (True, "True", "true")
        report = acid_metrics(metastore, warehouse if deltas else None)
        emit_metrics(report, self.log)
        self.log.info("emitted %d ACID metric(s), %d finding(s)", len(report.samples), len(report.findings))
        return report.to_dict()
