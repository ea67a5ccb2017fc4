"""The streaming ACID ORC writer (batches in, one file with key index out) and the units' unsorted fallback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.errors import UnsortedEventsError
from airflow_acid.acid.event_reader import open_orc_file
from airflow_acid.acid.event_schema import insert_events
from airflow_acid.acid.event_writer import FileKind
from airflow_acid.acid.fast_event_writer import AcidOrcFileWriter, write_acid_orc
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import BucketPlan, DataSource, SourceKind
from airflow_acid.job.plan import OrcSettings
from airflow_acid.spark.units import WorkUnit, execute_unit
from tests.spark.helpers import EMP, check_acid_output, compactor_snapshot

SMALL_STRIPES = OrcSettings(compression="NONE", stripe_size=16 * 1024, row_index_stride=1000)
"""Uncompressed, so the ORC writer cuts many stripes (its size estimate counts compressed blocks)."""


def _events(write_id: int, first_row_id: int, n: int, bucket_id: int = 0) -> pa.Table:
    rows = pa.table({"id": pa.array(np.arange(n, dtype=np.int32)), "name": [f"n{i}" for i in range(n)],
                     "salary": pa.array(np.full(n, write_id, dtype=np.int32))}, schema=EMP)
    events = insert_events(rows, write_id, bucket_codec.encode(bucket_id, 0))
    row_id = pa.array(np.arange(first_row_id, first_row_id + n, dtype=np.int64))
    return events.set_column(events.schema.get_field_index("rowId"), "rowId", row_id)


def test_batches_make_one_file_with_exact_key_index(tmp_path):
    storage = storage_for(str(tmp_path / "base_0000003_v0000009"))
    writer = AcidOrcFileWriter(storage, "bucket_00000", kind=FileKind.BASE, orc=SMALL_STRIPES)
    parts = [_events(1, 0, 7000), _events(1, 7000, 13), _events(2, 0, 9000), _events(3, 0, 5000)]
    for part in parts:
        writer.write(part)
        writer.write(part.slice(0, 0))  # empty batches are ignored
    written = writer.close()
    assert (written.rows, written.stats.inserts) == (21013, 21013)
    assert written.stripes > 1
    (tmp_path / "base_0000003_v0000009" / "_orc_acid_version").write_bytes(b"2")
    assert check_acid_output(str(tmp_path), "base_0000003_v0000009") == 21013  # key index = last key per stripe
    expected = pa.concat_tables(parts)
    assert open_orc_file(written.path).read().equals(expected.cast(open_orc_file(written.path).read().schema))


def test_keys_going_back_between_batches_are_refused_and_nothing_is_stored(tmp_path):
    storage = storage_for(str(tmp_path))
    writer = AcidOrcFileWriter(storage, "bucket_00000", kind=FileKind.BASE, orc=SMALL_STRIPES)
    writer.write(_events(2, 0, 100))
    with pytest.raises(UnsortedEventsError, match=r"bucket_00000.*not sorted.*at row 100"):
        writer.write(_events(1, 0, 10))
    with pytest.raises(UnsortedEventsError, match="at row 106"):
        writer.write(_events(2, 100, 10).take(pa.array([0, 1, 2, 3, 4, 9, 5, 6, 7, 8])))
    assert not (tmp_path / "bucket_00000").exists()


def test_empty_output_is_refused(tmp_path):
    writer = AcidOrcFileWriter(storage_for(str(tmp_path)), "bucket_00000", kind=FileKind.BASE, orc=SMALL_STRIPES)
    with pytest.raises(Exception, match="refusing to write an empty"):
        writer.close()


def test_major_unit_sorts_when_the_merge_yields_keys_out_of_order(tmp_path):
    """Data files whose keys interleave (no layout Hive writes, but possible): the unit falls back to sorting."""
    loc = tmp_path
    storage = storage_for(str(loc))
    write_acid_orc(storage, "delta_0000002_0000002_0000/bucket_00000", _events(2, 0, 3000), kind=FileKind.DELTA,
                   orc=SMALL_STRIPES)
    write_acid_orc(storage, "delta_0000001_0000001_0000/bucket_00000", _events(1, 0, 2000), kind=FileKind.DELTA,
                   orc=SMALL_STRIPES)
    sources = tuple(DataSource(f"{d}/bucket_00000", (loc / d / "bucket_00000").stat().st_size, SourceKind.EVENTS, d)
                    for d in ("delta_0000002_0000002_0000", "delta_0000001_0000001_0000"))
    unit = WorkUnit(0, 0, BucketPlan(0, sources, ()), CompactionType.MAJOR, str(loc),
                    compactor_snapshot(2).to_string(), EMP, SMALL_STRIPES, "_tmp", ("base_0000002_v0000005",))
    result = execute_unit(unit)
    assert result.error is None and (result.rows_in, result.rows_out) == (5000, 5000)
    out = Path(loc, "_tmp")
    (out / "base_0000002_v0000005" / "_orc_acid_version").write_bytes(b"2")
    assert check_acid_output(str(out), "base_0000002_v0000005") == 5000
