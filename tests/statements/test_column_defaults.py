"""Column DEFAULT constraints on each backend, as Hive keeps and applies them: KEY_CONSTRAINTS rows (type 4, the
value's text), INSERT with a column list, the DEFAULT keyword in VALUES / UPDATE SET / MERGE, SHOW CREATE TABLE,
DESCRIBE FORMATTED, CHANGE COLUMN and DROP TABLE."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from airflow_acid.metastore.catalog import DEFAULT_CONSTRAINT
from airflow_acid.metastore.schema import KEY_CONSTRAINTS, TBLS
from airflow_acid.statements import StatementExecutor, StatementSyntaxError, parse_statement
from tests.services.support import unique


def run(ex: StatementExecutor, text: str):
    return ex.run(parse_statement(text))


def constraint_rows(wh, table: str) -> list[tuple]:
    with wh.metastore.db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(
            sa.select(KEY_CONSTRAINTS.c.PARENT_INTEGER_IDX, KEY_CONSTRAINTS.c.CONSTRAINT_TYPE,
                      KEY_CONSTRAINTS.c.DEFAULT_VALUE, KEY_CONSTRAINTS.c.POSITION)
            .join_from(KEY_CONSTRAINTS, TBLS, KEY_CONSTRAINTS.c.PARENT_TBL_ID == TBLS.c.TBL_ID)
            .where(TBLS.c.TBL_NAME == table).order_by(KEY_CONSTRAINTS.c.PARENT_INTEGER_IDX))]


def test_defaults_are_stored_as_hive_stores_them_and_applied(wh):
    ex = StatementExecutor(wh)
    t = unique("dflt")
    run(ex, f"CREATE TABLE {t} (a INT DEFAULT 1, b STRING DEFAULT 'x', c INT, d DATE DEFAULT CURRENT_DATE) "
            "TBLPROPERTIES ('transactional'='true')")
    assert constraint_rows(wh, t) == [(0, DEFAULT_CONSTRAINT, "1", 1), (1, DEFAULT_CONSTRAINT, "'x'", 1),
                                      (3, DEFAULT_CONSTRAINT, "CURRENT_DATE", 1)]
    assert [c.default for c in wh.table(t).columns] == ["1", "'x'", None, "CURRENT_DATE"]
    run(ex, f"INSERT INTO {t} (c) VALUES (5)")  # left-out columns take their DEFAULT
    run(ex, f"INSERT INTO {t} VALUES (DEFAULT, 'y', 6, DEFAULT)")
    run(ex, f"INSERT INTO {t} (c, a) SELECT 7, 70")
    run(ex, f"INSERT INTO {t} (a, c) VALUES (2, DEFAULT)")  # a column without DEFAULT: NULL
    run(ex, f"UPDATE {t} SET b = DEFAULT WHERE c = 6")
    run(ex, f"MERGE INTO {t} USING (SELECT 8 AS c) s ON {t}.c = s.c WHEN NOT MATCHED THEN INSERT (c) VALUES (s.c)")
    rows = run(ex, f"SELECT a, b, c, d = CURRENT_DATE FROM {t} ORDER BY c NULLS FIRST").rows
    assert rows == [[2, "x", None, True], [1, "x", 5, True], [1, "x", 6, True], [70, "x", 7, True],
                    [1, "x", 8, True]]

    create = [r[0] for r in run(ex, f"SHOW CREATE TABLE {t}").rows]
    assert create[1:5] == ["  `a` int DEFAULT 1,", "  `b` string DEFAULT 'x',", "  `c` int,",
                           "  `d` date DEFAULT CURRENT_DATE)"]
    described = run(ex, f"DESCRIBE FORMATTED {t}").rows
    assert described[-3:] == [["Column Name:a", "Default Value:1", ""], ["Column Name:b", "Default Value:'x'", ""],
                              ["Column Name:d", "Default Value:CURRENT_DATE", ""]]
    run(ex, f"ALTER TABLE {t} CHANGE COLUMN b bb STRING")  # the DEFAULT follows the renamed column
    assert [c.default for c in wh.table(t).columns] == ["1", "'x'", None, "CURRENT_DATE"]
    run(ex, f"DROP TABLE {t}")
    assert constraint_rows(wh, t) == []


def test_show_create_table_reads_back_with_its_defaults(wh):
    ex = StatementExecutor(wh)
    t, copy = unique("dfltsc"), unique("dfltcopy")
    run(ex, f"CREATE TABLE {t} (a INT DEFAULT -1, b DECIMAL(5,2) DEFAULT 1.5, c STRING COMMENT 'no default')")
    statement = "\n".join(r[0] for r in run(ex, f"SHOW CREATE TABLE {t}").rows)
    run(ex, statement.replace(f"`{t}`", f"`{copy}`").split("LOCATION")[0] + "TBLPROPERTIES ('transactional'='true')")
    assert [c.default for c in wh.table(copy).columns] == ["-1", "1.5", None]
    run(ex, f"INSERT INTO {copy} (c) VALUES ('z')")
    assert run(ex, f"SELECT a, CAST(b AS STRING), c FROM {copy}").rows == [[-1, "1.50", "z"]]


@pytest.mark.parametrize("default", ["other_column", "(SELECT 1)"])
def test_a_default_must_be_a_constant_or_a_function(default):
    with pytest.raises(StatementSyntaxError, match="DEFAULT only allows constant or function expressions"):
        parse_statement(f"CREATE TABLE t (a INT DEFAULT {default})")
