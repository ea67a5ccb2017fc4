"""OrcFileBuilder (issue 29): pyarrow's writer while it stores every value as ORC's Java writer does, pyorc's from the
first table that holds a pre-1970 fraction or a wide-form timestamp — rows written before are copied over exactly."""

from __future__ import annotations

import zoneinfo

import pyarrow as pa
import pyorc
import pytest

from airflow_acid.acid.errors import UnstorableTimestampError
from airflow_acid.acid.orc_file_builder import OrcFileBuilder
from airflow_acid.acid.orc_values import CONVERTERS
from airflow_acid.acid.timestamps import WIDE_TIMESTAMP

OPTIONS = {"compression": "zlib", "stripe_size": 1 << 20, "compression_block_size": 64 * 1024,
           "row_index_stride": 10_000}


class _Raw(pyorc.converters.ORCConverter):
    """(seconds, nanos) as ORC's C++ reader hands them over, for checking the stored encoding."""

    @staticmethod
    def from_orc(seconds, nanoseconds, timezone):
        return seconds, nanoseconds

    @staticmethod
    def to_orc(*args):  # pragma: no cover - reads only
        raise NotImplementedError


def _stored(data) -> list:
    reader = pyorc.Reader(pa.BufferReader(data), converters={pyorc.TypeKind.TIMESTAMP: _Raw},
                          timezone=zoneinfo.ZoneInfo("UTC"))
    return [row[1] for row in reader]


def _exact(data) -> list:
    reader = pyorc.Reader(pa.BufferReader(data), converters=CONVERTERS, timezone=zoneinfo.ZoneInfo("UTC"))
    return [row[1] for row in reader]


def _table(ids, nanos, unit="ns") -> pa.Table:
    factor = {"ns": 1, "us": 1000}[unit]
    return pa.table({"id": pa.array(ids, pa.int64()), "t": pa.array([n // factor for n in nanos], pa.timestamp(unit))})


@pytest.mark.parametrize("spool", [False, True])
def test_a_pre_1970_fraction_moves_the_file_to_the_row_writer_keeping_earlier_rows(spool):
    builder = OrcFileBuilder(OPTIONS, spool=spool)
    first = [0, 10**9 + 5, 1_700_000_000_123_456_789]
    second = [-1_500_000_000, -14831724303876544000 // 2]  # 1969-12-31 23:59:58.5, 1500-07-…
    builder.write(_table([0, 1, 2], first))
    assert not builder.row_writer
    builder.write(_table([3, 4], second))
    assert builder.row_writer
    data = builder.finish()
    if spool:
        with open(data, "rb") as fh:
            data = fh.read()
        builder.discard()
    assert _exact(data) == first + second
    # stored as Java's writer stores them: seconds toward zero, nanoseconds positive
    assert _stored(data)[3] == (-2, 500_000_000)
    assert pa.BufferReader(data).read(3) == b"ORC"


def test_clean_tables_stay_with_pyarrow_and_forms_are_unified():
    year_one = -62135596800 * 10**9
    builder = OrcFileBuilder(OPTIONS)
    builder.write(_table([0], [year_one], "us"))  # microseconds: outside the nanosecond span
    builder.write(_table([1], [2 * 10**9 + 7], "ns"))  # 7 ns do not fit the file's microseconds -> pyorc
    assert builder.row_writer
    assert _exact(builder.finish()) == [year_one, 2 * 10**9 + 7]

    builder = OrcFileBuilder(OPTIONS)
    builder.write(_table([0], [10**9], "ns"))
    builder.write(_table([1], [3 * 10**9], "us"))
    assert not builder.row_writer
    assert _exact(builder.finish()) == [10**9, 3 * 10**9]


def test_wide_timestamps_are_written_exactly_over_hives_range():
    wide = pa.array([{"epoch_seconds": 253402300799, "nanos_of_second": 999_999_999},
                     {"epoch_seconds": -62135596800, "nanos_of_second": 1}, None], WIDE_TIMESTAMP)
    builder = OrcFileBuilder(OPTIONS)
    builder.write(pa.table({"id": pa.array([0, 1, 2], pa.int64()), "t": wide}))
    data = builder.finish()
    assert _exact(data) == [253402300799 * 10**9 + 999_999_999, -62135596800 * 10**9 + 1, None]
    schema = pyorc.Reader(pa.BufferReader(data)).schema
    assert str(schema) == "struct<id:bigint,t:timestamp>"


def test_a_timestamp_orc_cannot_store_is_refused():
    builder = OrcFileBuilder(OPTIONS)
    with pytest.raises(UnstorableTimestampError, match="column t: timestamp 1969-12-31 23:59:59.999"):
        builder.write(_table([0], [-1_000_000]))
    assert builder.rows == 0
