"""Read an ACID table into a PySpark DataFrame: the same directory selection and merge as
:meth:`AcidWarehouse.read`, distributed by bucket.

The driver opens a READ_ONLY transaction (SHARED_READ lock, heartbeated), takes the snapshot, lists every
partition once, runs getAcidState and groups the selected files by bucket id. Each (partition, bucket) is one
work unit; executors run the merge for their units (``iter_plan_batches``) and return Arrow batches through
``mapInArrow``. The result is materialized (``localCheckpoint``) before the read transaction ends, so later
actions on the DataFrame never touch table files the Cleaner may remove once the reader is gone. Table
locations must be URLs or paths the executors can reach.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_acid.acid.event_schema import KEY_FIELDS
from airflow_acid.acid.fs import ListedFile, Storage, storage_for
from airflow_acid.acid.merge import BucketPlan, DataSource, MergePlan, SourceKind, iter_plan_batches, plan_from_state
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.timestamps import microsecond_schema
from airflow_acid.acid.writeids import ValidReaderWriteIdList
from airflow_acid.client.errors import SchemaMismatchError
from airflow_acid.metastore import Metastore

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from airflow_acid.client.warehouse import AcidWarehouse


@dataclass(frozen=True)
class PartitionPlan:
    """One partition directory's merge plan at a snapshot, before it is cut into work units."""

    location: str
    storage: Storage
    plan: MergePlan
    partition_values: Mapping[str, Any]

    @property
    def data_bytes(self) -> int:
        return sum(max(s.size, 0) for b in self.plan.buckets for s in b.data)


def plan_partition(location: str, write_ids, txns, partition_values: Mapping[str, Any]) -> PartitionPlan | None:
    """List one partition directory and run getAcidState on it; None when it holds no files."""
    storage = storage_for(location)
    files: list[ListedFile] = storage.list_files()
    if not files:
        return None

    def metadata_reader(path: str) -> str:
        return storage.read_bytes(path).decode("utf-8", errors="replace")

    state = get_acid_state(files, write_ids, txns, metadata_reader=metadata_reader)
    return PartitionPlan(location, storage, plan_from_state(state, files), dict(partition_values))


def split_target(total_bytes: int, *, parallelism: int | None, max_partition_bytes: int,
                 open_cost_bytes: int = 4 << 20) -> int:
    """Bytes per work unit as Spark sizes file splits (``FilePartition.maxSplitBytes``): at most
    ``spark.sql.files.maxPartitionBytes``, at least ``spark.sql.files.openCostInBytes``, else the table's bytes over
    the default parallelism, so a table of a few large buckets still keeps every core busy."""
    if not parallelism or parallelism < 1:
        return max_partition_bytes
    return max(1, min(max_partition_bytes, max(open_cost_bytes, total_bytes // parallelism)))


def partition_units(part: PartitionPlan, split_bytes: int | None) -> list[str]:
    """JSON work units of one planned partition: one per bucket, or — a bucket over ``split_bytes`` — several
    (:func:`_splits`)."""
    units = []
    for bucket in part.plan.buckets:
        if not bucket.data:
            continue
        for data in _splits(part.storage, bucket, split_bytes):
            units.append(json.dumps({
                "location": part.location, "bucket": bucket.bucket_id,
                "data": [_source(s) for s in data], "deletes": [_source(s) for s in bucket.deletes],
                "partition": dict(part.partition_values),
            }))
    return units


def _plan_units(location: str, write_ids, txns, partition_values: Mapping[str, Any], *,
                split_bytes: int | None = None) -> list[str]:
    """JSON work units for one partition directory (:func:`plan_partition` then :func:`partition_units`)."""
    part = plan_partition(location, write_ids, txns, partition_values)
    return partition_units(part, split_bytes) if part is not None else []


def _splits(storage, bucket: BucketPlan, split_bytes: int | None) -> list[tuple[DataSource, ...]]:
    """A bucket's data files in work units of about ``split_bytes``: ACID event files stand alone given the
    bucket's delete events, so a large one is cut into stripe ranges and small ones are grouped; original files
    (synthetic row ids count across a directory) stay together in the first unit."""
    from dataclasses import replace

    from airflow_acid.acid.event_reader import FileFormat, open_data_file

    if split_bytes is None or sum(max(s.size, 0) for s in bucket.data) <= split_bytes:
        return [bucket.data]
    originals = tuple(s for s in bucket.data if s.kind is not SourceKind.EVENTS)
    units: list[tuple[DataSource, ...]] = [originals] if originals else []
    group: list[DataSource] = []
    size = 0
    for src in (s for s in bucket.data if s.kind is SourceKind.EVENTS):
        if src.size > split_bytes and src.side_file is None:
            stripes = open_data_file(storage, src.path, src.size, expect=FileFormat.ACID,
                                     where=src.directory).num_stripes
            per = max(1, int(stripes * split_bytes // src.size))
            if stripes > 1:
                units += [(replace(src, stripes=(first, min(stripes, first + per))),)
                          for first in range(0, stripes, per)]
                continue
        if group and size + max(src.size, 0) > split_bytes:
            units.append(tuple(group))
            group, size = [], 0
        group.append(src)
        size += max(src.size, 0)
    if group:
        units.append(tuple(group))
    return units


def _source(s: DataSource) -> dict:
    return {"path": s.path, "size": s.size, "kind": s.kind.value, "directory": s.directory, "write_id": s.write_id,
            "side_file": s.side_file, "stripes": list(s.stripes) if s.stripes is not None else None}


def _unit_batches(unit: dict, write_ids: str, schema: pa.Schema, out_schema: pa.Schema,
                  columns: list[str] | None, *, row_ids: bool = False) -> Iterator[pa.RecordBatch]:
    """Executor side: merge one bucket of one partition, add partition columns, yield Arrow batches (with the
    ROW__ID fields after ``out_schema``'s columns when ``row_ids``)."""
    def src(d: dict) -> DataSource:
        stripes = d.get("stripes")
        return DataSource(d["path"], d["size"], SourceKind(d["kind"]), d["directory"], d["write_id"], d["side_file"],
                          tuple(stripes) if stripes is not None else None)

    plan = MergePlan((BucketPlan(unit["bucket"], tuple(src(d) for d in unit["data"]),
                                 tuple(src(d) for d in unit["deletes"])),))
    wids = ValidReaderWriteIdList.from_string(write_ids)
    data_cols = [c for c in (columns or schema.names) if c in schema.names]
    spark_schema = microsecond_schema(schema)  # Spark holds microseconds: any year, finer digits floored
    for batch in iter_plan_batches(storage_for(unit["location"]), plan, wids, schema=spark_schema,
                                   columns=data_cols, include_row_ids=row_ids, floor_timestamps=True):
        arrays = []
        for f in out_schema:
            if f.name in batch.schema.names:
                arrays.append(batch.column(f.name))
            else:
                value = unit["partition"].get(f.name)  # Hive's partition value text
                text = None if value in (None, "__HIVE_DEFAULT_PARTITION__") else value
                arrays.append(pa.array([text] * batch.num_rows, pa.string()).cast(f.type))
        if row_ids:
            keys = [batch.column(k) for k in KEY_FIELDS]
            yield pa.RecordBatch.from_arrays(arrays + keys, names=out_schema.names + list(KEY_FIELDS))
        else:
            yield pa.RecordBatch.from_arrays(arrays, schema=microsecond_schema(out_schema))


def read_acid(spark: SparkSession, warehouse: AcidWarehouse | Metastore | str, table: str, *,
              partition: Mapping[str, Any] | str | None = None, columns: Sequence[str] | None = None) -> DataFrame:
    """The table's rows at one consistent snapshot as a (materialized) Spark DataFrame.

    ``warehouse``: an :class:`AcidWarehouse`, a :class:`Metastore` or a metastore URL. Columns are the data
    columns followed by the partition keys (or ``columns``). Filter the result with Spark as usual.
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    from airflow_acid.client.warehouse import AcidWarehouse

    wh = warehouse if isinstance(warehouse, AcidWarehouse) else AcidWarehouse(warehouse, init=False)
    info = wh.transactional_table(table)
    schema = wh.io.data_schema(info)
    full = wh.io.full_schema(info)
    if columns is not None:
        unknown = [c for c in columns if c not in full.names]
        if unknown:
            raise SchemaMismatchError(f"table {info.full_name}: unknown column(s) {unknown}; columns are {full.names}")
    out_schema = pa.schema([full.field(c) for c in (columns or full.names)])
    spark_schema = from_arrow_schema(out_schema)
    with wh.read_snapshot(info, partition) as snap:
        units: list[str] = []
        for target in snap.targets:
            values = {k.name: target.spec.get(k.name) for k in info.partition_keys}
            units += _plan_units(target.location, snap.write_ids, snap.txns, values)
        wids = snap.write_ids.to_string()
        cols = list(columns) if columns is not None else None
        if not units:
            return spark.createDataFrame([], spark_schema)
        unit_df = spark.createDataFrame([(u,) for u in units], "unit string").repartition(len(units))

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for b in batches:
                for unit in b.column(0).to_pylist():
                    yield from _unit_batches(json.loads(unit), wids, schema, out_schema, cols)

        return unit_df.mapInArrow(run, spark_schema).localCheckpoint(eager=True)
