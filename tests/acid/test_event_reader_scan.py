"""Whole-file reads of large stripes go through ORC's row reader in batches (memory: one batch, not a decoded
stripe) and give the same rows as stripe-by-stripe reads; files of small stripes read stripe by stripe; a timestamp
beyond nanoseconds part-way through falls back to stripes without losing or repeating rows."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_acid.acid import event_reader
from airflow_acid.acid.bucket_codec import encode
from airflow_acid.acid.event_reader import open_data_file
from airflow_acid.acid.event_schema import insert_events
from airflow_acid.acid.event_writer import write_event_file
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.writeids import ValidReaderWriteIdList

B0 = encode(0, 0)


def _file(tmp_path, rows: pa.Table):
    d = tmp_path / "t" / "delta_0000001_0000001_0000"
    write_event_file(str(d), 0, insert_events(rows, 1, B0))
    return open_data_file(storage_for(str(d)), "bucket_00000")


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(event_reader, "SCAN_BATCH_ROWS", 16)
    monkeypatch.setattr(event_reader, "SCAN_READAHEAD", 0)  # an error surfaces at the batch that holds it
    monkeypatch.setattr(event_reader, "SCAN_MIN_STRIPE_BYTES", 0)  # every test file counts as large


def test_only_files_of_large_stripes_stream(tmp_path, monkeypatch):
    monkeypatch.setattr(event_reader, "SCAN_BATCH_ROWS", 16)
    f = _file(tmp_path, pa.table({"a": list(range(100))}))
    assert 0 < f.stripe_bytes < event_reader.SCAN_MIN_STRIPE_BYTES
    assert [b.num_rows for b in f.iter_batches()] == [100]  # one stripe, read whole
    monkeypatch.setattr(event_reader, "SCAN_MIN_STRIPE_BYTES", f.stripe_bytes + 1)
    assert [b.num_rows for b in f.iter_batches()] == [100]
    monkeypatch.setattr(event_reader, "SCAN_MIN_STRIPE_BYTES", f.stripe_bytes)
    assert [b.num_rows for b in f.iter_batches()] == [16] * 6 + [4]


@pytest.mark.parametrize("keys", [True, False])
def test_whole_file_scan_matches_stripe_reads(tmp_path, small_batches, keys):
    rows = pa.table({"a": list(range(100)), "b": [f"v{i}" for i in range(100)]})
    f = _file(tmp_path, rows)
    scanned = list(f.iter_batches(keys=keys))
    assert [b.num_rows for b in scanned] == [16] * 6 + [4]  # sub-stripe batches
    by_stripe = list(f.iter_batches([1], keys=keys))  # a column subset: stripe by stripe
    assert len(by_stripe) == f.num_stripes == 1
    whole = pa.Table.from_batches(scanned)
    assert whole.column("row").to_pylist() == [{"a": i, "b": f"v{i}"} for i in range(100)]
    assert pa.Table.from_batches(by_stripe).column("row").to_pylist() == [{"b": f"v{i}"} for i in range(100)]
    if keys:
        assert whole.column("rowId").to_pylist() == list(range(100))
    else:
        assert whole.column_names == ["row"]


def test_timestamp_beyond_nanoseconds_mid_file_falls_back_without_losing_rows(tmp_path, small_batches):
    values = [dt.datetime(2000, 1, 1) + dt.timedelta(seconds=i) for i in range(100)]
    values[90] = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    rows = pa.table({"id": list(range(100)), "t": pa.array(values, pa.timestamp("us"))})
    f = _file(tmp_path, rows)
    batches = list(f.iter_batches())
    # scanned batches (Arrow's reader may meet the bad value some batches early — how many depends on its threads),
    # then the stripe read by pyorc from the first row not yet given: every row once, in order
    sizes = [b.num_rows for b in batches]
    assert sum(sizes) == 100 and sizes[-1] > 16
    seen = [r for b in batches for r in b.column("row").to_pylist()]
    assert [r["id"] for r in seen] == list(range(100))
    table = read_acid_table(str(tmp_path / "t"), ValidReaderWriteIdList(high_watermark=1))
    assert table.column("id").to_pylist() == list(range(100))
    assert table.column("t").to_pylist() == values
