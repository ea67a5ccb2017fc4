"""acid/hive_chars.py: Hive's char(n)/varchar(n) rules on Arrow strings, the ORC types files record for them
(pyorc type strings, pyarrow Types rewritten by orc_tail), and the reader applying the table's char/varchar to files
written as ``string`` (issue 29 item 5)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.orc as po
import pyorc
import pytest

from airflow_acid.acid.event_schema import insert_events, row_orc_type
from airflow_acid.acid.event_writer import EventFileWriter, FileKind, conform_events, write_event_file
from airflow_acid.acid.fast_event_writer import write_acid_orc
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.hive_chars import (
    CharType,
    annotated,
    char_type_of,
    conform,
    conform_table,
    enforce,
    parse_char_type,
    with_char_type,
)
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.orc_tail import column_char_types, finished_file, read_file_tail, read_tail
from airflow_acid.acid.writeids import ValidReaderWriteIdList

VARCHAR4, CHAR3 = CharType("varchar", 4), CharType("char", 3)
BUCKET0 = 536870912
"""Bucket property of bucket 0, statement 0 (BucketCodec V1)."""


def _field(name: str, char: CharType) -> pa.Field:
    return with_char_type(pa.field(name, pa.string()), char)


def test_parse_char_type():
    assert parse_char_type("varchar(10)") == CharType("varchar", 10)
    assert parse_char_type(b"CHAR( 5 )") == CharType("char", 5)
    assert str(CharType("char", 5)) == "char(5)"
    for other in ("string", "varchar", "char(x)", "decimal(10,2)", "array<char(3)>"):
        assert parse_char_type(other) is None


def test_varchar_cuts_by_code_point_and_keeps_null_and_empty():
    """Hive's HiveBaseChar.enforceMaxLength counts code points: an emoji (two UTF-16 units, four UTF-8 bytes) and an
    accented letter are one character each."""
    values = pa.array(["abcdef", "é😀xyz", "😀😀😀😀😀", "abcd", "", None, "ab"])
    assert enforce(values, VARCHAR4).to_pylist() == ["abcd", "é😀xy", "😀😀😀😀", "abcd", "", None, "ab"]


def test_char_cuts_and_pads_with_spaces():
    """HiveBaseChar.getPaddedValue: cut to n code points, then spaces up to n (an empty string is all spaces)."""
    values = pa.array(["abcdef", "😀", "", None, "ab ", "abc"])
    assert enforce(values, CHAR3).to_pylist() == ["abc", "😀  ", "   ", None, "ab ", "abc"]


def test_values_that_fit_are_returned_as_they_are():
    values = pa.array(["abc", None, "ab"])
    assert enforce(values, VARCHAR4) is values
    chunked = pa.chunked_array([["abc"], ["zzz"]])
    assert enforce(chunked, CHAR3) is chunked
    assert conform(chunked, _field("c", CHAR3)) is chunked
    nested = pa.array([{"w": "ab"}, None], pa.struct([_field("w", VARCHAR4)]))
    assert conform(nested, pa.field("s", nested.type)) is nested


def test_nested_char_types_are_enforced():
    struct = pa.struct([_field("w", VARCHAR4), pa.field("n", pa.int32())])
    lists = pa.list_(_field("item", CHAR3))
    maps = pa.map_(_field("key", VARCHAR4).with_nullable(False), _field("value", CHAR3))
    table = pa.table({
        "s": pa.array([{"w": "abcdef", "n": 1}, None, {"w": None, "n": 2}], struct),
        "l": pa.array([["abcd", "x"], None, []], lists),
        "m": pa.array([[("keyyyy", "v")], [], None], maps),
    })
    schema = pa.schema([("s", struct), ("l", lists), ("m", maps)])  # pa.array drops a map's field metadata
    out = conform_table(table, schema).to_pylist()
    assert out == [{"s": {"w": "abcd", "n": 1}, "l": ["abc", "x  "], "m": [("keyy", "v  ")]},
                   {"s": None, "l": None, "m": []},
                   {"s": {"w": None, "n": 2}, "l": [], "m": None}]


def test_sliced_list_is_enforced_from_its_own_offsets():
    lists = pa.array([["zzzzz"], ["abcdef"], ["a"]], pa.list_(_field("item", VARCHAR4))).slice(1)
    assert conform(lists, pa.field("l", lists.type)).to_pylist() == [["abcd"], ["a"]]


def test_annotated_marks_fields_by_orc_column_id():
    """Column ids are pre-order under the root struct (id 0): s=1, s.w=2, l=3, l.item=4, m=5, key=6, value=7."""
    schema = pa.schema([pa.field("s", pa.struct([pa.field("w", pa.string())])),
                        pa.field("l", pa.list_(pa.string())), pa.field("m", pa.map_(pa.string(), pa.string()))])
    typed = annotated(schema, {2: VARCHAR4, 4: CHAR3, 7: CharType("varchar", 9)})
    assert row_orc_type(typed) == "struct<s:struct<w:varchar(4)>,l:array<char(3)>,m:map<string,varchar(9)>>"
    assert char_type_of(typed.field("s").type.field(0)) == VARCHAR4


ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["abcdef", None, ""], "c": ["x", "😀😀😀😀", ""]},
                schema=pa.schema([pa.field("id", pa.int32()), _field("v", VARCHAR4), _field("c", CHAR3)]))
STORED = [{"id": 1, "v": "abcd", "c": "x  "}, {"id": 2, "v": None, "c": "😀😀😀"}, {"id": 3, "v": "", "c": "   "}]


def _pyorc_schema(data: bytes) -> str:
    return str(pyorc.Reader(io.BytesIO(data)).schema)


@pytest.mark.parametrize("writer", ["pyorc", "pyarrow"])
def test_acid_writers_record_hive_types_and_store_enforced_values(tmp_path, writer):
    """Both event writers store varchar(4)/char(3) (ORC C++ reads the types back) and cut/pad values handed to them
    directly, so a file never holds a value longer than its declared type."""
    events = insert_events(ROWS, 1, BUCKET0)
    directory = tmp_path / "delta_0000001_0000001_0000"
    if writer == "pyorc":
        write_event_file(str(directory), 0, events, row_schema=ROWS.schema)
    else:
        write_acid_orc(storage_for(str(directory)), "bucket_00000", conform_events(events, ROWS.schema, "x"),
                       kind=FileKind.DELTA, orc=OrcSettings())
    data = (directory / "bucket_00000").read_bytes()
    assert "row:struct<id:int,v:varchar(4),c:char(3)>" in _pyorc_schema(data)
    assert set(column_char_types(read_tail(data).footer).values()) == {VARCHAR4, CHAR3}
    assert po.ORCFile(pa.BufferReader(data)).read().column("row").to_pylist() == STORED


def test_tail_rewrite_turns_the_pyarrow_attribute_into_the_orc_type():
    sink = pa.BufferOutputStream()
    po.write_table(ROWS, sink, compression="zlib")
    raw = sink.getvalue().to_pybytes()
    assert _pyorc_schema(raw) == "struct<id:int,v:string,c:string>"  # pyarrow alone cannot write char/varchar
    done = finished_file(raw)
    assert _pyorc_schema(done) == "struct<id:int,v:varchar(4),c:char(3)>"
    assert b"hive.type" not in read_tail(done).footer  # the attribute is not left in the file
    assert column_char_types(read_file_tail(pa.BufferReader(done)).footer) == {2: VARCHAR4, 3: CHAR3}
    assert po.read_table(pa.BufferReader(done)).to_pylist() == ROWS.to_pylist()


def test_reader_applies_the_table_types_to_files_written_as_string(tmp_path):
    """Files from before char/varchar were kept (ORC ``string``, longer values): read with the table's varchar(4) /
    char(3) they come back cut and padded, as Hive's schema evolution string -> varchar(n) reads them."""
    plain = pa.schema([("id", pa.int32()), ("v", pa.string()), ("c", pa.string())])
    write_event_file(str(tmp_path / "t" / "delta_0000001_0000001_0000"), 0,
                     insert_events(ROWS.cast(plain), 1, BUCKET0), row_schema=plain)
    data = (tmp_path / "t" / "delta_0000001_0000001_0000" / "bucket_00000").read_bytes()
    assert "v:string,c:string" in _pyorc_schema(data)
    snapshot = ValidReaderWriteIdList(table="db.t", high_watermark=1)
    assert read_acid_table(str(tmp_path / "t"), snapshot, schema=plain).to_pylist() == [
        {"id": 1, "v": "abcdef", "c": "x"}, {"id": 2, "v": None, "c": "😀😀😀😀"}, {"id": 3, "v": "", "c": ""}]
    assert read_acid_table(str(tmp_path / "t"), snapshot, schema=ROWS.schema).to_pylist() == STORED


def test_streaming_row_writer_records_hive_types(tmp_path):
    with EventFileWriter(str(tmp_path), 0, ROWS.schema, streaming=True) as writer:
        writer.write(insert_events(ROWS, 1, BUCKET0))
        writer.flush()
    data = (tmp_path / "bucket_00000").read_bytes()
    assert "v:varchar(4),c:char(3)" in _pyorc_schema(data)
    assert po.ORCFile(pa.BufferReader(data)).read().column("row").to_pylist() == STORED
