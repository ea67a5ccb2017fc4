"""INSERT into a plain text table as Hive writes one (LazySimpleSerDe): the file's bytes (delimiters, ``\\N``,
values as Hive spells them, escapes), Hive's file names for INSERT INTO (``000000_0``, ``000000_0_copy_1``) and
INSERT OVERWRITE, rows read back equal to those written, multi-table INSERT, and the refusals; on each backend."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from airflow_acid.client.errors import NotTransactionalError
from airflow_acid.statements import StatementExecutor, parse_statements
from airflow_acid.statements.text_write import text_lines
from tests.services.support import unique

TYPES = "i INT, big BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(5,2), b BOOLEAN, s STRING, c CHAR(4), dt DATE, ts TIMESTAMP"


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def files(wh, name: str) -> dict[str, bytes]:
    """The table directory's files (hidden ones too) by name."""
    fs, root = wh.io.storage(wh.table(name).location)
    return {p.rsplit("/", 1)[1]: fs.cat_file(p) for p in fs.ls(root, detail=False)} if fs.exists(root) else {}


def test_insert_writes_hives_layout_and_reads_back(wh):
    name = unique("text_w")
    run(wh, f"CREATE EXTERNAL TABLE {name} ({TYPES}) STORED AS TEXTFILE")
    [result] = run(wh, f"INSERT INTO {name} VALUES (1, 4294967297, 3.14, 0.5, 1.2, true, 'a b', 'xy', "
                       "'2014-08-25', '2014-08-25 17:21:30.0'), (NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, "
                       "NULL, '2014-08-24 01:02:03.25')")
    assert result.messages == [f"default.{name}: 2 row(s) inserted (a plain table, no write id)"]
    assert files(wh, name) == {"000000_0": (
        b"1\x014294967297\x013.14\x010.5\x011.20\x01true\x01a b\x01xy  \x012014-08-25\x012014-08-25 17:21:30\n"
        b"\\N\x01\\N\x01\\N\x01\\N\x01\\N\x01false\x01\\N\x01\\N\x01\\N\x012014-08-24 01:02:03.25\n")}
    [rows] = run(wh, f"SELECT * FROM {name} ORDER BY i")
    assert rows.rows == [
        [1, 4294967297, pytest.approx(3.14), 0.5, Decimal("1.20"), True, "a b", "xy  ", dt.date(2014, 8, 25),
         dt.datetime(2014, 8, 25, 17, 21, 30)],
        [None, None, None, None, None, False, None, None, None, dt.datetime(2014, 8, 24, 1, 2, 3, 250000)]]
    assert not [row for row in run(wh, "SHOW TRANSACTIONS")[0].rows if "OPEN" in row]  # none left behind


def test_insert_into_adds_a_copy_file_and_overwrite_replaces_them(wh):
    name, acid = unique("text_w"), unique("acid_src")
    run(wh, f"CREATE TABLE {name} (a INT, s STRING) STORED AS TEXTFILE;"
            f"CREATE TABLE {acid} (a INT, s STRING) STORED AS ORC TBLPROPERTIES ('transactional'='true');"
            f"INSERT INTO {acid} VALUES (7, 'seven'), (8, 'eight')")
    run(wh, f"INSERT INTO {name} VALUES (1, 'one'); INSERT INTO TABLE {name} VALUES (2, 'two');"
            f"INSERT INTO {name} SELECT a, s FROM {acid} WHERE a = 7")
    assert files(wh, name) == {"000000_0": b"1\x01one\n", "000000_0_copy_1": b"2\x01two\n",
                               "000000_0_copy_2": b"7\x01seven\n"}
    run(wh, f"INSERT OVERWRITE TABLE {name} SELECT a, s FROM {acid}")
    assert sorted(run(wh, f"SELECT * FROM {name}")[0].rows) == [[7, "seven"], [8, "eight"]]
    assert list(files(wh, name)) == ["000000_0"]


def test_row_format_delimiters_null_format_and_escapes(wh):
    name = unique("text_w")
    run(wh, f"CREATE TABLE {name} (a INT, s STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
            "ESCAPED BY '\\\\' NULL DEFINED AS 'nil' STORED AS TEXTFILE")
    run(wh, f"INSERT INTO {name} VALUES (1, 'a,b'), (NULL, 'back\\\\slash'), (3, NULL)")
    assert files(wh, name)["000000_0"] == b"1,a\\,b\nnil,back\\\\slash\n3,nil\n"
    assert run(wh, f"SELECT * FROM {name} ORDER BY s")[0].rows == [[1, "a,b"], [None, "back\\slash"], [3, None]]


def test_multi_table_insert_writes_text_and_acid_tables(wh):
    text, acid = unique("text_w"), unique("acid_w")
    run(wh, f"CREATE TABLE {text} (a INT) STORED AS TEXTFILE;"
            f"CREATE TABLE {acid} (a INT) STORED AS ORC TBLPROPERTIES ('transactional'='true');"
            f"INSERT INTO {acid} VALUES (1), (2)")
    run(wh, f"FROM {acid} INSERT INTO TABLE {text} SELECT a WHERE a = 1 INSERT INTO TABLE {acid} SELECT a + 10")
    assert run(wh, f"SELECT * FROM {text}")[0].rows == [[1]]
    assert sorted(run(wh, f"SELECT a FROM {acid}")[0].rows) == [[1], [2], [11], [12]]


def test_partitioned_text_tables_and_other_writes_are_refused(wh):
    part = unique("text_p")
    run(wh, f"CREATE TABLE {part} (a INT) PARTITIONED BY (p STRING) STORED AS TEXTFILE")
    with pytest.raises(NotTransactionalError, match="partitioned text table .* writes unpartitioned text tables"):
        run(wh, f"INSERT INTO {part} PARTITION (p='x') VALUES (1)")
    assert files(wh, part) == {}
    with pytest.raises(NotTransactionalError, match="primitive columns only"):
        text_lines(pa.table({"m": pa.array([[1]])}), {})
