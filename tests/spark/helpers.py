"""Shared helpers of the compaction-job tests: table histories, snapshot reads, checks of written ACID files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyorc

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.event_writer import parse_key_index
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.planner import compose_for_directory
from airflow_acid.job.plan import Compaction, CompactionPlan

EMP = pa.schema([("id", pa.int32()), ("name", pa.string()), ("salary", pa.int32())])
EMP_ORC = "struct<id:int,name:string,salary:int>"


def emp_rows(rows) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int32()), "name": [r[1] for r in rows],
                     "salary": pa.array([r[2] for r in rows], pa.int32())}, schema=EMP)


def write_merge_example(loc: str) -> None:
    """The seed's MERGE example: write id 1 inserts three rows; write id 2 MERGEs (Mary inserted, Tom updated)."""
    write_statement(loc, 1, 0, EMP, inserts=emp_rows([(1, "Jerry", 5000), (2, "Tom", 8000), (3, "Kate", 6000)]))
    tom = read_acid_table(loc, snapshot(1), include_row_ids=True).filter(pc.field("id") == 2)
    write_statement(loc, 2, 0, EMP, inserts=emp_rows([(4, "Mary", 9000)]))
    write_statement(loc, 2, 1, EMP, inserts=emp_rows([(2, "Tom", 7000)]),
                    deletes=tom.select(["originalTransaction", "bucket", "rowId"]))


def snapshot(hwm: int, aborted=(), open_=()) -> ValidReaderWriteIdList:
    return ValidReaderWriteIdList(table="db.t", high_watermark=hwm, aborted=tuple(aborted), open=tuple(open_))


def compactor_snapshot(hwm: int, aborted=(), open_=()) -> ValidCompactorWriteIdList:
    return ValidCompactorWriteIdList.from_reader(snapshot(hwm, aborted, open_))


def plan_one(loc: str, ctype: str, txn: int, wil: ValidCompactorWriteIdList, cid: str = "1", **kw) -> Compaction:
    c = compose_for_directory(loc, wil, txn, ctype, compaction_id=cid, **kw)
    assert isinstance(c, Compaction), c
    return c


def rows_with_ids(loc: str, snap, schema: pa.Schema | None = None) -> list[tuple]:
    """Every visible row with its ROW__ID, sorted (order-independent comparison of merged views)."""
    table = read_acid_table(loc, snap, include_row_ids=True, schema=schema)
    return sorted(tuple(r.values()) for r in table.to_pylist())


def acid_dirs(loc: str) -> list[str]:
    return sorted(p for p in os.listdir(loc) if not p.startswith(("_", ".")))


def check_acid_output(loc: str, directory: str) -> int:
    """Check every bucket file of a compaction output with pyarrow and pyorc; returns the number of events.

    Sorted by (originalTransaction, bucket, rowId); one bucket id per file matching its name; ``hive.acid.key.index``
    = last key of every stripe; ``hive.acid.stats`` = event counts; ``hive.acid.version`` = 2; ``_orc_acid_version``.
    """
    d = Path(loc, directory)
    assert (d / names.ORC_ACID_VERSION_FILE).read_bytes() == b"2"
    total = 0
    for f in sorted(d.glob("bucket_*")):
        bucket_id = names.parse_bucket_file(f.name).bucket_id
        table = po.ORCFile(str(f)).read()
        assert table.schema.names == ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction",
                                      "row"]
        o, b, r = (table.column(k).to_numpy() for k in ("originalTransaction", "bucket", "rowId"))
        keys = list(zip(o.tolist(), b.tolist(), r.tolist()))
        assert keys == sorted(keys), f"{f} is not sorted by ROW__ID"
        assert {bucket_codec.bucket_id_of(int(x)) for x in set(b.tolist())} == {bucket_id}
        ops = table.column("operation").to_numpy()
        if directory.startswith("delete_delta_"):
            assert (ops == 2).all() and table.column("row").null_count == table.num_rows
        else:
            assert (ops == 0).all()
        if directory.startswith("base_"):
            assert (table.column("currentTransaction").to_numpy() == o).all()
        with open(f, "rb") as fh:
            reader = pyorc.Reader(fh)
            meta = {k: v.decode() for k, v in reader.user_metadata.items()}
            stripe_last = []
            seen = 0
            for stripe in reader.iter_stripes():
                seen += len(stripe)
                stripe_last.append(keys[seen - 1])
            assert len(reader) == table.num_rows
        assert meta["hive.acid.version"] == "2"
        assert [tuple(k) for k in parse_key_index(meta["hive.acid.key.index"])] == stripe_last
        counts = np.bincount(ops, minlength=3)
        assert meta["hive.acid.stats"] == f"{counts[0]},{counts[1]},{counts[2]}"
        total += table.num_rows
    return total


def run_inprocess(*compactions: Compaction):
    """Run the plan in-process; every succeeded compaction's units must have proven their output (the digest of the
    rows read equals that of the files read back)."""
    from airflow_acid.job.result import JobStatus
    from airflow_acid.spark.driver import execute_plan

    result = execute_plan(CompactionPlan(tuple(compactions)))
    for c in result.compactions:
        if c.status is JobStatus.SUCCEEDED and c.verify == "digest":
            assert c.files == 0 or c.checks, c
            for check in c.checks:
                assert check.read_digest == check.written_digest and check.rows_read == check.rows_written, check
    return result
