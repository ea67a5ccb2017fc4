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
import os
import posixpath
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import fsspec
import pyarrow as pa

from airflow_acid.acid.codes import LockType, OperationType
from airflow_acid.acid.storage_options import StorageOptions, protocol_of
from airflow_acid.client.conversion import check_convertible
from airflow_acid.client.errors import NotTransactionalError, SchemaMismatchError
from airflow_acid.client.predicates import Predicate, as_expression, check_predicate
from airflow_acid.client.streaming import StreamingConnection
from airflow_acid.client.table_io import DEFAULT_DATABASE, ReadSnapshot, TableIO
from airflow_acid.client.table_schema import hive_type
from airflow_acid.client.transaction import Transaction
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.catalog import (
    ORC_STORAGE,
    ColumnInfo,
    PartitionInfo,
    TableInfo,
    TableStorage,
    merge_properties,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.metastore.store import HOME_ENV, default_url
from airflow_acid.metastore.table_properties import TRANSACTIONAL_PROPERTIES

ColumnsSpec: TypeAlias = (Sequence[tuple[str, str] | tuple[str, str, str | None] | ColumnInfo] | Mapping[str, str]
                          | pa.Schema)


def _columns(spec: ColumnsSpec | None) -> list[tuple[str, str] | ColumnInfo]:
    """Columns as the catalog takes them; a ``(name, type, comment)`` triple keeps its comment."""
    if spec is None:
        return []
    if isinstance(spec, pa.Schema):
        return [(f.name, hive_type(f.type, f.name)) for f in spec]
    if isinstance(spec, Mapping):
        return [(str(k), str(v)) for k, v in spec.items()]
    out: list[tuple[str, str] | ColumnInfo] = []
    for item in spec:
        if isinstance(item, ColumnInfo):  # a statement's column, DEFAULT included
            out.append(item)
            continue
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
        self.user = user or getpass.getuser()
        self.host = host or socket.gethostname()
        self.io = TableIO(self.metastore, filesystem, user=self.user, host=self.host)
        """The table IO transactions, streaming and reads share (names, storage, schemas, partitions)."""
        fs, root = self.io.storage(self.location)
        fs.makedirs(root, exist_ok=True)

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

    # --- databases and tables --------------------------------------------------------------------------

    def create_database(self, name: str, *, if_not_exists: bool = True, description: str | None = None,
                        location: str | None = None) -> None:
        """Create database ``name`` at ``location``, by default ``<warehouse>/<name>.db`` (``default`` lives at the
        warehouse root). ``create_table`` creates a missing database itself (the SQL front end does not: Hive never
        creates a database implicitly)."""
        if location is None:
            location = self.location if name.lower() == DEFAULT_DATABASE else self._database_location(name.lower())
        self.metastore.catalog.create_database(name, location, description=description, owner=self.user,
                                               if_not_exists=if_not_exists)

    def create_table(self, name: str, columns: ColumnsSpec, *, partition_by: ColumnsSpec | None = None,
                     bucket_by: Sequence[str] = (), num_buckets: int | None = None,
                     transactional_properties: str = "default", properties: Mapping[str, Any] | None = None,
                     location: str | None = None, if_not_exists: bool = False, storage: TableStorage | None = None,
                     external: bool = False) -> TableInfo:
        """CREATE TABLE … STORED AS ORC TBLPROPERTIES ('transactional'='true', …); with ``properties``
        ``{"transactional": "false"}`` a plain (non-ACID) ORC table, e.g. over an existing ``location`` of ORC files,
        which :meth:`alter_table_properties` can convert later.

        ``columns`` / ``partition_by``: ``[(name, hive type[, comment])]``, ``{name: hive type}`` or a pyarrow schema.
        ``bucket_by`` + ``num_buckets``: CLUSTERED BY … INTO n BUCKETS (bucketing_version 2).
        ``transactional_properties="insert_only"`` makes an insert-only (MM) table of plain ORC files.
        ``storage``: :meth:`TableStorage.text` for a plain text table (LazySimpleSerDe; never transactional);
        ``external``: CREATE EXTERNAL TABLE (never transactional, DROP TABLE keeps its files).
        """
        db, table = TableIO.split_name(name)
        self.create_database(db)  # if it does not exist yet
        given = merge_properties({}, dict(properties or {}))  # Hive's keys lower-cased
        plain = external or (storage is not None and not storage.is_orc)
        props = {"transactional": "false" if plain else "true", "bucketing_version": "2"}
        if str(given.get("transactional", props["transactional"])).strip().lower() != "false":
            props[TRANSACTIONAL_PROPERTIES] = transactional_properties
        props.update(given)
        return self.metastore.catalog.create_table(
            db, table, _columns(columns), partition_keys=_columns(partition_by), bucket_cols=list(bucket_by),
            num_buckets=num_buckets if bucket_by else None, location=location, properties=props, owner=self.user,
            if_not_exists=if_not_exists, storage=storage or ORC_STORAGE, external=external)

    def table(self, name: str) -> TableInfo:
        """The table's catalog entry (NoSuchObjectError if it does not exist)."""
        return self.io.table(name)

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        return self.metastore.catalog.list_tables(database)

    def transactional_table(self, name: str) -> TableInfo:
        """The table, refusing non-transactional ones with a clear error."""
        return self.io.transactional_table(name)

    def drop_table(self, name: str, *, if_exists: bool = False, purge: bool = True) -> None:
        """DROP TABLE: takes an EXCLUSIVE lock, removes the catalog entry and (``purge``) the table's files."""
        db, table = TableIO.split_name(name)
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
            if purge and info.location:  # a view has no directory
                fs, root = self.io.storage(info.location)
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
            if info.is_text or info.is_external:
                raise NotTransactionalError(
                    f"table {info.full_name} is {'a text' if info.is_text else 'an external'} table: it cannot become "
                    "transactional (Hive's ACID tables are managed ORC tables); create an ACID table and INSERT … "
                    f"SELECT from {info.full_name} into it")
            locations = [t.location for t in self.io.partition_targets(info)] if info.is_partitioned else [info.location]
            check_convertible(info, locations, filesystem=self.filesystem,
                              insert_only=str(after.get(TRANSACTIONAL_PROPERTIES, "")).strip().lower() == "insert_only")
        return self.metastore.catalog.alter_table_properties(*TableIO.split_name(name), dict(set or {}), unset=unset)

    def add_columns(self, name: str, columns: ColumnsSpec) -> TableInfo:
        """ALTER TABLE … ADD COLUMNS (…): appended; rows written before read NULL for them."""
        return self.metastore.catalog.alter_table_columns(*TableIO.split_name(name), "add", _columns(columns))

    def replace_columns(self, name: str, columns: ColumnsSpec) -> TableInfo:
        """ALTER TABLE … REPLACE COLUMNS (…): rename, widen or append by position; never drop (Hive's ORC rule)."""
        return self.metastore.catalog.alter_table_columns(*TableIO.split_name(name), "replace", _columns(columns))

    def change_column(self, name: str, column: str, new_name: str, new_type: str, comment: str | None = None) -> TableInfo:
        """ALTER TABLE … CHANGE COLUMN column new_name new_type [COMMENT …]: rename and/or widen one column."""
        return self.metastore.catalog.alter_table_columns(*TableIO.split_name(name), "change",
                                                          [ColumnInfo(new_name, new_type, comment)], old_name=column)

    def list_partitions(self, name: str) -> list[PartitionInfo]:
        """The table's registered partitions, by name."""
        return self.metastore.catalog.list_partitions(*TableIO.split_name(name))

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
        full = self.io.full_schema(info)
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
                    # the data columns asked for (all when a filter, which may name any column, is given)
                    data_names = set(self.io.data_schema(info).names)
                    wanted = None if columns is None or expr is not None else \
                        [c for c in columns if c in data_names] or None
                    rows = self.io.read_partition(info, target, snap.write_ids, snap.txns, columns=wanted)
                    if expr is not None:
                        rows = rows.filter(expr)
                else:
                    data_cols = None if columns is None else [c for c in columns]
                    rows = self.io.read_partition(info, target, snap.write_ids, snap.txns, columns=data_cols,
                                               filter=expr)
                parts.append(rows.select(list(columns)) if columns is not None else rows.select(full.names))
        if not parts:
            empty = full.empty_table()
            return empty.select(list(columns)) if columns is not None else empty
        return pa.concat_tables(parts)

    def read_snapshot(self, info: TableInfo, partition: Mapping[str, Any] | str | None = None) -> ReadSnapshot:
        """Open a READ_ONLY transaction with a SHARED_READ lock and the snapshot of ``info`` (context manager):
        ``.txns``, ``.write_ids`` and the partitions to read (``.targets``)."""
        return self.io.read_snapshot(info, partition)

    def _database_location(self, name: str) -> str:
        """``<warehouse>/<name>.db``."""
        return posixpath.join(self.location, f"{name}.db") if ("://" in self.location or self.filesystem is not None) \
            else str(Path(self.location, f"{name}.db"))
