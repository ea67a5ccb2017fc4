"""Building blocks of the tests that read every kind of ORC file the project writes (test_orc_calendar.py,
test_type_matrix.py): finding a written file, a compaction through the LocalRunner, two streaming transactions with
the file cut at its first flush, and ONE javac + ONE JVM of ``java/ReadOrcValues.java`` over many files."""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyspark
import pytest

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.runners import LocalRunner
from tests.spark.helpers import compactor_snapshot, plan_one

JAVA_SOURCE = Path(__file__).parent / "java" / "ReadOrcValues.java"
BUCKET0 = 536870912
"""Bucket property of bucket 0, statement 0 (BucketCodec V1)."""


def location(wh: AcidWarehouse, table: str) -> Path:
    """The folder of ``table`` (a local warehouse)."""
    return Path(wh.table(table).location.removeprefix("file://"))


def one(directory: Path, pattern: str) -> Path:
    """The one file matching ``pattern`` below ``directory``."""
    (path,) = sorted(directory.glob(pattern))
    return path


def compact(location: Path, ctype: str, high: int, *, row_schema: str | None, insert_only: bool = False,
            txn: int | None = None, **kw: Any) -> None:
    """A ``ctype`` compaction of ``location`` up to write id ``high`` run by the LocalRunner (compactor txn
    ``txn``, default 100 + high, so the output is ``…_v0000{txn}``)."""
    extra = {} if insert_only else {"row_schema": row_schema}
    plan = plan_one(str(location), ctype, txn or 100 + high, compactor_snapshot(high), insert_only=insert_only,
                    **extra, **kw)
    (result,) = LocalRunner().run(CompactionPlan((plan,)), job_name="types", spark_conf={}).compactions
    assert result.status == JobStatus.SUCCEEDED, result.error


def stream(wh: AcidWarehouse, table: str, delta: Path, prefix: Path, parts: Sequence[Any], batch_size: int = 2
           ) -> None:
    """One streaming transaction per part (one batch of ``batch_size`` write ids) into ``delta``; ``prefix`` gets
    ``delta/bucket_00000`` cut at the flush length of the first commit (a reader's view mid-batch)."""
    with wh.streaming_connection(table, batch_size=batch_size) as conn:
        for n, part in enumerate(parts):
            conn.write(part)
            conn.commit()
            if n == 0:
                stream_file = delta / "bucket_00000"
                length = struct.unpack(">q", (delta / "bucket_00000_flush_length").read_bytes()[-8:])[0]
                prefix.write_bytes(stream_file.read_bytes()[:length])


def java_reads(files: Sequence[Path], work: Path, *options: str) -> list[tuple[str, ...]]:
    """ONE javac and ONE JVM of ReadOrcValues over all ``files``: its tab-separated output lines — per file
    (file, 'calendar', kind) and (file, 'schema', ORC type), then the rows — (``options`` go before the files, e.g.
    ``--cells``)."""
    if shutil.which("javac") is None:
        pytest.fail("javac is not on PATH: install a JDK (CI installs one) to run the Java ORC reader test")
    jars = str(Path(pyspark.__file__).parent / "jars" / "*")
    classes = work / "classes"
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", jars, str(JAVA_SOURCE)], check=True,
                   capture_output=True, timeout=180)
    out = subprocess.run(["java", "-cp", f"{classes}:{jars}", "ReadOrcValues", *options, *map(str, files)],
                         check=True, capture_output=True, text=True, timeout=180).stdout
    return [tuple(line.split("\t", 4 if options else 2)) for line in out.splitlines()]
