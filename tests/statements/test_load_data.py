"""LOAD DATA on each backend, as Hive 4 runs it: a full-ACID table's ORC files become a raw ``delta_W_W_0000``
(OVERWRITE: ``base_W``) read with synthesized ROW__IDs, checked first (format, ACID files, schema) with nothing left
behind when refused; bucketed / partitioned-without-spec loads rewritten into INSERT … SELECT; insert-only and plain
text tables; non-LOCAL files moved."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest

from airflow_acid.client.errors import SchemaMismatchError
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.statements import StatementExecutor, parse_statement
from tests.services.support import unique


def run(ex: StatementExecutor, text: str):
    return ex.run(parse_statement(text))


def orc_file(path, **columns) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    po.write_table(pa.table(columns), str(path))
    return str(path)


def listing(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_load_into_a_full_acid_table_makes_a_raw_delta_with_row_ids(wh, tmp_path):
    ex = StatementExecutor(wh)
    t = unique("load")
    run(ex, f"CREATE TABLE {t} (id INT, name STRING) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    run(ex, f"INSERT INTO {t} VALUES (1, 'one')")
    src = orc_file(tmp_path / "in" / "data.orc", id=pa.array([10, 11], pa.int32()), name=["ten", "eleven"])
    result = run(ex, f"LOAD DATA LOCAL INPATH '{src}' INTO TABLE {t}")
    root = wh.table(t).location
    assert result.messages == [f"loaded 1 file(s) into default.{t} as delta_0000002_0000002_0000 (write id 2)"]
    assert "delta_0000002_0000002_0000/000000_0" in listing(Path(root))
    assert (tmp_path / "in" / "data.orc").exists()  # LOCAL copies
    rows = run(ex, f"SELECT ROW__ID.writeid, ROW__ID.rowid, id, name FROM {t} ORDER BY id").rows
    assert rows == [[1, 0, 1, "one"], [2, 0, 10, "ten"], [2, 1, 11, "eleven"]]
    run(ex, f"UPDATE {t} SET name = 'TEN' WHERE id = 10")  # a loaded row is updated by its synthesized ROW__ID
    run(ex, f"DELETE FROM {t} WHERE id = 11")
    assert run(ex, f"SELECT id, name FROM {t} ORDER BY id").rows == [[1, "one"], [10, "TEN"]]

    again = orc_file(tmp_path / "in2" / "000000_0", id=pa.array([20], pa.int32()), name=["twenty"])
    result = run(ex, f"LOAD DATA INPATH '{tmp_path / 'in2'}' OVERWRITE INTO TABLE {t}")
    assert result.messages[0].endswith("as base_0000005 (write id 5)")
    assert run(ex, f"SELECT id, name FROM {t}").rows == [[20, "twenty"]]
    assert not Path(again).exists()  # without LOCAL the files are moved


def test_a_refused_load_leaves_nothing_behind(wh, tmp_path):
    ex = StatementExecutor(wh)
    t = unique("load")
    run(ex, f"CREATE TABLE {t} (id INT, name STRING) TBLPROPERTIES ('transactional'='true')")
    root = Path(wh.table(t).location)
    open_before = len(wh.metastore.txns.show_transactions())
    text = tmp_path / "t.csv"
    text.write_text("1,a\n")
    with pytest.raises(InvalidInputError, match="does not match the file format of the destination table"):
        run(ex, f"LOAD DATA LOCAL INPATH '{text}' INTO TABLE {t}")
    wrong = orc_file(tmp_path / "w" / "000000_0", id=pa.array([1], pa.int32()))
    with pytest.raises(SchemaMismatchError, match=r"the file has 1 column\(s\) \(id int32\), the table 2"):
        run(ex, f"LOAD DATA LOCAL INPATH '{wrong}' INTO TABLE {t}")
    typed = orc_file(tmp_path / "x" / "000000_0", id=["a"], name=["b"])
    with pytest.raises(SchemaMismatchError, match=r"column 1 of the file \(id string\) does not fit"):
        run(ex, f"LOAD DATA INPATH '{typed}' INTO TABLE {t}")
    assert (tmp_path / "x" / "000000_0").exists()  # a refused move keeps its files
    run(ex, f"INSERT INTO {t} VALUES (1, 'a')")
    acid_file = next(p for p in sorted(root.rglob("bucket_*")) if p.is_file())
    with pytest.raises(InvalidInputError, match="was created by Acid write - it cannot be loaded"):
        run(ex, f"LOAD DATA LOCAL INPATH '{acid_file}' INTO TABLE {t}")
    with pytest.raises(InvalidInputError, match="No files matching path"):
        run(ex, f"LOAD DATA LOCAL INPATH '{tmp_path / 'nothing'}' INTO TABLE {t}")
    assert [d for d in listing(root) if "delta_0000001" not in d] == []
    assert len(wh.metastore.txns.show_transactions()) == open_before


def test_bucketed_and_dynamic_partition_loads_are_rewritten_as_inserts(wh, tmp_path):
    ex = StatementExecutor(wh)
    b = unique("loadb")
    run(ex, f"CREATE TABLE {b} (id INT, name STRING) CLUSTERED BY (id) INTO 2 BUCKETS "
            "TBLPROPERTIES ('transactional'='true')")
    src = orc_file(tmp_path / "b" / "f.orc", id=pa.array([1, 2, 3], pa.int32()), name=["a", "b", "c"])
    assert "INSERT … SELECT" in run(ex, f"LOAD DATA LOCAL INPATH '{src}' INTO TABLE {b}").messages[0]
    assert run(ex, f"SELECT id FROM {b} ORDER BY id").rows == [[1], [2], [3]]
    assert {f.name for f in Path(wh.table(b).location).rglob("bucket_*")} == \
        {"bucket_00000", "bucket_00001"}

    p = unique("loadp")
    run(ex, f"CREATE TABLE {p} (id INT) PARTITIONED BY (ds STRING) TBLPROPERTIES ('transactional'='true')")
    rows = orc_file(tmp_path / "p" / "f.orc", id=pa.array([1, 2], pa.int32()), ds=["d1", "d2"])
    run(ex, f"LOAD DATA LOCAL INPATH '{rows}' INTO TABLE {p}")  # the last column is the partition key
    assert [r[0] for r in run(ex, f"SHOW PARTITIONS {p}").rows] == ["ds=d1", "ds=d2"]
    static = orc_file(tmp_path / "s" / "f.orc", id=pa.array([3], pa.int32()))
    run(ex, f"LOAD DATA LOCAL INPATH '{static}' INTO TABLE {p} PARTITION (ds='d1')")  # a raw delta
    assert run(ex, f"SELECT id, ds FROM {p} ORDER BY id").rows == [[1, "d1"], [2, "d2"], [3, "d1"]]
    with pytest.raises(InvalidInputError, match="unknown partition key 'dt'"):
        run(ex, f"LOAD DATA LOCAL INPATH '{static}' INTO TABLE {p} PARTITION (dt='d1')")


def test_insert_only_and_text_tables(wh, tmp_path):
    ex = StatementExecutor(wh)
    mm = unique("loadmm")
    run(ex, f"CREATE TABLE {mm} (id INT, name STRING) TBLPROPERTIES ('transactional'='true', "
            "'transactional_properties'='insert_only')")
    src = orc_file(tmp_path / "mm" / "000001_0", id=pa.array([5], pa.int32()), name=["five"])
    run(ex, f"LOAD DATA LOCAL INPATH '{tmp_path / 'mm'}' INTO TABLE {mm}")
    run(ex, f"LOAD DATA LOCAL INPATH '{src}' INTO TABLE {mm}")
    assert run(ex, f"SELECT id, name FROM {mm}").rows == [[5, "five"], [5, "five"]]

    txt = unique("loadtxt")
    run(ex, f"CREATE TABLE {txt} (id INT, name STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
            "STORED AS TEXTFILE")
    (tmp_path / "t1.csv").write_text("1,a\n2,b\n")
    (tmp_path / "t2.csv").write_text("3,c\n")
    run(ex, f"LOAD DATA LOCAL INPATH '{tmp_path / 't1.csv'}' INTO TABLE {txt}")
    run(ex, f"LOAD DATA LOCAL INPATH '{tmp_path / 't2.csv'}' INTO TABLE {txt}")
    assert run(ex, f"SELECT id, name FROM {txt} ORDER BY id").rows == [[1, "a"], [2, "b"], [3, "c"]]
    assert listing(Path(wh.table(txt).location)) == ["000000_0", "000000_0_copy_1"]
    run(ex, f"LOAD DATA LOCAL INPATH '{tmp_path / 't2.csv'}' OVERWRITE INTO TABLE {txt}")
    assert run(ex, f"SELECT id, name FROM {txt}").rows == [[3, "c"]]
