"""Streaming bucket files for tests: one written with several stripes per flush, and the check that a file's
``hive.acid.*`` metadata describes its stripes."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pyorc
import pytest

from airflow_acid.acid import bucket_codec, event_writer
from airflow_acid.acid.event_schema import KEY_FIELDS, AcidKey, insert_events
from airflow_acid.acid.event_writer import ACID_VERSION_KEY, KEY_INDEX_KEY, STATS_KEY, parse_key_index
from airflow_acid.acid.streaming_event_writer import StreamingEventFileWriter

B0 = bucket_codec.encode(0)
SCHEMA = pa.schema([("a", pa.int64()), ("s", pa.string())])


def events(values: list[int], write_id: int, first_row_id: int = 0) -> pa.Table:
    """Insert events of rows ``(v, "v<v>")`` by ``write_id`` in bucket 0."""
    return insert_events(pa.table({"a": values, "s": [f"v{v}" for v in values]}, schema=SCHEMA), write_id, B0,
                         first_row_id)


def acid_footer_of(data: bytes) -> tuple[list[AcidKey], dict[str, bytes]]:
    """The last key of every stripe of the ORC file ``data`` (read by pyarrow) and its user metadata, after checking
    that pyorc and pyarrow see the same metadata and that it describes those stripes."""
    orc = po.ORCFile(io.BytesIO(data))
    last_keys, counts = [], [0, 0, 0]
    for i in range(orc.nstripes):
        stripe = orc.read_stripe(i)
        last_keys.append(AcidKey(*(stripe.column(k)[-1].as_py() for k in KEY_FIELDS)))
        for op in stripe.column("operation").to_pylist():
            counts[op] += 1
    meta = pyorc.Reader(io.BytesIO(data)).user_metadata
    assert {k.decode(): v for k, v in dict(orc.metadata).items()} == meta
    assert parse_key_index(meta[KEY_INDEX_KEY].decode()) == last_keys
    assert meta[STATS_KEY] == ",".join(map(str, counts)).encode()
    assert meta[ACID_VERSION_KEY] == b"2"
    return last_keys, meta


def write_flushed_stream(delta: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, list[int]]:
    """A streaming file with small stripes (several per flush), an aborted transaction and an empty flush: the closed
    file's bytes and its flush lengths."""
    monkeypatch.setattr(event_writer, "DEFAULT_STRIPE_SIZE", 8 * 100)  # pyorc rows: 2-3 events per stripe
    w = StreamingEventFileWriter(str(delta), 0, SCHEMA)
    w._stripe_bytes = events([1, 2], 1).nbytes  # a write() of 2+ events is appended at once (pyarrow: a stripe)
    lengths = []
    w.write(events([1, 2, 3], 1))
    w.write(events([4, 5], 1, first_row_id=3))
    lengths.append(w.flush())
    w.write(events([6], 2))  # held, then dropped
    w.discard()
    w.write(events([7, 8, 9, 10], 3))
    lengths.append(w.flush())
    lengths.append(w.flush())  # a commit that wrote nothing
    w.write(events([11], 4))
    lengths.append(w.flush())
    w.close()
    return (delta / "bucket_00000").read_bytes(), lengths
