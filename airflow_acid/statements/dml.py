"""SELECT, INSERT [OVERWRITE], UPDATE, DELETE, MERGE and TRUNCATE of ``airflow-acid sql``: each statement is one
transaction (Hive's autocommit) through the client API, which takes Hive's locks and writes Hive's directories.
Tables a statement reads are read at that transaction's snapshot (SHARED_READ) and handed to DuckDB, which
evaluates the Hive expressions after sqlglot transpiles them (:mod:`airflow_acid.client.sql_eval`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
from sqlglot import exp

from airflow_acid.acid.merge import FILE_NAME_COLUMN, IS_DELETED_COLUMN, VirtualColumns
from airflow_acid.client.errors import NotTransactionalError, SchemaMismatchError, UnsupportedOperationError
from airflow_acid.client.hive_compare import column_types, hive_comparisons
from airflow_acid.client.hive_dialect import Hive4
from airflow_acid.client.literal_values import literal_table
from airflow_acid.client.merge_clauses import WhenMatched, WhenNotMatched
from airflow_acid.client.sql_eval import (
    ROW_ID_STRUCT,
    Evaluator,
    Sql,
    conform,
    empty_target,
    mentions_row_id,
    to_duckdb,
    with_row_ids,
)
from airflow_acid.client.transaction import StatementResult, Transaction
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.statements.hive_text import shortest_float32
from airflow_acid.statements.model import (
    Delete,
    Insert,
    Merge,
    MergeWhen,
    MultiInsert,
    Query,
    TableName,
    Truncate,
    Update,
)
from airflow_acid.statements.result import Result
from airflow_acid.statements.text_write import TEXT_OPERATIONS, writable_text_table, write_text_table


def _hive(node: exp.Expr) -> str:
    return node.sql(dialect=Hive4)


def _table_name(table: exp.Table) -> str:
    """A table's name, options or not (``t('k'='v')`` parses as a function call named t)."""
    return table.this.name if isinstance(table.this, exp.Anonymous) else table.name


def _names(node: exp.Expr) -> list[exp.Table]:
    """The warehouse tables a query reads (CTE names excluded)."""
    ctes = {c.alias_or_name.lower() for c in node.find_all(exp.CTE)}
    return [t for t in node.find_all(exp.Table) if _table_name(t) and _table_name(t).lower() not in ctes]


class Reader(Protocol):
    """What :func:`query_rows` reads tables from: a transaction, or :class:`SchemaOnly` while compiling."""

    def read(self, table: str, partition: Any = None, *, row_ids: bool = False,
             virtual: VirtualColumns = VirtualColumns()) -> pa.Table: ...


FETCH_DELETED_ROWS = "acid.fetch.deleted.rows"
"""Hive 4's table option (``FROM t('acid.fetch.deleted.rows'='true')``): deleted rows too, ROW__IS__DELETED true."""
_FILE_NAME_MENTION = re.compile(r"\binput__file__name\b", re.IGNORECASE)
_IS_DELETED_MENTION = re.compile(r"\brow__is__deleted\b", re.IGNORECASE)


def table_options(table: exp.Table) -> dict[str, str]:
    """Hive's table options written after a table name (``t('k'='v', …)``); only the keys airflow-acid knows."""
    if not isinstance(table.this, exp.Anonymous):
        return {}
    options: dict[str, str] = {}
    for item in table.this.expressions:
        if not (isinstance(item, exp.EQ) and isinstance(item.this, exp.Literal) and item.this.is_string
                and isinstance(item.expression, exp.Literal)):
            raise UnsupportedOperationError(f"table {table.this.name}: table options are 'key'='value' pairs, "
                                            f"found {item.sql(dialect=Hive4)}")
        key, value = item.this.this.strip().lower(), str(item.expression.this).strip().lower()
        if key != FETCH_DELETED_ROWS:
            raise UnsupportedOperationError(f"table {table.this.name}: table option {key!r} is not supported; "
                                            f"airflow-acid takes {FETCH_DELETED_ROWS!r}")
        if value not in ("true", "false"):
            raise UnsupportedOperationError(f"table {table.this.name}: {key} takes 'true' or 'false', not {value!r}")
        options[key] = value
    return options


@dataclass(frozen=True)
class _Mentions:
    """The pseudo-columns a statement's text names: every table it reads carries them."""

    row_id: bool
    file_name: bool
    is_deleted: bool

    @classmethod
    def of(cls, node: exp.Expr) -> _Mentions:
        text = _hive(node)
        fetch = any(table_options(t).get(FETCH_DELETED_ROWS) == "true" for t in _names(node))
        return cls(mentions_row_id(text), bool(_FILE_NAME_MENTION.search(text)),
                   fetch or bool(_IS_DELETED_MENTION.search(text)))

    @property
    def hidden(self) -> list[str]:
        """Virtual columns ``*`` leaves out."""
        return [name for name, on in ((ROW_ID_STRUCT, self.row_id), (FILE_NAME_COLUMN, self.file_name),
                                      (IS_DELETED_COLUMN, self.is_deleted)) if on]


def _read_table(txn: Reader, table: exp.Table, mentions: _Mentions) -> pa.Table:
    """One table a statement names, with the virtual columns the statement mentions (ROW__IS__DELETED false for
    every row unless the table's options fetch deleted rows)."""
    fetch = table_options(table).get(FETCH_DELETED_ROWS) == "true"
    name = TableName(_table_name(table), table.db or None)
    rows = txn.read(name.qualified, row_ids=mentions.row_id,
                    virtual=VirtualColumns(file_name=mentions.file_name, deleted_rows=fetch))
    if mentions.is_deleted and not fetch:
        rows = rows.append_column(pa.field(IS_DELETED_COLUMN, pa.bool_()),
                                  pa.array([False] * rows.num_rows, pa.bool_()))
    return rows


def query_rows(txn: Reader, ev: Evaluator, node: exp.Expr, *, what: str) -> pa.Table:
    """Run a query (or VALUES) over the warehouse: every table it names is read at ``txn``'s snapshot (with Hive's
    ``ROW__ID`` when the text names it) and registered in DuckDB under an internal name, keeping the name it was
    written with as its alias. VALUES of literals only are typed as DuckDB types them without DuckDB
    (:func:`literal_table`)."""
    if isinstance(node, exp.Values):
        literal = literal_table(node)
        if literal is not None:
            return literal
    node = node.copy()
    mentions = _Mentions.of(node)
    schemas: dict[str, pa.Schema] = {}
    for table in _names(node):
        rows = _read_table(txn, table, mentions)
        internal = ev.register(rows)
        alias = table.alias or _table_name(table)
        schemas[alias] = rows.schema
        table.replace(exp.Table(this=exp.to_identifier(internal),
                                alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))))
    if mentions.hidden:  # Hive's ROW__ID and the other virtual columns: * and t.* leave them out
        for star in list(node.find_all(exp.Star)):
            if isinstance(star.parent, (exp.Select, exp.Column)) and not isinstance(star.parent, exp.Count):
                star.set("except_", [exp.column(c, quoted=True) for c in mentions.hidden])
    if isinstance(node, exp.Values):
        return ev.query(f"SELECT * FROM ({to_duckdb(node)})", what=what)
    return ev.query(to_duckdb(hive_comparisons(node, column_types(schemas))), what=what)


def subquery_sources(txn: Reader, nodes: list[exp.Expr | None]) -> tuple[list[exp.Expr | None], dict[str, pa.Table]]:
    """UPDATE / DELETE conditions and values with the tables their subqueries name (``id IN (SELECT id FROM o)``,
    ``EXISTS (…)``, scalar subqueries) read at ``txn``'s snapshot: copies of ``nodes`` naming each under an internal
    name (keeping its written name as alias), and {internal name: rows} for DuckDB."""
    sources: dict[str, pa.Table] = {}
    out: list[exp.Expr | None] = []
    for node in nodes:
        if node is None:
            out.append(None)
            continue
        node = node.copy()
        mentions = _Mentions.of(node)
        for table in _names(node):
            internal = f"__acid_source_{len(sources)}"
            sources[internal] = _read_table(txn, table, mentions)
            table.replace(exp.Table(this=exp.to_identifier(internal),
                                    alias=exp.TableAlias(this=exp.to_identifier(table.alias or _table_name(table),
                                                                                quoted=True))))
        out.append(node)
    return out, sources


def _hive_value(value: Any) -> Any:
    """How Hive's CLI prints a complex value: JSON (maps as objects); scalars as they are."""
    if isinstance(value, (dict, list)):
        return json.dumps(_plain(value), separators=(",", ":"), default=str)
    return value


def _column_values(column: pa.ChunkedArray) -> list[Any]:
    """A result column as Python values; FLOAT values with the digits Hive shows (``3.14``, not the double
    ``3.1399998664855957`` nearest the 32-bit value)."""
    values: list[Any] = column.to_pylist()
    if pa.types.is_float32(column.type):
        return [shortest_float32(v) for v in values]
    return values


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a map from pyarrow
            return {str(k): _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    return value


def _hive_names(query: exp.Query) -> exp.Query:
    """A copy of ``query`` whose unnamed expression columns are named as Hive names them: _c<position>."""
    query = query.copy()
    if isinstance(query, exp.Select):
        for i, e in enumerate(list(query.expressions)):
            if not isinstance(e, (exp.Column, exp.Alias, exp.Star)):
                e.replace(exp.alias_(e.copy(), f"_c{i}"))
    return query


class SchemaOnly:
    """Stands in for a transaction while a statement is compiled: every table reads as no rows with its real
    columns (and ROW__ID), so DuckDB binds names, types and functions before any transaction opens — as Hive
    compiles a statement before its transaction begins, a refused statement leaves none behind."""

    def __init__(self, warehouse: AcidWarehouse) -> None:
        self.warehouse = warehouse

    def read(self, table: str, partition: Any = None, *, row_ids: bool = False,
             virtual: VirtualColumns = VirtualColumns()) -> pa.Table:
        info = self.warehouse.table(table)  # a plain table is read too (Transaction.read refuses its ROW__ID)
        if (row_ids or virtual.deleted_rows) and not info.is_transactional:
            what = "ROW__ID" if row_ids else f"deleted rows ('{FETCH_DELETED_ROWS}')"
            raise NotTransactionalError(f"table {info.full_name} is not transactional: it has no {what}")
        full = pa.schema(list(self.warehouse.io.full_schema(info)) + virtual.fields())
        if not row_ids:
            return full.empty_table()
        return with_row_ids(empty_target(full), row_id_struct=True).select(["ROW__ID", *full.names])


class DmlExecutor:
    """Runs one DML statement or query on ``warehouse`` in its own transaction, opened only once the statement
    compiled (:meth:`compile`)."""

    def __init__(self, warehouse: AcidWarehouse) -> None:
        self.warehouse = warehouse

    def _in_txn(self, statement: str) -> Transaction:
        return self.warehouse.transaction(agent_info=f"airflow-acid sql {statement}")

    def compile(self, s: Query | Insert | MultiInsert | Update | Delete | Merge | Truncate) -> None:
        """Check ``s`` against the tables' columns without a transaction: unknown tables and columns, functions,
        types and VALUES/SELECT widths fail here, with nothing opened (the statement then runs in its own
        transaction; what only the data can show — a failed cast of one value, MERGE's cardinality — fails there)."""
        dry = SchemaOnly(self.warehouse)
        with Evaluator() as ev:
            if isinstance(s, Query):
                query_rows(dry, ev, s.query, what="SELECT")
            elif isinstance(s, (Insert, MultiInsert)):
                for each in s.inserts if isinstance(s, MultiInsert) else (s,):
                    _spec, _dynamic, targets = _insert_targets(self._insert_table(each.table.qualified), each)
                    rows = query_rows(dry, ev, each.source, what=f"INSERT into {each.table.qualified}")
                    _check_width(each, rows.num_columns, targets)
            elif isinstance(s, (Update, Delete)):
                info = self.warehouse.transactional_table(s.table.qualified)
                if isinstance(s, Update):
                    _check_assigned(info, [c for c, _v in s.assignments], self.warehouse.io.data_schema(info).names)
                values = [v for _c, v in s.assignments] if isinstance(s, Update) else [exp.Literal.number(1)]
                probe = exp.select(*values).from_(exp.to_table(s.table.qualified))
                query_rows(dry, ev, probe.where(s.where) if s.where is not None else probe,
                           what=f"{s.TITLE} {info.full_name}")
            elif isinstance(s, Merge):
                self.warehouse.transactional_table(s.table.qualified)
                if isinstance(s.source, TableName):
                    self.warehouse.table(s.source.qualified)
                else:
                    query_rows(dry, ev, s.source, what=f"MERGE into {s.table.qualified}: USING")
            else:
                self.warehouse.transactional_table(s.table.qualified)

    def query_schema(self, query: exp.Query) -> pa.Schema:
        """The columns ``query`` returns (names as Hive gives them, Arrow types), compiled without a transaction —
        what CREATE TABLE … AS SELECT creates."""
        with Evaluator() as ev:
            return query_rows(SchemaOnly(self.warehouse), ev, _hive_names(query), what="CREATE TABLE … AS SELECT"
                              ).schema

    def select(self, s: Query) -> Result:
        query = _hive_names(s.query)
        with self._in_txn("SELECT") as txn, Evaluator() as ev:
            rows = query_rows(txn, ev, query, what="SELECT")
        columns = [_column_values(rows.column(i)) for i in range(rows.num_columns)]  # names may repeat
        notes = [f"column(s) {', '.join(sorted(set(ev.floored)))} hold timestamps outside 1677–2262 with digits "
                 "below the microsecond: SQL shows them at microseconds; the Python API (Transaction.read) gives "
                 "every digit"] if ev.floored else []
        return Result(s.TITLE, list(rows.column_names), [[_hive_value(v) for v in row] for row in zip(*columns)],
                      messages=notes)

    def insert(self, s: Insert) -> Result:
        with self._in_txn("INSERT") as txn:
            done = self._insert(txn, s)
        return self._result(s.TITLE if not s.overwrite else "INSERT OVERWRITE", done, txn)

    def multi_insert(self, s: MultiInsert) -> Result:
        """Every INSERT of a multi-table INSERT in one transaction (one write id per table, as Hive)."""
        with self._in_txn("INSERT") as txn:
            done = [self._insert(txn, each) for each in s.inserts]
        results = [self._result(each.TITLE if not each.overwrite else "INSERT OVERWRITE", d, txn)
                   for each, d in zip(s.inserts, done)]
        return Result(s.TITLE, messages=[m for r in results for m in r.messages])

    def _insert(self, txn: Transaction, s: Insert) -> StatementResult:
        what = f"INSERT into {s.table.qualified}"
        with Evaluator() as ev:
            info = self._insert_table(s.table.qualified)
            data_cols = [c.name for c in info.columns]
            keys = [k.name for k in info.partition_keys]
            spec, dynamic, targets = _insert_targets(info, s)
            rows = query_rows(txn, ev, s.source, what=what)
            ev.check_exact(what=what)
            _check_width(s, rows.num_columns, targets)
            rows = rows.rename_columns(targets)
            for c in data_cols:
                if c not in targets:
                    rows = rows.append_column(c, pa.nulls(rows.num_rows))
            static = {k: v for k, v in spec.items() if v is not None}
            if dynamic:
                for k, v in static.items():
                    rows = rows.append_column(k, pa.array([v] * rows.num_rows, pa.string()))
            partition = static if info.is_partitioned and not dynamic else None
            typed = conform(rows.select(data_cols), self.warehouse.io.data_schema(info), what=what)  # Hive's casts
            for k in (keys if dynamic else []):
                typed = typed.append_column(k, rows.column(k))
            if info.is_text:  # a plain text table: a file as Hive writes it, outside the transaction
                return write_text_table(self.warehouse, info, typed, overwrite=s.overwrite)
            write = txn.insert_overwrite if s.overwrite else txn.insert
            return write(s.table.qualified, typed, partition)

    def _insert_table(self, name: str) -> TableInfo:
        """The table an INSERT writes: an ACID table, or an unpartitioned text table."""
        info = self.warehouse.table(name)
        return writable_text_table(info) if info.is_text else self.warehouse.transactional_table(name)

    def update(self, s: Update) -> Result:
        with self._in_txn("UPDATE") as txn:
            nodes, sources = subquery_sources(txn, [s.where, *(v for _, v in s.assignments)])
            where, *values = nodes
            done = txn.update(s.table.qualified, {c: Sql(_hive(v)) for (c, _), v in zip(s.assignments, values)
                                                  if v is not None},
                              _hive(where) if where is not None else None, sources=sources)
        return self._result(s.TITLE, done, txn)

    def delete(self, s: Delete) -> Result:
        with self._in_txn("DELETE") as txn:
            [where], sources = subquery_sources(txn, [s.where])
            done = txn.delete(s.table.qualified, _hive(where) if where is not None else "TRUE", sources=sources)
        return self._result(s.TITLE, done, txn)

    def truncate(self, s: Truncate) -> Result:
        with self._in_txn("TRUNCATE") as txn:
            done = txn.truncate(s.table.qualified, s.partition)
        return self._result(s.TITLE, done, txn)

    def merge(self, s: Merge) -> Result:
        with self._in_txn("MERGE") as txn, Evaluator() as ev:
            if isinstance(s.source, TableName):  # a table: its rows as read, every value exact
                source = txn.read(s.source.qualified)
            else:
                source = query_rows(txn, ev, s.source, what=f"MERGE into {s.table.qualified}: USING")
                ev.check_exact(what=f"MERGE into {s.table.qualified}: USING")
            done = txn.merge(s.table.qualified, source, _hive(s.on), when=list(_clauses(s.clauses)),
                             target_alias=s.target_alias, source_alias=s.source_alias)
        return self._result(s.TITLE, done, txn)

    @staticmethod
    def _result(title: str, done: StatementResult, txn: Transaction) -> Result:
        parts = [p for p in done.partitions if p]
        where = f" in {len(parts)} partition(s)" if parts else ""
        counts = {"insert": f"{done.inserted} row(s) inserted", "update": f"{done.deleted} row(s) updated",
                  "insert text": f"{done.inserted} row(s) inserted",
                  "insert overwrite text": f"{done.inserted} row(s) written (replacing the old rows)",
                  "delete": f"{done.deleted} row(s) deleted",
                  "insert overwrite": f"{done.inserted} row(s) written (replacing the old rows)",
                  "truncate": "truncated",
                  "merge": f"{done.inserted} row(s) written, {done.deleted} matched row(s) updated or deleted"}
        text = counts.get(done.operation, done.operation)
        write = f", write id {done.write_id}" if done.write_id is not None else ""
        how = "a plain table, no write id" if done.operation in TEXT_OPERATIONS else f"transaction {txn.txn_id}{write}"
        return Result(title, messages=[f"{done.table}: {text}{where} ({how})"])


def _insert_targets(info: TableInfo, s: Insert) -> tuple[dict[str, str | None], list[str], list[str]]:
    """(PARTITION spec by lower-case key, dynamic partition keys, the columns the VALUES/SELECT fill in order)."""
    what = f"INSERT into {s.table.qualified}"
    data_cols = [c.name for c in info.columns]
    keys = [k.name for k in info.partition_keys]
    spec = {k.lower(): v for k, v in (s.partition or {}).items()}
    unknown = [k for k in spec if k not in keys]
    if unknown:
        raise SchemaMismatchError(f"{what}: PARTITION names {unknown}, which are not partition columns "
                                  f"of the table ({keys or 'none'})")
    dynamic = [k for k in keys if spec.get(k) is None] if info.is_partitioned else []
    targets = list(s.columns) if s.columns is not None else data_cols
    lowered = {c.lower(): c for c in data_cols + keys}
    bad = [c for c in targets if c.lower() not in lowered]
    if bad:
        raise SchemaMismatchError(f"{what}: unknown column(s) {bad}; columns are {data_cols}")
    return spec, dynamic, [lowered[c.lower()] for c in targets] + (dynamic if s.columns is None else [])


def _check_width(s: Insert, width: int, targets: list[str]) -> None:
    if width != len(targets):
        raise SchemaMismatchError(
            f"INSERT into {s.table.qualified}: the {'VALUES' if isinstance(s.source, exp.Values) else 'SELECT'} "
            f"gives {width} column(s), the table takes {len(targets)} ({', '.join(targets)})")


def _check_assigned(info: TableInfo, columns: list[str], data_columns: list[str]) -> None:
    """UPDATE's SET names data columns that are neither partition nor bucket columns (Hive's rules)."""
    lowered = {c.lower(): c for c in data_columns}
    keys = {k.name.lower() for k in info.partition_keys}
    for column in columns:
        name = lowered.get(column.lower())
        if column.lower() in keys:
            raise UnsupportedOperationError(f"table {info.full_name}: UPDATE cannot change partition column {column} "
                                            "(Hive does not support updating partition columns); delete and "
                                            "re-insert the rows instead")
        if name is None:
            raise SchemaMismatchError(f"table {info.full_name}: UPDATE names unknown column {column!r}; columns are "
                                      f"{data_columns}")
        if name in info.bucket_cols:
            raise UnsupportedOperationError(f"table {info.full_name}: UPDATE cannot change bucket column {name} "
                                            "(Hive does not support updating bucketing columns)")


def _clauses(clauses: Iterable[MergeWhen]) -> Iterable[WhenMatched | WhenNotMatched]:
    for c in clauses:
        condition = _hive(c.condition) if c.condition is not None else None
        if c.matched:
            yield WhenMatched(update={k: Sql(_hive(v)) for k, v in c.update} if c.update is not None else None,
                              delete=c.delete, condition=condition)
        else:
            values = [Sql(_hive(v)) for v in c.insert or ()]
            yield WhenNotMatched(insert=dict(zip(c.insert_columns, values)) if c.insert_columns else values,
                                 condition=condition)
