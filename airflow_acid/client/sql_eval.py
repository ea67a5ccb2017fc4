"""Hive SQL expressions and queries evaluated by DuckDB over Arrow snapshots: WHERE / SET / MERGE clauses and
SELECT. sqlglot transpiles Hive's syntax to DuckDB's; DuckDB computes; the ACID reads and writes stay in the
client API. Nothing here evaluates SQL by hand.

Rows of a target table carry their ROW__ID under internal names (:data:`ROW_ID_COLUMNS`) and, when a statement
names it, Hive's ``ROW__ID`` struct ``{writeid, bucketid, rowid}``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from airflow_acid.acid.errors import TimestampFormError
from airflow_acid.acid.event_schema import KEY_FIELDS
from airflow_acid.acid.timestamps import TimestampForm, convert, has_timestamps, in_form
from airflow_acid.client.engine_errors import engine_message
from airflow_acid.client.errors import SchemaMismatchError
from airflow_acid.client.hive_casts import converts_strings, exact_timestamp, string_values
from airflow_acid.client.hive_dialect import Hive4, session_null_order
from airflow_acid.client.merge_clauses import (
    MergeClause,
    SourceColumn,
    cardinality_error,
    checked_clauses,
    clause_chooser,
    insert_values,
    set_values,
)
from airflow_acid.client.predicates import SOURCE_PREFIX, project
from airflow_acid.client.table_schema import cast_to_column, conform_column, python_column

if TYPE_CHECKING:
    import duckdb

ROW_ID_COLUMNS: tuple[str, ...] = ("__acid_writeid", "__acid_bucketid", "__acid_rowid")
"""KEY_FIELDS (originalTransaction, bucket, rowId) of target rows, renamed so they never clash with user columns."""
PART_INDEX = "__acid_part"
"""Which partition (index into the statement's partition list) a target row came from."""
ROW_ID_STRUCT = "ROW__ID"
_ROW_ID_MENTION = re.compile(r"\brow__id\b", re.IGNORECASE)
_counter = itertools.count()


@dataclass(frozen=True)
class Sql:
    """A value given as a Hive SQL expression (``Sql("s.amount * 2")``), not as a literal."""

    text: str


def mentions_row_id(text: str) -> bool:
    """Whether SQL text names the ``ROW__ID`` pseudo-column."""
    return bool(_ROW_ID_MENTION.search(text))


def hive_expression(text: str | exp.Expr, *, what: str) -> exp.Expr:
    """One Hive expression, parsed (a node is returned as is)."""
    if isinstance(text, exp.Expr):
        return text
    try:
        node = sqlglot.parse_one(text, dialect=Hive4, into=exp.Condition)
    except (ParseError, TokenError) as exc:
        raise SchemaMismatchError(f"{what}: {text!r} is not a Hive expression: {str(exc).splitlines()[0]}") from None
    return node


def to_duckdb(node: exp.Expr) -> str:
    """A Hive expression or query as DuckDB SQL; a timestamp literal with digits below the microsecond becomes
    DuckDB's ``TIMESTAMP_NS`` (its ``TIMESTAMP`` holds microseconds); ORDER BY keys without NULLS FIRST/LAST take
    the session's ``hive.default.nulls.last``."""
    node = session_null_order(node.transform(_nanosecond_literal))
    return node.sql(dialect="duckdb")


def timestamp_literal(value: Any) -> dict[str, int] | None:
    """The exact value of a :class:`Sql` value that is only a timestamp literal (``TIMESTAMP '…'``), else None:
    such values are stored as given rather than through DuckDB (microseconds outside 1677–2262)."""
    if not isinstance(value, Sql):
        return None
    try:
        node = hive_expression(value.text, what="value")
    except SchemaMismatchError:
        return None
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.TIMESTAMP) and \
            isinstance(node.this, exp.Literal) and node.this.is_string:
        return exact_timestamp(node.this.this)
    return None


def literal_timestamps(values: Mapping[str, Any], schema: pa.Schema) -> dict[str, dict[str, int]]:
    """``{column: exact value}`` for the timestamp columns of ``values`` set to a timestamp literal."""
    out = {}
    for column, value in values.items():
        exact = timestamp_literal(value)
        if exact is not None and pa.types.is_timestamp(schema.field(column).type):
            out[column] = exact
    return out


def with_literals(result: pa.Table, literals: Mapping[str, dict[str, int]], schema: pa.Schema, *,
                  table: str) -> pa.Table:
    """``result`` with each column of ``literals`` holding that exact value (the query gave NULL in its place)."""
    for column, value in literals.items():
        field = schema.field(column)
        i = result.schema.get_field_index(column)
        values = python_column(field, [value] * result.num_rows, table)
        result = result.set_column(i, field.with_type(values.type), values)
    return result


def _nanosecond_literal(node: exp.Expr) -> exp.Expr:
    if not (isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.TIMESTAMP)
            and isinstance(node.this, exp.Literal) and node.this.is_string):
        return node
    value = exact_timestamp(node.this.this)
    if value is None or value["nanos_of_second"] % 1000 == 0:
        return node
    nanos = value["epoch_seconds"] * 1_000_000_000 + value["nanos_of_second"]
    if not -(1 << 63) <= nanos < (1 << 63):
        raise SchemaMismatchError(f"timestamp literal {node.this.this!r} has digits below the microsecond outside "
                                  "1677–2262, which SQL expressions evaluate at microseconds; give it as the whole "
                                  "value of a SET or INSERT column, or write it with the Python API")
    return exp.Cast(this=node.this.copy(), to=exp.DataType(this=exp.DataType.Type.TIMESTAMP_NS))


def with_row_ids(rows: pa.Table, *, part_index: int | None = None, row_id_struct: bool = False) -> pa.Table:
    """Target rows read with ROW__IDs: KEY_FIELDS renamed to :data:`ROW_ID_COLUMNS`, optionally Hive's ``ROW__ID``
    struct and the partition index."""
    names = [ROW_ID_COLUMNS[KEY_FIELDS.index(n)] if n in KEY_FIELDS else n for n in rows.column_names]
    out = rows.rename_columns(names)
    if row_id_struct:
        struct = pa.StructArray.from_arrays(
            [out.column(c).combine_chunks().cast(pa.int64()) if out.num_rows else pa.array([], pa.int64())
             for c in ROW_ID_COLUMNS], names=["writeid", "bucketid", "rowid"])
        out = out.append_column(ROW_ID_STRUCT, struct)
    if part_index is not None:
        out = out.append_column(PART_INDEX, pa.array([part_index] * out.num_rows, pa.int32()))
    return out


def empty_target(full: pa.Schema) -> pa.Table:
    """No rows of a table read with ROW__IDs (its columns, then KEY_FIELDS as the merge reader types them)."""
    keys = [pa.field(KEY_FIELDS[0], pa.int64()), pa.field(KEY_FIELDS[1], pa.int32()), pa.field(KEY_FIELDS[2], pa.int64())]
    return pa.schema([*full, *keys]).empty_table()


def key_columns(rows: pa.Table) -> pa.Table:
    """The ROW__ID columns of evaluated target rows under their event names (KEY_FIELDS), for delete events."""
    return pa.table({k: rows.column(c) for k, c in zip(KEY_FIELDS, ROW_ID_COLUMNS)})


class Evaluator:
    """An in-process DuckDB connection holding named Arrow tables for one statement. DuckDB is loaded and the
    connection opened on first use: a statement DuckDB has nothing to do for (``INSERT … VALUES`` of literals,
    :mod:`airflow_acid.client.literal_values`) never pays for them (docs/performance.md#cli-latency)."""

    def __init__(self) -> None:
        self._con: duckdb.DuckDBPyConnection | None = None
        self.floored: list[str] = []
        """Columns registered with timestamp digits DuckDB cannot hold (floored to microseconds for it)."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The connection (opened now if this is its first use)."""
        if self._con is None:
            import duckdb

            self._con = duckdb.connect(":memory:")
            self._con.execute("SET TimeZone = 'UTC'")
        return self._con

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def register(self, rows: pa.Table, name: str | None = None) -> str:
        """Make ``rows`` queryable as ``name`` (a fresh internal name when None); returns the name. Timestamps in
        the wide form (outside 1677–2262 with digits below the microsecond; DuckDB has no type for them) are
        compared at microseconds; values the query passes through are taken back exactly (:func:`exact_columns`)."""
        name = name or f"__acid_rows_{next(_counter)}"
        evaluated = for_evaluation(rows)
        self.floored += [f.name for f, a, b in zip(rows.schema, rows.columns, evaluated.columns)
                         if a.type != b.type and not _same_values(a, b)]
        self.con.register(name, evaluated)
        return name

    def check_exact(self, *, what: str) -> None:
        """Refuse to store what a query computed from floored timestamps (:attr:`floored`): it would change them."""
        if self.floored:
            raise SchemaMismatchError(
                f"{what}: column(s) {', '.join(sorted(set(self.floored)))} hold timestamps outside 1677–2262 with "
                "digits below the microsecond, which SQL statements evaluate at microseconds; storing the result "
                "would cut them. Write such rows with the Python API (Transaction.insert/merge with Arrow data)")

    def query(self, sql: str, *, what: str) -> pa.Table:
        """Run DuckDB SQL; errors name ``what`` and DuckDB's first line."""
        import duckdb

        try:
            return self.con.sql(sql).to_arrow_table()
        except duckdb.Error as exc:
            raise SchemaMismatchError(f"{what}: {engine_message(exc)}") from None


def for_evaluation(rows: pa.Table) -> pa.Table:
    """``rows`` with wide-form timestamps floored to microseconds, for DuckDB to compare and compute with."""
    columns = [(i, f) for i, f in enumerate(rows.schema) if has_timestamps(f.type)
               and in_form(f.type, TimestampForm.MICROSECONDS) != f.type
               and in_form(f.type, TimestampForm.NANOSECONDS) != f.type]
    for i, f in columns:
        target = in_form(f.type, TimestampForm.MICROSECONDS)
        rows = rows.set_column(i, f.with_type(target), convert(rows.column(i), target, exact=False))
    return rows


def _same_values(original: pa.ChunkedArray, evaluated: pa.ChunkedArray) -> bool:
    try:
        return bool(convert(evaluated, original.type).equals(original))
    except TimestampFormError:
        return False


def exact_columns(result: pa.Table, rows: pa.Table, row_number: str, columns: Mapping[str, str]) -> pa.Table:
    """``result`` with each column ``c`` of ``columns`` replaced by ``rows``' own column ``columns[c]``, taken by the
    row numbers in column ``row_number`` (then dropped): a value DuckDB only passed through (a column kept, or set to
    another column) comes back bit for bit as it was read."""
    picked = result.column(row_number)
    for name, original in columns.items():
        i = result.schema.get_field_index(name)
        result = result.set_column(i, rows.schema.field(original).with_name(name), rows.column(original).take(picked))
    return result.drop_columns([row_number])


def column_reference(value: Any) -> tuple[str | None, str] | None:
    """(qualifier or None, column) when a :class:`Sql` value is only a column (``SET a = b``, ``SET a = s.b``)."""
    if not isinstance(value, Sql):
        return None
    try:
        node = hive_expression(value.text, what="value")
    except SchemaMismatchError:
        return None
    if not isinstance(node, exp.Column) or node.args.get("db") is not None or not node.name:
        return None
    return (node.table or None), node.name


def copied_columns(values: Mapping[str, Any], names: Sequence[str], qualifiers: Sequence[str | None]
                   ) -> dict[str, str]:
    """``{column: source column}`` for the values that only copy a column of ``names`` (case-insensitively)
    qualified by one of ``qualifiers`` (None: unqualified)."""
    lowered = {n.lower(): n for n in names}
    allowed = {q.lower() if q else None for q in qualifiers}
    out = {}
    for column, value in values.items():
        ref = column_reference(value)
        if ref is not None and (ref[0].lower() if ref[0] else None) in allowed and ref[1].lower() in lowered:
            out[column] = lowered[ref[1].lower()]
    return out


def quote(name: str) -> str:
    """A DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def conform(rows: pa.Table, schema: pa.Schema, *, what: str) -> pa.Table:
    """Evaluated columns cast to the table's types, in ``schema`` order (Hive's implicit conversions on write — a
    string Hive cannot cast becomes NULL (:mod:`airflow_acid.client.hive_casts`) —, char and varchar values cut/padded
    to their length).
    Timestamps outside 1677–2262 stay microseconds, the unit the writers take for them (``acid/timestamps.py``)."""
    arrays = []
    for field in schema:
        col = rows.column(field.name)
        if col.type != field.type and pa.types.is_string(col.type) and converts_strings(field.type):
            col = python_column(field, string_values(col.to_pylist(), field.type), what)  # Hive's casts: else NULL
        if col.type != field.type:
            try:
                if pa.types.is_decimal(field.type) and (pa.types.is_decimal(col.type) or pa.types.is_floating(col.type)):
                    col = pc.round(col, ndigits=field.type.scale, round_mode="half_up")  # Hive rounds to the scale
                elif pa.types.is_decimal(field.type) and pa.types.is_integer(col.type):
                    col = col.cast(pa.decimal128(38, field.type.scale))  # then checked against the precision
                col = pa.chunked_array([pa.nulls(len(col), field.type)]) if col.type == pa.null() else \
                    cast_to_column(col, field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise SchemaMismatchError(f"{what}: the value for column {field.name} ({col.type}) does not fit "
                                          f"{field.type}: {str(exc).splitlines()[0]}") from None
        arrays.append(conform_column(col, field))  # char/varchar cut/padded as Hive stores them
    return pa.Table.from_arrays(arrays, schema=pa.schema([f.with_type(a.type) for f, a in zip(schema, arrays)],
                                                         metadata=schema.metadata))


def value_sql(value: Any, *, what: str) -> str:
    """A SET / INSERT value as DuckDB SQL: a :class:`Sql` expression transpiled, else a literal."""
    if isinstance(value, Sql):
        return to_duckdb(hive_expression(value.text, what=what))
    if isinstance(value, exp.Expr):
        return to_duckdb(value)
    return to_duckdb(exp.convert(value))


@dataclass
class MergeChanges:
    """What a MERGE does, per clause in order: matched target rows (ROW__ID columns, partition index, and for an
    update the new values) and new source rows to insert."""

    updates: list[tuple[int, pa.Table]]
    deletes: list[tuple[int, pa.Table]]
    inserts: list[tuple[int, pa.Table]]


def evaluate_merge(ev: Evaluator, target: pa.Table, source: pa.Table, *, on: str | exp.Expr,
                   clauses: Sequence[MergeClause], target_alias: str, source_alias: str, full: pa.Schema,
                   updatable: Sequence[str], table: str) -> MergeChanges:
    """Evaluate MERGE clauses with SQL semantics: each matched pair takes the first WHEN MATCHED clause whose
    condition holds, each unmatched source row the first WHEN NOT MATCHED clause; a target row matched by more than
    one source row is an error (Hive's cardinality check) when any WHEN MATCHED clause exists.

    DuckDB picks the rows; a clause whose values are pyarrow compute expressions (over the target's columns and the
    source's as ``source("col")``, the keyword API's form) has them computed by Arrow over the rows picked, in
    target (update) or source (insert) order."""
    what = f"MERGE into {table}"
    matched, unmatched = checked_clauses(clauses, what=what)
    t_name, s_name = ev.register(numbered(target, _TARGET_ROW)), ev.register(numbered(source, _SOURCE_ROW))
    t, s = quote(target_alias), quote(source_alias)
    on_sql = to_duckdb(hive_expression(on, what=f"{what}: ON"))
    joined = f"{t_name} AS {t} JOIN {s_name} AS {s} ON ({on_sql})"

    def condition(text: str) -> str:
        return to_duckdb(hive_expression(text, what=f"{what}: WHEN condition"))

    ids = ", ".join(f"{t}.{quote(c)}" for c in (*ROW_ID_COLUMNS, PART_INDEX))
    changes = MergeChanges([], [], [])
    if matched:
        dup = ev.query(f"SELECT {ids}, count(*) AS n FROM {joined} GROUP BY {ids} HAVING count(*) > 1 LIMIT 1",
                       what=what)
        if dup.num_rows:
            row = dup.to_pylist()[0]
            raise cardinality_error(table, (row[ROW_ID_COLUMNS[0]], row[ROW_ID_COLUMNS[1]], row[ROW_ID_COLUMNS[2]]),
                                    row["n"])
        choose = clause_chooser(matched, condition)
        for index, clause in matched:
            picked = f"FROM {joined} WHERE {choose} = {index}"
            if clause.delete:
                changes.deletes.append((index, ev.query(f"SELECT {ids} {picked}", what=what)))
                continue
            assert clause.update is not None
            values = set_values(clause.update, full.names, updatable, what=what)
            if _arrow_valued(values.values(), what=what):
                pairs = ev.query(f"SELECT {t}.{_TARGET_ROW}, {s}.{_SOURCE_ROW} {picked} ORDER BY 1", what=what)
                rows = _with_source(target.take(pairs.column(0)), source.take(pairs.column(1)))
                new = project(rows, {**{c: pc.field(c) for c in full.names}, **values}, full, table=table)
                changes.updates.append((index, pa.table({**{c: rows.column(c) for c in (*ROW_ID_COLUMNS, PART_INDEX)},
                                                         **{c: new.column(c) for c in full.names}})))
                continue
            literals = literal_timestamps(values, full)
            sql = {c: "NULL" if c in literals else value_sql(v, what=f"{what}: SET {c}") for c, v in values.items()}
            columns = ", ".join(f"{sql[c]} AS {quote(c)}" if c in sql else f"{t}.{quote(c)}" for c in full.names)
            chosen = ev.query(f"SELECT {ids}, {t}.{_TARGET_ROW}, {s}.{_SOURCE_ROW}, {columns} {picked}", what=what)
            kept = {c: c for c in full.names if c not in sql}
            kept.update(copied_columns(values, target.column_names, [target_alias]))
            from_source = copied_columns(values, source.column_names, [source_alias])
            chosen = exact_columns(chosen, source, _SOURCE_ROW.strip('"'), from_source)
            chosen = exact_columns(chosen, target, _TARGET_ROW.strip('"'), kept)
            changes.updates.append((index, with_literals(chosen, literals, full, table=table)))
    if unmatched:
        choose = clause_chooser(unmatched, condition)
        anti = (f"FROM {s_name} AS {s} LEFT JOIN {t_name} AS {t} ON ({on_sql}) "  # not NOT EXISTS: no inner scope
                f"WHERE {t}.{quote(ROW_ID_COLUMNS[0])} IS NULL AND {choose} = ")
        for index, insert_clause in unmatched:
            given = insert_values(insert_clause.insert, full.names, source.column_names, what=what)
            if _arrow_valued(given, what=what):
                picked_rows = ev.query(f"SELECT {s}.{_SOURCE_ROW} {anti}{index} ORDER BY 1", what=what)
                picked_source = source.take(picked_rows.column(0))
                rows = picked_source.rename_columns([SOURCE_PREFIX + c for c in picked_source.column_names])
                new = project(rows, {c: pc.field(SOURCE_PREFIX + v.name) if isinstance(v, SourceColumn) else v
                                     for c, v in zip(full.names, given)}, full, table=table)
            else:
                literals = literal_timestamps(dict(zip(full.names, given)), full)
                exprs = [f"{s}.{quote(v.name)}" if isinstance(v, SourceColumn) else "NULL" if c in literals else
                         value_sql(v, what=f"{what}: INSERT {c}") for c, v in zip(full.names, given)]
                cols = ", ".join(f"{e} AS {quote(c)}" for e, c in zip(exprs, full.names))
                new = ev.query(f"SELECT {s}.{_SOURCE_ROW}, {cols} {anti}{index}", what=what)
                copied = {c: v.name for c, v in zip(full.names, given) if isinstance(v, SourceColumn)}
                copied.update(copied_columns(dict(zip(full.names, given)), source.column_names, [source_alias]))
                new = with_literals(exact_columns(new, source, _SOURCE_ROW.strip('"'), copied), literals, full,
                                    table=table)
            changes.inserts.append((index, conform(new, full, what=f"table {table}: MERGE insert")))
    return changes


_TARGET_ROW, _SOURCE_ROW = quote("__acid_trow"), quote("__acid_srow")
"""Row numbers of the target and source tables inside a MERGE's queries (to take rows back out of them)."""


def numbered(rows: pa.Table, quoted: str) -> pa.Table:
    """``rows`` with their row numbers 0 … n-1 in a column named by the quoted identifier ``quoted``."""
    return rows.append_column(quoted.strip('"'), pa.array(range(rows.num_rows), pa.int64()))


def _with_source(rows: pa.Table, source: pa.Table) -> pa.Table:
    """Target rows with the source's columns beside them as ``source.<col>`` (what ``source("col")`` names)."""
    for name in source.column_names:
        rows = rows.append_column(SOURCE_PREFIX + name, source.column(name))
    return rows


def _arrow_valued(values: Any, *, what: str) -> bool:
    """Whether a clause's values are pyarrow compute expressions (then none may be :class:`Sql`)."""
    values = list(values)
    if not any(isinstance(v, pc.Expression) for v in values):
        return False
    if any(isinstance(v, (Sql, exp.Expr)) for v in values):
        raise SchemaMismatchError(f"{what}: a clause's values are either pyarrow expressions or Sql, not both")
    return True
