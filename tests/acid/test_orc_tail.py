"""orc_tail.finished_tail: metadata appended, calendar set to proleptic Gregorian (replacing one already there),
footer deflated for ZLIB files; TailFinishingStream finishes the tail a pyorc writer wrote."""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.orc as po
import pyorc
import pytest

from airflow_acid.acid.orc_tail import (
    PROLEPTIC_GREGORIAN,
    OrcTailError,
    TailFinishingStream,
    finished_file,
    finished_tail,
    read_tail,
)

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
