"""AppendingOrcFile: pyarrow-written pieces joined into one ORC file with a valid tail after every append."""

from __future__ import annotations

import datetime as dt
import decimal
import io

import pyarrow as pa
import pyarrow.orc as po
import pyorc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid.errors import OrcTailError
from airflow_acid.acid.orc_append import AppendingOrcFile
from airflow_acid.acid.orc_tail import PROLEPTIC_GREGORIAN, read_tail

SCHEMA = pa.schema([
    ("i", pa.int64()), ("s", pa.string()), ("d", pa.float64()), ("b", pa.bool_()), ("bin", pa.binary()),
    ("dec", pa.decimal128(10, 2)), ("day", pa.date32()), ("ts", pa.timestamp("ns")),
    ("l", pa.list_(pa.int32())), ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
])

_INT = st.one_of(st.none(), st.integers(-(1 << 62), 1 << 62))
_ROW = st.fixed_dictionaries({
    "i": _INT,
    "s": st.one_of(st.none(), st.text(max_size=6)),
    "d": st.one_of(st.none(), st.floats(-1e9, 1e9, allow_nan=False)),
    "b": st.one_of(st.none(), st.booleans()),
    "bin": st.one_of(st.none(), st.binary(max_size=5)),
    "dec": st.one_of(st.none(), st.decimals(-99_999_999, 99_999_999, places=2, allow_nan=False,
                                              allow_infinity=False)),
    "day": st.one_of(st.none(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    "ts": st.one_of(st.none(), st.datetimes(dt.datetime(1700, 1, 1), dt.datetime(2200, 1, 1))),
    "l": st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=3)),
    "st": st.one_of(st.none(), st.fixed_dictionaries({"x": st.integers(-5, 5), "y": st.text(max_size=2)})),
})


def _piece(table: pa.Table, compression: str = "zlib") -> bytes:
    out = pa.BufferOutputStream()
    po.write_table(table, out, compression=compression)
    return out.getvalue().to_pybytes()


def _statistics(data: bytes) -> list[dict]:
    """Column statistics as pyorc reads them; a double sum compared approximately (its rounding depends on the
    order the values were added in, as in every ORC writer's merge)."""
    reader = pyorc.Reader(io.BytesIO(data))
    stats = [dict(reader[i].statistics) for i in range(len(reader.schema.fields) + 1)]
    for column in stats:
        if column["kind"] is pyorc.TypeKind.DOUBLE and "sum" in column:
            column["sum"] = pytest.approx(column["sum"], rel=1e-9)
    return stats


def _stripe_statistics(data: bytes) -> list[list[dict]]:
    """Every stripe's column statistics (the Metadata section) as pyorc reads them."""
    reader = pyorc.Reader(io.BytesIO(data))
    columns = len(reader.schema.fields) + 1
    return [[dict(stripe[i].statistics) for i in range(columns)] for stripe in
            (reader.read_stripe(n) for n in range(reader.num_of_stripes))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_ROW, min_size=1, max_size=8), min_size=1, max_size=4))
def test_every_prefix_reads_back_and_statistics_equal_one_file_of_the_same_rows(chunks):
    tables = [pa.Table.from_pylist(rows, schema=SCHEMA) for rows in chunks]
    buf = io.BytesIO()
    appending = AppendingOrcFile(buf)
    lengths = []
    for table in tables:
        appending.append(_piece(table))
        lengths.append(appending.tail({"n": str(len(lengths)).encode()}))
    data = buf.getvalue()
    assert lengths[-1] == len(data)
    for count, length in enumerate(lengths, 1):
        prefix = data[:length]
        assert po.ORCFile(pa.BufferReader(prefix)).read().equals(pa.concat_tables(tables[:count]))
        assert pyorc.Reader(io.BytesIO(prefix)).user_metadata == {"n": str(count - 1).encode()}
        assert read_tail(prefix).calendar == PROLEPTIC_GREGORIAN
        assert _stripe_statistics(prefix) == [s for t in tables[:count] for s in _stripe_statistics(_piece(t))]
    whole = _statistics(_piece(pa.concat_tables(tables)))
    pieces = [_statistics(_piece(t)) for t in tables]
    for i, column in enumerate(whole):
        if any("sum" not in piece[i] for piece in pieces if piece[i]["number_of_values"]):
            # a piece's sum overflowed: merged statistics leave the sum out (as ORC's own merge does), while one
            # writer adding the same values in another order may not overflow
            column.pop("sum", None)
    assert _statistics(data) == whole
    assert appending.stripe_rows == [t.num_rows for t in tables]


@pytest.mark.parametrize("compression", ["uncompressed", "snappy", "zstd", "zlib"])
def test_the_final_tail_compresses_the_stripe_statistics_as_one_stream(compression):
    """Intermediate tails copy each piece's compressed Metadata chunks; the final one packs them again when that
    is smaller (ZLIB: one deflate stream instead of one per piece), with the same stripe statistics."""
    tables = [pa.table({"i": list(range(n * 10, n * 10 + 10)), "s": [f"value {n}"] * 10}) for n in range(40)]
    buf = io.BytesIO()
    appending = AppendingOrcFile(buf)
    for table in tables:
        appending.append(_piece(table, compression))
    intermediate_end = appending.tail({"k": b"v"})
    final_end = appending.tail({"k": b"v"}, final=True)
    data = buf.getvalue()
    assert final_end == len(data)
    intermediate = po.ORCFile(pa.BufferReader(data[:intermediate_end]))
    final = po.ORCFile(pa.BufferReader(data))
    expected = [s for t in tables for s in _stripe_statistics(_piece(t, compression))]
    assert _stripe_statistics(data[:intermediate_end]) == _stripe_statistics(data) == expected
    assert final.read().equals(pa.concat_tables(tables)) and final.metadata == {b"k": b"v"}
    if compression == "zlib":
        assert final.stripe_statistics_length < intermediate.stripe_statistics_length / 2
    else:  # only ZLIB is compressed again; other kinds at most lose the per-piece chunk headers
        assert final.stripe_statistics_length <= intermediate.stripe_statistics_length


@pytest.mark.parametrize("compression", ["uncompressed", "snappy", "zstd", "zlib"])
def test_compressions_round_trip(compression):
    tables = [pa.table({"i": list(range(n * 100, n * 100 + 100)), "s": [str(n)] * 100}) for n in range(3)]
    buf = io.BytesIO()
    appending = AppendingOrcFile(buf)
    for table in tables:
        appending.append(_piece(table, compression))
        appending.tail()
        assert buf.getvalue()[-4:-1] == b"ORC"  # the PostScript still ends with the magic (Java's reader checks)
    assert po.ORCFile(pa.BufferReader(buf.getvalue())).read().equals(pa.concat_tables(tables))


def test_another_schema_is_refused():
    appending = AppendingOrcFile(io.BytesIO())
    appending.append(_piece(pa.table({"i": [1]})))
    with pytest.raises(OrcTailError, match="another schema"):
        appending.append(_piece(pa.table({"i": ["x"]})))
    with pytest.raises(OrcTailError, match="another compression"):
        appending.append(_piece(pa.table({"i": [2]}), "snappy"))


def test_decimal_and_timestamp_extremes_keep_their_exact_values():
    """Extremes come from whichever piece holds them, nanoseconds included."""
    first = pa.table({"dec": pa.array([decimal.Decimal("1.50")], pa.decimal128(5, 2)),
                      "ts": pa.array([dt.datetime(2000, 1, 1, 0, 0, 0, 999)], pa.timestamp("us"))})
    second = pa.table({"dec": pa.array([decimal.Decimal("-10.25")], pa.decimal128(5, 2)),
                       "ts": pa.array([dt.datetime(2000, 1, 1, 0, 0, 0, 998)], pa.timestamp("us"))})
    buf = io.BytesIO()
    appending = AppendingOrcFile(buf)
    for table in (first, second):
        appending.append(_piece(table))
    appending.tail()
    stats = _statistics(buf.getvalue())
    assert (stats[1]["minimum"], stats[1]["maximum"], stats[1]["sum"]) == (
        decimal.Decimal("-10.25"), decimal.Decimal("1.50"), decimal.Decimal("-8.75"))
    # pyorc shows milliseconds only: the encoded statistics (nanoseconds too) equal one file's of the same rows
    assert _raw_statistics(buf.getvalue()) == _raw_statistics(_piece(pa.concat_tables([first, second])))


def _raw_statistics(data: bytes) -> list[bytes]:
    from airflow_acid.acid.orc_tail import _fields
    return [bytes(value) for number, _wire, value, _raw in _fields(read_tail(data).footer) if number == 7]
