"""CREATE TABLE … AS SELECT as Hive runs it: the query compiled first (nothing created when it is wrong), the table
created with the query's columns — Hive's names (``_c0`` for an unnamed expression) and the Hive types of its
values — then filled by INSERT … SELECT in its own transaction; the table is dropped again if that insert fails."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_acid.metastore.errors import AlreadyExistsError, InvalidInputError
from airflow_acid.statements import catalog
from airflow_acid.statements.model import Column, CreateTable, CreateTableAs, DropTable, Insert
from airflow_acid.statements.result import Result

if TYPE_CHECKING:
    from airflow_acid.statements.execute import StatementExecutor


def create_table_as(ex: StatementExecutor, s: CreateTableAs) -> Result:
    from airflow_acid.client.table_schema import hive_type
    from airflow_acid.statements.dml import DmlExecutor

    database, table = s.table.qualified.split(".", 1)
    catalog.require_database(ex, database)
    if ex.metastore.catalog.table_exists(database, table):
        if s.if_not_exists:
            return Result(s.TITLE, messages=[f"table {database}.{table} already exists"])
        raise AlreadyExistsError(f"table {database}.{table} already exists")
    from airflow_acid.statements.views import expand_query

    schema = DmlExecutor(ex.warehouse).query_schema(expand_query(ex, s.query))
    names = [f.name.lower() for f in schema]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInputError(f"CREATE TABLE {database}.{table} AS SELECT: duplicate column name(s) "
                                        f"{', '.join(duplicates)}; give each an alias")
    columns = tuple(Column(f.name, hive_type(f.type, f.name)) for f in schema)
    created = ex.create_table(CreateTable(s.table, columns, properties=s.properties, location=s.location))
    try:
        inserted = ex.run(Insert(s.table, s.query))
    except BaseException:
        ex.run(DropTable(s.table, if_exists=True))
        raise
    return Result(s.TITLE, messages=created.messages + inserted.messages)


__all__ = ["create_table_as"]
