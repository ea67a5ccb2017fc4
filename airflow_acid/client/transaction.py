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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po

from airflow_acid.acid import names
from airflow_acid.acid.codes import DataOperation, LockState, OperationType
from airflow_acid.acid.event_schema import KEY_FIELDS
from airflow_acid.acid.orc_nulls import orc_safe
from airflow_acid.acid.orc_tail import finished_tail
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.client.errors import SchemaMismatchError, TransactionClosedError, UnsupportedOperationError
from airflow_acid.client.predicates import (
    SOURCE_PREFIX,
    Predicate,
    as_expression,
    check_predicate,
    project,
    select_rows,
    source,
)
from airflow_acid.client.table_schema import to_arrow_table
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.errors import LockNotAcquiredError, TxnAbortedError, TxnStateError
from airflow_acid.metastore.heartbeat import Heartbeater
from airflow_acid.metastore.locks import lock_component_for

if TYPE_CHECKING:
    from airflow_acid.client.warehouse import AcidWarehouse, PartitionTarget

log = logging.getLogger(__name__)

MAX_STATEMENTS = 4096
"""Statement ids must fit BucketCodec V1's 12 bits (and the ``%04d`` directory suffix)."""


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
        self._wh = warehouse
        self._ms = warehouse.metastore
        self.txn_id: int = self._ms.txns.open_txn(user=warehouse.user, host=warehouse.host,
                                                   agent_info=agent_info or "airflow-acid client")
        self.state = "open"
        self.statements: list[StatementResult] = []
        self._next_statement = 0
        self._tables: dict[str, TableInfo] = {}
        self._written: list[tuple[Any, str]] = []  # (fs, directory path) this txn created
        self._heartbeater = Heartbeater(self._ms.txns.heartbeat, lambda: [self.txn_id],
                                        warehouse.conf.txn_timeout_s / 2, name=f"acid-heartbeat-txn-{self.txn_id}")
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
        key = self._wh.qualified_name(name)
        if key not in self._tables:
            self._tables[key] = self._wh.transactional_table(name)
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
        comps = [lock_component_for(op, info.database, info.name, p, conf=self._wh.conf,
                                    is_dynamic_partition_write=dynamic) for p in partitions]
        response = self._ms.locks.lock(comps, txn_id=self.txn_id, user=self._wh.user, host=self._wh.host,
                                       agent_info=f"airflow-acid txn {self.txn_id}")
        if response.state is not LockState.ACQUIRED:
            raise LockNotAcquiredError(f"transaction {self.txn_id}: could not lock {info.full_name}: "
                                       f"{response.error_message or response.state.display}")

    def _snapshot(self, info: TableInfo):
        txns = self._ms.snapshots.valid_txn_list(self.txn_id)
        return txns, self._ms.snapshots.valid_write_id_list(info.full_name, txns)

    def _track(self, target: PartitionTarget, dirname: str) -> None:
        fs, root = self._wh.storage(target.location)
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
        schema = self._wh.data_schema(info)
        if info.is_insert_only:
            assert inserts is not None, "insert-only tables take INSERTs only (UPDATE/DELETE/MERGE refuse them)"
            self._write_insert_only(info, target, dirs[0], inserts.select(schema.names))
        else:
            write_statement(target.location, write_id, stmt, schema,
                            inserts=None if inserts is None else inserts.select(schema.names), deletes=deletes,
                            bucket_of=self._wh.bucket_assigner(info), filesystem=self._wh.filesystem)
        return dirs

    def _write_insert_only(self, info: TableInfo, target: PartitionTarget, dirname: str, rows: pa.Table) -> None:
        """Insert-only (MM) tables hold plain ORC files (no ACID columns) named like Hive's ``000000_0``."""
        fs, root = self._wh.storage(target.location)
        assign = self._wh.bucket_assigner(info)
        buckets = np.zeros(rows.num_rows, dtype=np.int64) if assign is None else assign(rows)
        fs.makedirs(posixpath.join(root, dirname), exist_ok=True)
        for bucket in np.unique(buckets):
            part = rows.filter(pa.array(buckets == bucket))
            sink = pa.BufferOutputStream()
            po.write_table(orc_safe(part), sink, compression="zlib")
            data = sink.getvalue()
            start, tail = finished_tail(data)  # the footer marks the proleptic Gregorian calendar
            with fs.open(posixpath.join(root, dirname, names.format_original_file(int(bucket))), "wb") as fh:
                fh.write(memoryview(data)[:start])
                fh.write(tail)

    def _register(self, info: TableInfo, targets: Sequence[PartitionTarget]) -> None:
        for t in targets:
            if t.spec:
                self._wh.metastore.catalog.add_partition(info.database, info.name, t.spec, location=t.location,
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
        groups = self._wh.split_by_partition(info, data, partition)
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

    def delete(self, table: str, where: Predicate = None) -> StatementResult:
        """DELETE the rows matching ``where`` (a pyarrow compute expression, ``{col: value}``, or None = all).

        Writes ``delete_delta_W_W_S`` in every partition with matching rows."""
        return self._modify(table, where, None)

    def update(self, table: str, set: Mapping[str, Any], where: Predicate = None) -> StatementResult:
        """UPDATE ``set`` ({column: literal or expression over the row}) on rows matching ``where``.

        Split-update: delete events for the old ROW__IDs in ``delete_delta_W_W_S`` and the new row versions in
        ``delta_W_W_S``. Partition and bucket columns cannot be updated (as in Hive)."""
        if not isinstance(set, Mapping) or not set:
            raise SchemaMismatchError(f"table {table}: update needs set={{column: value, ...}} with at least one column")
        return self._modify(table, where, set)

    def _check_assignments(self, info: TableInfo, values: Mapping[str, Any], *, what: str) -> dict[str, Any]:
        schema = self._wh.data_schema(info)
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

    def _modify(self, table: str, where: Predicate, assignments: Mapping[str, Any] | None) -> StatementResult:
        op_name = "update" if assignments is not None else "delete"
        info = self._table(table, op_name)
        if info.is_insert_only:
            raise UnsupportedOperationError(
                f"table {info.full_name} is insert-only (transactional_properties=insert_only): {op_name.upper()} is "
                "not supported; only INSERT is")
        full = self._wh.full_schema(info)
        expr = as_expression(where, table=info.full_name)
        check_predicate(expr, full, table=info.full_name)
        if assignments is not None:
            assignments = self._check_assignments(info, assignments, what="UPDATE")
            project(full.empty_table(), assignments, full, table=info.full_name)  # fail early on bad values
        op = DataOperation.UPDATE if assignments is not None else DataOperation.DELETE
        write_id = self._ms.txns.allocate_write_id(self.txn_id, info.database, info.name)
        self._lock(info, [None], op, dynamic=info.is_partitioned)
        stmt = self._statement_id()
        touched, written = [], []
        inserted = deleted = 0
        with self._writing():
            txns, wids = self._snapshot(info)
            for target in self._wh.partition_targets(info):
                current = self._wh.read_partition(info, target, wids, txns, include_row_ids=True)
                chosen = select_rows(current, expr)
                if not chosen.num_rows:
                    continue
                new_rows = None
                if assignments is not None:
                    kept = {c: pc.field(c) for c in self._wh.data_schema(info).names if c not in assignments}
                    new_rows = project(chosen, {**kept, **assignments}, full, table=info.full_name)
                written += self._write(info, target, write_id, stmt, inserts=new_rows,
                                       deletes=chosen.select(list(KEY_FIELDS)))
                touched.append(target.name)
                deleted += chosen.num_rows
                inserted += 0 if new_rows is None else new_rows.num_rows
            if info.is_partitioned:
                self._ms.txns.add_dynamic_partitions(self.txn_id, info.database, info.name, touched,
                                                     OperationType.UPDATE if assignments is not None
                                                     else OperationType.DELETE, write_id)
        return self._record(StatementResult(info.full_name, op_name, write_id, (stmt,), inserted=inserted,
                                            deleted=deleted, partitions=tuple(touched), directories=tuple(written)))

    # --- MERGE -----------------------------------------------------------------------------------------

    def merge(self, table: str, source_data: Any, on: str | Sequence[str], *,
              when_matched_update: bool | Sequence[str] | Mapping[str, Any] | None = None,
              when_not_matched_insert: bool | Mapping[str, Any] | None = None) -> StatementResult:
        """MERGE ``source_data`` into ``table`` ON equal ``on`` columns.

        ``when_matched_update``: True (every non-key column present in the source), a list of columns to copy
        from the source, or ``{column: literal | expression}`` where the source row is ``source("col")`` and the
        target row is ``pc.field("col")``. ``when_not_matched_insert``: True (insert the source row as is) or
        ``{column: literal | expression over source("…")}``. Statement ids: S for the insert branch, S+1 for the
        update branch (its delete_delta and delta). A target row matched by two source rows is an error (Hive's
        cardinality check), raised before anything is written.
        """
        info = self._table(table, "merge")
        if when_matched_update is None and when_not_matched_insert is None:
            raise SchemaMismatchError(f"table {info.full_name}: MERGE needs when_matched_update and/or "
                                      "when_not_matched_insert")
        if info.is_insert_only and when_matched_update is not None:
            raise UnsupportedOperationError(f"table {info.full_name} is insert-only: MERGE cannot update rows")
        full = self._wh.full_schema(info)
        data_schema = self._wh.data_schema(info)
        keys = [on] if isinstance(on, str) else list(on)
        src = self._source_table(info, source_data, keys, full)
        updates = self._update_plan(info, when_matched_update, src, keys)
        inserts = self._insert_plan(info, when_not_matched_insert, src, full)
        renamed = src.rename_columns([SOURCE_PREFIX + c for c in src.column_names])
        src_keys = [SOURCE_PREFIX + k for k in keys]
        write_id = self._ms.txns.allocate_write_id(self.txn_id, info.database, info.name)
        op = DataOperation.UPDATE if updates is not None else DataOperation.INSERT
        self._lock(info, [None], op, dynamic=info.is_partitioned)
        stmt_insert = self._statement_id(2)
        stmt_update = stmt_insert + 1
        with self._writing():
            txns, wids = self._snapshot(info)
            matched: list[tuple[PartitionTarget, pa.Table]] = []
            target_keys = []
            for target in self._wh.partition_targets(info):
                current = self._wh.read_partition(info, target, wids, txns, include_row_ids=True)
                target_keys.append(current.select(keys))
                if updates is not None and current.num_rows:
                    joined = current.join(renamed, keys=keys, right_keys=src_keys, join_type="inner",
                                          coalesce_keys=True)
                    if joined.num_rows:
                        self._check_cardinality(info, joined)
                        matched.append((target, joined))
            new_groups: list[tuple[PartitionTarget, pa.Table]] = []
            if inserts is not None:
                existing = pa.concat_tables(target_keys) if target_keys else full.empty_table().select(keys)
                unmatched = renamed.join(existing.combine_chunks(), keys=src_keys, right_keys=keys,
                                         join_type="left anti") if existing.num_rows else renamed
                if unmatched.num_rows:
                    new_rows = project(unmatched, inserts, full, table=info.full_name)
                    new_groups = self._wh.split_by_partition(info, new_rows, None)
            written: list[str] = []
            inserted = deleted = 0
            for target, rows in new_groups:
                written += self._write(info, target, write_id, stmt_insert, inserts=rows)
                inserted += rows.num_rows
            self._register(info, [t for t, _ in new_groups])
            for target, joined in matched:
                assert updates is not None, "rows are matched only for when_matched_update"
                kept = {c: pc.field(c) for c in data_schema.names if c not in updates}
                new_rows = project(joined, {**kept, **updates}, full, table=info.full_name)
                written += self._write(info, target, write_id, stmt_update, inserts=new_rows,
                                       deletes=joined.select(list(KEY_FIELDS)))
                deleted += joined.num_rows
                inserted += new_rows.num_rows
            if info.is_partitioned:
                if updates is not None:
                    self._ms.txns.add_dynamic_partitions(self.txn_id, info.database, info.name,
                                                         [t.name for t, _ in matched], OperationType.UPDATE, write_id)
                if new_groups:
                    self._ms.txns.add_write_components(self.txn_id, info.database, info.name,
                                                       [t.name for t, _ in new_groups], OperationType.INSERT, write_id)
        parts = tuple(dict.fromkeys([t.name for t, _ in new_groups] + [t.name for t, _ in matched]))
        return self._record(StatementResult(info.full_name, "merge", write_id, (stmt_insert, stmt_update),
                                            inserted=inserted, deleted=deleted, partitions=parts,
                                            directories=tuple(written)))

    def _source_table(self, info: TableInfo, data: Any, keys: list[str], full: pa.Schema) -> pa.Table:
        if isinstance(data, (list, tuple)) and data and all(isinstance(r, (tuple, list)) for r in data):
            src = to_arrow_table(data, full, table=f"MERGE source for {info.full_name}")
        else:
            if isinstance(data, (list, tuple)):
                data = pa.Table.from_pylist(list(data)) if data else full.empty_table()
            src = to_arrow_table(data, pa.schema([]), table=f"MERGE source for {info.full_name}",
                                 extra=list(full)) if _only_known(data, full) else _as_table(data)
        lowered = {c.lower(): c for c in src.column_names}
        for k in keys:
            if k not in full.names:
                raise SchemaMismatchError(f"table {info.full_name}: MERGE key {k!r} is not a column of the table "
                                          f"({full.names})")
            if k.lower() not in lowered:
                raise SchemaMismatchError(f"table {info.full_name}: MERGE source has no key column {k!r} "
                                          f"(source columns {src.column_names})")
        src = src.rename_columns([c if c.lower() not in {k.lower() for k in keys} else
                                  next(k for k in keys if k.lower() == c.lower()) for c in src.column_names])
        cols = []
        for name in src.column_names:
            col = src.column(name)
            if name in keys and col.type != full.field(name).type:
                try:
                    col = col.cast(full.field(name).type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise SchemaMismatchError(f"table {info.full_name}: MERGE key {name} of the source ({col.type}) "
                                              f"does not convert to {full.field(name).type}: {exc}") from None
            cols.append(col)
        return pa.Table.from_arrays(cols, names=src.column_names)

    def _update_plan(self, info: TableInfo, spec, src: pa.Table, keys: list[str]) -> dict[str, Any] | None:
        if spec is None or spec is False:
            return None
        data_cols = self._wh.data_schema(info).names
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
        probe = pa.concat_tables([self._wh.full_schema(info).empty_table()], promote_options="none")
        probe = _with_columns(probe, src.rename_columns([SOURCE_PREFIX + c for c in src.column_names]).slice(0, 0))
        project(probe, values, self._wh.full_schema(info), table=info.full_name)
        return values

    def _insert_plan(self, info: TableInfo, spec, src: pa.Table, full: pa.Schema) -> dict[str, Any] | None:
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
        probe = src.rename_columns([SOURCE_PREFIX + c for c in src.column_names]).slice(0, 0)
        project(probe, values, full, table=info.full_name)
        return values

    @staticmethod
    def _check_cardinality(info: TableInfo, joined: pa.Table) -> None:
        counts = joined.group_by(list(KEY_FIELDS)).aggregate([([], "count_all")])
        dup = counts.filter(pc.field("count_all") > 1)
        if dup.num_rows:
            row = dup.slice(0, 1).to_pylist()[0]
            raise SchemaMismatchError(
                f"table {info.full_name}: MERGE matched target row ROW__ID ({row['originalTransaction']}, "
                f"{row['bucket']}, {row['rowId']}) with {row['count_all']} source rows; each target row may match at "
                "most one source row (Hive's cardinality check). Deduplicate the source.")


def _as_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    try:
        import pandas as pd
        if isinstance(data, pd.DataFrame):
            return pa.Table.from_pandas(data, preserve_index=False)
    except ImportError:  # pragma: no cover
        pass
    raise SchemaMismatchError(f"MERGE source must be rows, a pyarrow Table or a pandas DataFrame, "
                              f"not {type(data).__name__}")


def _only_known(data: Any, full: pa.Schema) -> bool:
    """Whether every column of the source is a table column (then it is typed like the table)."""
    table = _as_table(data)
    known = {n.lower() for n in full.names}
    return all(c.lower() in known for c in table.column_names)


def _with_columns(base: pa.Table, extra: pa.Table) -> pa.Table:
    for name in extra.column_names:
        base = base.append_column(name, extra.column(name))
    return base
