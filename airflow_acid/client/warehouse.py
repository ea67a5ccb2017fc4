"""The client entry point: ``AcidWarehouse`` — tables, transactions, streaming ingest and snapshot reads.

Defaults are the embedded ones: the SQLite metastore under ``$AIRFLOW_ACID_HOME`` (``~/airflow-acid``) and a
local ``warehouse`` folder beside it. Tables are named ``"db.table"`` or ``"table"`` (database ``default``,
whose location is the warehouse folder itself, as in Hive); a database ``d`` lives in ``<warehouse>/d.db``.

>>> wh = AcidWarehouse("sqlite:////tmp/ms.db", "/tmp/wh")
>>> wh.create_table("employee", [("id", "int"), ("name", "string"), ("salary", "int")])
>>> with wh.transaction() as txn:
...     txn.insert("employee", [(1, "Jerry", 5000), (2, "Tom", 8000)])
...     txn.update("employee", set={"salary": 7000}, where=pc.field("id") == 2)
>>> wh.read("employee")
"""

from __future__ import annotations

import getpass
import logging
import os
import posixpath
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid.codes import DataOperation, LockState, LockType, OperationType, TxnType
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.storage_options import StorageOptions, protocol_of
from airflow_acid.acid.writeids import ValidTxnList, ValidWriteIdList
from airflow_acid.client.bucketing import assign_buckets
from airflow_acid.client.conversion import check_convertible
from airflow_acid.client.errors import NotTransactionalError, ReadLockError, SchemaMismatchError
from airflow_acid.client.predicates import Predicate, as_expression, check_predicate
from airflow_acid.client.streaming import StreamingConnection
from airflow_acid.client.table_schema import arrow_schema, arrow_type, hive_type, to_arrow_table
from airflow_acid.client.transaction import Transaction
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.catalog import (
    TRANSACTIONAL_PROPERTIES,
    ColumnInfo,
    PartitionInfo,
    TableInfo,
    merge_properties,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.metastore.heartbeat import Heartbeater
from airflow_acid.metastore.locks import LockComponent, lock_component_for
from airflow_acid.metastore.partitions import make_partition_name, parse_partition_name, partition_location
from airflow_acid.metastore.store import HOME_ENV, default_url

log = logging.getLogger(__name__)

DEFAULT_DATABASE = "default"
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""The partition value Hive uses for NULL partition keys."""

ColumnsSpec: TypeAlias = Sequence[tuple[str, str] | tuple[str, str, str | None]] | Mapping[str, str] | pa.Schema


@dataclass(frozen=True)
class PartitionTarget:
    """Where one statement reads/writes: a partition (Hive name and spec) or the unpartitioned table root."""

    name: str | None
    location: str
    spec: dict[str, str] = field(default_factory=dict)


def _columns(spec: ColumnsSpec | None) -> list[tuple[str, str] | ColumnInfo]:
    """Columns as the catalog takes them; a ``(name, type, comment)`` triple keeps its comment."""
    if spec is None:
        return []
    if isinstance(spec, pa.Schema):
        return [(f.name, hive_type(f.type, f.name)) for f in spec]
    if isinstance(spec, Mapping):
        return [(str(k), str(v)) for k, v in spec.items()]
    out = []
    for item in spec:
        if isinstance(item, str):
            raise SchemaMismatchError(f"column {item!r} needs a type: give (name, hive type) pairs, a dict or a "
                                      "pyarrow schema")
        name, typ, *comment = item
        hive = typ if isinstance(typ, str) else hive_type(typ, str(name))
        out.append(ColumnInfo(str(name), hive, comment[0]) if comment and comment[0] else (str(name), hive))
    return out


class AcidWarehouse:
    """Transactional tables on one metastore and one warehouse folder (local path or fsspec URL)."""

    def __init__(self, metastore_url: str | Metastore | None = None, warehouse: str | os.PathLike | None = None, *,
                 conf: MetastoreConf | None = None, filesystem: fsspec.AbstractFileSystem | None = None,
                 user: str | None = None, host: str | None = None, init: bool = True,
                 storage_options: StorageOptions | Mapping[str, Any] | None = None,
                 flavour: str | None = None) -> None:
        """``storage_options``: endpoint, region, anonymous, profile of an object-store warehouse (no secrets:
        credentials come from the environment); they make :attr:`filesystem` unless one is given. ``flavour``:
        ``acid`` (airflow-acid's own metastore), ``hive`` (an existing Hive 4 metastore database) or None/``auto``
        (detected)."""
        if isinstance(metastore_url, Metastore):
            self.metastore = metastore_url
            self._owns_metastore = False
        else:
            self.metastore = Metastore(metastore_url or default_url(), conf or MetastoreConf(), flavour=flavour)
            self._owns_metastore = True
        self.conf = self.metastore.conf
        if init and not self.metastore.profile.is_hive:  # Hive's schema is Hive's: used as it is, never migrated
            self.metastore.init()
        if warehouse is None:
            home = Path(os.environ.get(HOME_ENV, Path.home() / "airflow-acid")).expanduser()
            warehouse = home / "warehouse"
        self.location = str(Path(warehouse).resolve()) if "://" not in str(warehouse) and filesystem is None \
            else str(warehouse).rstrip("/")
        self.storage_options = storage_options if isinstance(storage_options, StorageOptions) else \
            StorageOptions.from_mapping(storage_options)
        protocol = protocol_of(self.location)
        if filesystem is None and protocol is not None and not self.storage_options.is_empty:
            filesystem = fsspec.filesystem(protocol, **self.storage_options.fsspec_kwargs(protocol))
        self.filesystem = filesystem
        fs, root = self.storage(self.location)
        fs.makedirs(root, exist_ok=True)
        self.user = user or getpass.getuser()
        self.host = host or socket.gethostname()

    # --- lifecycle -------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._owns_metastore:
            self.metastore.close()

    def __enter__(self) -> AcidWarehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AcidWarehouse(metastore={self.metastore.url!r}, warehouse={self.location!r})"

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

    def _join(self, *parts: str) -> str:
        return posixpath.join(*parts) if ("://" in parts[0] or self.filesystem is not None) \
            else str(Path(parts[0], *parts[1:]))

    # --- databases and tables --------------------------------------------------------------------------

    def create_database(self, name: str, *, if_not_exists: bool = True, description: str | None = None) -> None:
        """Create database ``name`` at ``<warehouse>/<name>.db`` (``default`` lives at the warehouse root).
        ``create_table`` creates a missing database itself."""
        location = self.location if name.lower() == DEFAULT_DATABASE else self._join(self.location, f"{name.lower()}.db")
        self.metastore.catalog.create_database(name, location, description=description, owner=self.user,
                                               if_not_exists=if_not_exists)

    def create_table(self, name: str, columns: ColumnsSpec, *, partition_by: ColumnsSpec | None = None,
                     bucket_by: Sequence[str] = (), num_buckets: int | None = None,
                     transactional_properties: str = "default", properties: Mapping[str, Any] | None = None,
                     location: str | None = None, if_not_exists: bool = False) -> TableInfo:
        """CREATE TABLE … STORED AS ORC TBLPROPERTIES ('transactional'='true', …); with ``properties``
        ``{"transactional": "false"}`` a plain (non-ACID) ORC table, e.g. over an existing ``location`` of ORC files,
        which :meth:`alter_table_properties` can convert later.

        ``columns`` / ``partition_by``: ``[(name, hive type[, comment])]``, ``{name: hive type}`` or a pyarrow schema.
        ``bucket_by`` + ``num_buckets``: CLUSTERED BY … INTO n BUCKETS (bucketing_version 2).
        ``transactional_properties="insert_only"`` makes an insert-only (MM) table of plain ORC files.
        """
        db, table = self.split_name(name)
        self.create_database(db)  # if it does not exist yet
        given = merge_properties({}, dict(properties or {}))  # Hive's keys lower-cased
        props = {"transactional": "true", "bucketing_version": "2"}
        if str(given.get("transactional", "true")).strip().lower() != "false":
            props[TRANSACTIONAL_PROPERTIES] = transactional_properties
        props.update(given)
        return self.metastore.catalog.create_table(
            db, table, _columns(columns), partition_keys=_columns(partition_by), bucket_cols=list(bucket_by),
            num_buckets=num_buckets if bucket_by else None, location=location, properties=props, owner=self.user,
            if_not_exists=if_not_exists)

    def table(self, name: str) -> TableInfo:
        """The table's catalog entry (NoSuchObjectError if it does not exist)."""
        return self.metastore.catalog.get_table(*self.split_name(name))

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        return self.metastore.catalog.list_tables(database)

    def transactional_table(self, name: str) -> TableInfo:
        """The table, refusing non-transactional ones with a clear error."""
        info = self.table(name)
        if not info.is_transactional:
            raise NotTransactionalError(
                f"table {info.full_name} is not transactional (transactional={info.property('transactional')!r}); "
                "airflow-acid reads and writes only ACID tables — convert it with "
                "ALTER TABLE … SET TBLPROPERTIES ('transactional'='true'), or create a transactional table")
        return info

    def drop_table(self, name: str, *, if_exists: bool = False, purge: bool = True) -> None:
        """DROP TABLE: takes an EXCLUSIVE lock, removes the catalog entry and (``purge``) the table's files."""
        db, table = self.split_name(name)
        try:
            info = self.table(name)
        except NoSuchObjectError:
            if if_exists:
                return
            raise
        response = self.metastore.locks.lock(
            [LockComponent(db, table, lock_type=LockType.EXCLUSIVE, operation=OperationType.SELECT)],
            user=self.user, host=self.host, agent_info="airflow-acid drop table")
        try:
            self.metastore.catalog.drop_table(db, table, if_exists=if_exists)
            if purge:
                fs, root = self.storage(info.location)
                if fs.exists(root):
                    fs.rm(root, recursive=True)
        finally:
            self.metastore.locks.unlock(response.lock_id)

    def alter_table_properties(self, name: str, set: Mapping[str, Any] | None = None, *,
                               unset: Sequence[str] = ()) -> TableInfo:
        """ALTER TABLE … SET / UNSET TBLPROPERTIES (transactional rules enforced by the catalog). Setting
        ``transactional=true`` on a plain ORC table converts it (see :mod:`airflow_acid.client.conversion`)."""
        info = self.table(name)
        after = merge_properties(info.properties, dict(set or {}), unset)
        if not info.is_transactional and str(after.get("transactional", "")).strip().lower() == "true":
            locations = [t.location for t in self.partition_targets(info)] if info.is_partitioned else [info.location]
            check_convertible(info, locations, filesystem=self.filesystem,
                              insert_only=str(after.get(TRANSACTIONAL_PROPERTIES, "")).strip().lower() == "insert_only")
        return self.metastore.catalog.alter_table_properties(*self.split_name(name), dict(set or {}), unset=unset)

    def add_columns(self, name: str, columns: ColumnsSpec) -> TableInfo:
        """ALTER TABLE … ADD COLUMNS (…): appended; rows written before read NULL for them."""
        return self.metastore.catalog.alter_table_columns(*self.split_name(name), "add", _columns(columns))

    def replace_columns(self, name: str, columns: ColumnsSpec) -> TableInfo:
        """ALTER TABLE … REPLACE COLUMNS (…): rename, widen or append by position; never drop (Hive's ORC rule)."""
        return self.metastore.catalog.alter_table_columns(*self.split_name(name), "replace", _columns(columns))

    def change_column(self, name: str, column: str, new_name: str, new_type: str, comment: str | None = None) -> TableInfo:
        """ALTER TABLE … CHANGE COLUMN column new_name new_type [COMMENT …]: rename and/or widen one column."""
        return self.metastore.catalog.alter_table_columns(*self.split_name(name), "change",
                                                          [ColumnInfo(new_name, new_type, comment)], old_name=column)

    def list_partitions(self, name: str) -> list[PartitionInfo]:
        """The table's registered partitions, by name."""
        return self.metastore.catalog.list_partitions(*self.split_name(name))

    # --- schemas and partitions (used by transactions, streaming and reads) ----------------------------

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
                       filter: pc.Expression | None = None) -> pa.Table:
        """Merged rows of one partition at a snapshot, partition columns appended (typed)."""
        schema = self.data_schema(info)
        rows = read_acid_table(target.location, write_ids, txns, filesystem=self.filesystem, schema=schema,
                               columns=columns, filter=filter, include_row_ids=include_row_ids)
        if rows.num_columns == 0:  # no data file at all
            rows = schema.empty_table() if columns is None else schema.empty_table().select(list(columns))
        for key in info.partition_keys:
            typ = arrow_type(key.type)
            value = target.spec.get(key.name)
            scalar = pa.scalar(None, typ) if value in (None, HIVE_DEFAULT_PARTITION) else pa.scalar(value).cast(typ)
            rows = rows.append_column(pa.field(key.name, typ), pa.repeat(scalar, rows.num_rows) if rows.num_rows
                                      else pa.array([], typ))
        return rows

    # --- transactions and streaming --------------------------------------------------------------------

    def transaction(self, *, agent_info: str | None = None) -> Transaction:
        """Open a read-write transaction: ``with warehouse.transaction() as txn: txn.insert(…)``."""
        return Transaction(self, agent_info=agent_info)

    def streaming_connection(self, table: str, partition: Mapping[str, Any] | str | None = None, *,
                             batch_size: int | None = None, agent_info: str | None = None
                             ) -> StreamingConnection:
        """A streaming-ingest connection writing one ``delta_min_max`` per batch of transactions."""
        return StreamingConnection(self, table, partition, batch_size=batch_size, agent_info=agent_info)

    # --- reads -----------------------------------------------------------------------------------------

    def read(self, table: str, partition: Mapping[str, Any] | str | None = None,
             columns: Sequence[str] | None = None, filter: Predicate = None) -> pa.Table:
        """The table's rows at one consistent snapshot, as a pyarrow Table (data columns, then partition keys).

        The read runs inside a READ_ONLY transaction holding a SHARED_READ lock — that open transaction is what
        keeps the Cleaner from deleting files this snapshot selects — heartbeated until the read ends.
        ``filter``: a pyarrow compute expression (or ``{column: value}``) over data and partition columns.
        """
        info = self.transactional_table(table)
        full = self.full_schema(info)
        expr = as_expression(filter, table=info.full_name)
        check_predicate(expr, full, table=info.full_name)
        if columns is not None:
            unknown = [c for c in columns if c not in full.names]
            if unknown:
                raise SchemaMismatchError(f"table {info.full_name}: unknown column(s) {unknown}; columns are "
                                          f"{full.names}")
        with self.read_snapshot(info, partition) as snap:
            parts = []
            for target in snap.targets:
                if info.is_partitioned:
                    rows = self.read_partition(info, target, snap.write_ids, snap.txns)
                    if expr is not None:
                        rows = rows.filter(expr)
                else:
                    data_cols = None if columns is None else [c for c in columns]
                    rows = self.read_partition(info, target, snap.write_ids, snap.txns, columns=data_cols,
                                               filter=expr)
                parts.append(rows.select(list(columns)) if columns is not None else rows.select(full.names))
        if not parts:
            empty = full.empty_table()
            return empty.select(list(columns)) if columns is not None else empty
        return pa.concat_tables(parts)

    def read_snapshot(self, info: TableInfo, partition: Mapping[str, Any] | str | None = None) -> ReadSnapshot:
        """Open a READ_ONLY transaction with a SHARED_READ lock and the snapshot of ``info`` (context manager)."""
        return ReadSnapshot(self, info, partition)


class ReadSnapshot:
    """A reader's open READ_ONLY transaction: ``.txns``, ``.write_ids`` and the partitions to read."""

    def __init__(self, warehouse: AcidWarehouse, info: TableInfo, partition: Mapping[str, Any] | str | None) -> None:
        self._wh = warehouse
        self.info = info
        self._partition = partition
        self.txn_id: int | None = None
        self._heartbeater: Heartbeater | None = None

    def __enter__(self) -> ReadSnapshot:
        ms, wh, info = self._wh.metastore, self._wh, self.info
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
        txns = self._wh.metastore.txns
        try:
            txns.commit(self.txn_id) if commit else txns.abort(self.txn_id)
        except Exception as exc:  # noqa: BLE001 - a read-only txn that timed out has nothing to undo
            log.warning("ending read transaction %s: %s", self.txn_id, exc)
