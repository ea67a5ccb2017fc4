"""Plain text tables (STORED AS TEXTFILE) read by SQL as Hive's LazySimpleSerDe lays them out, so they join ACID
tables and feed INSERT … SELECT; CREATE [EXTERNAL] TABLE … ROW FORMAT DELIMITED recorded as Hive records it
(SERDES / SERDE_PARAMS, TextInputFormat / HiveIgnoreKeyTextOutputFormat); writes other than INSERT refused with
the reason (INSERT: tests/statements/test_text_writes.py); on each backend.

The files are written here as Hive's LazySimpleSerDe writes them:
- one row a line ending in ``\\n``; fields joined by the field delimiter (``\\001`` unless ROW FORMAT says otherwise);
- NULL written as ``\\N`` (or the table's ``serialization.null.format``);
- with ESCAPED BY, a delimiter inside a field written with the escape character before it;
- booleans ``true``/``false``, timestamps ``yyyy-MM-dd HH:mm:ss[.fffffffff]``, dates ``yyyy-MM-dd``, binary base64;
- files named like Hive's (``000000_0``), next to hidden files (``_SUCCESS``, ``.000000_0.crc``) a reader skips;
  compressed files (``.gz``, ``.bz2``) as Hive writes them with hive.exec.compress.output.
"""

from __future__ import annotations

import base64
import bz2
import datetime as dt
import gzip
from decimal import Decimal

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.client.errors import NotTransactionalError
from airflow_acid.metastore.catalog import LAZY_SIMPLE_SERDE, TEXT_INPUT_FORMAT, TEXT_OUTPUT_FORMAT
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.schema import SERDE_PARAMS, SERDES
from airflow_acid.statements import StatementExecutor, parse_statements
from tests.services.support import unique

NULL = "\\N"


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def hive_lines(rows: list[list[str | None]], delimiter: str = "\x01", null: str = NULL) -> bytes:
    """Rows as LazySimpleSerDe writes them: fields joined by ``delimiter``, NULL as ``null``, ``\\n`` after each."""
    return b"".join((delimiter.join(null if v is None else v for v in row) + "\n").encode() for row in rows)


def write(wh, location: str, name: str, data: bytes) -> None:
    fs, root = wh.io.storage(location)
    path = f"{root}/{name}"
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    with fs.open(path, "wb") as f:
        f.write(data)


def external_location(wh, name: str) -> str:
    return f"{wh.location.rstrip('/')}/external/{name}"


ALL_TYPES = ("tiny TINYINT, small SMALLINT, i INT, big BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10,2), b BOOLEAN, "
             "s STRING, vc VARCHAR(3), c CHAR(3), bin BINARY, dt DATE, ts TIMESTAMP")


def test_every_type_nulls_bad_fields_short_and_long_lines(wh):
    name = unique("text_types")
    location = external_location(wh, name)
    good = ["-128", "32767", "2147483647", "9223372036854775807", "1.5", "-2.25", "12345678.91", "TRUE", "a b",
            "abc", "xyz", base64.b64encode(b"\x00\xffbin").decode(), "2024-02-29", "2024-02-29 23:59:58.123456789"]
    nulls: list[str | None] = [None] * 14
    # a field that does not parse as its type is NULL (Hive never fails the read): out-of-range integers, words,
    # a decimal beyond its precision, 'yes' for a boolean, an impossible date and time
    bad = ["128", "x", "2147483648", "1e3x", "one", "", "123456789012", "yes", "", "abcdef", "abcdef", "not base64!",
           "2023-02-29", "2024-01-01 25:00:00"]
    write(wh, location, "000000_0", hive_lines([good, nulls, bad]))
    # a short line: missing fields are NULL; a long line: fields beyond the columns ignored
    write(wh, location, "000001_0.gz", gzip.compress(hive_lines([["1", "2"], ["7"] * 14 + ["extra", "more"]])))
    write(wh, location, "000002_0.bz2", bz2.compress(hive_lines([["8"] * 14])))
    write(wh, location, "_SUCCESS", b"")
    write(wh, location, ".000000_0.crc", b"\x01\x02 not rows")
    run(wh, f"CREATE EXTERNAL TABLE {name} ({ALL_TYPES}) STORED AS TEXTFILE LOCATION '{location}'")

    [result] = run(wh, f"SELECT * FROM {name}")
    got = sorted(([str(v) if i == 13 and v is not None else v for i, v in enumerate(r)] for r in result.rows),
                 key=repr)
    expected = [
        [-128, 32767, 2147483647, 9223372036854775807, 1.5, -2.25, Decimal("12345678.91"), True, "a b", "abc", "xyz",
         b"\x00\xffbin", dt.date(2024, 2, 29), "2024-02-29 23:59:58.123456789"],
        [None] * 14,
        # string fields keep what was written (an empty field is '', not NULL); varchar/char keep their first 3
        # characters; binary that is not base64 is its bytes
        [None] * 8 + ["", "abc", "abc", b"not base64!", None, None],
        [1, 2] + [None] * 12,
        [7, 7, 7, 7, 7.0, 7.0, Decimal("7.00"), None, "7", "7", "7  ", b"7", None, None],  # CHAR(3) padded
        [8, 8, 8, 8, 8.0, 8.0, Decimal("8.00"), None, "8", "8", "8  ", b"8", None, None],
    ]
    assert got == sorted(expected, key=repr)


def test_row_format_delimiters_escape_and_null_format(wh):
    name = unique("text_delim")
    location = external_location(wh, name)
    # ESCAPED BY '\\': a '|' inside a field is written '\|', a backslash '\\'; the NULL check sees the field as
    # written, so with NULL DEFINED AS 'NULL' a field '\N' is the string 'N' (Hive drops the escape character)
    write(wh, location, "000000_0", b"1|a\\|b|NULL\n2|c\\\\d|x\nNULL|\\N|y\n")
    run(wh, f"CREATE EXTERNAL TABLE {name} (id INT, s STRING, t STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY '|' "
            f"ESCAPED BY '\\\\' NULL DEFINED AS 'NULL' STORED AS TEXTFILE LOCATION '{location}'")
    info = wh.table(name)
    assert info.serde_params == {"field.delim": "|", "serialization.format": "|", "escape.delim": "\\",
                                 "serialization.null.format": "NULL"}
    [result] = run(wh, f"SELECT id, s, t FROM {name}")
    assert sorted(map(tuple, result.rows), key=str) == sorted([(1, "a|b", None), (2, "c\\d", "x"), (None, "N", "y")],
                                                             key=str)

    # ESCAPED BY with Hive's default NULL: '\N' as written is NULL
    escaped = unique("text_esc")
    esc_location = external_location(wh, escaped)
    write(wh, esc_location, "000000_0", b"1,\\N\n2,a\\,b\n")
    run(wh, f"CREATE EXTERNAL TABLE {escaped} (id INT, s STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
            f"ESCAPED BY '\\\\' STORED AS TEXTFILE LOCATION '{esc_location}'")
    [esc_rows] = run(wh, f"SELECT id, s FROM {escaped} ORDER BY id")
    assert esc_rows.rows == [[1, None], [2, "a,b"]]

    # a delimiter given as a number is that byte (Hive's LazyUtils.getByte): '9' is a tab
    tabbed = unique("text_tab")
    tab_location = external_location(wh, tabbed)
    write(wh, tab_location, "000000_0", hive_lines([["1", "a"], ["2", None]], delimiter="\t"))
    run(wh, f"CREATE EXTERNAL TABLE {tabbed} (id INT, s STRING) ROW FORMAT SERDE '{LAZY_SIMPLE_SERDE}' "
            f"WITH SERDEPROPERTIES ('field.delim'='9') STORED AS TEXTFILE LOCATION '{tab_location}'")
    [tab_rows] = run(wh, f"SELECT id, s FROM {tabbed} ORDER BY id")
    assert tab_rows.rows == [[1, "a"], [2, None]]


def test_partitioned_text_table_takes_partition_values_from_directories(wh):
    name = unique("text_parts")
    location = external_location(wh, name)
    write(wh, location, "ds=2024-01-01/n=1/000000_0", hive_lines([["1", "a"], ["2", "b"]]))
    write(wh, location, "ds=2024-01-02/n=2/000000_0", hive_lines([["3", "c"]]))
    write(wh, location, "ds=2024-01-02/n=2/_SUCCESS", b"")
    run(wh, f"CREATE EXTERNAL TABLE {name} (id INT, s STRING) PARTITIONED BY (ds STRING, n INT) STORED AS TEXTFILE "
            f"LOCATION '{location}'")
    run(wh, f"ALTER TABLE {name} ADD PARTITION (ds='2024-01-01', n=1) PARTITION (ds='2024-01-02', n=2)")
    [result] = run(wh, f"SELECT id, s, ds, n FROM {name} ORDER BY id")
    assert result.rows == [[1, "a", "2024-01-01", 1], [2, "b", "2024-01-01", 1], [3, "c", "2024-01-02", 2]]
    [one] = run(wh, f"SELECT id FROM {name} WHERE n = 2")
    assert one.rows == [[3]]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 9)),
                               st.one_of(st.none(), st.text("abc ,;", max_size=4))), max_size=8))
def test_text_tables_join_acid_tables_and_feed_insert_select(wh, rows):
    text = unique("text_src")
    location = external_location(wh, text)
    write(wh, location, "000000_0", hive_lines([[None if i is None else str(i), s] for i, s in rows]))
    run(wh, f"CREATE EXTERNAL TABLE {text} (id INT, name STRING) STORED AS TEXTFILE LOCATION '{location}'")
    acid = unique("text_acid")
    run(wh, f"CREATE TABLE {acid} (id INT, score INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {acid} VALUES (1, 10), (2, 20), (3, 30)")

    [selected] = run(wh, f"SELECT id, name FROM {text}")
    assert sorted(map(tuple, selected.rows), key=str) == sorted(rows, key=str)
    [joined] = run(wh, f"SELECT t.id, t.name, a.score FROM {text} t JOIN {acid} a ON t.id = a.id")
    scores = {1: 10, 2: 20, 3: 30}
    assert sorted(map(tuple, joined.rows), key=str) == \
        sorted([(i, n, scores[i]) for i, n in rows if i in scores], key=str)

    run(wh, f"INSERT INTO {acid} SELECT id, length(name) FROM {text} WHERE id > 3")
    assert sorted(((r["id"], r["score"]) for r in wh.read(acid).to_pylist()), key=str) == sorted(
        [(1, 10), (2, 20), (3, 30)] + [(i, None if n is None else len(n)) for i, n in rows if i is not None and i > 3],
        key=str)


def test_text_tables_feed_merge_multi_table_insert_and_subqueries(wh):
    text = unique("text_feed")
    location = external_location(wh, text)
    write(wh, location, "000000_0", hive_lines([["1", "a"], ["2", "b"], ["3", "c"]], delimiter=","))
    run(wh, f"CREATE EXTERNAL TABLE {text} (id INT, name STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
            f"STORED AS TEXTFILE LOCATION '{location}'")
    a, b = unique("text_a"), unique("text_b")
    for table in (a, b):
        run(wh, f"CREATE TABLE {table} (id INT, name STRING) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {a} VALUES (1, 'old')")
    run(wh, f"MERGE INTO {a} t USING {text} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)")
    assert sorted(map(tuple, run(wh, f"SELECT * FROM {a}")[0].rows)) == [(1, "a"), (2, "b"), (3, "c")]
    run(wh, f"FROM {text} INSERT INTO TABLE {b} SELECT id, name WHERE id > 1 "
            f"INSERT OVERWRITE TABLE {a} SELECT id, upper(name)")
    assert sorted(map(tuple, run(wh, f"SELECT * FROM {b}")[0].rows)) == [(2, "b"), (3, "c")]
    run(wh, f"DELETE FROM {a} WHERE id IN (SELECT id FROM {text} WHERE name = 'b')")
    assert sorted(map(tuple, run(wh, f"SELECT * FROM {a}")[0].rows)) == [(1, "A"), (3, "C")]


def _serde_rows(wh) -> int:
    return wh.metastore.db.run(lambda conn: conn.execute(sa.select(sa.func.count()).select_from(SERDES)).scalar()
                               + conn.execute(sa.select(sa.func.count()).select_from(SERDE_PARAMS)).scalar())


def test_catalog_records_the_serde_as_hive_and_drop_keeps_external_files(wh):
    name = unique("text_cat")
    location = external_location(wh, name)
    write(wh, location, "000000_0", hive_lines([["1", "a"]], delimiter=","))
    before = _serde_rows(wh)
    run(wh, f"CREATE EXTERNAL TABLE {name} (id INT, s STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
            f"STORED AS TEXTFILE LOCATION '{location}'")
    info = wh.table(name)
    assert (info.table_type, info.input_format, info.output_format, info.serde) == \
        ("EXTERNAL_TABLE", TEXT_INPUT_FORMAT, TEXT_OUTPUT_FORMAT, LAZY_SIMPLE_SERDE)
    assert info.serde_params == {"field.delim": ",", "serialization.format": ","}
    assert info.property("EXTERNAL") == "TRUE" and info.property("transactional") == "false"
    assert _serde_rows(wh) == before + 3  # one SERDES row, two SERDE_PARAMS rows

    [created] = run(wh, f"SHOW CREATE TABLE {name}")
    statement = "\n".join(line for [line] in created.rows)
    assert f"'{LAZY_SIMPLE_SERDE}'" in statement and "'field.delim'=','" in statement
    [described] = run(wh, f"DESCRIBE FORMATTED {name}")
    assert ["SerDe Library:", LAZY_SIMPLE_SERDE, ""] in described.rows and ["", "field.delim", ","] in described.rows

    run(wh, f"DROP TABLE {name}")
    assert _serde_rows(wh) == before
    fs, root = wh.io.storage(location)
    assert fs.exists(f"{root}/000000_0")  # an external table's files are kept
    run(wh, statement)  # SHOW CREATE TABLE's statement creates the same table again
    assert wh.table(name).serde_params == info.serde_params
    [again] = run(wh, f"SELECT id, s FROM {name}")
    assert again.rows == [[1, "a"]]

    # CREATE TABLE LIKE copies the storage format and SerDe (a managed table: EXTERNAL is not copied)
    like = unique("text_like")
    run(wh, f"CREATE TABLE {like} LIKE {name}")
    copied = wh.table(like)
    assert (copied.table_type, copied.input_format, copied.serde, copied.serde_params) == \
        ("MANAGED_TABLE", TEXT_INPUT_FORMAT, LAZY_SIMPLE_SERDE, info.serde_params)
    assert copied.property("EXTERNAL") is None and copied.property("transactional") == "false"

    # STORED AS TEXTFILE without ROW FORMAT: Hive's serialization.format=1 (\001)
    plain = unique("text_default")
    run(wh, f"CREATE TABLE {plain} (id INT) STORED AS TEXTFILE")
    assert wh.table(plain).serde_params == {"serialization.format": "1"}
    assert wh.table(plain).property("transactional") == "false"


def test_writes_and_conversion_are_refused_with_the_reason(wh):
    name = unique("text_ro")
    run(wh, f"CREATE EXTERNAL TABLE {name} (id INT) STORED AS TEXTFILE LOCATION '{external_location(wh, name)}'")
    with pytest.raises(NotTransactionalError, match="text table .* UPDATE, DELETE, MERGE and TRUNCATE need an ACID"):
        run(wh, f"DELETE FROM {name} WHERE id = 1")
    with pytest.raises(NotTransactionalError, match="cannot become transactional"):
        run(wh, f"ALTER TABLE {name} SET TBLPROPERTIES ('transactional'='true')")
    with pytest.raises(NotTransactionalError, match="no ROW__ID"):
        run(wh, f"SELECT ROW__ID, id FROM {name}")
    with pytest.raises(InvalidInputError, match="cannot be transactional"):
        run(wh, f"CREATE TABLE {unique('text_acid')} (id INT) STORED AS TEXTFILE "
                "TBLPROPERTIES ('transactional'='true')")
