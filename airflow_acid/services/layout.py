"""The layout check of a table or partition as the operator asks for it (``airflow-acid check``): the table's
partitions from the metastore (airflow-acid's or Hive's), each directory listed once and checked for layouts other
engines misread (:mod:`airflow_acid.acid.layout_check`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.layout_check import Finding, check_layout, has_errors
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.partitions import entity_name, parse_partition_name


@dataclass(frozen=True)
class LayoutReport:
    """The findings of one table (unpartitioned) or partition directory."""

    database: str
    table: str
    partition: str | None
    location: str
    findings: tuple[Finding, ...]

    @property
    def name(self) -> str:
        return entity_name(self.database, self.table, self.partition)

    @property
    def has_errors(self) -> bool:
        return has_errors(self.findings)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"database": self.database, "table": self.table, "partition": self.partition,
                "location": self.location, "findings": [f.to_dict() for f in self.findings]}


def check_table_layout(warehouse: AcidWarehouse, table: str, partition: Mapping[str, Any] | str | None = None, *,
                       verify_keys: bool = True) -> list[LayoutReport]:
    """One report per partition directory (every partition, or the one named ``'k=v/…'`` or as a dict), or one
    for an unpartitioned table. ``verify_keys`` as in :func:`check_layout`.

    NoSuchObjectError for an unknown table or partition, NotTransactionalError for a non-ACID table,
    InvalidInputError for a bad partition spec.
    """
    ms = warehouse.metastore
    info = warehouse.transactional_table(table)
    targets: list[tuple[str | None, str]]
    if partition is not None:
        spec = parse_partition_name(partition) if isinstance(partition, str) else dict(partition)
        part = ms.catalog.get_partition(info.database, info.name, info.partition_spec(spec))
        targets = [(part.name, part.location)]
    elif info.is_partitioned:
        targets = [(p.name, p.location) for p in warehouse.list_partitions(info.full_name)]
    else:
        targets = [(None, info.location)]
    return [LayoutReport(info.database, info.name, name, location,
                         tuple(check_layout(storage_for(location, warehouse.filesystem), verify_keys=verify_keys)))
            for name, location in targets]


__all__ = ["LayoutReport", "check_table_layout"]
