"""Event files this project writes: readable by pyorc and pyarrow, Hive metadata, stripes, errors."""

from __future__ import annotations

import datetime
import decimal
import io
import struct

import pyarrow as pa
import pyarrow.orc as po
import pyorc
import pytest

from airflow_acid.acid import bucket_codec, event_reader
from airflow_acid.acid.errors import AcidFileError, AcidSchemaError
from airflow_acid.acid.event_reader import open_orc_file, parse_flush_length, read_event_file
from airflow_acid.acid.event_schema import (
    AcidKey,
    delete_events,
    event_orc_type,
    insert_events,
    is_acid_schema,
    orc_type,
)
from airflow_acid.acid.event_writer import (
    DEFAULT_BUFFER_SIZE,
    DEFAULT_STRIPE_SIZE,
    EventFileWriter,
    FileKind,
    OrcWriteOptions,
    format_key_index,
    parse_key_index,
    write_event_file,
)
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.writeids import ValidReaderWriteIdList

B0 = bucket_codec.encode(0)
B3 = bucket_codec.encode(3)

ALL_TYPES = pa.schema([
    ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("bin", pa.binary()), ("b", pa.bool_()),
    ("d", pa.date32()), ("ts", pa.timestamp("ns")), ("dec", pa.decimal128(12, 3)),
    ("lst", pa.list_(pa.int32())), ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ("m", pa.map_(pa.string(), pa.int64())),
])


def all_types_rows(n: int) -> pa.Table:
    return pa.table({
        "i8": pa.array([i % 100 - 50 for i in range(n)], pa.int8()),
        "i16": pa.array([i * 3 for i in range(n)], pa.int16()),
        "i32": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int32()),
        "i64": pa.array([i * 10**12 for i in range(n)], pa.int64()),
        "f32": pa.array([i / 4 for i in range(n)], pa.float32()),
        "f64": pa.array([i / 3 for i in range(n)], pa.float64()),
        "s": pa.array([f"row {i} ü" for i in range(n)]),
        "bin": pa.array([bytes([i % 256]) * 3 for i in range(n)]),
        "b": pa.array([i % 2 == 0 for i in range(n)]),
        "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i) for i in range(n)]),
        "ts": pa.array([1_600_000_000_123_456_789 + i * 1_000_000_001 for i in range(n)], pa.timestamp("ns")),
        "dec": pa.array([decimal.Decimal(i) / 1000 - 3 for i in range(n)], pa.decimal128(12, 3)),
        "lst": pa.array([[i, i + 1] if i % 5 else [] for i in range(n)], pa.list_(pa.int32())),
        "st": pa.array([{"x": i, "y": str(i)} for i in range(n)], ALL_TYPES.field("st").type),
        "m": pa.array([[("k", i)] for i in range(n)], ALL_TYPES.field("m").type),
    }, schema=ALL_TYPES)


def test_orc_type_mapping():
    assert event_orc_type(pa.schema([("a", pa.int32()), ("b b", pa.string())])) == (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
        "row:struct<a:int,`b b`:string>>")
    assert orc_type(pa.decimal128(10, 2)) == "decimal(10,2)"
    assert orc_type(ALL_TYPES.field("m").type) == "map<string,bigint>"
    with pytest.raises(AcidSchemaError, match="'u'.*uint32"):
        orc_type(pa.uint32(), "u")
    with pytest.raises(AcidSchemaError, match="timezone-aware"):
        orc_type(pa.timestamp("us", tz="UTC"), "t")


def test_round_trip_through_pyarrow_and_pyorc(tmp_path):
    rows = all_types_rows(300)
    events = insert_events(rows, 7, B0)
    info = write_event_file(str(tmp_path / "delta_0000007_0000007_0000"), 0, events)
    path = tmp_path / "delta_0000007_0000007_0000" / "bucket_00000"
    assert info.rows == 300 and info.path == str(path)

    by_arrow = po.ORCFile(str(path)).read()
    assert is_acid_schema(by_arrow.schema)
    assert by_arrow.cast(events.schema).equals(events)
    assert read_event_file(str(path)).cast(events.schema).equals(events)

    with open(path, "rb") as fh:
        reader = pyorc.Reader(fh, struct_repr=pyorc.StructRepr.DICT)
        first, second = next(reader), next(reader)
    assert first["operation"] == 0 and first["originalTransaction"] == 7 and first["bucket"] == B0
    assert first["rowId"] == 0 and second["rowId"] == 1 and first["currentTransaction"] == 7
    r = second["row"]
    assert r["s"] == "row 1 ü" and r["i64"] == 10**12 and r["dec"] == decimal.Decimal("-2.999")
    assert r["d"] == datetime.date(2020, 1, 2) and r["st"] == {"x": 1, "y": "1"} and r["m"] == {"k": 1}
    assert r["ts"] == datetime.datetime(2020, 9, 13, 12, 26, 41, 123456, tzinfo=datetime.UTC)


def test_metadata_keys_stats_and_version_file(tmp_path):
    schema = pa.schema([("a", pa.int64())])
    inserts = insert_events(pa.table({"a": [1, 2, 3]}), 5, B0)
    info = write_event_file(str(tmp_path / "delta_0000005_0000005_0000"), 0, inserts)
    f = open_orc_file(str(tmp_path / "delta_0000005_0000005_0000" / "bucket_00000"))
    assert set(f.user_metadata) == {"hive.acid.key.index", "hive.acid.stats", "hive.acid.version"}
    assert f.user_metadata["hive.acid.version"] == "2"
    assert f.user_metadata["hive.acid.stats"] == "3,0,0"
    assert f.user_metadata["hive.acid.key.index"] == "5,536870912,2;"
    assert info.stats.inserts == 3
    assert (tmp_path / "delta_0000005_0000005_0000" / "_orc_acid_version").read_bytes() == b"2"

    deletes = delete_events([AcidKey(1, B0, 0), AcidKey(5, B0, 2)], 9, schema)
    write_event_file(str(tmp_path / "delete_delta_0000009_0000009_0000"), 0, deletes)
    d = open_orc_file(str(tmp_path / "delete_delta_0000009_0000009_0000" / "bucket_00000"))
    assert d.user_metadata["hive.acid.stats"] == "0,0,2"
    assert d.key_index == [AcidKey(5, B0, 2)]
    assert d.read()["row"].null_count == 2


@pytest.mark.parametrize("n, batch_size", [(20_000, 1024), (7_777, 100)])
def test_key_index_has_one_entry_per_stripe(tmp_path, n, batch_size):
    rows = pa.table({"a": pa.array(range(n), pa.int64()), "s": [f"value-{i:08d}" for i in range(n)]})
    events = insert_events(rows, 3, B3)
    options = OrcWriteOptions.delta(stripe_size=64 * 1024, batch_size=batch_size)
    info = write_event_file(str(tmp_path / "delta_0000003_0000003_0000"), 3, events, options=options)
    path = tmp_path / "delta_0000003_0000003_0000" / "bucket_00003"
    with open(path, "rb") as fh:
        reader = pyorc.Reader(fh)
        stripe_rows = [len(s) for s in reader.iter_stripes()]
    assert len(stripe_rows) > 3
    keys = parse_key_index(open_orc_file(str(path)).user_metadata["hive.acid.key.index"])
    assert len(keys) == len(stripe_rows) == info.stripes == po.ORCFile(str(path)).nstripes
    last_row_ids = [sum(stripe_rows[:i + 1]) - 1 for i in range(len(stripe_rows))]
    assert keys == [AcidKey(3, B3, r) for r in last_row_ids]
    # and the keys really are the last keys of the stripes as pyarrow reads them
    orc = po.ORCFile(str(path))
    for i, key in enumerate(keys):
        stripe = orc.read_stripe(i)
        assert AcidKey(*(stripe.column(c)[-1].as_py() for c in ("originalTransaction", "bucket", "rowId"))) == key


def test_delta_and_base_writer_settings():
    delta, base = OrcWriteOptions.for_kind(FileKind.DELTA), OrcWriteOptions.for_kind(FileKind.BASE)
    assert (base.stripe_size, base.buffer_size) == (DEFAULT_STRIPE_SIZE, DEFAULT_BUFFER_SIZE) == (64 << 20, 256 << 10)
    assert (delta.stripe_size, delta.buffer_size) == (8 << 20, 32 << 10)
    assert delta.compression == base.compression == "ZLIB"


def test_written_compression_block_size(tmp_path):
    events = insert_events(pa.table({"a": [1]}), 1, B0)
    write_event_file(str(tmp_path / "d"), 0, events, kind=FileKind.DELTA)
    write_event_file(str(tmp_path / "b"), 0, events, kind=FileKind.BASE)
    assert po.ORCFile(str(tmp_path / "d" / "bucket_00000")).compression_size == 32 * 1024
    assert po.ORCFile(str(tmp_path / "b" / "bucket_00000")).compression_size == 256 * 1024
    assert po.ORCFile(str(tmp_path / "b" / "bucket_00000")).compression == "ZLIB"


def test_key_index_format_round_trip():
    keys = [AcidKey(5, B0, 999), AcidKey(7, B0, 42)]
    assert format_key_index(keys) == "5,536870912,999;7,536870912,42;"
    assert parse_key_index(format_key_index(keys)) == keys


def test_writer_sorts_or_refuses_unsorted_events(tmp_path):
    events = insert_events(pa.table({"a": [1, 2, 3]}), 1, B0).take([2, 0, 1])
    write_event_file(str(tmp_path / "d"), 0, events)       # the convenience function sorts
    assert read_event_file(str(tmp_path / "d" / "bucket_00000"))["rowId"].to_pylist() == [0, 1, 2]
    with pytest.raises(AcidFileError, match="not sorted"):
        with EventFileWriter(str(tmp_path / "e"), 0, pa.schema([("a", pa.int64())])) as w:
            w.write(events)
    assert not (tmp_path / "e" / "bucket_00000").exists()   # no partial file left behind


def test_writer_refuses_events_of_another_bucket(tmp_path):
    events = insert_events(pa.table({"a": [1]}), 1, B3)
    with pytest.raises(AcidFileError, match="bucket 3.*bucket_00000"):
        write_event_file(str(tmp_path / "d"), 0, events)
    assert not (tmp_path / "d" / "bucket_00000").exists()


def test_streaming_flush_and_side_file(tmp_path):
    schema = pa.schema([("a", pa.int64())])
    table = tmp_path / "t"
    with EventFileWriter(str(table / "delta_0000001_0000002"), 0, schema, streaming=True) as w:
        w.write(insert_events(pa.table({"a": [1, 2]}), 1, B0))
        first = w.flush()
        w.write(insert_events(pa.table({"a": [3]}), 2, B0))
        w.flush()
        w.write(insert_events(pa.table({"a": [4]}), 2, B0, first_row_id=1))
        side = table / "delta_0000001_0000002" / "bucket_00000_flush_length"
        lengths = side.read_bytes()
        assert len(lengths) == 16 and struct.unpack(">q", lengths[:8])[0] == first
        # while open: a reader sees what was flushed, bounded by the side file
        snapshot = ValidReaderWriteIdList(high_watermark=2)
        assert read_acid_table(str(table), snapshot)["a"].to_pylist() == [1, 2, 3]
        side.write_bytes(lengths[:8])
        assert read_acid_table(str(table), snapshot)["a"].to_pylist() == [1, 2]
    assert not side.exists()        # a clean close removes the side file
    assert read_acid_table(str(table), snapshot)["a"].to_pylist() == [1, 2, 3, 4]


def test_flush_length_parsing():
    assert parse_flush_length(struct.pack(">qq", 10, 99), "x") == 99
    with pytest.raises(AcidFileError, match="x: side file holds 3 bytes"):
        parse_flush_length(b"abc", "x")


def test_empty_side_file_is_an_error(tmp_path):
    d = tmp_path / "t" / "delta_0000001_0000002"
    write_event_file(str(d), 0, insert_events(pa.table({"a": [1]}), 1, B0))
    (d / "bucket_00000_flush_length").write_bytes(b"")
    with pytest.raises(AcidFileError, match="bucket_00000_flush_length: side file holds 0 bytes"):
        read_acid_table(str(tmp_path / "t"), ValidReaderWriteIdList(high_watermark=2))


# -- bad input ---------------------------------------------------------------------------------------

@pytest.fixture
def good_file(tmp_path):
    d = tmp_path / "t" / "delta_0000001_0000001_0000"
    write_event_file(str(d), 0, insert_events(pa.table({"a": list(range(100))}), 1, B0))
    return d / "bucket_00000"


def test_truncated_file(good_file):
    data = good_file.read_bytes()
    good_file.write_bytes(data[: len(data) // 2])
    with pytest.raises(AcidFileError, match=f"{good_file}: not a readable ORC file"):
        read_acid_table(str(good_file.parent.parent), ValidReaderWriteIdList(high_watermark=1))


def test_wrong_magic(good_file):
    data = good_file.read_bytes()
    good_file.write_bytes(b"XYZ" + data[3:])
    with pytest.raises(AcidFileError, match=f"{good_file}: not an ORC file: starts with b'XYZ'"):
        open_orc_file(str(good_file))


def test_garbage_and_empty_bytes(tmp_path):
    (tmp_path / "g").write_bytes(b"ORC but not really an orc file at all")
    with pytest.raises(AcidFileError, match="g: not a readable ORC file"):
        open_orc_file(str(tmp_path / "g"))


def test_non_acid_file_in_delta(tmp_path):
    d = tmp_path / "t" / "delete_delta_0000002_0000002_0000"
    d.mkdir(parents=True)
    po.write_table(pa.table({"a": [1]}), str(d / "bucket_00000"))
    write_event_file(str(tmp_path / "t" / "delta_0000001_0000001_0000"), 0, insert_events(pa.table({"a": [1]}), 1, B0))
    with pytest.raises(AcidFileError, match="delete_delta_0000002_0000002_0000/bucket_00000: expected a Hive ACID"):
        read_acid_table(str(tmp_path / "t"), ValidReaderWriteIdList(high_watermark=2),
                        schema=pa.schema([("a", pa.int64())]))


def test_raw_file_in_a_delete_delta_is_refused(tmp_path):
    d = tmp_path / "t" / "delete_delta_0000002_0000002_0000"
    d.mkdir(parents=True)
    po.write_table(pa.table({"a": [1]}), str(d / "000000_0"))
    with pytest.raises(AcidFileError, match="000000_0: an original-format"):
        read_acid_table(str(tmp_path / "t"), ValidReaderWriteIdList(high_watermark=2))


def test_schema_mismatch(good_file):
    table = str(good_file.parent.parent)
    with pytest.raises(AcidFileError, match=f"{good_file}: column 0 \\(a: int64\\) does not match .* s: string"):
        read_acid_table(table, ValidReaderWriteIdList(high_watermark=1), schema=pa.schema([("s", pa.string())]))
    with pytest.raises(AcidFileError, match="row struct has 1 columns"):
        read_acid_table(table, ValidReaderWriteIdList(high_watermark=1), schema=pa.schema([]))
    # added columns (schema evolution) read as nulls; widening is allowed
    t = read_acid_table(table, ValidReaderWriteIdList(high_watermark=1),
                        schema=pa.schema([("a", pa.int64()), ("extra", pa.string())]))
    assert t["extra"].null_count == 100


def test_corrupt_stripe(good_file):
    data = bytearray(good_file.read_bytes())
    data[3:len(data) // 2] = b"\xff" * (len(data) // 2 - 3)
    good_file.write_bytes(bytes(data))
    with pytest.raises(AcidFileError, match=f"{good_file}: stripe 0 cannot be decoded .corrupt or truncated"):
        read_acid_table(str(good_file.parent.parent), ValidReaderWriteIdList(high_watermark=1))


def test_corrupt_file_read_through_the_row_reader_names_the_row(good_file, monkeypatch):
    """A file of large stripes streams through ORC's row reader; the message names the first row not given."""
    monkeypatch.setattr(event_reader, "SCAN_MIN_STRIPE_BYTES", 0)
    data = bytearray(good_file.read_bytes())
    data[3:len(data) // 2] = b"\xff" * (len(data) // 2 - 3)
    good_file.write_bytes(bytes(data))
    with pytest.raises(AcidFileError, match=f"{good_file}: cannot be decoded from row 0 on .corrupt or truncated"):
        read_acid_table(str(good_file.parent.parent), ValidReaderWriteIdList(high_watermark=1))


def test_corrupt_stripe_of_a_column_subset_names_the_stripe(tmp_path):
    """A read of some of the row's columns goes stripe by stripe (pyarrow), and the message names the stripe."""
    d = tmp_path / "t" / "delta_0000001_0000001_0000"
    write_event_file(str(d), 0, insert_events(pa.table({"a": list(range(100)), "b": ["x"] * 100}), 1, B0))
    data = bytearray((d / "bucket_00000").read_bytes())
    data[3:len(data) // 2] = b"\xff" * (len(data) // 2 - 3)
    (d / "bucket_00000").write_bytes(bytes(data))
    with pytest.raises(AcidFileError, match="bucket_00000: stripe 0 cannot be decoded"):
        read_acid_table(str(tmp_path / "t"), ValidReaderWriteIdList(high_watermark=1), columns=["a"])


def test_memory_filesystem_write_and_read():
    import fsspec
    fs = fsspec.filesystem("memory")
    events = insert_events(pa.table({"a": [1, 2]}), 1, B0)
    write_event_file("/mem-t/delta_0000001_0000001_0000", 0, events, filesystem=fs)
    assert fs.cat_file("/mem-t/delta_0000001_0000001_0000/_orc_acid_version") == b"2"
    raw = fs.cat_file("/mem-t/delta_0000001_0000001_0000/bucket_00000")
    assert po.ORCFile(io.BytesIO(raw)).read().cast(events.schema).equals(events)
    assert read_acid_table("memory://mem-t", ValidReaderWriteIdList(high_watermark=1))["a"].to_pylist() == [1, 2]
    assert storage_for("memory://mem-t").list_files()[0].path == "delta_0000001_0000001_0000/_orc_acid_version"


def test_a_full_disk_names_the_file_and_leaves_no_partial_file(tmp_path):
    """ENOSPC while writing (found by the reliability suite on a full tmpfs) is an AcidFileError naming the file,
    with the OSError as its cause; the partial file is removed."""
    import errno

    from fsspec.implementations.local import LocalFileOpener, LocalFileSystem

    class FullFile(LocalFileOpener):
        room = [64]  # the ORC header fits, the stripes do not

        def write(self, data, *args, **kwargs):
            if len(data) > self.room[0]:
                raise OSError(errno.ENOSPC, "No space left on device", self.path)
            self.room[0] -= len(data)
            return self.f.write(data, *args, **kwargs)

    class FullDisk(LocalFileSystem):
        def _open(self, path, mode="rb", block_size=None, **kwargs):
            if "w" in mode:
                return FullFile(self._strip_protocol(path), mode, fs=self, **kwargs)
            return super()._open(path, mode, block_size=block_size, **kwargs)

    events = insert_events(pa.table({"a": list(range(5000))}), 1, B0)
    with pytest.raises(AcidFileError, match=r"delta_1_1/bucket_00000: cannot be written: No space left") as info:
        write_event_file(str(tmp_path / "delta_1_1"), 0, events, filesystem=FullDisk())
    assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == errno.ENOSPC
    assert not (tmp_path / "delta_1_1" / "bucket_00000").exists()
