"""Plain ORC tables in the catalog and their conversion (issue 16 item 3), on each backend: a table over an existing
directory of plain ORC files (CREATE TABLE … TBLPROPERTIES ('transactional'='false') LOCATION …), converted with
ALTER TABLE … SET TBLPROPERTIES ('transactional'='true'); its files are then original files read with synthetic
ROW__IDs (write id 0, bucket of the file name, offset in path order), updated and deleted like any rows, and the
first MAJOR compaction writes them into a base that replaces them."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.writeids import ValidReaderWriteIdList
from airflow_acid.client.errors import NotTransactionalError
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.spark.runners import LocalRunner
from airflow_acid.statements import StatementExecutor, parse_statement
from tests.services.support import CONF, unique

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])


def run(wh, text: str):
    return StatementExecutor(wh).run(parse_statement(text))


def _orc(path, ids) -> None:
    po.write_table(pa.table({"id": pa.array(ids, pa.int32()), "name": [f"n{i}" for i in ids]}, schema=SCHEMA),
                   str(path))


def _plain_directory(root) -> None:
    """What a non-ACID Hive/Spark writer leaves: bucket-named plain ORC files, a copy, a file in a sub-directory."""
    root.mkdir(parents=True)
    _orc(root / "000000_0", [1, 2, 3])
    _orc(root / "000000_0_copy_1", [4])
    _orc(root / "000001_0", [5, 6])
    (root / "sub").mkdir()
    _orc(root / "sub" / "000001_0", [7])
    (root / "_SUCCESS").write_bytes(b"")


def test_plain_table_converted_read_updated_and_compacted(wh, tmp_path):
    name = f"conv.{unique('plain')}"
    wh.create_database("conv")
    location = tmp_path / "plain"
    _plain_directory(location)
    (location / "part-00000.orc").write_bytes(b"not a bucket name")

    run(wh, f"CREATE TABLE {name} (id INT, name STRING) STORED AS ORC LOCATION '{location}' "
            "TBLPROPERTIES ('transactional'='false')")
    info = wh.table(name)
    assert not info.is_transactional and info.property("transactional_properties") is None
    with pytest.raises(NotTransactionalError, match="convert it with ALTER TABLE"):
        wh.read(name)
    with pytest.raises(NotTransactionalError):
        run(wh, f"ALTER TABLE {name} COMPACT 'major'")
    run(wh, f"ALTER TABLE {name} SET TBLPROPERTIES ('owner_note'='kept')")  # a plain table keeps its properties

    with pytest.raises(InvalidInputError, match="cannot be converted.*'part-00000.orc' are not named like Hive's"):
        run(wh, f"ALTER TABLE {name} SET TBLPROPERTIES ('transactional'='true')")
    assert not wh.table(name).is_transactional
    os.remove(location / "part-00000.orc")

    result = run(wh, f"ALTER TABLE {name} SET TBLPROPERTIES ('transactional'='true')")
    assert result.messages == [f"table {name}: set transactional=true"]
    info = wh.table(name)
    assert info.is_transactional and not info.is_insert_only and info.property("owner_note") == "kept"
    assert sorted(r["id"] for r in wh.read(name).to_pylist()) == [1, 2, 3, 4, 5, 6, 7]

    # Synthetic ROW__IDs: write id 0, the bucket of the file name, the offset among the bucket's files in path order.
    ids = read_acid_table(str(location), ValidReaderWriteIdList(table=name, high_watermark=0), schema=SCHEMA,
                          include_row_ids=True).to_pylist()
    b0, b1 = bucket_codec.encode(0), bucket_codec.encode(1)
    assert [(r["originalTransaction"], r["bucket"], r["rowId"], r["id"]) for r in ids] == [
        (0, b0, 0, 1), (0, b0, 1, 2), (0, b0, 2, 3), (0, b0, 3, 4), (0, b1, 0, 5), (0, b1, 1, 6), (0, b1, 2, 7)]

    with wh.transaction() as t:
        t.update(name, set={"name": "updated"}, where=pc.field("id") == 2)
        t.delete(name, where=pc.field("id") == 6)
    with wh.transaction() as t:
        t.insert(name, [{"id": 8, "name": "new"}])
    model = {1: "n1", 2: "updated", 3: "n3", 4: "n4", 5: "n5", 7: "n7", 8: "new"}
    assert {r["id"]: r["name"] for r in wh.read(name).to_pylist()} == model

    # The first MAJOR compaction writes the base; the Cleaner then removes the original files.
    cq = wh.metastore.compactions.enqueue(*name.split("."), None, CompactionType.MAJOR).id
    outcome = Worker(wh.metastore, CONF, runner=LocalRunner(), host="w").run_next()
    assert outcome.status is WorkerStatus.COMPACTED and outcome.compaction_id == cq, outcome.message
    bases = [d for d in os.listdir(location) if d.startswith("base_")]
    assert len(bases) == 1 and bases[0].startswith("base_0000002_v")
    Cleaner(wh.metastore, CONF).run_cycle()
    assert not (location / "000000_0").exists() and not (location / "sub" / "000001_0").exists()
    assert {r["id"]: r["name"] for r in wh.read(name).to_pylist()} == model


def test_insert_only_conversion_takes_any_file_names(wh, tmp_path):
    name = f"conv.{unique('mm')}"
    location = tmp_path / "mm"
    location.mkdir()
    _orc(location / "part-00000.orc", [1, 2])
    wh.create_table(name, [("id", "int"), ("name", "string")], location=str(location),
                    properties={"transactional": "false"})
    wh.alter_table_properties(name, {"transactional": "true", "transactional_properties": "insert_only"})
    assert wh.table(name).is_insert_only
    assert sorted(r["id"] for r in wh.read(name).to_pylist()) == [1, 2]


def test_plain_table_rules(wh):
    db = unique("convr")
    wh.create_table(f"{db}.acid", [("id", "int")])
    with pytest.raises(InvalidInputError, match="cannot be turned into a non-transactional"):
        wh.alter_table_properties(f"{db}.acid", {"transactional": "false"})
    with pytest.raises(InvalidInputError, match="transactional_properties='insert_only' needs transactional=true"):
        run(wh, f"CREATE TABLE {db}.p (id INT) TBLPROPERTIES ('transactional'='false', "
                "'transactional_properties'='insert_only')")
    with pytest.raises(InvalidInputError, match="transactional='maybe' is not supported"):
        run(wh, f"CREATE TABLE {db}.p (id INT) TBLPROPERTIES ('transactional'='maybe')")
    assert not wh.metastore.catalog.table_exists(db, "p")
