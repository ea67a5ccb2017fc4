"""The content digest of rows (acid/digest.py): independent of row order, batching, slicing and the Arrow form a
value comes in; sensitive to every value, NULL versus empty, float bits and column order."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest

from airflow_acid.acid import timestamps as ts
from airflow_acid.acid.digest import DigestBuilder, RowDigest, digest_columns, value_hashes


def _columns() -> list[pa.Array]:
    return [
        pa.array([1, 2, 3, None], pa.int32()),
        pa.array(["a", "", None, "héllo" * 50]),
        pa.array([datetime.datetime(2020, 1, 1, 1, 2, 3, 456789), None, datetime.datetime(1900, 5, 6),
                  datetime.datetime(1970, 1, 1)], pa.timestamp("ns")),
        pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-1.25"), decimal.Decimal("0")], pa.decimal128(12, 2)),
        pa.array([[1, 2], [], None, [2, 1]], pa.list_(pa.int64())),
        pa.array([[("k", 1)], [], None, [("a", 2), ("k", 1)]], pa.map_(pa.string(), pa.int32())),
        pa.array([{"x": 1, "y": "a"}, None, {"x": None, "y": None}, {"x": 2, "y": ""}],
                 pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ]


def test_order_batches_and_slices_do_not_matter():
    cols = _columns()
    whole = digest_columns(cols)
    reordered = digest_columns([c.take(pa.array([3, 1, 0, 2])) for c in cols])
    builder = DigestBuilder()
    builder.add([c.slice(0, 1) for c in cols])
    builder.add([c.slice(1) for c in cols])
    assert whole == reordered == builder.digest and whole.count == 4
    assert RowDigest.from_text(whole.to_text()) == whole


def test_timestamp_forms_digest_alike():
    stamps = pa.array([datetime.datetime(2020, 1, 1, 1, 2, 3, 456789), None, datetime.datetime(1900, 5, 6, 0, 0, 0, 1)],
                      pa.timestamp("ns"))
    forms = [stamps, ts.convert(stamps, pa.timestamp("us")), ts.convert(stamps, ts.WIDE_TIMESTAMP)]
    assert len({tuple(value_hashes(f)) for f in forms}) == 1
    nested = pa.StructArray.from_arrays([stamps], names=["t"])
    wide = ts.convert(nested, ts.in_form(nested.type, ts.TimestampForm.WIDE))
    assert list(value_hashes(nested)) == list(value_hashes(wide))


def test_string_types_and_integer_widths_are_canonical():
    s = pa.array(["x", None, ""])
    assert list(value_hashes(s)) == list(value_hashes(s.cast(pa.large_string()))) \
        == list(value_hashes(s.dictionary_encode()))
    i = pa.array([1, None, -7], pa.int16())
    assert list(value_hashes(i)) == list(value_hashes(i.cast(pa.int64())))


@pytest.mark.parametrize("column, index, value", [
    (0, 0, 4), (1, 1, "b"), (1, 3, "h\u00e9llo" * 49 + "hellx"), (3, 0, decimal.Decimal("1.26")),
    (0, 3, 0), (1, 2, ""),  # NULL becomes a value
])
def test_one_changed_value_changes_the_digest(column, index, value):
    cols = _columns()
    values = cols[column].to_pylist()
    values[index] = value
    changed = list(cols)
    changed[column] = pa.array(values, cols[column].type)
    assert digest_columns(changed) != digest_columns(cols)


def test_null_empty_zero_and_float_bits_differ():
    assert len(set(value_hashes(pa.array(["", None])))) == 2
    assert len(set(value_hashes(pa.array([[], None], pa.list_(pa.int8()))))) == 2
    assert len(set(value_hashes(pa.array([0.0, -0.0, None])))) == 3
    nan = value_hashes(pa.array([float("nan")], pa.float32()))
    assert list(nan) == list(value_hashes(pa.array([float("nan")], pa.float64())))


def test_dropped_row_with_another_duplicated_is_seen_and_columns_are_positional():
    cols = _columns()
    tampered = [c.take(pa.array([0, 0, 2, 3])) for c in cols]
    a, b = digest_columns(cols), digest_columns(tampered)
    assert a.count == b.count and (a.sum, a.xor) != (b.sum, b.xor)
    x, y = pa.array([1, 2]), pa.array([3, 4])
    assert digest_columns([x, y]) != digest_columns([y, x])


def test_short_and_long_string_paths_agree_and_every_byte_counts():
    """Short values are hashed word position by word position, batches holding a long value word by word: the same
    value hashes alike either way, and changing any one byte of a value changes its hash."""
    rng = np.random.default_rng(3)
    values = [bytes(rng.integers(0, 256, rng.integers(0, 40), dtype=np.uint8)) for _ in range(400)]
    short = [v for v in values if len(v) <= 32]
    alone = value_hashes(pa.array(short, pa.binary()))
    with_long = value_hashes(pa.array(short + [b"z" * 300], pa.binary()))[:-1]
    assert list(alone) == list(with_long)
    for value in (b"abcdefghij", b"x" * 70):
        base = value_hashes(pa.array([value]))[0]
        for i in range(len(value)):
            changed = value[:i] + bytes([value[i] ^ 0x5A]) + value[i + 1:]
            assert value_hashes(pa.array([changed]))[0] != base, i
