"""Every ORC writer of the project marks the proleptic Gregorian calendar in the file footer (issue 16 item 7), so
Java readers (Hive 4, Spark) read dates/timestamps before 1582-10-15 as written instead of shifting them
(1500-01-01 read as 1499-12-23). Files come from the client statement writer, the streaming (pyorc) writer, a major
compaction (LocalRunner) and an insert-only compaction; the slow test reads them back with Java's orc-core
(``java/ReadOrcDates.java``, compiled against the pyspark wheel's jars)."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pyspark
import pytest

from airflow_acid.acid.event_schema import insert_events
from airflow_acid.acid.event_writer import EventFileWriter
from airflow_acid.acid.orc_tail import PROLEPTIC_GREGORIAN, read_tail
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.runners import LocalRunner
from tests.spark.helpers import compactor_snapshot, plan_one

DATES = [dt.date(1500, 1, 1), dt.date(1, 1, 1), dt.date(1582, 10, 4), dt.date(1582, 10, 15), dt.date(2024, 2, 29)]
TIMES = [dt.datetime(1678, 1, 1, 12, 30), dt.datetime(1970, 1, 1), dt.datetime(2024, 2, 29, 1, 2, 3, 456789)]
"""Timestamps stay in 1677–2262: writers and readers here still take them as int64 nanoseconds (issue 16, not here)."""
SCHEMA = pa.schema([("id", pa.int32()), ("d", pa.date32()), ("ts", pa.timestamp("us"))])
JAVA_SOURCE = Path(__file__).parent / "java" / "ReadOrcDates.java"


def _rows(first_id: int, dates: list[dt.date] = DATES) -> pa.Table:
    n = len(dates)
    return pa.table({"id": pa.array(range(first_id, first_id + n), pa.int32()), "d": dates,
                     "ts": [TIMES[i % len(TIMES)] for i in range(n)]}, schema=SCHEMA)


def _acid_table(loc: Path) -> None:
    """Write id 1: a client statement (fast writer); write id 2: a streaming delta (pyorc writer, flushed once)."""
    write_statement(str(loc), 1, 0, SCHEMA, inserts=_rows(0))
    with EventFileWriter(str(loc / "delta_0000002_0000002"), 0, SCHEMA, streaming=True) as writer:
        writer.write(insert_events(_rows(10, DATES[:2]), 2, 536870912))
        writer.flush()
        writer.write(insert_events(_rows(12, DATES[2:]), 2, 536870912, first_row_id=2))


def _insert_only_table(loc: Path) -> None:
    for write_id in (1, 2):
        directory = loc / f"delta_{write_id:07d}_{write_id:07d}_0000"
        directory.mkdir(parents=True)
        po.write_table(_rows(write_id * 10), str(directory / "000000_0"))


def _compact(loc: Path, *, insert_only: bool) -> Path:
    plan = plan_one(str(loc), "major", 20, compactor_snapshot(2), insert_only=insert_only,
                    **({} if insert_only else {"row_schema": "struct<id:int,d:date,ts:timestamp>"}))
    (result,) = LocalRunner().run(CompactionPlan((plan,)), job_name="calendar", spark_conf={}).compactions
    assert result.status == JobStatus.SUCCEEDED, result.error
    return loc / result.outputs[0]


def _written_files(tmp_path: Path) -> dict[str, Path]:
    """One file of each writer: statement delta, streaming delta, compacted base, insert-only compacted base."""
    acid, mm = tmp_path / "acid", tmp_path / "mm"
    _acid_table(acid)
    statement = next(acid.glob("delta_0000001_0000001_0000/bucket_*"))
    streaming = acid / "delta_0000002_0000002" / "bucket_00000"
    base = next(_compact(acid, insert_only=False).glob("bucket_*"))
    _insert_only_table(mm)
    plain = next(_compact(mm, insert_only=True).glob("0*"))
    return {"statement": statement, "streaming": streaming, "compacted": base, "insert_only": plain}


def test_every_writer_marks_the_proleptic_gregorian_calendar(tmp_path):
    for what, path in _written_files(tmp_path).items():
        tail = read_tail(path.read_bytes())
        assert tail.calendar == PROLEPTIC_GREGORIAN, what
        table = po.read_table(str(path))
        rows = table.column("row").combine_chunks().flatten() if "row" in table.column_names else table.columns
        assert set(rows[1].to_pylist()) <= set(DATES) and set(rows[2].to_pylist()) <= set(TIMES), what
        assert rows[1].to_pylist(), what


def _java_reads(files: list[Path], work: Path) -> list[tuple[str, str, str]]:
    jars = str(Path(pyspark.__file__).parent / "jars" / "*")
    classes = work / "classes"
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", jars, str(JAVA_SOURCE)], check=True,
                   capture_output=True, timeout=120)
    out = subprocess.run(["java", "-cp", f"{classes}:{jars}", "ReadOrcDates", *map(str, files)], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return [tuple(line.split("\t")) for line in out.splitlines()]  # type: ignore[misc]


@pytest.mark.slow
def test_java_orc_reader_reads_dates_as_written(tmp_path):
    files = _written_files(tmp_path)
    lines = _java_reads(list(files.values()), tmp_path)
    for what, path in files.items():
        got = [(column, value) for file, column, value in lines if file == str(path)]
        assert ("calendar", "proleptic") in got, what
        table = po.read_table(str(path))
        acid = "row" in table.column_names
        prefix = "row." if acid else ""
        rows = table.column("row").combine_chunks().flatten() if acid else table.columns
        written_dates, written_times = rows[1].to_pylist(), rows[2].to_pylist()
        assert [dt.date.fromisoformat(v) for c, v in got if c == f"{prefix}d"] == written_dates, what
        assert [dt.datetime.fromisoformat(v) for c, v in got if c == f"{prefix}ts"] == written_times, what
        assert {dt.date(1500, 1, 1), dt.date(2024, 2, 29)} <= set(written_dates), what
