"""The ``hive_acid`` PySpark data source (Spark 4's Python Data Source API): read an ACID table at one snapshot and
append to or overwrite it as ONE Hive transaction.

    from airflow_acid.client.spark_source import register
    register(spark)                                   # once per session
    df = spark.read.format("hive_acid").option("metastore_url", url).load("db.table")
    df.write.format("hive_acid").mode("append").save("db.table")

Metastore and warehouse: options ``metastore_url`` / ``warehouse``, else Spark conf ``spark.airflow_acid.
metastore_url`` / ``.warehouse`` (read by :func:`register`), else ``AcidWarehouse()``'s embedded default.

Reads: planning opens a READ_ONLY transaction with a SHARED_READ lock and fixes the snapshot; one input partition per
(partition, bucket), a bucket over the split size cut into stripe ranges of its event files — Spark's rule for files:
the table's bytes over the default parallelism, between ``openCostInBytes`` and ``maxPartitionBytes`` (captured by
:func:`register`; option ``split_bytes`` sets it); executors merge base + deltas (:mod:`airflow_acid.acid.merge`)
and heartbeat the read transaction once it is 30 s old, so the Cleaner keeps every file the snapshot selected. The
API has no end-of-query hook: the transaction stays open until ``hive.txn.timeout`` after the last heartbeat, then
the HouseKeeper ends it — :func:`read_snapshot` holds and ends it explicitly instead. Filters on partition columns
prune partitions (Spark still applies every filter); the API (Spark 4.2) passes no column list, so option
``columns`` prunes columns.
Option ``row_id`` adds Hive's ``ROW__ID`` struct as the first column; option ``batch_rows`` caps the rows per Arrow
batch handed to Spark (:data:`MAX_BATCH_ROWS`). The driver's planning workers keep the metastore engine between
queries and every worker keeps its imported modules out of Spark's per-call ``gc.collect()``
(:func:`_freeze_imported_heap`).

Writes: the driver opens the transaction, allocates the write id and locks (SHARED_READ for append, Hive's IOW lock
for overwrite); every task stages its files under the table's hidden ``.hive-staging_acid_<txn>`` directory as
``delta_W_W_S`` with S = the task's partition id (``base_W`` with one ``bucket_<task>`` file per task for overwrite,
Hive's writer-id naming), one staging directory per task attempt; commit moves the successful attempts' files into
place, registers new partitions, records the partitions written and commits; abort (or a failed commit) removes
everything. A retried or speculative task leaves exactly one copy; a job killed before commit leaves only the hidden
staging directory, and its transaction is aborted by the HouseKeeper after ``hive.txn.timeout``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import posixpath
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

try:
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )
except ImportError as exc:  # Spark 3.5: no Python Data Source API
    import pyspark

    raise ImportError(
        f"the hive_acid data source needs Spark 4.0 or later (the Python Data Source API); this is pyspark "
        f"{pyspark.__version__}. On Spark 3.5 read a table with airflow_acid.client.pyspark_reader.read_acid(spark, "
        "warehouse, 'db.table') and write with AcidWarehouse transactions") from exc
from pyspark.sql.types import StructType

from airflow_acid.acid import names
from airflow_acid.acid.codes import DataOperation, LockState, OperationType
from airflow_acid.acid.event_schema import KEY_FIELDS
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.statement_writer import write_base, write_insert_only, write_statement
from airflow_acid.client.errors import SchemaMismatchError, UnsupportedOperationError
from airflow_acid.client.pyspark_reader import _unit_batches, partition_units, plan_partition, split_target
from airflow_acid.metastore.errors import LockNotAcquiredError
from airflow_acid.metastore.locks import lock_component_for
from airflow_acid.metastore.partitions import make_partition_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.datasource import Filter

    from airflow_acid.client.warehouse import AcidWarehouse
    from airflow_acid.metastore import Metastore
    from airflow_acid.metastore.catalog import TableInfo

SHORT_NAME = "hive_acid"
CONF_PREFIX = "spark.airflow_acid."
STAGING_PREFIX = names.SPARK_STAGING_PREFIX
ROW_ID = "ROW__ID"
ROW_ID_TYPE = pa.struct([("writeid", pa.int64()), ("bucketid", pa.int32()), ("rowid", pa.int64())])
MAX_WRITE_TASKS = 4096
"""Statement ids (one per writing task) must fit BucketCodec V1's 12 bits."""
HEARTBEAT_EVERY_S = 30.0
MAX_BATCH_ROWS = 65536
"""At most this many rows per Arrow batch handed to Spark (option ``batch_rows``; 0: the merge's own batches, a
whole stripe). Spark takes a batch whole before turning its rows over, so smaller batches let the JVM work while
the merge goes on."""
DEFAULT_SPLIT_BYTES = 128 * 1024 * 1024
"""At most this many bytes per task (Spark's ``spark.sql.files.maxPartitionBytes``, captured by :func:`register`)."""
DEFAULT_OPEN_COST_BYTES = 4 * 1024 * 1024
"""At least this many per task (Spark's ``spark.sql.files.openCostInBytes``)."""


_frozen_at_modules = 0


def _freeze_imported_heap() -> None:
    """Move the objects alive now (imported modules, mostly) out of the cyclic garbage collector's way, once per
    new set of imported modules.

    Spark keeps its Python workers (the driver's planners and the executors' workers) for the next query and runs a
    full ``gc.collect()`` in each after every call (``pyspark.daemon``); a full collection walks every tracked object,
    so with pyarrow, SQLAlchemy and this package imported it took 0.05-0.09 s per call, four calls a query, about as
    much CPU as the merge itself. ``gc.freeze()`` leaves those objects to reference counting only: they are freed as
    usual when no longer referenced, only a reference cycle among them would stay (import-time objects live as long
    as the process anyway). Frozen only when new modules were imported since the last time, so per-call objects are
    left to the collector."""
    import gc
    import sys

    global _frozen_at_modules
    if len(sys.modules) != _frozen_at_modules:
        gc.freeze()
        _frozen_at_modules = len(sys.modules)


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


_PLANNING_METASTORES: dict[str, Metastore] = {}
"""Metastores kept by the driver's planning workers, by URL (see :func:`open_warehouse`)."""


def open_warehouse(options: Mapping[str, Any], defaults: Mapping[str, Any] | None = None, *,
                   planning: bool = False) -> AcidWarehouse:
    """The warehouse the options (then Spark conf defaults, then the embedded default) point at.

    ``planning``: for what Spark runs on the driver for every query (``schema()``, ``partitions()``) in its planner
    Python workers, which it keeps and reuses: the metastore (engine, connection pool, compiled statements, detected
    schema profile) is kept per URL in the process, so a query does not set up a new engine and compile every
    statement again. Only the engine is kept: every query reads the table and takes its snapshot afresh."""
    from airflow_acid.client.warehouse import AcidWarehouse

    defaults = defaults or {}
    url = options.get("metastore_url") or defaults.get("metastore_url") or None
    location = options.get("warehouse") or defaults.get("warehouse") or None
    if not planning:
        return AcidWarehouse(url, location, init=False)
    from airflow_acid.metastore import Metastore
    from airflow_acid.metastore.store import default_url

    key = url or default_url()
    metastore = _PLANNING_METASTORES.get(key)
    if metastore is None:
        metastore = _PLANNING_METASTORES[key] = Metastore(key)
    return AcidWarehouse(metastore, location, init=False)


def _table_name(options: Mapping[str, Any]) -> str:
    name = options.get("path") or options.get("table")
    if not name:
        raise SchemaMismatchError("hive_acid needs a table: spark.read.format('hive_acid').load('db.table') or "
                                  "df.write.format('hive_acid').save('db.table')")
    return str(name)


def output_schema(wh: AcidWarehouse, info: TableInfo, options: Mapping[str, Any]) -> pa.Schema:
    """What a read returns: [ROW__ID,] data columns then partition columns, or only ``columns`` (in that order)."""
    full = wh.io.full_schema(info)
    wanted = [c.strip() for c in str(options.get("columns") or "").split(",") if c.strip()]
    if wanted:
        lowered = {n.lower(): n for n in full.names}
        unknown = [c for c in wanted if c.lower() not in lowered]
        if unknown:
            raise SchemaMismatchError(f"table {info.full_name}: option columns names unknown column(s) {unknown}; "
                                      f"columns are {full.names}")
        full = pa.schema([full.field(lowered[c.lower()]) for c in wanted])
    if _truthy(options.get("row_id", "false")):
        full = pa.schema([pa.field(ROW_ID, ROW_ID_TYPE), *full])
    return full


class AcidDataSource(DataSource):
    """``spark.read/write.format("hive_acid")`` on an airflow-acid (or Hive) ACID table."""

    conf_defaults: dict[str, str] = {}
    """Spark conf ``spark.airflow_acid.*`` captured by :func:`register` (options win)."""
    prune_partitions: bool = False
    """Whether readers take pushed filters to prune partitions: set by :func:`register`, which turns on the session's
    filter pushdown; the source Spark registers by itself (:mod:`pyspark_hive_acid`) cannot know that setting, and
    Spark refuses a reader with ``pushFilters`` while it is off."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        _freeze_imported_heap()

        with open_warehouse(self.options, self.conf_defaults, planning=True) as wh:
            info = wh.transactional_table(_table_name(self.options))
            return from_arrow_schema(output_schema(wh, info, self.options))

    def reader(self, schema: StructType) -> AcidReader:
        reader = PruningAcidReader if self.prune_partitions else AcidReader
        return reader(dict(self.options), dict(self.conf_defaults), schema)

    def writer(self, schema: StructType, overwrite: bool) -> AcidWriter:
        return AcidWriter(dict(self.options), dict(self.conf_defaults), schema, overwrite)


def register(spark: SparkSession) -> None:
    """Register ``hive_acid`` in ``spark``, with the session's ``spark.airflow_acid.metastore_url`` /
    ``.warehouse`` as defaults; turns on ``spark.sql.python.filterPushdown.enabled`` (a reader with filter pushdown
    is refused without it)."""
    defaults = {key: value for key in ("metastore_url", "warehouse")
                if (value := spark.conf.get(CONF_PREFIX + key, None))}
    defaults.update(_split_conf(spark))
    source = type("AcidDataSource", (AcidDataSource,), {"conf_defaults": defaults, "prune_partitions": True,
                                                        "__module__": __name__})
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")  # partition pruning (Spark 4.1+, off by default)
    spark.dataSource.register(source)


def _split_conf(spark: SparkSession) -> dict[str, str]:
    """How Spark sizes file splits in this session (``maxPartitionBytes``, ``openCostInBytes``, the default
    parallelism), so reads size their tasks the same way; empty where the session does not say (Spark Connect)."""
    out: dict[str, str] = {}
    for key, conf in (("max_partition_bytes", "spark.sql.files.maxPartitionBytes"),
                      ("open_cost_bytes", "spark.sql.files.openCostInBytes")):
        try:
            value = spark.conf.get(conf, None)
        except Exception:  # noqa: BLE001 - a session without that setting: Spark's default applies
            value = None
        if value:
            out[key] = str(_conf_bytes(value))
    try:
        out["parallelism"] = str(int(spark.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: no parallelism-based sizing
        pass
    return out


def _conf_bytes(value: str) -> int:
    """A Spark byte size (``134217728``, ``128m``, ``4MB``) in bytes."""
    text = str(value).strip().lower().removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


_WHOLE_NUMBER_OPTIONS = ("split_bytes", "parallelism", "max_partition_bytes", "open_cost_bytes", "batch_rows")
"""The reader's options that take a whole number ≥ 0."""


def _whole_number(options: Mapping[str, Any], name: str) -> int | None:
    """Option ``name`` as a whole number ≥ 0 (None when not given); anything else is refused, naming the option."""
    value = options.get(name)
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    if not text.isdigit():
        raise ValueError(f"hive_acid option {name!r} must be a whole number ≥ 0, got {value!r}")
    return int(text)


# --- reads ------------------------------------------------------------------------------------------------------


def _partition_matches(filters: Sequence[Filter], values: Mapping[str, Any]) -> bool:
    """Whether a partition (typed key values) can hold rows passing every pushed filter on partition columns.
    (Filters reach readers from Spark 4.1 on, which has the filter classes; Spark 4.0 pushes none.)"""
    from pyspark.sql.datasource import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        IsNotNull,
        IsNull,
        LessThan,
        LessThanOrEqual,
    )

    comparisons = {GreaterThan: lambda a, b: a > b, GreaterThanOrEqual: lambda a, b: a >= b,
                   LessThan: lambda a, b: a < b, LessThanOrEqual: lambda a, b: a <= b}
    lowered = {k.lower(): v for k, v in values.items()}
    for f in filters:
        attribute: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
        key = attribute[0].lower() if len(attribute) == 1 else None
        if key not in lowered:
            continue
        value = lowered[key]
        if isinstance(f, IsNull):
            ok = value is None
        elif isinstance(f, IsNotNull):
            ok = value is not None
        elif value is None:
            ok = False
        elif isinstance(f, EqualTo):
            ok = value == f.value
        elif isinstance(f, In):
            ok = value in f.value
        else:
            try:
                ok = comparisons[type(f)](value, getattr(f, "value"))  # noqa: B009 - not every Filter has one
            except (KeyError, TypeError):
                ok = True
        if not ok:
            return False
    return True


def _typed_partition_values(info: TableInfo, spec: Mapping[str, str]) -> dict[str, Any]:
    from airflow_acid.client.table_schema import arrow_type

    out: dict[str, Any] = {}
    for key in info.partition_keys:
        text = spec.get(key.name)
        if text in (None, "__HIVE_DEFAULT_PARTITION__"):
            out[key.name] = None
            continue
        try:
            out[key.name] = pa.array([text]).cast(arrow_type(key.type))[0].as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            out[key.name] = text
    return out


@dataclass(frozen=True)
class Snapshot:
    """A read snapshot handed from the driver to the data source (option ``snapshot``): the open read txn, its
    ValidTxnList and the table's ValidWriteIdList."""

    txn_id: int
    txns: str
    write_ids: str

    def to_json(self) -> str:
        return json.dumps({"txn_id": self.txn_id, "txns": self.txns, "write_ids": self.write_ids})

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        doc = json.loads(text)
        return cls(int(doc["txn_id"]), doc["txns"], doc["write_ids"])


class AcidReader(DataSourceReader):
    """Plans (partition, bucket) units at one snapshot; executors merge them."""

    def __init__(self, options: dict[str, Any], defaults: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.defaults = defaults
        self.schema = schema
        self.partition_filters: list[Filter] = []
        for name in _WHOLE_NUMBER_OPTIONS:  # refused while planning, not in every task
            _whole_number(options, name)
        batch_rows = _whole_number(options, "batch_rows")
        self.batch_rows = MAX_BATCH_ROWS if batch_rows is None else batch_rows

    def partitions(self) -> Sequence[InputPartition]:
        from airflow_acid.acid.writeids import ValidReaderWriteIdList, ValidTxnList

        _freeze_imported_heap()

        wh = open_warehouse(self.options, self.defaults, planning=True)
        try:
            info = wh.transactional_table(_table_name(self.options))
            out_schema = output_schema(wh, info, self.options)
            given = self.options.get("snapshot")
            opened_at: float | None = None  # when the transaction last heartbeat, for the executors' first beat
            if given:
                snap = Snapshot.from_json(given)
                txns = ValidTxnList.from_string(snap.txns)
                write_ids = ValidReaderWriteIdList.from_string(snap.write_ids)
                targets = wh.io.partition_targets(info)
            else:
                opened_at = time.time()
                read = wh.read_snapshot(info).__enter__()
                txn_id = read.detach()  # planning ends here; executors heartbeat it, hive.txn.timeout ends it
                snap = Snapshot(int(txn_id or 0), read.txns.to_string(), read.write_ids.to_string())
                txns, write_ids, targets = read.txns, read.write_ids, read.targets
            planned = []
            for target in targets:
                if info.is_partitioned and not _partition_matches(
                        self.partition_filters, _typed_partition_values(info, target.spec)):
                    continue
                values = {k.name: target.spec.get(k.name) for k in info.partition_keys}
                part = plan_partition(target.location, write_ids, txns, values)
                if part is not None:
                    planned.append(part)
            split_bytes = self._split_bytes(sum(p.data_bytes for p in planned))
            common = {"snapshot": snap.to_json(), "schema": _schema_bytes(wh.io.data_schema(info)),
                      "out": _schema_bytes(out_schema), "metastore_url": _real_url(wh),
                      "heartbeat": self.options.get("heartbeat", "true"), "opened_at": opened_at}
            units = [InputPartition(json.dumps({"unit": unit, **common}))
                     for part in planned for unit in partition_units(part, split_bytes)]
            return units or [InputPartition(json.dumps({"empty": True}))]
        finally:
            wh.close()

    def _split_bytes(self, total_bytes: int) -> int:
        """Bytes per task: option ``split_bytes``, else Spark's own rule (:func:`split_target`) with the session's
        settings captured by :func:`register`."""
        given = _whole_number(self.options, "split_bytes")
        if given:
            return given

        def setting(key: str, default: int) -> int:
            value = _whole_number(self.options, key) or _whole_number(self.defaults, key)
            return value if value else default

        parallelism = _whole_number(self.options, "parallelism") or _whole_number(self.defaults, "parallelism")
        return split_target(total_bytes, parallelism=parallelism or None,
                            max_partition_bytes=setting("max_partition_bytes", DEFAULT_SPLIT_BYTES),
                            open_cost_bytes=setting("open_cost_bytes", DEFAULT_OPEN_COST_BYTES))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        _freeze_imported_heap()
        spark_arrow = _arrow_schema_of(self.schema)
        doc = json.loads(partition.value)
        if doc.get("empty"):
            return
        snap = Snapshot.from_json(doc["snapshot"])
        beat = _Heartbeat(doc["metastore_url"], snap.txn_id, since=doc.get("opened_at")) \
            if _truthy(doc["heartbeat"]) else None
        schema, out = _schema_of(doc["schema"]), _schema_of(doc["out"])
        row_id = ROW_ID in out.names
        data_out = pa.schema([f for f in out if f.name != ROW_ID])
        unit = json.loads(doc["unit"])
        max_rows = self.batch_rows
        for batch in _unit_batches(unit, snap.write_ids, schema, data_out, data_out.names, row_ids=row_id):
            if beat is not None:
                beat.maybe()
            conformed = _conform_batch(batch, spark_arrow, row_id)
            if max_rows <= 0 or conformed.num_rows <= max_rows:
                yield conformed
                continue
            for start in range(0, conformed.num_rows, max_rows):
                yield conformed.slice(start, max_rows)


class PruningAcidReader(AcidReader):
    """An :class:`AcidReader` that keeps pushed filters to prune partitions (Spark 4.1+ with
    ``spark.sql.python.filterPushdown.enabled``, which :func:`register` turns on)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Keep the filters for partition pruning; Spark still applies each one to the rows."""
        self.partition_filters = list(filters)
        yield from filters


def _arrow_schema_of(schema: StructType) -> pa.Schema:
    """Spark's Arrow schema of ``schema`` with UTC timestamps (``timezone="UTC"`` from Spark 4.1 on; Spark 4.0's
    ``timestamp_utc`` defaults to UTC)."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


def _conform_batch(batch: pa.RecordBatch, target: pa.Schema, row_id: bool) -> pa.RecordBatch:
    """A merged batch in exactly the Arrow types Spark expects (timestamps as UTC microseconds, map/struct field
    names as Spark writes them), with ROW__ID built from the event keys."""
    arrays = []
    for field in target:
        if field.name == ROW_ID and row_id:
            col = pa.StructArray.from_arrays(
                [batch.column(KEY_FIELDS[0]).cast(pa.int64()), batch.column(KEY_FIELDS[1]).cast(pa.int32()),
                 batch.column(KEY_FIELDS[2]).cast(pa.int64())], names=["writeid", "bucketid", "rowid"])
        else:
            col = batch.column(field.name)
        arrays.append(col if col.type == field.type else col.cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _real_url(wh: AcidWarehouse) -> str:
    """The metastore URL with its password, for executors' heartbeats (the same secret the options carry)."""
    return wh.metastore.db.engine.url.render_as_string(hide_password=False)


def _schema_bytes(schema: pa.Schema) -> str:
    return schema.serialize().to_pybytes().hex()


def _schema_of(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(text)))


class _Heartbeat:
    """Executor side: keep the driver's transaction alive while a task works (at most every 30 s). A metastore the
    executor cannot reach is logged once; the transaction then lives for hive.txn.timeout."""

    def __init__(self, url: str, txn_id: int, *, since: float | None = None) -> None:
        """``since``: when the driver opened (or last heartbeat) the transaction, in epoch seconds; a task starting
        within :data:`HEARTBEAT_EVERY_S` of it beats first when that much time has passed, not at once (a short
        read then opens no metastore connection at all)."""
        self.url, self.txn_id, self.last = url, txn_id, 0.0
        if since is not None:
            age = time.time() - float(since)
            if 0 <= age < HEARTBEAT_EVERY_S:
                self.last = time.monotonic() - age
        self.failed = False
        self.maybe()

    def maybe(self) -> None:
        if self.failed or time.monotonic() - self.last < HEARTBEAT_EVERY_S:
            return
        self.last = time.monotonic()
        from airflow_acid.metastore import Metastore

        try:
            with Metastore(self.url) as ms:
                ms.txns.heartbeat(self.txn_id)
        except Exception as exc:  # noqa: BLE001 - the read or write goes on; the txn lives until hive.txn.timeout
            import logging

            logging.getLogger(__name__).warning("cannot heartbeat transaction %s from this executor: %s",
                                                self.txn_id, exc)
            self.failed = True


@contextmanager
def read_snapshot(spark: SparkSession, table: str, *, metastore_url: str | None = None,
                  warehouse: str | None = None, **options: Any) -> Iterator[DataFrame]:
    """``with read_snapshot(spark, "db.t") as df:`` — the driver holds the read transaction (heartbeated) while the
    block runs and commits it at the end, so every action on ``df`` in the block sees the same snapshot."""
    register(spark)
    opts = {k: v for k, v in {"metastore_url": metastore_url, "warehouse": warehouse}.items() if v}
    opts.update({k: str(v) for k, v in options.items()})
    wh = open_warehouse(opts, {key: value for key in ("metastore_url", "warehouse")
                               if (value := spark.conf.get(CONF_PREFIX + key, None))})
    try:
        info = wh.transactional_table(table)
        with wh.read_snapshot(info) as snap:
            snapshot = Snapshot(int(snap.txn_id or 0), snap.txns.to_string(), snap.write_ids.to_string())
            reader = spark.read.format(SHORT_NAME).options(**opts).option("snapshot", snapshot.to_json())
            yield reader.option("heartbeat", "false").load(table)
    finally:
        wh.close()


# --- writes -----------------------------------------------------------------------------------------------------


@dataclass
class SparkTxn:
    """One Hive write transaction driven from Spark: opened on the driver (write id allocated, table locked),
    tasks stage their files (:meth:`stage`, picklable state only), the driver moves the successful attempts' files
    into place and commits (:meth:`commit`) or removes everything and aborts (:meth:`abort`)."""

    options: dict[str, Any]
    defaults: dict[str, str]
    table: str
    location: str
    insert_only: bool
    partition_keys: list[str]
    bucket_cols: list[str]
    bucket_types: list[str]
    num_buckets: int
    data_schema: str
    full_schema: str
    metastore_url: str
    txn_id: int = 0
    write_id: int = 0
    orc_properties: dict[str, str] = dataclasses.field(default_factory=dict)
    """The table's ``orc.*`` properties (compression, sizes): every file the tasks write follows them."""

    @property
    def staging(self) -> str:
        return posixpath.join(self.location, names.format_spark_staging(self.txn_id))

    @classmethod
    def open(cls, options: dict[str, Any], defaults: dict[str, str], operation: DataOperation, *,
             what: str) -> SparkTxn:
        """Open the transaction, allocate the write id and lock the table for ``operation``."""
        wh = open_warehouse(options, defaults)
        try:
            info = wh.transactional_table(_table_name(options))
            types = {c.name: c.type for c in info.columns}
            if info.bucket_cols and info.num_buckets > 0:
                from airflow_acid.client.bucketing import check_bucketing_version
                check_bucketing_version(info.properties, info.full_name)
            txn = cls(options, defaults, info.full_name, info.location, info.is_insert_only,
                      [k.name for k in info.partition_keys], list(info.bucket_cols),
                      [types[c] for c in info.bucket_cols], info.num_buckets,
                      _schema_bytes(wh.io.data_schema(info)), _schema_bytes(wh.io.full_schema(info)), _real_url(wh))
            txn.orc_properties = {k: v for k, v in info.properties.items() if k.lower().startswith("orc.")}
            ms = wh.metastore
            txn.txn_id = ms.txns.open_txn(user=wh.user, host=wh.host, agent_info=f"airflow-acid spark {what} "
                                                                                   f"{info.full_name}")
            try:
                txn.write_id = ms.txns.allocate_write_id(txn.txn_id, info.database, info.name)
                comp = lock_component_for(operation, info.database, info.name, None, conf=wh.conf,
                                          is_dynamic_partition_write=info.is_partitioned)
                response = ms.locks.lock([comp], txn_id=txn.txn_id, user=wh.user, host=wh.host,
                                         agent_info=f"airflow-acid spark {what} {info.full_name}")
                if response.state is not LockState.ACQUIRED:
                    raise LockNotAcquiredError(f"could not lock {info.full_name} for the Spark {what}: "
                                               f"{response.error_message or response.state.display}")
            except BaseException:
                ms.txns.abort(txn.txn_id)
                raise
            return txn
        finally:
            wh.close()

    def schemas(self) -> tuple[pa.Schema, pa.Schema]:
        """(data columns, data then partition columns)."""
        return _schema_of(self.data_schema), _schema_of(self.full_schema)

    # executor side
    def stage(self, task: int, attempt: int, *, statement: int, inserts: pa.Table | None = None,
              deletes: pa.Table | None = None, base: bool = False) -> list[dict[str, Any]]:
        """Write one task attempt's events under the staging directory: ``inserts`` (full-schema rows) as
        ``delta_W_W_S`` (``base_W`` when ``base``), ``deletes`` (KEY_FIELDS plus the partition columns) as
        ``delete_delta_W_W_S``; one entry per partition directory for :meth:`commit`."""
        from airflow_acid.acid.fs import storage_for
        from airflow_acid.client.bucketing import assign_buckets

        if statement >= MAX_WRITE_TASKS:
            raise UnsupportedOperationError(
                f"table {self.table}: a Spark write to an ACID table takes at most {MAX_WRITE_TASKS} statement ids "
                "(one per task and clause); coalesce the DataFrame")
        data, _full = self.schemas()
        orc = OrcSettings.from_properties(self.orc_properties)
        bucket_of = (lambda t: assign_buckets(t, self.bucket_cols, self.bucket_types, self.num_buckets)) \
            if self.bucket_cols and self.num_buckets > 0 else None
        root = posixpath.join(self.staging, f"{task:05d}_{attempt}")
        groups: dict[str, tuple[dict[str, str], pa.Table | None, pa.Table | None]] = {}
        for kind, rows in (("inserts", inserts), ("deletes", deletes)):
            if rows is None or not rows.num_rows:
                continue
            for name, spec, part in self._by_partition(rows):
                current = groups.get(name, (spec, None, None))
                groups[name] = (spec, part if kind == "inserts" else current[1],
                                part if kind == "deletes" else current[2])
        entries = []
        for name, (spec, ins, dels) in groups.items():
            where = posixpath.join(root, name or "_table")
            dirs = []
            if ins is not None:
                ins = ins.select(data.names)
                dirname = names.format_base(self.write_id) if base else \
                    names.format_delta(self.write_id, self.write_id, statement)
                if self.insert_only:
                    write_insert_only(posixpath.join(where, dirname), ins, bucket_of=bucket_of, writer_id=task,
                                      orc=orc)
                elif base and bucket_of is not None:  # several tasks may write one bucket: merged at commit
                    write_base(where, self.write_id, data, ins, bucket_of=bucket_of, statement_id=task, orc=orc)
                elif base:
                    write_base(where, self.write_id, data, ins, bucket_of=functools.partial(_fill, bucket=task),
                               orc=orc)
                else:
                    write_statement(where, self.write_id, statement, data, inserts=ins, bucket_of=bucket_of,
                                    orc=orc)
                dirs.append(dirname)
            if dels is not None:
                write_statement(where, self.write_id, statement, data, deletes=dels.select(list(KEY_FIELDS)),
                                orc=orc)
                dirs.append(names.format_delta(self.write_id, self.write_id, statement, delete=True))
            for dirname in dirs:
                staged = posixpath.join(where, dirname)
                entries.append({"partition": name or None, "spec": spec, "staged": staged, "dirname": dirname,
                                "files": [f.path for f in storage_for(staged).list_files()]})
        return entries

    def _by_partition(self, rows: pa.Table) -> Iterator[tuple[str, dict[str, str], pa.Table]]:
        if not self.partition_keys:
            yield "", {}, rows
            return
        keys = rows.select(self.partition_keys).to_pylist()
        by_name: dict[str, tuple[dict[str, str], list[int]]] = {}
        for i, r in enumerate(keys):
            spec = {k: _partition_text(r[k]) for k in self.partition_keys}
            by_name.setdefault(make_partition_name(spec), (spec, []))[1].append(i)
        for name, (spec, idx) in by_name.items():
            yield name, spec, rows.take(pa.array(idx))

    # driver side
    def commit(self, entries: Sequence[dict[str, Any]], operation: OperationType) -> None:
        """Move the staged files of the successful attempts into place, register new partitions, record the
        partitions written and commit; on any failure remove what was moved and abort."""
        wh = open_warehouse(self.options, self.defaults)
        moved: list[str] = []
        fs = None
        try:
            info = wh.transactional_table(self.table)
            fs, _root = wh.io.storage(self.location)
            written: dict[str | None, dict[str, str]] = {}
            same_name: dict[str, list[str]] = {}  # final path -> staged copies (several tasks wrote one bucket)
            for entry in entries:
                spec = entry["spec"]
                location = wh.io.partition_target(info, spec).location if info.is_partitioned else self.location
                _, final_root = wh.io.storage(posixpath.join(location, entry["dirname"]))
                _, staged_root = wh.io.storage(entry["staged"])
                fs.makedirs(final_root, exist_ok=True)
                for file in entry["files"]:
                    same_name.setdefault(posixpath.join(final_root, file), []).append(
                        posixpath.join(staged_root, file))
                written[entry["partition"]] = spec
            for final, staged in same_name.items():
                moved.append(final)
                if len(staged) == 1 or posixpath.basename(final) == names.ORC_ACID_VERSION_FILE:
                    fs.mv(staged[0], final)
                elif self.insert_only:  # plain ORC files: Hive's _copy_N names for further writers of a bucket
                    for copy, path in enumerate(staged):
                        target = final if copy == 0 else f"{final}_copy_{copy}"
                        fs.mv(path, target)
                        moved.append(target)
                else:
                    _merge_event_files(fs, staged, final, self.orc_properties)
            self._remove_staging(wh)
            ms = wh.metastore
            if info.is_partitioned and written:
                for spec in written.values():
                    ms.catalog.add_partition(info.database, info.name, spec,
                                             location=wh.io.partition_target(info, spec).location, if_not_exists=True)
                ms.txns.add_dynamic_partitions(self.txn_id, info.database, info.name,
                                               [n for n in written if n], operation, self.write_id)
            ms.txns.commit(self.txn_id)
        except BaseException:
            for path in moved:
                try:
                    if fs is not None:
                        fs.rm(path)
                except OSError:
                    pass
            self._remove_staging(wh)
            try:
                wh.metastore.txns.abort(self.txn_id)
            except Exception:  # noqa: BLE001 - already aborted (timeout, conflict): the files are gone anyway
                pass
            raise
        finally:
            wh.close()

    def abort(self) -> None:
        """Remove every staged file and abort the transaction."""
        wh = open_warehouse(self.options, self.defaults)
        try:
            self._remove_staging(wh)
            wh.metastore.txns.abort(self.txn_id)
        finally:
            wh.close()

    def _remove_staging(self, wh: AcidWarehouse) -> None:
        fs, root = wh.io.storage(self.staging)
        if fs.exists(root):
            fs.rm(root, recursive=True)


def _merge_event_files(fs: Any, staged: Sequence[str], final: str, orc_properties: Mapping[str, str]) -> None:
    """One ``bucket_N`` from several tasks' files of that bucket (an overwrite of a bucketed table). Each task's
    events carry its own statement id in the bucket property, so concatenating the files in task order keeps the
    events sorted and their ROW__IDs distinct; streamed stripe by stripe."""
    from airflow_acid.acid.event_reader import FileFormat, open_data_file
    from airflow_acid.acid.event_writer import FileKind
    from airflow_acid.acid.fast_event_writer import AcidOrcFileWriter
    from airflow_acid.acid.fs import Storage
    from airflow_acid.acid.hive_chars import annotated, schema_has_char_types
    from airflow_acid.acid.orc_tail import column_char_types, read_file_tail

    def key(path: str) -> str:  # the staging directory names start with the zero-padded task number
        return path.split(STAGING_PREFIX, 1)[-1]

    out = Storage(fs, posixpath.dirname(final), {})
    writer = AcidOrcFileWriter(out, posixpath.basename(final), kind=FileKind.BASE,
                               orc=OrcSettings.from_properties(orc_properties), spool=True)
    for path in sorted(staged, key=key):
        source = Storage(fs, posixpath.dirname(path), {})
        name = posixpath.basename(path)
        f = open_data_file(source, name, expect=FileFormat.ACID)
        typed = annotated(f.file_schema, column_char_types(read_file_tail(source.open_input(name)).footer))
        for batch in f.iter_batches(keys=True):  # char/varchar keep their types (field metadata, acid/hive_chars.py)
            if schema_has_char_types(typed):
                batch = batch.cast(pa.schema([fl.with_name(n) for fl, n in zip(typed, batch.schema.names)]))
            writer.write(batch)
    writer.close()
    for path in staged:
        fs.rm(path)


def task_attempt() -> tuple[int, int]:
    """(partition id, attempt number) of the running Spark task; (0, 0) outside one."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return (ctx.partitionId(), ctx.attemptNumber()) if ctx is not None else (0, 0)


class AcidWriter(DataSourceArrowWriter):
    """``df.write.format("hive_acid")``: one Hive transaction for the whole write (see the module docstring)."""

    def __init__(self, options: dict[str, Any], defaults: dict[str, str], schema: StructType, overwrite: bool) -> None:
        self.overwrite = overwrite
        with open_warehouse(options, defaults) as wh:
            info = wh.transactional_table(_table_name(options))
            full = wh.io.full_schema(info)
            names_given = [f.name.lower() for f in schema.fields]
            missing = [n for n in full.names if n.lower() not in names_given]
            extra = [n for n in schema.names if n.lower() not in {c.lower() for c in full.names}]
            if missing or extra:
                raise SchemaMismatchError(
                    f"table {info.full_name}: the DataFrame's columns {schema.names} do not match the table's "
                    f"{full.names} (data columns, then partition columns)"
                    + (f"; missing {missing}" if missing else "") + (f"; unknown {extra}" if extra else ""))
        self.txn = SparkTxn.open(options, defaults, DataOperation.INSERT_OVERWRITE if overwrite
                                 else DataOperation.INSERT, what="overwrite" if overwrite else "write")

    @property
    def txn_id(self) -> int:
        return self.txn.txn_id

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteMessage:
        from airflow_acid.client.table_schema import to_arrow_table

        _freeze_imported_heap()
        task, attempt = task_attempt()
        beat = _Heartbeat(self.txn.metastore_url, self.txn.txn_id)
        batches = []
        for batch in iterator:
            batches.append(batch)
            beat.maybe()
        if not batches:
            return WriteMessage(task, attempt, [])
        _data, full = self.txn.schemas()
        rows = to_arrow_table(pa.Table.from_batches(batches), full, table=self.txn.table)
        entries = self.txn.stage(task, attempt, statement=0 if self.overwrite else task, inserts=rows,
                                 base=self.overwrite)
        return WriteMessage(task, attempt, entries)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        entries = [e for m in messages if isinstance(m, WriteMessage) for e in m.entries]
        self.txn.commit(entries, OperationType.UPDATE if self.overwrite else OperationType.INSERT)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.txn.abort()


def _fill(rows: pa.Table, *, bucket: int) -> Any:
    import numpy as np

    return np.full(rows.num_rows, bucket, dtype=np.int64)


def _partition_text(value: Any) -> str:
    from airflow_acid.client.table_io import HIVE_DEFAULT_PARTITION

    if value is None:
        return HIVE_DEFAULT_PARTITION
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


@dataclass
class WriteMessage(WriterCommitMessage):
    """What one successful task attempt staged: per partition, the staged directory and its files."""

    task: int
    attempt: int
    entries: list[dict[str, Any]]


__all__ = ["AcidDataSource", "SHORT_NAME", "Snapshot", "read_snapshot", "register"]
