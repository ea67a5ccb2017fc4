"""What a compaction or cleanup read and wrote, as OpenLineage dataset names (no Airflow or OpenLineage imports):
one dataset per table/partition directory, named by OpenLineage's naming conventions for files and object stores
(``file`` + absolute path, ``s3://bucket`` + key, ``hdfs://namenode:port`` + path …), with the ACID table it
belongs to (``db.table``) for a symlink to the table."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

from airflow_acid.metastore.store import Metastore

_OBJECT_STORES = frozenset({"s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "az", "adl", "wasb", "wasbs", "oss"})


@dataclass(frozen=True)
class LineageDataset:
    """One table/partition directory."""

    namespace: str
    name: str
    table: str
    """``db.table``."""
    partition: str | None = None


def dataset_name(location: str) -> tuple[str, str]:
    """(namespace, name) of a directory by OpenLineage's naming: local paths ``file`` + absolute path; object stores
    ``<scheme>://<bucket>`` + key without the leading slash; other filesystems ``<scheme>://<authority>`` + path."""
    parsed = urllib.parse.urlsplit(location)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and location[1:3] in (":\\", ":/")):  # local (or a drive letter)
        path = parsed.path if scheme == "file" else location
        return "file", os.path.abspath(path).rstrip("/") or "/"
    path = parsed.path.rstrip("/")
    if scheme in _OBJECT_STORES:
        return f"{scheme}://{parsed.netloc}", path.lstrip("/")
    return f"{scheme}://{parsed.netloc}", path or "/"


def compaction_datasets(metastore: Metastore, compaction_ids: Iterable[int]) -> list[LineageDataset]:
    """The directory of each compaction's table/partition (queue or history row), in id order, each once."""
    found: dict[tuple[str, str], LineageDataset] = {}
    for cq_id in sorted(set(compaction_ids)):
        info = metastore.compactions.get(cq_id)
        if info.partition:
            location = metastore.catalog.get_partition(info.database, info.table, info.partition).location
        else:
            location = metastore.catalog.get_table(info.database, info.table).location
        namespace, name = dataset_name(location)
        found.setdefault((namespace, name), LineageDataset(namespace, name, f"{info.database}.{info.table}",
                                                           info.partition))
    return list(found.values())


__all__ = ["LineageDataset", "compaction_datasets", "dataset_name"]
