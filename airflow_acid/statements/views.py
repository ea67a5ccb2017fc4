"""Views as Hive keeps them (TBLS.TBL_TYPE ``VIRTUAL_VIEW``, the query in VIEW_ORIGINAL_TEXT / VIEW_EXPANDED_TEXT,
its columns in COLUMNS_V2): CREATE [OR REPLACE] VIEW, ALTER VIEW … AS, DROP VIEW on airflow-acid's own metastore (a
Hive metastore's views are made in Hive), and every query that names a view reading its expanded query in its place
— at the statement's own snapshot, as the tables the query names. A view is never a DML or LOAD target.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from airflow_acid.metastore.catalog import DEFAULT_DATABASE, ColumnInfo
from airflow_acid.metastore.errors import AlreadyExistsError, InvalidInputError, NoSuchObjectError
from airflow_acid.statements import catalog
from airflow_acid.statements.dialect import HiveAcid
from airflow_acid.statements.model import (
    CreateView,
    Delete,
    DropView,
    Insert,
    LoadData,
    Merge,
    MultiInsert,
    Query,
    TableName,
    Truncate,
    Update,
)
from airflow_acid.statements.resolve import qualify_tables
from airflow_acid.statements.result import Result

if TYPE_CHECKING:
    from airflow_acid.statements.execute import StatementExecutor

MAX_DEPTH = 32
"""Views of views are expanded this deep at most (a cycle cannot be created, but a Hive metastore may hold one)."""
DML_AGAINST_VIEW = "A view cannot be used as target table for LOAD or INSERT"
UPDATE_DELETE_VIEW = "You cannot update or delete records in a view"


def create_view(ex: StatementExecutor, s: CreateView) -> Result:
    from airflow_acid.client.table_schema import hive_type
    from airflow_acid.statements.dml import DmlExecutor

    database, name = s.view.qualified.split(".", 1)
    ex.metastore.catalog.check_ddl(f"{'alter' if s.alter else 'create'} view {database}.{name}")
    catalog.require_database(ex, database)
    existing = ex.metastore.catalog.get_table(database, name) if ex.metastore.catalog.table_exists(database, name) \
        else None
    if s.alter and (existing is None or not existing.is_view):
        raise NoSuchObjectError(f"view {database}.{name} does not exist" if existing is None else
                                f"{database}.{name} is a table, not a view; ALTER VIEW … AS changes views")
    if existing is not None and s.if_not_exists:
        return Result(s.TITLE, messages=[f"{'view' if existing.is_view else 'table'} {database}.{name} already "
                                         "exists"])
    if existing is not None and not existing.is_view:
        raise AlreadyExistsError(f"Table {database}.{name} already exists and is not a view; drop it or choose "
                                 "another name")
    if existing is not None and not s.replace:
        raise AlreadyExistsError(f"View {database}.{name} already exists; use CREATE OR REPLACE VIEW or ALTER VIEW "
                                 "… AS")
    from airflow_acid.statements.dml import _hive_names

    # names the session resolved written out, unnamed expressions named _c<position> (Hive's expansion)
    qualified = qualify_tables(s.query, DEFAULT_DATABASE)
    assert isinstance(qualified, exp.Query), "a query with its names qualified stays a query"
    query = _hive_names(qualified)
    if any(t.name.lower() == name and (t.db or "").lower() == database for t in _tables(query)):
        raise InvalidInputError(f"view {database}.{name} cannot read itself (Recursive view definition)")
    schema = DmlExecutor(ex.warehouse).query_schema(expand_query(ex, query))
    names = [f.name for f in schema]
    if s.columns is not None:
        if len(s.columns) != len(names):
            raise InvalidInputError(f"The number of columns produced by the SELECT clause ({len(names)}) does not "
                                    f"match the number of column names specified by CREATE VIEW ({len(s.columns)})")
        alias = exp.to_identifier("_acid_view", quoted=True)
        query = exp.select(*(exp.column(n, table=alias.name, quoted=True).as_(c, quoted=True)
                             for n, c in zip(names, s.columns, strict=True))).from_(query.subquery(alias))
        names = list(s.columns)
    duplicates = sorted({n for n in names if [m.lower() for m in names].count(n.lower()) > 1})
    if duplicates:
        raise InvalidInputError(f"view {database}.{name}: duplicate column name(s) {', '.join(duplicates)}; give "
                                "each an alias")
    columns = [ColumnInfo(n.lower(), hive_type(f.type, f.name)) for n, f in zip(names, schema, strict=True)]
    if database == DEFAULT_DATABASE:
        ex.warehouse.create_database(DEFAULT_DATABASE, if_not_exists=True)
    info = ex.metastore.catalog.create_view(database, name, columns, original_text=s.query.sql(dialect=HiveAcid),
                                            expanded_text=query.sql(dialect=HiveAcid), replace=s.replace,
                                            owner=ex.warehouse.user)
    verb = "altered" if s.alter else "replaced" if existing is not None else "created"
    return Result("ALTER VIEW" if s.alter else s.TITLE, messages=[f"view {info.full_name} {verb}"])


def drop_view(ex: StatementExecutor, s: DropView) -> Result:
    database, name = s.view.qualified.split(".", 1)
    ex.metastore.catalog.check_ddl(f"drop view {database}.{name}")
    if not ex.metastore.catalog.table_exists(database, name):
        if s.if_exists:
            return Result(s.TITLE, messages=[f"view {database}.{name} does not exist"])
        raise NoSuchObjectError(f"view {database}.{name} does not exist")
    if not ex.metastore.catalog.get_table(database, name).is_view:
        raise InvalidInputError(f"Cannot drop a base table with DROP VIEW: {database}.{name} is a table; use DROP "
                                "TABLE")
    ex.metastore.catalog.drop_table(database, name, if_exists=True)
    return Result(s.TITLE, messages=[f"view {database}.{name} dropped"])


# --- queries reading views -------------------------------------------------------------------------------------------


def _tables(node: exp.Expr) -> list[exp.Table]:
    ctes = {c.alias_or_name.lower() for c in node.find_all(exp.CTE)}
    return [t for t in node.find_all(exp.Table) if t.name and t.name.lower() not in ctes]


def expand(ex: StatementExecutor, node: exp.Expr, depth: int = 0) -> exp.Expr:
    """``node`` with every view it names replaced by its expanded query (aliased by the name written), recursively;
    ``node`` itself when it names none."""
    tables = _tables(node)
    views = _views(ex, tables)
    if not views:
        return node
    if depth >= MAX_DEPTH:
        raise InvalidInputError(f"views nest deeper than {MAX_DEPTH} levels (a view reading itself?)")
    node = node.copy()
    for table in _tables(node):
        key = ((table.db or DEFAULT_DATABASE).lower(), table.name.lower())
        if key not in views:
            continue
        query = sqlglot.parse_one(views[key], read=HiveAcid)
        query = expand(ex, query, depth + 1)
        table.replace(exp.Subquery(this=query, alias=exp.TableAlias(
            this=exp.to_identifier(table.alias or table.name))))
    return node


def expand_query(ex: StatementExecutor, query: exp.Query) -> exp.Query:
    """:func:`expand` for a query (its views expanded, a query still)."""
    expanded = expand(ex, query)
    assert isinstance(expanded, exp.Query), "a query with its views expanded stays a query"
    return expanded


def _views(ex: StatementExecutor, tables: list[exp.Table]) -> dict[tuple[str, str], str]:
    """{(database, view): expanded text} of the views among ``tables`` (one catalog listing per database)."""
    out: dict[tuple[str, str], str] = {}
    databases = {(t.db or DEFAULT_DATABASE).lower() for t in tables}
    for database in databases:
        named = {t.name.lower() for t in tables if (t.db or DEFAULT_DATABASE).lower() == database}
        for view in set(ex.metastore.catalog.list_views(database)) & named:
            info = ex.metastore.catalog.get_table(database, view)
            out[(database, view)] = info.view_expanded_text or info.view_original_text or ""
    return out


def _is_view(ex: StatementExecutor, name: TableName) -> bool:
    database, table = name.qualified.split(".", 1)
    return table in ex.metastore.catalog.list_views(database)


def with_views(ex: StatementExecutor, s: Any) -> Any:
    """A DML statement or query with the views it reads expanded; a view as its target refused with Hive's
    message."""
    if isinstance(s, Query):
        return dataclasses.replace(s, query=expand_query(ex, s.query))
    if isinstance(s, MultiInsert):
        return dataclasses.replace(s, inserts=tuple(with_views(ex, i) for i in s.inserts))
    if isinstance(s, (Insert, LoadData)) and _is_view(ex, s.table):
        raise InvalidInputError(f"{DML_AGAINST_VIEW}: {s.table.qualified} is a view")
    if isinstance(s, (Update, Delete, Merge, Truncate)) and _is_view(ex, s.table):
        raise InvalidInputError(f"{UPDATE_DELETE_VIEW}: {s.table.qualified} is a view")
    if isinstance(s, Insert):
        return dataclasses.replace(s, source=expand(ex, s.source))
    if isinstance(s, Update):
        return dataclasses.replace(s, where=expand(ex, s.where) if s.where is not None else None,
                                   assignments=tuple((c, expand(ex, v)) for c, v in s.assignments))
    if isinstance(s, Delete):
        return dataclasses.replace(s, where=expand(ex, s.where) if s.where is not None else None)
    if isinstance(s, Merge):
        source: TableName | exp.Query = s.source
        if isinstance(source, TableName) and _is_view(ex, source):
            database, table = source.qualified.split(".", 1)
            source = exp.select(exp.Star()).from_(exp.table_(table, db=database))
        if isinstance(source, exp.Query):
            source = expand_query(ex, source)
        return dataclasses.replace(s, source=source)
    return s


__all__ = ["create_view", "drop_view", "expand", "expand_query", "with_views"]
