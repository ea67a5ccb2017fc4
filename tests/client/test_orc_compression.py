"""A table's ``orc.compress`` (LZ4 included) is used by every writer — inserts, updates' delete deltas, INSERT
OVERWRITE bases, insert-only tables, streaming ingest and compaction output — and the files read back (by this
project and, in the slow test, by ORC's Java reader)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest

from airflow_acid.compactor.worker import Worker
from airflow_acid.services import request_compaction
from airflow_acid.spark.runners import LocalRunner
from tests.services.support import COLUMNS, unique


def compressions(location: str) -> dict[str, str]:
    """Every ORC file under ``location`` (relative path) → its compression kind."""
    root = Path(location.removeprefix("file://"))
    return {str(p.relative_to(root)): po.ORCFile(pa.OSFile(str(p))).compression for p in sorted(root.rglob("*"))
            if p.is_file() and (p.name.startswith("bucket_") or p.name.startswith("0000"))
            and not p.name.endswith("_flush_length")}


@pytest.mark.parametrize("kind, read_as", [("LZ4", "LZ4"), ("ZSTD", "ZSTD"), ("SNAPPY", "SNAPPY"),
                                           ("NONE", "UNCOMPRESSED")])
def test_every_writer_follows_orc_compress(wh, kind, read_as):
    table = f"oc.{unique('c')}"
    wh.create_table(table, COLUMNS, properties={"orc.compress": kind.lower()})
    with wh.transaction() as txn:
        txn.insert(table, [{"id": i, "name": f"n{i}"} for i in range(50)])
    with wh.transaction() as txn:
        txn.update(table, {"name": "changed"}, {"id": 1})
    with wh.streaming_connection(table, batch_size=2) as conn:
        conn.write([(100, "streamed")])
        conn.commit()
    found = compressions(wh.table(table).location)
    assert any(p.startswith("delete_delta_") for p in found) and len(found) >= 4
    assert set(found.values()) == {read_as}, found
    rows = sorted(wh.read(table).to_pylist(), key=lambda r: r["id"])
    assert len(rows) == 51 and rows[1] == {"id": 1, "name": "changed"} and rows[-1]["name"] == "streamed"

    pool = unique("pool")
    request_compaction(wh, table, None, "major", pool=pool)
    Worker(wh.metastore, runner=LocalRunner()).run_next(pool)
    with wh.transaction() as txn:
        txn.insert_overwrite(table, [{"id": 7, "name": "only"}])
    found = compressions(wh.table(table).location)
    assert any(p.startswith("base_") and "_v" in p.split("/")[0] for p in found), found  # the compaction's base
    assert any(p.startswith("base_") and "_v" not in p.split("/")[0] for p in found), found  # INSERT OVERWRITE's
    assert set(found.values()) == {read_as}, found
    assert wh.read(table).to_pylist() == [{"id": 7, "name": "only"}]


def test_insert_only_tables_follow_orc_compress(wh):
    table = f"oc.{unique('mm')}"
    wh.create_table(table, COLUMNS, transactional_properties="insert_only", properties={"orc.compress": "LZ4"})
    with wh.transaction() as txn:
        txn.insert(table, [{"id": 1, "name": "a"}])
    assert set(compressions(wh.table(table).location).values()) == {"LZ4"}
    assert wh.read(table).to_pylist() == [{"id": 1, "name": "a"}]


@pytest.mark.slow
def test_orcs_java_reader_reads_lz4_files(wh, tmp_path):
    from tests.spark.orc_files import java_reads

    table = f"oc.{unique('java')}"
    wh.create_table(table, COLUMNS, properties={"orc.compress": "LZ4"})
    with wh.transaction() as txn:
        txn.insert(table, [{"id": i, "name": f"n{i}"} for i in range(3)])
    root = Path(wh.table(table).location.removeprefix("file://"))
    [path] = [p for p in root.rglob("bucket_*") if p.is_file()]
    lines = java_reads([path], tmp_path)
    rows = [line for line in lines if line[1] not in ("calendar", "schema")]
    assert len(rows) == 3, lines
