"""OpenLineage for the operators (apache-airflow-providers-openlineage, optional): input/output datasets of a
compaction or cleanup, and the parent job information a Spark job needs to link its own events to the task."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_acid.services.lineage import LineageDataset

TABLE_NAMESPACE = "acid"
"""Namespace of the symlink from a directory dataset to its ACID table (``acid`` + ``db.table``)."""


def operator_lineage(inputs: Iterable[LineageDataset], outputs: Iterable[LineageDataset]) -> Any:
    """An ``OperatorLineage`` with one OpenLineage Dataset per directory, each with a symlink to its table."""
    from airflow.providers.common.compat.openlineage.facet import Dataset, Identifier, SymlinksDatasetFacet
    from airflow.providers.openlineage.extractors import OperatorLineage

    def dataset(d: LineageDataset) -> Any:
        link = SymlinksDatasetFacet(identifiers=[Identifier(namespace=TABLE_NAMESPACE, name=d.table, type="TABLE")])
        return Dataset(namespace=d.namespace, name=d.name, facets={"symlinks": link})

    return OperatorLineage(inputs=[dataset(d) for d in inputs], outputs=[dataset(d) for d in outputs])


def parent_job_spark_conf(context: Mapping[str, Any]) -> dict[str, str]:
    """``spark.openlineage.parent*`` / ``rootParent*`` properties for this task instance, as the Spark provider's
    ``openlineage_inject_parent_job_info`` adds them (empty when the OpenLineage provider is not installed)."""
    from airflow.providers.common.compat.openlineage.utils.spark import (
        inject_parent_job_information_into_spark_properties,
    )

    return dict(inject_parent_job_information_into_spark_properties({}, context))  # type: ignore[arg-type]


def inject_parent_job_info_default() -> bool:
    """``[openlineage] spark_inject_parent_job_info`` (the Spark provider's default)."""
    from airflow.configuration import conf

    return conf.getboolean("openlineage", "spark_inject_parent_job_info", fallback=False)
