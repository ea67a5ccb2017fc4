"""Table IO beneath the warehouse's user verbs, shared by transactions, streaming ingest and reads: table names,
storage, Arrow schemas, partitions (where rows go, where they are read) and snapshot reads.

:class:`~airflow_acid.client.warehouse.AcidWarehouse` shows the user verbs (create, alter, drop, insert, update,
delete, merge, read, stream); what they share to read and write a table's files lives here, as its ``io``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid.codes import DataOperation, LockState, TxnType
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import VirtualColumns, read_acid_table
from airflow_acid.acid.writeids import ValidTxnList, ValidWriteIdList
from airflow_acid.client.bucketing import assign_buckets, check_bucketing_version
from airflow_acid.client.errors import NotTransactionalError, ReadLockError, SchemaMismatchError
from airflow_acid.client.table_schema import arrow_schema, arrow_type, to_arrow_table
from airflow_acid.client.text_table import read_text_directory
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.heartbeat import Heartbeater
from airflow_acid.metastore.locks import lock_component_for
from airflow_acid.metastore.partitions import make_partition_name, parse_partition_name, partition_location

log = logging.getLogger(__name__)

DEFAULT_DATABASE = "default"
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""The partition value Hive uses for NULL partition keys."""


@dataclass(frozen=True)
class PartitionTarget:
    """Where one statement reads/writes: a partition (Hive name and spec) or the unpartitioned table root."""

    name: str | None
    location: str
    spec: dict[str, str] = field(default_factory=dict)


class TableIO:
    """How a warehouse's tables are found, read and written: one metastore, one filesystem (None: by URL), and the
    user and host its transactions and locks are recorded under."""

    def __init__(self, metastore: Metastore, filesystem: fsspec.AbstractFileSystem | None, *, user: str,
                 host: str) -> None:
        self.metastore = metastore
        self.conf = metastore.conf
        self.filesystem = filesystem
        self.user = user
        self.host = host

    # --- names and storage -----------------------------------------------------------------------------

    @staticmethod
    def split_name(name: str) -> tuple[str, str]:
        """``"db.table"`` → (db, table); ``"table"`` → ("default", table)."""
        db, sep, table = str(name).partition(".")
        return (db.lower(), table.lower()) if sep else (DEFAULT_DATABASE, db.lower())

    def qualified_name(self, name: str) -> str:
        return ".".join(self.split_name(name))

    def storage(self, location: str) -> tuple[fsspec.AbstractFileSystem, str]:
        """(filesystem, root path) of a location."""
        s = storage_for(location, self.filesystem)
        return s.fs, s.root

    # --- tables ----------------------------------------------------------------------------------------

    def table(self, name: str) -> TableInfo:
        """The table's catalog entry (NoSuchObjectError if it does not exist)."""
        return self.metastore.catalog.get_table(*self.split_name(name))

    def transactional_table(self, name: str) -> TableInfo:
        """The table, refusing non-transactional ones with a clear error."""
        info = self.table(name)
        if info.is_text:
            raise NotTransactionalError(
                f"table {info.full_name} is a text table (STORED AS TEXTFILE): airflow-acid reads it and INSERTs into "
                "it, but UPDATE, DELETE, MERGE and TRUNCATE need an ACID table — change it in Hive, or copy its rows "
                "into an ACID table with INSERT INTO acid_table SELECT … FROM " + info.full_name)
        if not info.is_transactional:
            raise NotTransactionalError(
                f"table {info.full_name} is not transactional (transactional={info.property('transactional')!r}); "
                "airflow-acid reads and writes only ACID tables — convert it with "
                "ALTER TABLE … SET TBLPROPERTIES ('transactional'='true'), or create a transactional table")
        return info

    # --- schemas and partitions ------------------------------------------------------------------------

    def data_schema(self, info: TableInfo) -> pa.Schema:
        """Arrow schema of the data columns (what ACID files hold)."""
        return arrow_schema(info.columns)

    def full_schema(self, info: TableInfo) -> pa.Schema:
        """Data columns followed by partition keys (what reads return)."""
        return pa.schema(list(self.data_schema(info)) + list(arrow_schema(info.partition_keys)))

    def bucket_assigner(self, info: TableInfo) -> Callable[[pa.Table], np.ndarray] | None:
        """Rows → bucket ids by Hive bucketing version 2; None for unbucketed tables (all rows in bucket 0)."""
        if not info.bucket_cols or info.num_buckets <= 0:
            return None
        check_bucketing_version(info.properties, info.full_name)
        types = {c.name: c.type for c in info.columns}
        cols = list(info.bucket_cols)
        return lambda rows: assign_buckets(rows, cols, [types[c] for c in cols], info.num_buckets)

    def _partition_locations(self, info: TableInfo) -> dict[str, str]:
        return {p.name: p.location for p in self.metastore.catalog.list_partitions(info.database, info.name)}

    def partition_target(self, info: TableInfo, spec: Mapping[str, Any] | str | None,
                         known: Mapping[str, str] | None = None) -> PartitionTarget:
        """Where ``spec`` lives (unknown keys / missing keys / non-partitioned table → InvalidInputError)."""
        if not info.is_partitioned and spec is None:
            return PartitionTarget(None, info.location)
        if isinstance(spec, str):
            spec = parse_partition_name(spec)
        normalized = info.partition_spec(spec or {})
        for key in info.partition_keys:
            value = normalized[key.name]
            if value != HIVE_DEFAULT_PARTITION:
                try:
                    pa.array([value]).cast(arrow_type(key.type))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    raise SchemaMismatchError(f"table {info.full_name}: partition value {key.name}={value!r} is not "
                                              f"a valid {key.type}") from None
        name = make_partition_name(normalized)
        known = self._partition_locations(info) if known is None else known
        return PartitionTarget(name, known.get(name) or partition_location(info.location, name), normalized)

    def partition_targets(self, info: TableInfo, partition: Mapping[str, Any] | str | None = None
                          ) -> list[PartitionTarget]:
        """The table root, the one given partition (if registered), or every registered partition."""
        if not info.is_partitioned:
            if partition is not None:
                info.partition_spec(partition if isinstance(partition, Mapping) else parse_partition_name(partition))
            return [PartitionTarget(None, info.location)]
        if partition is not None:
            known = self._partition_locations(info)
            target = self.partition_target(info, partition, known)
            return [target] if target.name in known else []
        return [PartitionTarget(p.name, p.location, dict(p.spec))
                for p in self.metastore.catalog.list_partitions(info.database, info.name)]

    def split_by_partition(self, info: TableInfo, data: Any, partition: Mapping[str, Any] | str | None
                           ) -> list[tuple[PartitionTarget, pa.Table]]:
        """Validate ``data`` against the table and group it by target partition (static or dynamic)."""
        schema = self.data_schema(info)
        if not info.is_partitioned or partition is not None:
            target = self.partition_target(info, partition)
            return [(target, to_arrow_table(data, schema, table=info.full_name))]
        keys = arrow_schema(info.partition_keys)
        rows = to_arrow_table(data, schema, table=info.full_name, extra=list(keys))
        missing = [k for k in keys.names if k not in rows.column_names]
        if missing:
            raise SchemaMismatchError(
                f"table {info.full_name} is partitioned by {keys.names}: give partition={{...}} or put the partition "
                f"column(s) {missing} in the data")
        if rows.num_rows == 0:
            return []
        known = self._partition_locations(info)
        groups = rows.group_by(keys.names, use_threads=False).aggregate([])
        out = []
        for spec_row in groups.to_pylist():
            mask = None
            for k in keys.names:
                v = spec_row[k]
                term = pc.is_null(rows.column(k)) if v is None else pc.equal(rows.column(k), v)
                mask = term if mask is None else pc.and_(mask, term)
            spec = {k: HIVE_DEFAULT_PARTITION if v is None else (v if isinstance(v, (int, str)) and
                                                                 not isinstance(v, bool) else str(v))
                    for k, v in spec_row.items()}
            out.append((self.partition_target(info, spec, known), rows.filter(mask).select(schema.names)))
        return out

    def read_partition(self, info: TableInfo, target: PartitionTarget, write_ids: ValidWriteIdList,
                       txns: ValidTxnList, *, include_row_ids: bool = False, columns: Sequence[str] | None = None,
                       filter: pc.Expression | None = None, virtual: VirtualColumns = VirtualColumns()) -> pa.Table:
        """Merged rows of one partition at a snapshot, partition columns appended (typed), then the ``virtual``
        columns asked for."""
        schema = self.data_schema(info)
        rows = read_acid_table(target.location, write_ids, txns, filesystem=self.filesystem, schema=schema,
                               columns=columns, filter=filter, include_row_ids=include_row_ids, virtual=virtual)
        if rows.num_columns == 0:  # no data file at all
            empty = pa.schema(list(schema) + virtual.fields()).empty_table()
            rows = empty if columns is None else empty.select([*columns, *(f.name for f in virtual.fields())])
        names = [f.name for f in virtual.fields()]
        extra = rows.select(names)
        rows = self._with_partition_columns(info, target, rows.drop_columns(names))
        for i in range(len(names)):
            rows = rows.append_column(extra.schema.field(i), extra.column(i))
        return rows

    @staticmethod
    def _with_partition_columns(info: TableInfo, target: PartitionTarget, rows: pa.Table) -> pa.Table:
        for key in info.partition_keys:
            typ = arrow_type(key.type)
            value = target.spec.get(key.name)
            scalar = pa.scalar(None, typ) if value in (None, HIVE_DEFAULT_PARTITION) else pa.scalar(value).cast(typ)
            rows = rows.append_column(pa.field(key.name, typ), pa.repeat(scalar, rows.num_rows) if rows.num_rows
                                      else pa.array([], typ))
        return rows

    def read_text_partition(self, info: TableInfo, target: PartitionTarget) -> pa.Table:
        """A text table's rows in one partition (or the table root), partition columns appended (typed)."""
        fs, root = self.storage(target.location)
        rows = read_text_directory(fs, root, self.data_schema(info), [c.type for c in info.columns],
                                   info.serde_params, table=info.full_name)
        return self._with_partition_columns(info, target, rows)

    def read_snapshot(self, info: TableInfo, partition: Mapping[str, Any] | str | None = None) -> ReadSnapshot:
        """Open a READ_ONLY transaction with a SHARED_READ lock and the snapshot of ``info`` (context manager)."""
        return ReadSnapshot(self, info, partition)


class ReadSnapshot:
    """A reader's open READ_ONLY transaction: ``.txns``, ``.write_ids`` and the partitions to read."""

    def __init__(self, io: TableIO, info: TableInfo, partition: Mapping[str, Any] | str | None) -> None:
        self._io = io
        self.info = info
        self._partition = partition
        self.txn_id: int | None = None
        self._heartbeater: Heartbeater | None = None

    def __enter__(self) -> ReadSnapshot:
        ms, wh, info = self._io.metastore, self._io, self.info
        self.targets = wh.partition_targets(info, self._partition)  # validates the partition spec first
        txn_id = self.txn_id = ms.txns.open_txn(user=wh.user, host=wh.host, txn_type=TxnType.READ_ONLY,
                                                agent_info=f"airflow-acid read {info.full_name}")
        try:
            self._heartbeater = Heartbeater(ms.txns.heartbeat, lambda: [txn_id], wh.conf.txn_timeout_s / 2,
                                            name=f"acid-heartbeat-read-{self.txn_id}").start()
            parts = [t.name for t in self.targets] if self._partition is not None and self.targets else [None]
            comps = [lock_component_for(DataOperation.SELECT, info.database, info.name, p, conf=wh.conf)
                     for p in parts]
            response = ms.locks.lock(comps, txn_id=self.txn_id, user=wh.user, host=wh.host,
                                     agent_info=f"airflow-acid read {info.full_name}")
            if response.state is not LockState.ACQUIRED:
                raise ReadLockError(f"cannot read {info.full_name}: {response.error_message or 'lock not acquired'}; "
                                    "retry once the exclusive operation (e.g. DROP TABLE) has finished")
            self.txns = ms.snapshots.valid_txn_list(self.txn_id)
            self.write_ids = ms.snapshots.valid_write_id_list(info.full_name, self.txns)
            # List the partitions again now that the snapshot is fixed: a writer registers a new partition before
            # it commits, so every partition a txn in this snapshot wrote is listed (the first listing may be older).
            self.targets = wh.partition_targets(info, self._partition)
        except BaseException:
            self._end(commit=False)
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._end(commit=exc_type is None)

    def detach(self) -> int | None:
        """Stop heartbeating and leave the transaction open (a planner handing the snapshot to executors that
        heartbeat it themselves); it ends by its own commit elsewhere or by hive.txn.timeout. Returns its id."""
        if self._heartbeater is not None:
            self._heartbeater.stop()
            self._heartbeater = None
        txn_id, self.txn_id = self.txn_id, None
        return txn_id

    def _end(self, *, commit: bool) -> None:
        if self._heartbeater is not None:
            self._heartbeater.stop()
        if self.txn_id is None:
            return
        txns = self._io.metastore.txns
        try:
            txns.commit(self.txn_id) if commit else txns.abort(self.txn_id)
        except Exception as exc:  # noqa: BLE001 - a read-only txn that timed out has nothing to undo
            log.warning("ending read transaction %s: %s", self.txn_id, exc)
