"""Hive's virtual columns in SELECT: INPUT__FILE__NAME (the file each row was read from, as Hive prints it) and,
with the table option ``t('acid.fetch.deleted.rows'='true')``, deleted rows flagged by ROW__IS__DELETED — on each
backend."""

from __future__ import annotations

import os

import pytest

from airflow_acid.client.errors import NotTransactionalError, UnsupportedOperationError
from airflow_acid.statements import StatementExecutor, parse_statements
from tests.services.support import unique


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def rows(wh, text: str) -> list[list]:
    [result] = run(wh, text)
    return [list(r) for r in result.rows]


def file_uri(wh, table: str, relative: str) -> str:
    return "file:" + os.path.join(wh.table(table).location, relative)


@pytest.fixture
def history(wh):
    """Three inserts, an update of id 2 and a delete of id 3: a table whose files and deleted rows are known."""
    t = unique("virt")
    run(wh, f"CREATE TABLE {t} (id INT, v STRING) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    for i in (1, 2, 3):
        run(wh, f"INSERT INTO {t} VALUES ({i}, 'v{i}')")
    run(wh, f"UPDATE {t} SET v = 'two' WHERE id = 2")
    run(wh, f"DELETE FROM {t} WHERE id = 3")
    return t


def test_input_file_name_is_the_file_each_row_came_from(wh, history):
    t = history
    got = rows(wh, f"SELECT id, v, INPUT__FILE__NAME FROM {t} ORDER BY id")
    assert got == [[1, "v1", file_uri(wh, t, "delta_0000001_0000001_0000/bucket_00000")],
                   [2, "two", file_uri(wh, t, "delta_0000004_0000004_0000/bucket_00000")]]
    assert os.path.exists(got[0][2].removeprefix("file:"))
    # a virtual column: * leaves it out, a qualified name and a WHERE on it work
    assert rows(wh, f"SELECT * FROM {t} WHERE INPUT__FILE__NAME LIKE '%delta_0000001_%'") == [[1, "v1"]]
    assert rows(wh, f"SELECT x.id FROM {t} x WHERE x.INPUT__FILE__NAME = '{got[1][2]}'") == [[2]]


def test_fetch_deleted_rows_returns_deleted_rows_flagged(wh, history):
    t = history
    got = rows(wh, f"SELECT id, v, ROW__IS__DELETED FROM {t}('acid.fetch.deleted.rows'='true') "
                   "ORDER BY id, ROW__IS__DELETED")
    assert got == [[1, "v1", False], [2, "two", False], [2, "v2", True], [3, "v3", True]]
    assert rows(wh, f"SELECT * FROM {t}('acid.fetch.deleted.rows'='true') WHERE ROW__IS__DELETED ORDER BY id") == \
        [[2, "v2"], [3, "v3"]]
    assert rows(wh, f"SELECT id, ROW__IS__DELETED FROM {t} ORDER BY id") == [[1, False], [2, False]]
    assert rows(wh, f"SELECT count(*) FROM {t}('acid.fetch.deleted.rows'='false')") == [[2]]
    deleted = rows(wh, f"SELECT ROW__ID.writeid, INPUT__FILE__NAME FROM {t}('acid.fetch.deleted.rows'='true') "
                       "WHERE ROW__IS__DELETED ORDER BY ROW__ID.writeid")
    assert deleted == [[2, file_uri(wh, t, "delta_0000002_0000002_0000/bucket_00000")],
                       [3, file_uri(wh, t, "delta_0000003_0000003_0000/bucket_00000")]]


def test_fetch_deleted_rows_of_a_partitioned_table_and_after_major_compaction(wh):
    t = unique("virtp")
    run(wh, f"CREATE TABLE {t} (id INT) PARTITIONED BY (p STRING) STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {t} PARTITION (p='a') VALUES (1), (2)")
    run(wh, f"DELETE FROM {t} WHERE id = 1")
    assert rows(wh, f"SELECT p, id, ROW__IS__DELETED, INPUT__FILE__NAME FROM {t}('acid.fetch.deleted.rows'='true') "
                    "ORDER BY id") == [["a", 1, True, file_uri(wh, t, "p=a/delta_0000001_0000001_0000/bucket_00000")],
                                       ["a", 2, False, file_uri(wh, t, "p=a/delta_0000001_0000001_0000/bucket_00000")]]


def test_table_options_and_virtual_columns_are_checked(wh, history):
    t = history
    with pytest.raises(UnsupportedOperationError, match="table option 'acid.other' is not supported"):
        run(wh, f"SELECT * FROM {t}('acid.other'='true')")
    with pytest.raises(UnsupportedOperationError, match="takes 'true' or 'false'"):
        run(wh, f"SELECT * FROM {t}('acid.fetch.deleted.rows'='yes')")
    plain = unique("virtplain")
    run(wh, f"CREATE TABLE {plain} (id INT) STORED AS ORC TBLPROPERTIES ('transactional'='false')")
    with pytest.raises(NotTransactionalError, match="has no deleted rows"):
        run(wh, f"SELECT * FROM {plain}('acid.fetch.deleted.rows'='true')")


def test_input_file_name_of_a_plain_orc_table_and_joins(wh, history):
    from tests.statements.test_plain_tables import plain_table

    plain = plain_table(wh, [[(1, "a")], [(2, "b"), (3, "c")]])
    assert rows(wh, f"SELECT id, INPUT__FILE__NAME FROM {plain} ORDER BY id") == \
        [[1, file_uri(wh, plain, "000000_0")], [2, file_uri(wh, plain, "000001_0")],
         [3, file_uri(wh, plain, "000001_0")]]
    joined = rows(wh, f"SELECT a.id, p.INPUT__FILE__NAME, a.INPUT__FILE__NAME FROM {history} a JOIN {plain} p "
                      "ON a.id = p.id ORDER BY a.id")
    assert [r[1].rsplit("/", 1)[1] for r in joined] == ["000000_0", "000001_0"]
    assert [r[2].rsplit("/", 2)[1] for r in joined] == ["delta_0000001_0000001_0000", "delta_0000004_0000004_0000"]
