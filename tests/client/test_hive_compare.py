"""Hive's conversions in comparisons with literals, as expressions: which columns are converted and how."""

from __future__ import annotations

import pyarrow as pa
import sqlglot

from airflow_acid.client.hive_compare import column_types, hive_comparisons
from airflow_acid.client.hive_dialect import Hive4

TABLES = {"a": pa.schema([("id", pa.int32()), ("s", pa.string()), ("ts", pa.timestamp("us"))]),
          "b": pa.schema([("id", pa.int64()), ("d", pa.date32())])}


def converted(where: str) -> str:
    node = sqlglot.parse_one(f"SELECT 1 FROM a JOIN b ON TRUE WHERE {where}", dialect=Hive4)
    return hive_comparisons(node, column_types(TABLES)).args["where"].this.sql(dialect="duckdb")


def test_columns_are_found_by_qualifier_or_by_a_name_one_type_answers_to():
    assert converted("a.id = '7'") == "CAST(a.id AS DOUBLE) = CAST('7.0' AS DOUBLE)"
    assert converted("id = '7'") == "id = '7'"  # int and bigint: ambiguous, left to DuckDB
    assert converted("d = 'no'") == "d = CAST(NULL AS DATE)"
    assert converted("ts < '2014-09-01 09:44:23.123456789'") == \
        "ts < CAST('2014-09-01 09:44:23.123456789' AS TIMESTAMP)"
    assert converted("s > 9") == "TRY_CAST(s AS DOUBLE) > CAST(9 AS DOUBLE)"
    assert converted("s = 'x'") == "s = 'x'" and converted("a.id = 7") == "a.id = 7"
    assert converted("c.x = '1'") == "c.x = '1'"  # unknown table
