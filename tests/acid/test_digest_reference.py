"""The vectorised digest (acid/digest.py) against its definition written out value by value
(tests/acid/digest_reference.py), for random columns of every supported type: NULLs, slices, chunks, string buffers
at any alignment, values near the end of their buffer, and batches hashed block by block. Also pins digests of fixed
columns: the digest is stored (ACR_DIGEST_IN/OUT) and compared across processes, so it must never change."""

from __future__ import annotations

import datetime
import decimal
from unittest import mock

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_acid.acid import digest
from airflow_acid.acid import timestamps as ts
from airflow_acid.acid.digest import RowDigest, digest_columns, value_hashes
from tests.acid import digest_reference as ref

_STRINGS = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x2FF), max_size=40)
_BYTES = st.binary(max_size=80)


def _ints(bits: int, signed: bool = True) -> st.SearchStrategy:
    return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else st.integers(0, (1 << bits) - 1)


# (Arrow type, strategy of its non-NULL Python values)
_KINDS: list[tuple[pa.DataType, st.SearchStrategy]] = [
    (pa.int8(), _ints(8)), (pa.int16(), _ints(16)), (pa.int32(), _ints(32)), (pa.int64(), _ints(64)),
    (pa.uint8(), _ints(8, False)), (pa.uint32(), _ints(32, False)), (pa.uint64(), _ints(64, False)),
    (pa.bool_(), st.booleans()),
    (pa.float32(), st.floats(width=32)), (pa.float64(), st.floats()),
    (pa.decimal128(38, 4), st.decimals(min_value=-(10**33), max_value=10**33, places=4, allow_nan=False,
                                       allow_infinity=False)),
    (pa.string(), _STRINGS), (pa.large_string(), _STRINGS), (pa.binary(), _BYTES), (pa.large_binary(), _BYTES),
    (pa.binary(3), st.binary(min_size=3, max_size=3)),
    (pa.date32(), st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31))),
    (pa.timestamp("us"), st.datetimes(datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31))),
    (pa.timestamp("ns"), st.datetimes(datetime.datetime(1678, 1, 1), datetime.datetime(2261, 12, 31))),
    (pa.struct([("x", pa.int32()), ("y", pa.string())]),
     st.fixed_dictionaries({"x": st.none() | _ints(32), "y": st.none() | _STRINGS})),
    (pa.list_(pa.int64()), st.lists(st.none() | _ints(64), max_size=5)),
    (pa.map_(pa.string(), pa.int32()), st.lists(st.tuples(_STRINGS, st.none() | _ints(32)), max_size=4)),
]


@st.composite
def _column(draw: st.DrawFn, rows: int) -> pa.Array | pa.ChunkedArray:
    """A column of ``rows`` values of a random kind, maybe sliced out of a longer array, chunked or dictionary
    encoded."""
    t, values = draw(st.sampled_from(_KINDS))
    before, after = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    items = draw(st.lists(st.none() | values, min_size=rows + before + after, max_size=rows + before + after))
    array = pa.array(items, t).slice(before, rows)
    if pa.types.is_string(t) and draw(st.booleans()):
        array = array.dictionary_encode()
    if rows > 1 and draw(st.booleans()):
        cut = draw(st.integers(1, rows - 1))
        return pa.chunked_array([array.slice(0, cut), array.slice(cut)], array.type)
    return array


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 12).flatmap(lambda rows: st.tuples(st.lists(_column(rows), min_size=1, max_size=4),
                                                          st.sampled_from([1, 3, 5, 65_536]))))
def test_digest_is_its_definition(case):
    columns, block = case
    plain = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    with mock.patch.object(digest, "BLOCK_ROWS", block):
        got = digest_columns(columns)
    assert (got.count, got.sum, got.xor) == ref.digest(plain)


def _unaligned(values: list[bytes | None], misalign: int, lead: int, garbage: int) -> pa.Array:
    """A binary array of ``values`` whose data buffer starts ``misalign`` bytes past an 8-byte boundary, holding
    ``lead`` bytes before the first value and ``garbage`` non-zero bytes after the last."""
    base = pa.array(values, pa.binary())
    data = bytes(range(1, 1 + lead)) + b"".join(v or b"" for v in values) + b"\xff" * garbage
    backing = pa.allocate_buffer(len(data) + 16)
    start = (8 - backing.address % 8) % 8 + misalign
    np.frombuffer(backing, dtype=np.uint8)[start:start + len(data)] = np.frombuffer(data, dtype=np.uint8)
    offsets = np.frombuffer(base.buffers()[1], dtype=np.int32) + lead
    return pa.Array.from_buffers(pa.binary(), len(values), [base.buffers()[0], pa.py_buffer(offsets.tobytes()),
                                                             backing.slice(start, len(data))])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.none() | st.binary(max_size=70), min_size=1, max_size=20), st.integers(0, 7), st.integers(0, 9),
       st.integers(0, 20))
def test_strings_at_any_alignment_and_near_the_buffer_end(values, misalign, lead, garbage):
    array = _unaligned(values, misalign, lead, garbage)
    assert array.to_pylist() == values
    assert list(value_hashes(array)) == ref.value_hashes(pa.array(values, pa.binary()))


@given(st.lists(st.binary(max_size=8), min_size=1, max_size=30), st.binary(min_size=9, max_size=300))
def test_one_long_value_among_short_ones(short, long):
    """However a batch's lengths are spread (word position by word position, or word by word), a value hashes
    the same."""
    values = short + [long]
    assert list(value_hashes(pa.array(values, pa.binary()))) == ref.value_hashes(pa.array(values, pa.binary()))
    assert list(value_hashes(pa.array(short, pa.binary()))) == list(value_hashes(pa.array(values)))[:-1]


def test_timestamps_in_the_wide_form_and_null_columns():
    stamps = pa.array([datetime.datetime(2020, 1, 1, 1, 2, 3, 456789), None, datetime.datetime(1, 1, 1)],
                      pa.timestamp("us"))
    wide = ts.convert(stamps, ts.WIDE_TIMESTAMP)
    columns = [wide, pa.nulls(3), pa.array([None, None, 1], pa.int8())]
    got = digest_columns(columns)
    assert (got.count, got.sum, got.xor) == ref.digest(columns)


def _fixed_columns() -> list[pa.Array]:
    rows = 70_000  # more than one block
    ids = np.arange(rows, dtype=np.int64)
    return [
        pa.array(ids * 7919 - 3),
        pa.array((ids % 5).astype(np.int32), mask=ids % 11 == 0),
        pa.array(ids / 7.0),
        pa.array([f"customer-{i % 977}" * (1 + i % 3) for i in range(rows)]),
        pa.array([None if i % 13 == 0 else {"x": i, "y": str(i)} for i in range(rows)],
                 pa.struct([("x", pa.int32()), ("y", pa.string())])),
        pa.array([[i, -i] if i % 4 else [] for i in range(rows)], pa.list_(pa.int64())),
        pa.array([decimal.Decimal(i).scaleb(-2) for i in range(rows)], pa.decimal128(20, 2)),
        pa.array(ids * 1_000_003, pa.timestamp("ns")),
    ]


def test_digest_of_fixed_columns_never_changes():
    """Digests are stored and compared across processes and releases: these values were computed by the first
    release that stored digests; a change here breaks comparing what one release read with what another wrote."""
    columns = _fixed_columns()
    assert digest_columns(columns).to_text() == PINNED_ALL
    assert digest_columns(columns[3:4]).to_text() == PINNED_STRINGS
    assert RowDigest.from_text(PINNED_ALL).count == 70_000


PINNED_ALL = "70000:a42f8234046213d57cd9f45ab8f9c33a:a5bde3519fd351551a2a8c53b2e33e98"
PINNED_STRINGS = "70000:dac3e4c78cc2fe4a7568e357fedb8098:68871e0a26341278996b6c218c67a830"
