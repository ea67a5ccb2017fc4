"""The statement parser: Hive's ACID statements through sqlglot's Hive dialect extended with them, typed; malformed
and unsupported text gives one line naming what was not understood and listing what is supported."""

from __future__ import annotations

import pytest
from sqlglot import exp

from airflow_acid.statements import (
    StatementSyntaxError,
    UnsupportedStatementError,
    parse_statement,
    parse_statements,
)
from airflow_acid.statements.model import (
    AbortCompactions,
    AbortTransactions,
    AlterTableAddPartitions,
    AlterTableColumns,
    AlterTableCompact,
    AlterTableDropPartitions,
    AlterTableProperties,
    Column,
    CreateDatabase,
    CreateTable,
    CreateTableAs,
    CreateTableLike,
    Describe,
    DescribeDatabase,
    DropDatabase,
    DropTable,
    ShowCompactions,
    ShowCreateTable,
    ShowDatabases,
    ShowLocks,
    ShowPartitions,
    ShowTables,
    ShowTblProperties,
    ShowTransactions,
    TableName,
    Use,
)

HELP_HINT = "'help' lists the statements it runs"
"""Errors point to help instead of listing every statement."""


@pytest.mark.parametrize("text, expected", [
    ("SHOW COMPACTIONS", ShowCompactions()),
    ("show compactions compactionid=12", ShowCompactions(compaction_id=12)),
    ("SHOW COMPACTIONS DATABASE sales POOL 'etl' TYPE 'MAJOR' STATUS 'ready for cleaning' "
     "ORDER BY cq_enqueue_time DESC, compactionid LIMIT 5",
     ShowCompactions(database="sales", pool="etl", type="MAJOR", status="ready for cleaning",
                     order_by=(("enqueuetime", True), ("compactionid", False)), limit=5)),
    ("SHOW COMPACTIONS SCHEMA sales", ShowCompactions(database="sales")),
    ("SHOW COMPACTIONS sales.orders PARTITION (ds='2024-01-01', hr=7) TYPE 'minor'",
     ShowCompactions(table=TableName("orders", "sales"), partition={"ds": "2024-01-01", "hr": "7"}, type="minor")),
    ("SHOW COMPACTIONS orders LIMIT 1", ShowCompactions(table=TableName("orders"), limit=1)),
    ("SHOW TRANSACTIONS", ShowTransactions()),
    ("SHOW LOCKS", ShowLocks()),
    ("SHOW LOCKS EXTENDED", ShowLocks(extended=True)),
    ("SHOW LOCKS DATABASE sales", ShowLocks(database="sales")),
    ("SHOW LOCKS sales.orders PARTITION (ds='x') EXTENDED",
     ShowLocks(table=TableName("orders", "sales"), partition={"ds": "x"}, extended=True)),
    ("ALTER TABLE orders COMPACT 'major'", AlterTableCompact(TableName("orders"), "major")),
    ("alter table sales.orders partition (ds='2024-01-01') compact 'MINOR' and wait pool 'etl' "
     "with overwrite tblproperties ('compactor.mapreduce.map.memory.mb'='2048', 'tblprops.orc.compress'='ZLIB')",
     AlterTableCompact(TableName("orders", "sales"), "MINOR", partition={"ds": "2024-01-01"}, wait=True, pool="etl",
                       properties={"compactor.mapreduce.map.memory.mb": "2048", "tblprops.orc.compress": "ZLIB"})),
    ("ALTER TABLE t PARTITION (ds='a') COMPACT 'rebalance' CLUSTERED INTO 4 BUCKETS AND WAIT POOL 'p' "
     "ORDER BY b DESC, a",
     AlterTableCompact(TableName("t"), "rebalance", partition={"ds": "a"}, wait=True, pool="p", number_of_buckets=4,
                       order_by=(("b", True), ("a", False)))),
    ("ALTER TABLE db.t ADD COLUMNS (c INT COMMENT 'x', d STRING) CASCADE",
     AlterTableColumns(TableName("t", "db"), "add", (Column("c", "INT", "x"), Column("d", "STRING")))),
    ("ALTER TABLE t REPLACE COLUMNS (a BIGINT, b DECIMAL(10,2))",
     AlterTableColumns(TableName("t"), "replace", (Column("a", "BIGINT"), Column("b", "DECIMAL(10, 2)")))),
    ("alter table t change column a b bigint comment 'c' after x restrict",
     AlterTableColumns(TableName("t"), "change", (Column("b", "BIGINT", "c"),), old_name="a", position="AFTER x")),
    ("ALTER TABLE t SET TBLPROPERTIES ('no_auto_compaction'=TRUE, 'compactorthreshold.hive.compactor.delta.pct."
     "threshold'=0.5)", AlterTableProperties(TableName("t"), set={
         "no_auto_compaction": "true", "compactorthreshold.hive.compactor.delta.pct.threshold": "0.5"})),
    ("ALTER TABLE t PARTITION (ds='a') SET TBLPROPERTIES ('no_cleanup'='true')",
     AlterTableProperties(TableName("t"), set={"no_cleanup": "true"}, partition={"ds": "a"})),
    ("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('a', 'b')",
     AlterTableProperties(TableName("t"), unset=("a", "b"), unset_if_exists=True)),
    ("ABORT TRANSACTIONS 7 8 9", AbortTransactions((7, 8, 9))),
    ("abort compactions 3, 4", AbortCompactions((3, 4))),
    ("CREATE TABLE IF NOT EXISTS sales.orders (id INT COMMENT 'order id', amount DECIMAL(10,2), tags ARRAY<STRING>) "
     "COMMENT 'all orders' PARTITIONED BY (ds STRING) CLUSTERED BY (id) INTO 4 BUCKETS STORED AS ORC "
     "LOCATION '/data/orders' TBLPROPERTIES ('transactional'='true', 'transactional_properties'='default')",
     CreateTable(TableName("orders", "sales"),
                 (Column("id", "INT", "order id"), Column("amount", "DECIMAL(10, 2)"), Column("tags", "ARRAY<STRING>")),
                 partitioned_by=(Column("ds", "STRING"),), bucket_by=("id",), num_buckets=4,
                 properties={"comment": "all orders", "transactional": "true", "transactional_properties": "default"},
                 location="/data/orders", if_not_exists=True)),
    ("CREATE TABLE t (a INT)", CreateTable(TableName("t"), (Column("a", "INT"),))),
    ("DESCRIBE t", Describe(TableName("t"))),
    ("DESCRIBE FORMATTED sales.orders PARTITION (ds='a')",
     Describe(TableName("orders", "sales"), formatted=True, partition={"ds": "a"})),
    ("DESC EXTENDED t", Describe(TableName("t"), formatted=True)),
    ("CREATE DATABASE IF NOT EXISTS s COMMENT 'c' LOCATION '/d'", CreateDatabase("s", True, "c", "/d")),
    ("CREATE SCHEMA s", CreateDatabase("s")),
    ("DROP DATABASE IF EXISTS s CASCADE", DropDatabase("s", if_exists=True, cascade=True)),
    ("DROP SCHEMA s RESTRICT", DropDatabase("s")),
    ("USE sales", Use("sales")),
    ("SHOW DATABASES", ShowDatabases()),
    ("SHOW SCHEMAS LIKE 's*|t'", ShowDatabases("s*|t")),
    ("SHOW TABLES", ShowTables()),
    ("SHOW TABLES IN s 'a*'", ShowTables("s", "a*")),
    ("SHOW TABLES FROM s LIKE 'a*'", ShowTables("s", "a*")),
    ("DROP TABLE IF EXISTS s.t PURGE", DropTable(TableName("t", "s"), if_exists=True, purge=True)),
    ("DROP TABLE t", DropTable(TableName("t"))),
    ("ALTER TABLE t ADD IF NOT EXISTS PARTITION (ds='a', hr=1) LOCATION '/p' PARTITION (ds='b', hr=2)",
     AlterTableAddPartitions(TableName("t"), (({"ds": "a", "hr": "1"}, "/p"), ({"ds": "b", "hr": "2"}, None)),
                             if_not_exists=True)),
    ("ALTER TABLE t DROP IF EXISTS PARTITION (ds='a'), PARTITION (ds='b') PURGE",
     AlterTableDropPartitions(TableName("t"), ({"ds": "a"}, {"ds": "b"}), if_exists=True, purge=True)),
    ("ALTER TABLE t DROP PARTITION (ds='a')", AlterTableDropPartitions(TableName("t"), ({"ds": "a"},))),
    ("SHOW PARTITIONS s.t PARTITION (ds='a')", ShowPartitions(TableName("t", "s"), {"ds": "a"})),
    ("SHOW TBLPROPERTIES t ('k')", ShowTblProperties(TableName("t"), "k")),
    ("SHOW TBLPROPERTIES s.t", ShowTblProperties(TableName("t", "s"))),
    ("SHOW CREATE TABLE s.t", ShowCreateTable(TableName("t", "s"))),
    ("DESCRIBE DATABASE d", DescribeDatabase("d")),
    ("DESC SCHEMA EXTENDED d", DescribeDatabase("d", extended=True)),
    ("CREATE TABLE IF NOT EXISTS s.t STORED AS ORC LOCATION '/l' TBLPROPERTIES ('transactional'='true') AS SELECT 1",
     CreateTableAs(TableName("t", "s"), exp.select("1"), {"transactional": "true"}, "/l", True)),
    ("CREATE TRANSACTIONAL TABLE t (a INT)", CreateTable(TableName("t"), (Column("a", "INT"),),
                                                         properties={"transactional": "true"})),
    ("CREATE TABLE IF NOT EXISTS t LIKE s.u LOCATION '/x' TBLPROPERTIES ('a'='b')",
     CreateTableLike(TableName("t"), TableName("u", "s"), {"a": "b"}, "/x", True)),
])
def test_statements(text, expected):
    assert parse_statement(text) == expected
    assert parse_statement(text + " ;") == expected


def test_a_script_of_several_statements_with_comments():
    script = """
        -- what is queued
        SHOW COMPACTIONS STATUS 'initiated';
        ALTER TABLE t COMPACT 'major';  /* then wait */
        SHOW TRANSACTIONS;
    """
    assert parse_statements(script) == [ShowCompactions(status="initiated"), AlterTableCompact(TableName("t"), "major"),
                                        ShowTransactions()]


@pytest.mark.parametrize("text, names", [
    ("UPDATE t SET a = 1 FROM u", "UPDATE … FROM is not supported"),
    ("MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED BY SOURCE THEN DELETE", "WHEN NOT MATCHED BY SOURCE"),
    ("SHOW FUNCTIONS", "SHOW FUNCTIONS is not supported"),
    ("DROP MATERIALIZED VIEW t", "DROP MATERIALIZED VIEW is not supported"),
    ("DROP TABLE t, u", "DROP TABLE of several objects is not supported"),
    ("CREATE DATABASE d WITH DBPROPERTIES ('a'='b')", "CREATE DATABASE is not supported"),
    ("TRUNCATE TABLE t, u", "TRUNCATE TABLE of several tables is not supported"),
    ("ALTER TABLE t RENAME TO u", "ALTER TABLE … RENAME is not supported"),
    ("ALTER TABLE t SET SERDEPROPERTIES ('a'='b')", "ALTER TABLE … SET SERDEPROPERTIES is not supported"),
    ("CREATE TABLE t (a INT) STORED AS PARQUET", "STORED AS PARQUET is not supported by airflow-acid sql "
                                                 "(airflow-acid creates ORC tables (STORED AS ORC) and plain text "
                                                 "tables (STORED AS TEXTFILE))"),
    ("CREATE EXTERNAL TABLE t (a INT) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS ORC",
     "ROW FORMAT … STORED AS ORC is not supported"),
    ("CREATE TABLE t STORED AS TEXTFILE AS SELECT 1", "STORED AS TEXTFILE … AS SELECT is not supported"),
    ("CREATE TABLE t (a INT) AS SELECT 1", "CREATE TABLE t (columns) AS SELECT is not supported"),
    ("CREATE TABLE t PARTITIONED BY (ds STRING) AS SELECT 1", "PARTITIONED BY / CLUSTERED BY … AS SELECT is not"),
    ("CREATE TEMPORARY TABLE t (a INT)", "CREATE TEMPORARY TABLE is not supported by airflow-acid sql (session-"),
    ("CREATE TRANSACTIONAL TABLE t AS SELECT 1", "CREATE TRANSACTIONAL TABLE … AS SELECT is not supported"),
    ("CREATE TABLE t (a INT) CLUSTERED BY (a) SORTED BY (a) INTO 2 BUCKETS", "SORTED BY is not supported"),
    ("CREATE TABLE t (a INT NOT NULL)", "column constraint 'NOT NULL' is not supported"),
])
def test_unsupported_statements_name_what_and_point_to_help(text, names):
    with pytest.raises(UnsupportedStatementError) as err:
        parse_statements(text)
    message = str(err.value)
    assert names in message and message.endswith(HELP_HINT) and "\n" not in message
    assert "supported: SELECT" not in message and "<class" not in message


@pytest.mark.parametrize("text, names", [
    ("ALTER TABLE t COMPACT major", "line 1:22 cannot recognize input near 'major' '<EOF>' '<EOF>'; expecting the "
                                    "compaction type in quotes after COMPACT: 'major', 'minor' or 'rebalance'"),
    ("ALTER TABLE t COMPACT 'major' NOW", "near 'NOW' '<EOF>' '<EOF>'; expecting CLUSTERED INTO <n> BUCKETS, "
                                          "AND WAIT, POOL '<name>', "
                                          "WITH OVERWRITE TBLPROPERTIES (…) or ORDER BY … after COMPACT 'major'"),
    ("ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 2", "expecting BUCKETS after CLUSTERED INTO <n>"),
    ("ALTER TABLE t COMPACT 'minor' ORDER BY a", "ORDER BY is only allowed for a 'rebalance' compaction, not 'minor'"),
    ("ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 0 BUCKETS", "needs a positive number of buckets, not 0"),
    ("SHOW COMPACTIONS COMPACTIONID 5", "expecting '=' after COMPACTIONID"),
    ("SHOW COMPACTIONS WHERE state='failed'", "line 1:17 cannot recognize input near 'WHERE' 'state' '='; "
                                              "expecting COMPACTIONID=<id>, DATABASE <name>, a table "
                                              "name, POOL, TYPE, STATUS, ORDER BY or LIMIT"),
    ("SHOW COMPACTIONS POOL etl", "expecting the pool in quotes after POOL"),
    ("SHOW COMPACTIONS LIMIT many", "expected a row count after LIMIT, found 'many'"),
    ("SHOW COMPACTIONS ORDER BY 1", "can only be ordered by column names"),
    ("SHOW LOCKS t extra", "line 1:13 cannot recognize input near 'extra' '<EOF>' '<EOF>'"),
    ("ABORT TRANSACTIONS", "line 1:18 cannot recognize input near '<EOF>' '<EOF>' '<EOF>'; expecting one or more ids"),
    ("ABORT SESSIONS 1", "expecting TRANSACTIONS or COMPACTIONS after ABORT"),
    ("ALTER TABLE t PARTITION (ds) COMPACT 'major'", "partition spec items must be key='value', found 'ds'"),
    ("ALTER TABLE c.d.t COMPACT 'major'", "has too many parts"),
    ("SHOW COMPACTIONS 'unclosed", "line 1:17 character \"'\" starts a string or name that is never closed"),
    ("CREATE TABLE t (a INT", "line 1:21 cannot recognize input near '<EOF>' '<EOF>' '<EOF>'; expecting ')'"),
    ("SELECT 1 *", "line 1:10 cannot recognize input near '<EOF>' '<EOF>' '<EOF>'"),
    ("SELEC 1", "line 1:0 cannot recognize input near 'SELEC' '1' '<EOF>'"),
    ("  ;  ", "no statement given"),
    ("SHOW LOCKS\x00", "line 1:10 control character '\\x00'; statements are plain text"),
    ("SHOW COMPACTIONS;\nSHOW \x1bLOCKS", "line 2:5 control character '\\x1b'"),
    ("ALTER TABLE t COMPACT 'major' " + "X" * 5000, "near 'XXXX"),
])
def test_malformed_statements(text, names):
    with pytest.raises(StatementSyntaxError) as err:
        parse_statements(text)
    assert names in str(err.value) and "supported: SELECT" not in str(err.value)
    assert not any(internal in str(err.value) for internal in ("<class", "Required keyword", "sqlglot", "SENTINEL"))
    assert len(str(err.value)) < 600  # the user's text is quoted, never echoed back whole


def test_one_bad_statement_rejects_the_whole_script():
    with pytest.raises(StatementSyntaxError, match="line 2:39 cannot recognize input near 'FOO' '<EOF>' '<EOF>'"):
        parse_statements("SHOW COMPACTIONS;\nALTER TABLE t COMPACT 'major' POOL 'p' FOO")
    with pytest.raises(UnsupportedStatementError, match="^SHOW FUNCTIONS is not supported"):
        parse_statements("ALTER TABLE t COMPACT 'major'; SHOW FUNCTIONS")
