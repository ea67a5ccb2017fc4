"""orc_tail.finished_tail: metadata appended, calendar set to proleptic Gregorian (replacing one already there),
footer deflated for ZLIB files; TailFinishingStream finishes the tail a pyorc writer wrote."""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.orc as po
import pyorc
import pytest

from airflow_acid.acid.errors import OrcTailError
from airflow_acid.acid.orc_tail import PROLEPTIC_GREGORIAN, TailFinishingStream, finished_file, finished_tail, read_tail

DATES = [dt.date(1500, 1, 1), dt.date(1, 1, 1), dt.date(2024, 2, 29)]


def _pyarrow_file(compression: str) -> bytes:
    sink = pa.BufferOutputStream()
    po.write_table(pa.table({"d": DATES}), sink, compression=compression)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy", "zstd"])
def test_finished_file_marks_calendar_and_keeps_data(compression):
    data = _pyarrow_file(compression)
    assert read_tail(data).calendar is None
    done = finished_file(data, {"k": b"v"})
    tail = read_tail(done)
    assert tail.calendar == PROLEPTIC_GREGORIAN and tail.user_metadata == {"k": b"v"}
    assert po.read_table(pa.BufferReader(done)).column("d").to_pylist() == DATES


def test_calendar_already_present_is_replaced_not_repeated():
    once = finished_file(_pyarrow_file("zlib"))
    twice = read_tail(finished_file(once))
    assert [n for n in _field_numbers(twice.footer) if n == 11] == [11]


def _field_numbers(footer: bytes) -> list[int]:
    from airflow_acid.acid.orc_tail import _fields
    return [n for n, _w, _v, _r in _fields(footer)]


def test_zlib_footer_is_deflated():
    data = _pyarrow_file("zlib")
    start, tail = finished_tail(data)
    assert start == read_tail(data).footer_start
    assert tail[0] & 1 == 0  # the first chunk header says "compressed", not "original"


def test_tail_only_suffix_and_stream():
    handle = io.BytesIO()
    stream = TailFinishingStream(handle)
    writer = pyorc.Writer(stream, "struct<d:date>")
    writer.writerows([(d,) for d in DATES])
    stream.hold_tail()
    writer.close()
    stream.finish()
    data = handle.getvalue()
    assert read_tail(data).calendar == PROLEPTIC_GREGORIAN and stream.tell() == len(data)
    assert [r[0] for r in pyorc.Reader(io.BytesIO(data))] == DATES
    with pytest.raises(OrcTailError, match="hold_tail"):
        stream.finish()


@pytest.mark.parametrize("compression", ["NONE", "ZLIB", "SNAPPY"])
def test_streaming_flushes_keep_every_prefix_readable_and_marked(tmp_path, compression):
    """Each intermediate footer of a streaming file is rewritten too (calendar); later stripes and footers sit
    at moved offsets, and every flush length the writer records is the physical end of a readable file."""
    import struct

    from airflow_acid.acid.event_schema import insert_events
    from airflow_acid.acid.event_writer import EventFileWriter, OrcWriteOptions

    schema = pa.schema([("id", pa.int32()), ("d", pa.date32()), ("s", pa.string())])
    directory = tmp_path / "delta_0000002_0000002"
    writer = EventFileWriter(str(directory), 0, schema, streaming=True,
                             options=OrcWriteOptions.delta(compression=compression))
    written: list[int] = []
    for k in range(4):
        ids = list(range(k * 7, k * 7 + 7))
        rows = pa.table({"id": pa.array(ids, pa.int32()), "d": [DATES[i % 3] for i in ids],
                         "s": [f"row {i} " * (i + 1) for i in ids]}, schema=schema)
        writer.write(insert_events(rows, 2, 536870912, first_row_id=k * 7))
        length = writer.flush()
        side = (directory / "bucket_00000_flush_length").read_bytes()
        assert struct.unpack(">q", side[-8:])[0] == length
        prefix = (directory / "bucket_00000").read_bytes()[:length]
        assert read_tail(prefix).calendar == PROLEPTIC_GREGORIAN, k
        written += ids
        got = po.read_table(pa.BufferReader(prefix)).column("row").combine_chunks().field("id").to_pylist()
        assert got == written, k
    writer.flush()  # nothing new: no footer, the same length
    writer.close()
    whole = (directory / "bucket_00000").read_bytes()
    assert read_tail(whole).calendar == PROLEPTIC_GREGORIAN and len(read_tail(whole).stripe_rows) == 4
    assert po.read_table(pa.BufferReader(whole)).column("row").combine_chunks().field("id").to_pylist() == written


def test_orc_safe_keeps_values_after_a_null_nested_struct():
    """pyarrow's ORC writer shifts child values after a NULL struct nested in a struct unless orc_safe ran."""
    from airflow_acid.acid.orc_nulls import orc_safe

    inner = pa.struct([("s", pa.string()), ("l", pa.list_(pa.struct([("q", pa.int32())])))])
    values = [{"s": "x", "l": [{"q": 1}, None]}, None, {"s": "y", "l": []}, {"s": None, "l": None}]
    row = pa.StructArray.from_arrays([pa.array(values, inner)], names=["st"])
    table = pa.table({"row": row})

    def written(t: pa.Table) -> list:
        sink = io.BytesIO()
        po.write_table(t, sink)
        reader = pyorc.Reader(io.BytesIO(sink.getvalue()), struct_repr=pyorc.StructRepr.DICT)
        return [r["row"]["st"] for r in reader]

    assert written(table) != values  # the pyarrow bug this works around
    assert written(orc_safe(table)) == values
    assert orc_safe(table).equals(table)
    flat = pa.table({"a": [1, None]})
    assert orc_safe(flat) is flat


def test_timestamps_outside_the_nanosecond_range_round_trip(tmp_path):
    """Both writers take timestamps of years 0001 and 9999 (microseconds); the reader falls back to pyorc."""
    from airflow_acid.acid.event_reader import read_event_file
    from airflow_acid.acid.event_schema import insert_events
    from airflow_acid.acid.event_writer import EventFileWriter
    from airflow_acid.acid.statement_writer import write_statement

    schema = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ns")), ("l", pa.list_(pa.timestamp("ns")))])
    times = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(2000, 1, 1)]
    rows = pa.table({"id": pa.array([0, 1, 2], pa.int32()), "ts": pa.array(times, pa.timestamp("us")),
                     "l": pa.array([[t] for t in times], pa.list_(pa.timestamp("us")))})
    write_statement(str(tmp_path), 1, 0, schema, inserts=rows)
    with EventFileWriter(str(tmp_path / "delta_0000002_0000002"), 0, schema, streaming=True) as writer:
        writer.write(insert_events(rows, 2, 536870912))
        writer.flush()
    for directory in ("delta_0000001_0000001_0000", "delta_0000002_0000002"):
        path = tmp_path / directory / "bucket_00000"
        got = read_event_file(str(path)).column("row").combine_chunks()
        assert got.field("ts").type == pa.timestamp("us")
        assert got.field("ts").to_pylist() == times and got.field("l").to_pylist() == [[t] for t in times]
