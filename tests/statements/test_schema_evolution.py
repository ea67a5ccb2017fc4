"""Schema evolution (issue 16 item 4): ALTER TABLE … ADD COLUMNS / REPLACE COLUMNS / CHANGE COLUMN with Hive's rules
for ACID ORC tables, on each backend. Files of every earlier schema stay readable (NULL for added columns, by
position after a rename, widened values), a major compaction writes the current schema, and refused changes name
the rule and leave the table as it was."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.orc as po
import pytest

from airflow_acid.acid.codes import CompactionType
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.column_changes import type_change_allowed
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.statements import StatementExecutor, parse_statement
from tests.services.support import unique


def run(wh, text: str):
    return StatementExecutor(wh).run(parse_statement(text))


def columns(wh, table: str) -> list[tuple[str, str]]:
    return [(c.name, c.type) for c in wh.table(table).columns]


def rows(wh, table: str) -> list[dict]:
    return sorted(wh.read(table).to_pylist(), key=lambda r: r[next(iter(r))])


@pytest.mark.parametrize(("old", "new", "allowed"), [
    ("tinyint", "smallint", True), ("smallint", "bigint", True), ("int", "bigint", True), ("bigint", "int", False),
    ("float", "double", True), ("double", "float", False), ("int", "double", False), ("int", "string", False),
    ("string", "int", False), ("decimal(10,2)", "decimal(12,2)", True), ("decimal(10,2)", "decimal(12,3)", False),
    ("decimal(10,2)", "decimal(8,2)", False), ("varchar(10)", "varchar(20)", True), ("varchar(10)", "varchar(5)", False),
    ("varchar(10)", "string", True), ("char(3)", "string", True), ("string", "varchar(10)", False),
    ("date", "timestamp", False), ("array<int>", "array<bigint>", False), ("array<int>", "array<int>", True),
])
def test_type_changes_are_lossless_widenings_only(old, new, allowed):
    assert type_change_allowed(old, new) is allowed


def test_columns_evolve_and_every_file_stays_readable(wh):
    table = f"evo.{unique('evo')}"
    wh.create_table(table, [("id", "int"), ("name", "varchar(10)")])
    with wh.transaction() as t:                                     # schema 1: (id int, name varchar(10))
        t.insert(table, [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])

    run(wh, f"ALTER TABLE {table} ADD COLUMNS (score bigint COMMENT 'points')")
    assert columns(wh, table) == [("id", "int"), ("name", "varchar(10)"), ("score", "bigint")]
    assert wh.table(table).columns[2].comment == "points"
    with wh.transaction() as t:                                     # schema 2: + score bigint
        t.insert(table, [{"id": 3, "name": "c", "score": 30}])
    assert rows(wh, table) == [{"id": 1, "name": "a", "score": None}, {"id": 2, "name": "b", "score": None},
                               {"id": 3, "name": "c", "score": 30}]

    run(wh, f"ALTER TABLE {table} CHANGE COLUMN id id bigint")     # widen in place
    run(wh, f"ALTER TABLE {table} CHANGE name label string COMMENT 'renamed'")  # rename + varchar -> string
    wh.change_column(table, "score", "points", "bigint")            # the Python API
    run(wh, f"ALTER TABLE {table} REPLACE COLUMNS (id bigint, label string, points bigint, amount decimal(10,2))")
    assert columns(wh, table) == [("id", "bigint"), ("label", "string"), ("points", "bigint"),
                                  ("amount", "decimal(10,2)")]
    with wh.transaction() as t:                                     # schema 3
        t.insert(table, [{"id": 2**40, "label": "d", "points": 4, "amount": None}])
        t.update(table, set={"points": 20}, where={"id": 2})
    model = [{"id": 1, "label": "a", "points": None, "amount": None},
             {"id": 2, "label": "b", "points": 20, "amount": None},
             {"id": 3, "label": "c", "points": 30, "amount": None},
             {"id": 2**40, "label": "d", "points": 4, "amount": None}]
    read = wh.read(table)
    assert read.schema.field("id").type == pa.int64() and read.schema.field("label").type == pa.string()
    assert rows(wh, table) == model

    # A major compaction rewrites every file with the current schema; reads do not change.
    cq = wh.metastore.compactions.enqueue(*table.split("."), None, CompactionType.MAJOR).id
    outcome = Worker(wh.metastore, runner=LocalRunner(), host="w").run_next()
    assert outcome.status is WorkerStatus.COMPACTED and outcome.compaction_id == cq, outcome.message
    location = wh.table(table).location
    [base] = [d for d in os.listdir(location) if d.startswith("base_")]
    written = po.ORCFile(os.path.join(location, base, "bucket_00000")).schema.field("row").type
    assert [(f.name, f.type) for f in written] == [("id", pa.int64()), ("label", pa.string()),
                                                   ("points", pa.int64()), ("amount", pa.decimal128(10, 2))]
    assert rows(wh, table) == model


def test_refused_changes_name_the_rule_and_change_nothing(wh):
    table = f"evo.{unique('evo')}"
    wh.create_table(table, [("id", "int"), ("name", "string"), ("b", "int")], partition_by=[("ds", "string")],
                    bucket_by=["b"], num_buckets=2)
    before = columns(wh, table)
    refused = [
        (f"ALTER TABLE {table} CHANGE id id smallint", "cannot change from int to smallint.*lossless widenings"),
        (f"ALTER TABLE {table} CHANGE id id string", "cannot change from int to string"),
        (f"ALTER TABLE {table} REPLACE COLUMNS (id int, name string)", "cannot drop columns \\(b\\)"),
        (f"ALTER TABLE {table} CHANGE name name string AFTER b", "reordering columns \\(AFTER b\\) is not supported"),
        (f"ALTER TABLE {table} CHANGE name name string FIRST", "reordering columns \\(FIRST\\)"),
        (f"ALTER TABLE {table} ADD COLUMNS (name int)", "duplicate column name name"),
        (f"ALTER TABLE {table} ADD COLUMNS (ds int)", "ds is a partition key"),
        (f"ALTER TABLE {table} CHANGE ds ds string", "ds is a partition key"),
        (f"ALTER TABLE {table} CHANGE nope x int", "has no column nope; columns are id, name, b"),
        (f"ALTER TABLE {table} CHANGE b bb int", "bucket column b cannot be renamed"),
        (f"ALTER TABLE {table} CHANGE b b bigint", "bucket column b cannot be renamed or change its type"),
        (f"ALTER TABLE {table} PARTITION (ds='x') ADD COLUMNS (c int)", "partitions of a table share its columns"),
    ]
    for text, message in refused:
        with pytest.raises(InvalidInputError, match=message):
            run(wh, text)
    assert columns(wh, table) == before
