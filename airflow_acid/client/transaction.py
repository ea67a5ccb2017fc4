"""One client transaction: INSERT / DELETE / UPDATE / MERGE statements written as Hive writes them.

Each statement, like a Hive query inside a transaction: validates its input (a bad input raises before any
lock or file, and the transaction stays usable), gets the txn's write id on the table, takes its locks
(SHARED_WRITE under the default ``hive.txn.xlock.write=false``; TXN_COMPONENTS are recorded with them),
reads the table at the txn's own snapshot to find ROW__IDs, and writes ``delta_W_W_S`` / ``delete_delta_W_W_S``
directly at their final names (statement id S counts up per statement; MERGE uses S for its insert branch and
S+1 for its update branch). Commit makes it all visible at once; an error while writing, an exception in the
``with`` block, a write conflict at commit or a timeout aborts the txn and removes every directory it wrote.
"""

from __future__ import annotations

import logging
import posixpath
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po

from airflow_acid.acid import names
from airflow_acid.acid.codes import DataOperation, LockState, OperationType
from airflow_acid.acid.event_schema import KEY_FIELDS
from airflow_acid.acid.merge import VirtualColumns
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.statement_writer import (
    write_base,
    write_insert_only,
    write_statement,
    write_truncated_base,
    writer_threads,
)
from airflow_acid.acid.writeids import ValidWriteIdList
from airflow_acid.client.errors import (
    NotTransactionalError,
    SchemaMismatchError,
    TransactionClosedError,
    UnsupportedOperationError,
)
from airflow_acid.client.hive_compare import column_types, hive_comparisons
from airflow_acid.client.load_data import LoadSource, destination_names
from airflow_acid.client.merge_clauses import MergeClause, WhenMatched, WhenNotMatched, on_condition
from airflow_acid.client.merge_source import merge_source
from airflow_acid.client.predicates import (
    Predicate,
    as_expression,
    as_value_expression,
    check_predicate,
    project,
    select_rows,
    source,
)
from airflow_acid.client.sql_eval import (
    PART_INDEX,
    ROW_ID_COLUMNS,
    Evaluator,
    Sql,
    conform,
    copied_columns,
    empty_target,
    evaluate_merge,
    exact_columns,
    hive_expression,
    key_columns,
    literal_timestamps,
    mentions_row_id,
    numbered,
    quote,
    to_duckdb,
    value_sql,
    with_literals,
    with_row_ids,
)
from airflow_acid.metastore.catalog import ORC_INPUT_FORMAT, TableInfo
from airflow_acid.metastore.errors import LockNotAcquiredError, TxnAbortedError, TxnStateError
from airflow_acid.metastore.heartbeat import Heartbeater
from airflow_acid.metastore.locks import lock_component_for

if TYPE_CHECKING:
    from airflow_acid.client.table_io import PartitionTarget
    from airflow_acid.client.warehouse import AcidWarehouse

log = logging.getLogger(__name__)

MAX_STATEMENTS = 4096
"""Statement ids must fit BucketCodec V1's 12 bits (and the ``%04d`` directory suffix)."""
_COPY_CHUNK = 8 << 20
"""Bytes copied at a time by LOAD DATA."""
_ROW_NUMBER = quote("__acid_row")
"""Row numbers of the rows an UPDATE evaluates (to take the values it keeps back exactly)."""


@dataclass(frozen=True)
class StatementResult:
    """What one statement did: its statement id(s), write id and the rows it inserted/deleted per partition."""

    table: str
    operation: str
    write_id: int | None
    statement_ids: tuple[int, ...]
    inserted: int = 0
    deleted: int = 0
    partitions: tuple[str | None, ...] = ()
    directories: tuple[str, ...] = field(default=(), repr=False)

    @property
    def rows(self) -> int:
        """Rows affected: inserted for INSERT/MERGE-insert, deleted for DELETE, updated for UPDATE."""
        if self.operation == "update":
            return self.deleted
        return self.inserted if self.operation == "insert" else self.inserted + self.deleted


class Transaction:
    """A read-write transaction on one warehouse; use as ``with warehouse.transaction() as txn:``.

    Not thread-safe: one thread issues its statements. A background thread heartbeats it while open.
    """

    def __init__(self, warehouse: AcidWarehouse, *, agent_info: str | None = None) -> None:
        self._io = io = warehouse.io
        self._ms = io.metastore
        self.txn_id: int = self._ms.txns.open_txn(user=io.user, host=io.host,
                                                   agent_info=agent_info or "airflow-acid client")
        self.state = "open"
        self.statements: list[StatementResult] = []
        self._next_statement = 0
        self._tables: dict[str, TableInfo] = {}
        self._written: list[tuple[Any, str]] = []  # (fs, directory path) this txn created
        self._heartbeater = Heartbeater(self._ms.txns.heartbeat, lambda: [self.txn_id],
                                        io.conf.txn_timeout_s / 2, name=f"acid-heartbeat-txn-{self.txn_id}")
        self._heartbeater.start()

    # --- context manager -------------------------------------------------------------------------------

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.state != "open":
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def __repr__(self) -> str:
        return f"Transaction(txn_id={self.txn_id}, state={self.state!r}, statements={len(self.statements)})"

    # --- ending ----------------------------------------------------------------------------------------

    def commit(self) -> None:
        """Commit: every statement becomes visible at once. A write conflict (a concurrent update/delete of the
        same partition committed first) aborts this txn, removes its files and raises WriteConflictError; so does a
        txn that timed out (its heartbeat found it aborted), with TransactionClosedError."""
        try:
            self._check_open("commit")
        except TransactionClosedError:
            if self.state == "open":  # aborted behind our back (hive.txn.timeout): its files must not stay
                self._heartbeater.stop()
                self.state = "aborted"
                self._remove_files()
            raise
        self._heartbeater.stop()
        try:
            self._ms.txns.commit(self.txn_id)
        except TxnAbortedError:
            self.state = "aborted"
            self._remove_files()
            raise
        except TxnStateError:
            self.state = "aborted"
            raise
        self.state = "committed"

    def abort(self) -> None:
        """Abort: nothing this txn wrote becomes visible, and its directories are removed."""
        if self.state != "open":
            raise TransactionClosedError(f"transaction {self.txn_id} is already {self.state}; nothing to abort")
        self._heartbeater.stop()
        self.state = "aborted"
        try:
            self._ms.txns.abort(self.txn_id)
        except TxnStateError as exc:  # e.g. already aborted by a timeout: the files still have to go
            log.info("abort of transaction %s: %s", self.txn_id, exc)
        finally:
            self._remove_files()

    def _remove_files(self) -> None:
        for fs, path in reversed(self._written):
            try:
                if fs.exists(path):
                    fs.rm(path, recursive=True)
            except OSError as exc:  # leave it to the Cleaner: the write id is aborted, so it stays invisible
                log.warning("could not remove %s of aborted transaction %s: %s", path, self.txn_id, exc)
        self._written.clear()

    def _check_open(self, action: str) -> None:
        if self.state != "open":
            raise TransactionClosedError(
                f"cannot {action}: transaction {self.txn_id} is already {self.state}; open a new one with "
                "warehouse.transaction()")
        if self.txn_id in self._heartbeater.lost:
            raise TransactionClosedError(
                f"cannot {action}: transaction {self.txn_id} is no longer open "
                f"({self._heartbeater.lost[self.txn_id]})")

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Any failure once a statement started writing dooms the txn: abort it and remove its files."""
        try:
            yield
        except BaseException:
            if self.state == "open":
                self.abort()
            raise

    # --- helpers ---------------------------------------------------------------------------------------

    def _table(self, name: str, action: str) -> TableInfo:
        self._check_open(action)
        key = self._io.qualified_name(name)
        if key not in self._tables:
            self._tables[key] = self._io.transactional_table(name)
        return self._tables[key]

    def _statement_id(self, count: int = 1) -> int:
        first = self._next_statement
        if first + count > MAX_STATEMENTS:
            raise UnsupportedOperationError(
                f"transaction {self.txn_id} has used {first} statement ids; at most {MAX_STATEMENTS} fit the "
                "bucket property — commit and continue in a new transaction")
        self._next_statement += count
        return first

    def _lock(self, info: TableInfo, partitions: Sequence[str | None], op: DataOperation, *,
              dynamic: bool = False) -> None:
        comps = [lock_component_for(op, info.database, info.name, p, conf=self._io.conf,
                                    is_dynamic_partition_write=dynamic) for p in partitions]
        response = self._ms.locks.lock(comps, txn_id=self.txn_id, user=self._io.user, host=self._io.host,
                                       agent_info=f"airflow-acid txn {self.txn_id}")
        if response.state is not LockState.ACQUIRED:
            raise LockNotAcquiredError(f"transaction {self.txn_id}: could not lock {info.full_name}: "
                                       f"{response.error_message or response.state.display}")

    def _snapshot(self, info: TableInfo):
        txns = self._ms.snapshots.valid_txn_list(self.txn_id)
        return txns, self._ms.snapshots.valid_write_id_list(info.full_name, txns)

    def _track(self, target: PartitionTarget, dirname: str) -> None:
        fs, root = self._io.storage(target.location)
        self._written.append((fs, posixpath.join(root, dirname)))

    def _write(self, info: TableInfo, target: PartitionTarget, write_id: int, stmt: int, *,
               inserts: pa.Table | None = None, deletes: pa.Table | None = None) -> list[str]:
        """Write one statement's events into one partition; returns the directories written."""
        dirs = []
        if inserts is not None and inserts.num_rows:
            dirs.append(names.format_delta(write_id, write_id, stmt))
        if deletes is not None and deletes.num_rows:
            dirs.append(names.format_delta(write_id, write_id, stmt, delete=True))
        for d in dirs:
            self._track(target, d)
        schema = self._io.data_schema(info)
        if info.is_insert_only:
            assert inserts is not None, "insert-only tables take INSERTs only (UPDATE/DELETE/MERGE refuse them)"
            self._write_insert_only(info, target, dirs[0], inserts.select(schema.names))
        else:
            write_statement(target.location, write_id, stmt, schema,
                            inserts=None if inserts is None else inserts.select(schema.names), deletes=deletes,
                            bucket_of=self._io.bucket_assigner(info), filesystem=self._io.filesystem,
                            max_writers=writer_threads(), orc=OrcSettings.from_properties(info.properties))
        return dirs

    def _write_insert_only(self, info: TableInfo, target: PartitionTarget, dirname: str, rows: pa.Table) -> None:
        """Insert-only (MM) tables hold plain ORC files (no ACID columns) named like Hive's ``000000_0``."""
        fs, root = self._io.storage(target.location)
        write_insert_only(posixpath.join(root, dirname), rows, bucket_of=self._io.bucket_assigner(info),
                          filesystem=fs, orc=OrcSettings.from_properties(info.properties))

    def _register(self, info: TableInfo, targets: Sequence[PartitionTarget]) -> None:
        for t in targets:
            if t.spec:
                self._io.metastore.catalog.add_partition(info.database, info.name, t.spec, location=t.location,
                                                         if_not_exists=True)

    def _record(self, result: StatementResult) -> StatementResult:
        self.statements.append(result)
        return result

    # --- INSERT ----------------------------------------------------------------------------------------

    def insert(self, table: str, data: Any, partition: Mapping[str, Any] | str | None = None) -> StatementResult:
        """INSERT rows (list of dicts/tuples, pyarrow Table, pandas DataFrame) into ``table``.

        Partitioned tables take ``partition={key: value}`` for all rows, or (dynamic partitioning) the partition
        key columns inside ``data``. Bucketed tables spread rows by Hive's bucketing version 2 hash.
        """
        info = self._table(table, "insert")
        groups = self._io.split_by_partition(info, data, partition)
        rows = sum(g[1].num_rows for g in groups)
        if rows == 0:
            return self._record(StatementResult(info.full_name, "insert", None, ()))
        write_id = self._ms.txns.allocate_write_id(self.txn_id, info.database, info.name)
        self._lock(info, [t.name for t, _ in groups], DataOperation.INSERT)
        stmt = self._statement_id()
        written: list[str] = []
        with self._writing():
            for target, part in groups:
                written += self._write(info, target, write_id, stmt, inserts=part)
            self._register(info, [t for t, _ in groups])
        return self._record(StatementResult(info.full_name, "insert", write_id, (stmt,), inserted=rows,
                                            partitions=tuple(t.name for t, _ in groups), directories=tuple(written)))

    # --- DELETE / UPDATE -------------------------------------------------------------------------------

    def delete(self, table: str, where: Predicate = None, *, sources: Mapping[str, pa.Table] | None = None
               ) -> StatementResult:
        """DELETE the rows matching ``where`` (a pyarrow compute expression, ``{col: value}``, or None = all).

        Writes ``delete_delta_W_W_S`` in every partition with matching rows. ``sources`` ({name: rows}) are tables
        a SQL ``where`` reads in subqueries (``id IN (SELECT id FROM name)``)."""
        return self._modify(table, where, None, sources)

    def update(self, table: str, set: Mapping[str, Any], where: Predicate = None, *,
               sources: Mapping[str, pa.Table] | None = None) -> StatementResult:
        """UPDATE ``set`` ({column: literal or expression over the row}) on rows matching ``where``.

        Split-update: delete events for the old ROW__IDs in ``delete_delta_W_W_S`` and the new row versions in
        ``delta_W_W_S``. Partition and bucket columns cannot be updated (as in Hive). ``sources`` as for
        :meth:`delete` (for the SQL condition and :class:`Sql` values)."""
        if not isinstance(set, Mapping) or not set:
            raise SchemaMismatchError(f"table {table}: update needs set={{column: value, ...}} with at least one column")
        return self._modify(table, where, set, sources)

    def _check_assignments(self, info: TableInfo, values: Mapping[str, Any], *, what: str) -> dict[str, Any]:
        schema = self._io.data_schema(info)
        lowered = {n.lower(): n for n in schema.names}
        keys = {k.name for k in info.partition_keys}
        out = {}
        for col, value in values.items():
            name = lowered.get(str(col).lower())
            if name is None:
                if str(col).lower() in keys:
                    raise UnsupportedOperationError(
                        f"table {info.full_name}: {what} cannot change partition column {col} (Hive does not support "
                        "updating partition columns); delete and re-insert the rows instead")
                raise SchemaMismatchError(f"table {info.full_name}: {what} names unknown column {col!r}; "
                                          f"columns are {schema.names}")
            if name in info.bucket_cols:
                raise UnsupportedOperationError(
                    f"table {info.full_name}: {what} cannot change bucket column {name} (Hive does not support "
                    "updating bucketing columns)")
            out[name] = value
        return out

    def _modify(self, table: str, where: Predicate | str, assignments: Mapping[str, Any] | None,
                sources: Mapping[str, pa.Table] | None = None) -> StatementResult:
        op_name = "update" if assignments is not None else "delete"
        info = self._table(table, op_name)
        if info.is_insert_only:
            raise UnsupportedOperationError(
                f"table {info.full_name} is insert-only (transactional_properties=insert_only): {op_name.upper()} is "
                "not supported; only INSERT is")
        full = self._io.full_schema(info)
        if isinstance(where, str) or any(isinstance(v, Sql) for v in (assignments or {}).values()):
            return self._modify_sql(info, where, assignments, sources or {})
        if sources:
            raise SchemaMismatchError(f"{op_name.upper()} {info.full_name}: sources are read by SQL conditions and "
                                      "values; give the condition as SQL text")
        expr = as_expression(where, table=info.full_name)
        check_predicate(expr, full, table=info.full_name)
        if assignments is not None:
            assignments = self._check_assignments(info, assignments, what="UPDATE")
            project(full.empty_table(), assignments, full, table=info.full_name)  # fail early on bad values

        def change(current: pa.Table) -> tuple[pa.Table, pa.Table | None]:
            chosen = select_rows(current, expr)
            if assignments is None or not chosen.num_rows:
                return chosen.select(list(KEY_FIELDS)), None
            kept = {c: pc.field(c) for c in self._io.data_schema(info).names if c not in assignments}
            return chosen.select(list(KEY_FIELDS)), project(chosen, {**kept, **assignments}, full,
                                                            table=info.full_name)

        return self._modify_rows(info, op_name, change)

    def _modify_sql(self, info: TableInfo, where: Predicate | str, assignments: Mapping[str, Any] | None,
                    sources: Mapping[str, pa.Table]) -> StatementResult:
        """UPDATE / DELETE with a Hive SQL condition (text) and/or :class:`Sql` values, evaluated by DuckDB."""
        op_name = "update" if assignments is not None else "delete"
        what = f"{op_name.upper()} {info.full_name}"
        if where is not None and not isinstance(where, str):
            raise SchemaMismatchError(f"{what}: with SQL values the condition must be SQL text too, not "
                                      f"{type(where).__name__}")
        full = self._io.full_schema(info)
        checked = {} if assignments is None else self._check_assignments(info, assignments, what=op_name.upper())
        literals = literal_timestamps(checked, full)
        values = {name: "NULL" if name in literals else value_sql(v, what=f"{what}: SET {name}")
                  for name, v in checked.items()}
        where_sql = to_duckdb(hive_comparisons(hive_expression(where, what=f"{what}: WHERE"),
                                               column_types({info.name: full}))) if where else "TRUE"
        row_id = mentions_row_id(where or "") or any(isinstance(v, Sql) and mentions_row_id(v.text)
                                                     for v in (assignments or {}).values())
        alias = quote(info.name)
        ids = ", ".join(quote(c) for c in ROW_ID_COLUMNS)
        cols = ", ".join(f"{values[c]} AS {quote(c)}" if c in values else quote(c) for c in full.names)
        with Evaluator() as ev:  # a bad condition or value fails here, before any lock or file
            for source_name, source_rows in sources.items():
                ev.register(source_rows, source_name)
            probe = ev.register(with_row_ids(empty_target(full), row_id_struct=row_id))
            ev.query(f"SELECT {ids}, {cols} FROM {probe} AS {alias} WHERE {where_sql}", what=what)

            def change(current: pa.Table) -> tuple[pa.Table, pa.Table | None]:
                rows = with_row_ids(current, row_id_struct=row_id)
                name = ev.register(numbered(rows, _ROW_NUMBER))
                chosen = ev.query(f"SELECT {ids}, {_ROW_NUMBER}, {cols} FROM {name} AS {alias} WHERE {where_sql}",
                                  what=what)
                if assignments is None:
                    return key_columns(chosen), None
                copied = {c: c for c in full.names if c not in values}
                copied.update(copied_columns(checked, full.names, [None, info.name]))
                kept = with_literals(exact_columns(chosen, rows, _ROW_NUMBER.strip('"'), copied), literals, full,
                                     table=info.full_name)
                return key_columns(chosen), conform(kept.select(full.names), full, what=what)

            return self._modify_rows(info, op_name, change)

    def _modify_rows(self, info: TableInfo, op_name: str,
                     change: Callable[[pa.Table], tuple[pa.Table, pa.Table | None]]) -> StatementResult:
        """Split-update / delete over every partition: ``change(current rows with ROW__IDs)`` gives the ROW__IDs
        to delete and (UPDATE) their new versions."""
        op = DataOperation.UPDATE if op_name == "update" else DataOperation.DELETE
        write_id = self._ms.txns.allocate_write_id(self.txn_id, info.database, info.name)
        self._lock(info, [None], op, dynamic=info.is_partitioned)
        stmt = self._statement_id()
        touched, written = [], []
        inserted = deleted = 0
        with self._writing():
            txns, wids = self._snapshot(info)
            for target in self._io.partition_targets(info):
                current = self._io.read_partition(info, target, wids, txns, include_row_ids=True)
                keys, new_rows = change(current)
                if not keys.num_rows:
                    continue
                written += self._write(info, target, write_id, stmt, inserts=new_rows, deletes=keys)
                touched.append(target.name)
                deleted += keys.num_rows
                inserted += 0 if new_rows is None else new_rows.num_rows
            if info.is_partitioned:
                self._ms.txns.add_dynamic_partitions(self.txn_id, info.database, info.name, touched,
                                                     OperationType.UPDATE if op is DataOperation.UPDATE
                                                     else OperationType.DELETE, write_id)
        return self._record(StatementResult(info.full_name, op_name, write_id, (stmt,), inserted=inserted,
                                            deleted=deleted, partitions=tuple(touched), directories=tuple(written)))

    # --- reads, INSERT OVERWRITE, TRUNCATE --------------------------------------------------------------

    def read(self, table: str, partition: Mapping[str, Any] | str | None = None, *,
             row_ids: bool = False, virtual: VirtualColumns = VirtualColumns()) -> pa.Table:
        """The table's rows at this transaction's snapshot (its own earlier statements included), under a
        SHARED_READ lock: data columns, partition columns and, with ``row_ids``, Hive's ``ROW__ID`` struct
        ``{writeid, bucketid, rowid}`` as the first column; Hive's ``virtual`` columns asked for last
        (INPUT__FILE__NAME; ROW__IS__DELETED with the deleted rows kept)."""
        self._check_open("read")
        info = self._io.table(table)
        if not info.is_transactional:
            return self._read_plain(info, partition, row_ids=row_ids, virtual=virtual)
        full = self._io.full_schema(info)
        extra = [f.name for f in virtual.fields()]
        full_out = pa.schema(list(full) + virtual.fields())
        self._lock(info, [None], DataOperation.SELECT)
        txns, wids = self._snapshot(info)
        parts = [self._io.read_partition(info, t, wids, txns, include_row_ids=row_ids, virtual=virtual)
                 for t in self._io.partition_targets(info, partition)]
        if not row_ids:
            return pa.concat_tables([p.select(full_out.names) for p in parts]) if parts else full_out.empty_table()
        rows = pa.concat_tables([with_row_ids(p, row_id_struct=True) for p in parts]) if parts else \
            with_row_ids(empty_target(full_out), row_id_struct=True)
        return rows.select(["ROW__ID", *full.names, *extra])

    def _read_plain(self, info: TableInfo, partition: Mapping[str, Any] | str | None, *, row_ids: bool,
                    virtual: VirtualColumns = VirtualColumns()) -> pa.Table:
        """A plain (non-ACID) table's rows under a SHARED_READ lock, as Hive reads it: every ORC file of the
        table (or partition) directory, the original files of the ACID reader (write id 0: always visible), or every
        text file as Hive's LazySimpleSerDe lays them out (:mod:`airflow_acid.client.text_table`)."""
        if row_ids:
            raise NotTransactionalError(f"table {info.full_name} is not transactional: it has no ROW__ID")
        if info.input_format not in (None, ORC_INPUT_FORMAT) and not info.is_text:
            raise NotTransactionalError(
                f"table {info.full_name} is stored with {info.input_format}; airflow-acid reads plain tables "
                "stored as ORC or as text (TEXTFILE) only — read this one in Hive or Spark, or copy it into an ORC "
                "table there")
        if virtual.deleted_rows:
            raise NotTransactionalError(f"table {info.full_name} is not transactional: it has no deleted rows "
                                        "('acid.fetch.deleted.rows')")
        if virtual.file_name and info.is_text:
            raise UnsupportedOperationError(f"table {info.full_name}: INPUT__FILE__NAME is read for ORC tables only")
        full = pa.schema(list(self._io.full_schema(info)) + virtual.fields())
        self._lock(info, [None], DataOperation.SELECT)
        if info.is_text:
            texts = [self._io.read_text_partition(info, t) for t in self._io.partition_targets(info, partition)]
            return pa.concat_tables([p.select(full.names) for p in texts]) if texts else full.empty_table()
        txns = self._ms.snapshots.valid_txn_list(self.txn_id)
        originals_only = ValidWriteIdList(high_watermark=0, table=info.full_name)
        parts = [self._io.read_partition(info, t, originals_only, txns, virtual=virtual)
                 for t in self._io.partition_targets(info, partition)]
        return pa.concat_tables([p.select(full.names) for p in parts]) if parts else full.empty_table()

    def insert_overwrite(self, table: str, data: Any, partition: Mapping[str, Any] | str | None = None
                         ) -> StatementResult:
        """INSERT OVERWRITE: replace the table (unpartitioned), the given partition, or — dynamic partitioning,
        partition columns in ``data`` — every partition that receives rows, with ``data``; written as ``base_W``
        under an EXCLUSIVE lock (EXCL_WRITE unless both hive.txn.xlock.write and hive.txn.xlock.iow are true), as
        Hive does. Other partitions keep their rows."""
        info = self._table(table, "insert overwrite")
        groups = self._io.split_by_partition(info, data, partition)
        if not info.is_partitioned or partition is not None:
            groups = groups or [(self._io.partition_target(info, partition), self._io.data_schema(info).empty_table())]
        return self._write_bases(info, groups, "insert overwrite")

    def load_files(self, table: str, source: LoadSource, partition: Mapping[str, Any] | str | None = None, *,
                   overwrite: bool = False) -> StatementResult:
        """LOAD DATA: ``source``'s files (checked by :func:`~airflow_acid.client.load_data.check_files`) copied as
        they are into a new ``delta_W_W_S`` — ``base_W`` with ``overwrite`` — of the table or the given partition,
        as original files (Hive's names) whose rows readers give synthesized ROW__IDs; locked as INSERT / INSERT
        OVERWRITE is. Rows are counted from the files' footers (text files: not counted)."""
        info = self._table(table, "load data")
        target = self._io.partition_target(info, partition)
        write_id = self._ms.txns.allocate_write_id(self.txn_id, info.database, info.name)
        op = DataOperation.INSERT_OVERWRITE if overwrite else DataOperation.INSERT
        self._lock(info, [target.name], op)
        stmt = self._statement_id()
        dirname = names.format_base(write_id) if overwrite else names.format_delta(write_id, write_id, stmt)
        fs, root = self._io.storage(target.location)
        directory = posixpath.join(root, dirname)
        rows = 0
        with self._writing():
            self._track(target, dirname)
            fs.makedirs(directory, exist_ok=True)
            for path, name in zip(source.files, destination_names(source.files), strict=True):
                with source.fs.open(path, "rb") as src, fs.open(posixpath.join(directory, name), "wb") as dst:
                    shutil.copyfileobj(src, dst, _COPY_CHUNK)
                if not info.is_text:
                    with source.fs.open(path, "rb") as handle:
                        rows += po.ORCFile(handle).nrows
            self._register(info, [target])
        return self._record(StatementResult(info.full_name, "insert", write_id, (stmt,), inserted=rows,
                                            partitions=(target.name,), directories=(dirname,)))

    def truncate(self, table: str, partition: Mapping[str, Any] | str | None = None) -> StatementResult:
        """TRUNCATE TABLE [PARTITION]: a ``base_W`` holding only ``_metadata_acid`` (``truncated``) in the table or
        each named/registered partition (Hive 4's hive.acid.truncate.usebase): readers at older snapshots keep their
        rows until the Cleaner removes what the truncation made obsolete."""
        info = self._table(table, "truncate")
        targets = self._io.partition_targets(info, partition)
        empty = self._io.data_schema(info).empty_table()
        return self._write_bases(info, [(t, empty) for t in targets], "truncate")

    def _write_bases(self, info: TableInfo, groups: Sequence[tuple[PartitionTarget, pa.Table]],
                     op_name: str) -> StatementResult:
        write_id = self._ms.txns.allocate_write_id(self.txn_id, info.database, info.name)
        self._lock(info, [t.name for t, _ in groups] or [None], DataOperation.INSERT_OVERWRITE)
        stmt = self._statement_id()
        schema = self._io.data_schema(info)
        written: list[str] = []
        with self._writing():
            for target, rows in groups:
                dirname = names.format_base(write_id)
                self._track(target, dirname)
                if info.is_insert_only:
                    if rows.num_rows:
                        self._write_insert_only(info, target, dirname, rows.select(schema.names))
                    else:
                        write_truncated_base(target.location, write_id, filesystem=self._io.filesystem)
                else:
                    write_base(target.location, write_id, schema, rows.select(schema.names),
                               bucket_of=self._io.bucket_assigner(info), filesystem=self._io.filesystem,
                               max_writers=writer_threads(), orc=OrcSettings.from_properties(info.properties))
                written.append(dirname)
            self._register(info, [t for t, _ in groups])
        return self._record(StatementResult(info.full_name, op_name, write_id, (stmt,),
                                            inserted=sum(r.num_rows for _, r in groups),
                                            partitions=tuple(t.name for t, _ in groups), directories=tuple(written)))

    # --- MERGE -----------------------------------------------------------------------------------------

    def merge(self, table: str, source_data: Any, on: str | Sequence[str], *,
              when_matched_update: bool | Sequence[str] | Mapping[str, Any] | None = None,
              when_not_matched_insert: bool | Mapping[str, Any] | None = None,
              when: Sequence[MergeClause] | None = None, target_alias: str = "t",
              source_alias: str = "s") -> StatementResult:
        """MERGE ``source_data`` into ``table`` ON equal ``on`` columns.

        Hive's full grammar: ``when=[WhenMatched(update={...}, condition=...), WhenMatched(delete=True, ...),
        WhenNotMatched(insert=..., condition=...)]`` — clauses in order, each matched pair / unmatched source row
        taking the first clause whose condition holds. Conditions and :class:`Sql` values are Hive SQL over
        ``target_alias`` and ``source_alias`` (evaluated by DuckDB); ``on`` is then a list of columns equal on both
        sides or a Hive SQL condition. Statement ids: one per clause, in clause order.

        ``when_matched_update``: True (every non-key column present in the source), a list of columns to copy
        from the source, or ``{column: literal | expression}`` where the source row is ``source("col")`` and the
        target row is ``pc.field("col")``. ``when_not_matched_insert``: True (insert the source row as is) or
        ``{column: literal | expression over source("…")}``. These keywords are shorthand for the two clauses
        (evaluated the same way); statement ids: S for the insert branch, S+1 for the update branch (its
        delete_delta and delta). A target row matched by two source rows is an error (Hive's cardinality check),
        raised before anything is written.
        """
        info = self._table(table, "merge")
        if when is not None:
            if when_matched_update is not None or when_not_matched_insert is not None:
                raise SchemaMismatchError(f"table {info.full_name}: MERGE takes when=[…] or the when_matched_update/"
                                          "when_not_matched_insert keywords, not both")
            clauses = list(when)
            if any(isinstance(c, WhenMatched) for c in clauses) and info.is_insert_only:
                raise UnsupportedOperationError(f"table {info.full_name} is insert-only: MERGE cannot update or "
                                                "delete rows (WHEN MATCHED)")
            full = self._io.full_schema(info)
            keys = [] if isinstance(on, str) else list(on)
            src = merge_source(info.full_name, source_data, keys, full)
            return self._merge(info, src, on_condition(on, target_alias, source_alias,
                                                       what=f"MERGE into {info.full_name}"),
                               clauses, target_alias, source_alias, range(len(clauses)))
        if when_matched_update is None and when_not_matched_insert is None:
            raise SchemaMismatchError(f"table {info.full_name}: MERGE needs when_matched_update and/or "
                                      "when_not_matched_insert")
        if info.is_insert_only and when_matched_update is not None:
            raise UnsupportedOperationError(f"table {info.full_name} is insert-only: MERGE cannot update rows")
        full = self._io.full_schema(info)
        keys = [on] if isinstance(on, str) else list(on)
        src = merge_source(info.full_name, source_data, keys, full)
        updates = self._update_values(info, when_matched_update, src, keys)
        inserts = self._insert_values(info, when_not_matched_insert, src, full)
        clauses, slots = [], []
        if inserts is not None:  # statement S
            clauses.append(WhenNotMatched(insert=inserts))
            slots.append(0)
        if updates is not None:  # statement S+1
            clauses.append(WhenMatched(update=updates))
            slots.append(1)
        return self._merge(info, src, on_condition(keys, "t", "s", what=f"MERGE into {info.full_name}"), clauses,
                           "t", "s", slots, statements=2)

    def _merge(self, info: TableInfo, src: pa.Table, on_sql: str, clauses: list[MergeClause], target_alias: str,
               source_alias: str, slots: Sequence[int], *, statements: int | None = None) -> StatementResult:
        """The MERGE engine: clauses evaluated by :func:`evaluate_merge` over the target at the txn's snapshot.
        Clause ``i`` writes with statement id S + ``slots[i]``; the MERGE takes ``statements`` ids (one per clause
        by default)."""
        has_matched = any(isinstance(c, WhenMatched) for c in clauses)
        full = self._io.full_schema(info)
        row_id = mentions_row_id(on_sql) or any(mentions_row_id(c.condition or "") for c in clauses)
        updatable = [c for c in self._io.data_schema(info).names if c not in info.bucket_cols]

        def evaluate(ev: Evaluator, target: pa.Table, source_rows: pa.Table):
            return evaluate_merge(ev, target, source_rows, on=on_sql, clauses=clauses, target_alias=target_alias,
                                  source_alias=source_alias, full=full, updatable=updatable, table=info.full_name)

        with Evaluator() as ev:  # a bad condition or value fails here, before any lock or file
            evaluate(ev, with_row_ids(empty_target(full), part_index=0, row_id_struct=row_id), src.slice(0, 0))
        write_id = self._ms.txns.allocate_write_id(self.txn_id, info.database, info.name)
        self._lock(info, [None], DataOperation.UPDATE if has_matched else DataOperation.INSERT,
                   dynamic=info.is_partitioned)
        count = len(clauses) if statements is None else statements
        first = self._statement_id(count)
        written: list[str] = []
        inserted = deleted = 0
        touched: list[str | None] = []
        new_parts: list[PartitionTarget] = []
        with self._writing():
            txns, wids = self._snapshot(info)
            targets = self._io.partition_targets(info)
            current = [with_row_ids(self._io.read_partition(info, t, wids, txns, include_row_ids=True), part_index=i,
                                    row_id_struct=row_id) for i, t in enumerate(targets)]
            target_rows = pa.concat_tables(current) if current else \
                with_row_ids(empty_target(full), part_index=0, row_id_struct=row_id)
            with Evaluator() as ev:
                changes = evaluate(ev, target_rows, src)
            for index, rows in changes.inserts:
                groups = self._io.split_by_partition(info, rows, None) if rows.num_rows else []
                for target, part in groups:
                    written += self._write(info, target, write_id, first + slots[index], inserts=part)
                    inserted += part.num_rows
                new_parts += [t for t, _ in groups]
            self._register(info, new_parts)
            for index, rows, update in [(i, r, True) for i, r in changes.updates] + \
                    [(i, r, False) for i, r in changes.deletes]:
                part_of = rows.column(PART_INDEX).to_numpy(zero_copy_only=False) if rows.num_rows else []
                for part_index in sorted(set(int(p) for p in part_of)):
                    sub = rows.filter(pa.array(part_of == part_index))
                    new_rows = conform(sub.select(full.names), full, what=f"MERGE into {info.full_name}") \
                        if update else None
                    target = targets[part_index]
                    written += self._write(info, target, write_id, first + slots[index], inserts=new_rows,
                                           deletes=key_columns(sub))
                    deleted += sub.num_rows
                    inserted += 0 if new_rows is None else new_rows.num_rows
                    touched.append(target.name)
            if info.is_partitioned:
                if has_matched:  # as UPDATE/DELETE: the table-level placeholder gives way to what was written
                    self._ms.txns.add_dynamic_partitions(self.txn_id, info.database, info.name,
                                                         list(dict.fromkeys(touched)), OperationType.UPDATE, write_id)
                if new_parts:
                    self._ms.txns.add_write_components(self.txn_id, info.database, info.name,
                                                       list(dict.fromkeys(t.name for t in new_parts)),
                                                       OperationType.INSERT, write_id)
        parts = tuple(dict.fromkeys([t.name for t in new_parts] + touched))
        return self._record(StatementResult(info.full_name, "merge", write_id, tuple(range(first, first + count)),
                                            inserted=inserted, deleted=deleted, partitions=parts,
                                            directories=tuple(written)))

    def _update_values(self, info: TableInfo, spec, src: pa.Table, keys: list[str]) -> dict[str, Any] | None:
        """``when_matched_update`` as a WHEN MATCHED clause's values (pyarrow expressions), checked."""
        if spec is None or spec is False:
            return None
        data_cols = self._io.data_schema(info).names
        if spec is True:
            spec = [c for c in data_cols if c in src.column_names and c not in keys and c not in info.bucket_cols]
        if isinstance(spec, Mapping):
            values = dict(spec)
        else:
            values = {c: source(c) for c in spec}
            missing = [c for c in values if c not in src.column_names]
            if missing:
                raise SchemaMismatchError(f"table {info.full_name}: MERGE update copies {missing} from the source, "
                                          f"which has only {src.column_names}")
        if any(k in values for k in keys):
            raise UnsupportedOperationError(f"table {info.full_name}: MERGE cannot update its ON columns {keys}")
        values = self._check_assignments(info, values, what="MERGE update")
        return {c: as_value_expression(v) for c, v in values.items()}

    @staticmethod
    def _insert_values(info: TableInfo, spec, src: pa.Table, full: pa.Schema) -> dict[str, Any] | None:
        """``when_not_matched_insert`` as a WHEN NOT MATCHED clause's values (pyarrow expressions), checked."""
        if spec is None or spec is False:
            return None
        if spec is True:
            missing = [c for c in full.names if c not in src.column_names]
            if missing:
                raise SchemaMismatchError(f"table {info.full_name}: MERGE insert of the source row needs column(s) "
                                          f"{missing}, which the source lacks (source columns {src.column_names})")
            values = {c: source(c) for c in full.names}
        else:
            unknown = [c for c in spec if c not in full.names]
            if unknown:
                raise SchemaMismatchError(f"table {info.full_name}: MERGE insert names unknown column(s) {unknown}")
            values = {c: spec.get(c) for c in full.names}
        return {c: as_value_expression(v) for c, v in values.items()}
