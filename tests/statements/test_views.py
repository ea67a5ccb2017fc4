"""Views on each backend, as Hive keeps them (TBL_TYPE VIRTUAL_VIEW, VIEW_ORIGINAL_TEXT / VIEW_EXPANDED_TEXT, its
columns): read in SELECTs, joins, views of views, INSERT … SELECT, CTAS and MERGE sources; refused as DML and LOAD
targets with Hive's messages; CREATE OR REPLACE / ALTER VIEW … AS / DROP VIEW; SHOW TABLES / VIEWS / CREATE TABLE."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from airflow_acid.metastore.catalog import VIRTUAL_VIEW
from airflow_acid.metastore.errors import AlreadyExistsError, InvalidInputError
from airflow_acid.metastore.schema import TBLS
from airflow_acid.statements import StatementExecutor, parse_statement
from tests.services.support import unique


def run(ex: StatementExecutor, text: str):
    return ex.run(parse_statement(text))


def test_views_are_stored_as_hive_stores_them_and_read_in_queries(wh):
    ex = StatementExecutor(wh)
    db = unique("views")
    run(ex, f"CREATE DATABASE {db}")
    run(ex, f"USE {db}")
    run(ex, "CREATE TABLE t (a INT, b STRING) TBLPROPERTIES ('transactional'='true')")
    run(ex, "INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z')")
    assert run(ex, "CREATE VIEW v AS SELECT a, upper(b) AS ub FROM t WHERE a > 1").messages == \
        [f"view {db}.v created"]
    run(ex, "CREATE VIEW v2 (k, n) AS SELECT a, count(*) FROM v GROUP BY a")  # a view of a view, columns named
    with wh.metastore.db.engine.connect() as conn:
        row = conn.execute(sa.select(TBLS.c.TBL_TYPE, TBLS.c.VIEW_ORIGINAL_TEXT, TBLS.c.VIEW_EXPANDED_TEXT)
                           .where(TBLS.c.TBL_NAME == "v")).one()
    assert row.TBL_TYPE == VIRTUAL_VIEW and row.VIEW_ORIGINAL_TEXT.startswith("SELECT a, UPPER(b) AS ub FROM")
    assert f"FROM {db}.t" in row.VIEW_EXPANDED_TEXT  # the names the session resolved, written out
    assert [(c.name, c.type) for c in wh.table(f"{db}.v2").columns] == [("k", "int"), ("n", "bigint")]

    assert run(ex, "SELECT * FROM v ORDER BY a").rows == [[2, "Y"], [3, "Z"]]
    assert run(ex, "SELECT t.b, w.ub FROM t JOIN v w ON t.a = w.a ORDER BY t.a").rows == [["y", "Y"], ["z", "Z"]]
    assert run(ex, "SELECT k, n FROM v2 ORDER BY k").rows == [[2, 1], [3, 1]]
    run(ex, "UPDATE t SET b = 'w' WHERE a = 3")  # a view reads the tables at the statement's snapshot
    assert run(ex, "SELECT ub FROM v WHERE a = 3").rows == [["W"]]
    run(ex, "CREATE TABLE c AS SELECT * FROM v")
    assert run(ex, "SELECT * FROM c ORDER BY a").rows == [[2, "Y"], [3, "W"]]
    run(ex, "INSERT INTO t SELECT a + 10, ub FROM v")
    run(ex, "MERGE INTO c USING v s ON c.a = s.a WHEN MATCHED THEN UPDATE SET ub = 'm'")
    assert run(ex, "SELECT ub FROM c ORDER BY a").rows == [["m"], ["m"]]

    assert [r[0] for r in run(ex, "SHOW TABLES").rows] == ["c", "t", "v", "v2"]
    assert [r[0] for r in run(ex, "SHOW VIEWS").rows] == ["v", "v2"]
    assert [r[0] for r in run(ex, f"SHOW VIEWS IN {db} LIKE '*2'").rows] == ["v2"]
    create = run(ex, "SHOW CREATE TABLE v").rows
    assert create == [[f"CREATE VIEW `{db}`.`v` AS {row.VIEW_EXPANDED_TEXT}"]]
    assert run(ex, "DESCRIBE FORMATTED v").rows[-2:] == [["Original Query:", row.VIEW_ORIGINAL_TEXT, ""],
                                                          ["Expanded Query:", row.VIEW_EXPANDED_TEXT, ""]]
    run(ex, "USE default")
    run(ex, f"DROP DATABASE {db} CASCADE")  # its views go with it


def test_views_are_no_dml_targets_and_replace_alter_drop(wh, tmp_path):
    ex = StatementExecutor(wh)
    t, v = unique("vt"), unique("vv")
    run(ex, f"CREATE TABLE {t} (a INT) TBLPROPERTIES ('transactional'='true')")
    run(ex, f"INSERT INTO {t} VALUES (1), (2)")
    run(ex, f"CREATE VIEW {v} AS SELECT a FROM {t}")
    for statement in [f"INSERT INTO {v} VALUES (3)", f"LOAD DATA LOCAL INPATH '{tmp_path}' INTO TABLE {v}"]:
        with pytest.raises(InvalidInputError, match="A view cannot be used as target table for LOAD or INSERT"):
            run(ex, statement)
    for statement in [f"UPDATE {v} SET a = 3", f"DELETE FROM {v}", f"TRUNCATE TABLE {v}",
                      f"MERGE INTO {v} USING {t} s ON {v}.a = s.a WHEN MATCHED THEN DELETE"]:
        with pytest.raises(InvalidInputError, match="You cannot update or delete records in a view"):
            run(ex, statement)
    with pytest.raises(InvalidInputError, match="Cannot drop a view with DROP TABLE"):
        run(ex, f"DROP TABLE {v}")
    with pytest.raises(InvalidInputError, match="Cannot drop a base table with DROP VIEW"):
        run(ex, f"DROP VIEW {t}")
    with pytest.raises(AlreadyExistsError, match="use CREATE OR REPLACE VIEW"):
        run(ex, f"CREATE VIEW {v} AS SELECT 1 AS one")
    assert run(ex, f"CREATE VIEW IF NOT EXISTS {v} AS SELECT 1 AS one").messages == [f"view default.{v} already exists"]
    with pytest.raises(AlreadyExistsError, match="is not a view"):
        run(ex, f"CREATE OR REPLACE VIEW {t} AS SELECT 1 AS one")
    with pytest.raises(InvalidInputError, match=r"number of columns produced by the SELECT clause \(1\) does not"):
        run(ex, f"CREATE VIEW {unique('vx')} (x, y) AS SELECT a FROM {t}")
    run(ex, f"CREATE OR REPLACE VIEW {v} AS SELECT a * 10 AS ten FROM {t}")
    assert run(ex, f"SELECT * FROM {v} ORDER BY ten").rows == [[10], [20]]
    assert run(ex, f"ALTER VIEW {v} AS SELECT count(*) AS n FROM {t}").messages == [f"view default.{v} altered"]
    assert run(ex, f"SELECT * FROM {v}").rows == [[2]]
    assert run(ex, f"DROP VIEW {v}").messages == [f"view default.{v} dropped"]
    assert run(ex, f"DROP VIEW IF EXISTS {v}").messages == [f"view default.{v} does not exist"]
    run(ex, f"CREATE TABLE {unique('after')} (a INT)")  # a view has no directory: it overlaps no table
    gone = unique("vgone")
    run(ex, f"CREATE VIEW {gone} AS SELECT a FROM {t}")
    wh.drop_table(gone)  # the Python API drops a view's catalog entry only (it has no directory)
    assert not wh.metastore.catalog.table_exists("default", gone) and wh.read(t).num_rows == 2
