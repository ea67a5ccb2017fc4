"""The ACID event schema (docs/hive-acid.md#event-schema) in Arrow and ORC form, and builders for event tables.

Every full-ACID ORC file holds ``struct<operation:int, originalTransaction:bigint, bucket:int, rowId:bigint,
currentTransaction:bigint, row:struct<user columns>>``. Readers must also accept the lower-case spelling Hive 3
query-based compaction produced (interop set 7), so schema recognition is case-insensitive and positional.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from airflow_acid.acid.errors import AcidSchemaError
from airflow_acid.acid.hive_chars import char_type_of
from airflow_acid.acid.timestamps import WIDE_TIMESTAMP

OPERATION = "operation"
ORIGINAL_TRANSACTION = "originalTransaction"
BUCKET = "bucket"
ROW_ID = "rowId"
CURRENT_TRANSACTION = "currentTransaction"
ROW = "row"
ACID_FIELDS: tuple[str, ...] = (OPERATION, ORIGINAL_TRANSACTION, BUCKET, ROW_ID, CURRENT_TRANSACTION, ROW)
KEY_FIELDS: tuple[str, ...] = (ORIGINAL_TRANSACTION, BUCKET, ROW_ID)
"""The ROW__ID triple, in the order files are sorted by."""

_KEY_ARROW_TYPES = (pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64())


class Operation(enum.IntEnum):
    """Event kinds stored in ``operation``."""

    INSERT = 0
    UPDATE = 1
    DELETE = 2


class AcidKey(NamedTuple):
    """One ROW__ID: (originalTransaction, bucket property, rowId); tuples compare in file sort order."""

    original_transaction: int
    bucket: int
    row_id: int


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def _orc_name(name: str) -> str:
    if _PLAIN_NAME.match(name):
        return name
    if "`" in name:
        raise AcidSchemaError(f"column name {name!r} contains a backquote, which ORC type strings cannot express")
    return f"`{name}`"


def orc_type(arrow_type: pa.DataType, column: str = "?") -> str:
    """ORC type string for an Arrow type; clear error for types Hive/ORC cannot hold."""
    t = arrow_type
    simple = {
        pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
        pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.date32(): "date",
        pa.string(): "string", pa.large_string(): "string", pa.binary(): "binary", pa.large_binary(): "binary",
    }
    if t in simple:
        return simple[t]
    if t == WIDE_TIMESTAMP:
        return "timestamp"
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            raise AcidSchemaError(
                f"column {column!r}: timezone-aware {t} is not supported; store naive (wall-clock) timestamps")
        return "timestamp"
    if pa.types.is_decimal128(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{field_orc_type(t.value_field, column)}>"
    if pa.types.is_map(t):
        return f"map<{field_orc_type(t.key_field, column)},{field_orc_type(t.item_field, column)}>"
    if pa.types.is_struct(t):
        inner = ",".join(f"{_orc_name(f.name)}:{field_orc_type(f, f'{column}.{f.name}')}" for f in t)
        return f"struct<{inner}>"
    raise AcidSchemaError(f"column {column!r}: Arrow type {t} has no ORC equivalent usable in an ACID table")


def field_orc_type(field: pa.Field, column: str = "?") -> str:
    """ORC type string of a field: its Hive ``char(n)``/``varchar(n)`` when it carries one
    (:mod:`airflow_acid.acid.hive_chars`), else that of its Arrow type."""
    char = char_type_of(field)
    return str(char) if char is not None else orc_type(field.type, column)


def row_orc_type(row_schema: pa.Schema) -> str:
    """ORC ``struct<...>`` of the user columns."""
    if len(row_schema) == 0:
        raise AcidSchemaError("an ACID table needs at least one column")
    return "struct<" + ",".join(f"{_orc_name(f.name)}:{field_orc_type(f, f.name)}" for f in row_schema) + ">"


def orc_type_of_schema(schema: pa.Schema) -> str:
    """ORC ``struct<...>`` of a file whose top-level columns are ``schema``'s (event or plain files alike)."""
    return "struct<" + ",".join(f"{_orc_name(f.name)}:{field_orc_type(f, f.name)}" for f in schema) + ">"


def event_orc_type(row_schema: pa.Schema) -> str:
    """ORC type string of an ACID event file for these user columns."""
    return ("struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
            f"row:{row_orc_type(row_schema)}>")


def event_arrow_schema(row_schema: pa.Schema) -> pa.Schema:
    """Arrow schema of event tables (what readers return and writers accept)."""
    fields = [pa.field(name, typ, nullable=False) for name, typ in zip(ACID_FIELDS[:5], _KEY_ARROW_TYPES)]
    fields.append(pa.field(ROW, pa.struct(list(row_schema)), nullable=True))
    return pa.schema(fields)


def is_acid_schema(schema: pa.Schema) -> bool:
    """True when a file schema has the six ACID fields in order (names compared case-insensitively)."""
    if len(schema) != len(ACID_FIELDS):
        return False
    names_match = all(f.name.lower() == n.lower() for f, n in zip(schema, ACID_FIELDS))
    return names_match and pa.types.is_struct(schema.field(5).type)


def canonical_event_names(schema: pa.Schema) -> list[str]:
    """Rename map (by position) from a file's ACID spelling to the canonical names."""
    return list(ACID_FIELDS) if is_acid_schema(schema) else [f.name for f in schema]


def row_schema_of(event_schema: pa.Schema) -> pa.Schema:
    """User columns held in the ``row`` struct of an event schema."""
    return pa.schema(list(event_schema.field(len(ACID_FIELDS) - 1).type))


def _key_array(values: int | Sequence[int] | pa.Array | pa.ChunkedArray, typ: pa.DataType, n: int) -> pa.Array:
    if isinstance(values, int):
        return pa.array(np.full(n, values), type=typ)
    return pa.array(values, type=typ) if not isinstance(values, pa.Array | pa.ChunkedArray) else values.cast(typ)


def key_values(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An event key column (or any integer column) as NumPy: a view of its buffer when it has no nulls — what key
    columns are —, else pyarrow's conversion. pyarrow's ``to_numpy`` loads pandas on first use, a cost a one-row
    INSERT from the CLI need not pay (docs/performance.md#cli-latency)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if pa.types.is_integer(column.type) and column.null_count == 0:
        width = column.type.bit_width // 8
        dtype = np.dtype(f"{'i' if pa.types.is_signed_integer(column.type) else 'u'}{width}")
        return np.frombuffer(column.buffers()[1], dtype=dtype, count=len(column), offset=column.offset * width)
    values: np.ndarray = column.to_numpy(zero_copy_only=False)
    return values


def insert_events(rows: pa.Table | pa.RecordBatch, write_id: int, bucket: int, first_row_id: int = 0) -> pa.Table:
    """Insert events for ``rows`` written by ``write_id`` into one bucket, rowIds counting from ``first_row_id``."""
    n = rows.num_rows
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
    if n and table.num_columns and table.column(0).num_chunks > 1:  # one struct chunk per batch: no big copies
        batches = [b for b in table.to_batches() if b.num_rows]
        row: pa.Array | pa.ChunkedArray = pa.chunked_array(
            [pa.StructArray.from_arrays(b.columns, fields=list(table.schema)) for b in batches],
            type=pa.struct(list(table.schema)))
    else:
        row = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns],
                                         fields=list(table.schema)) if n else pa.array([], pa.struct(list(table.schema)))
    return pa.table({
        OPERATION: pa.array(np.zeros(n, dtype=np.int32)),
        ORIGINAL_TRANSACTION: pa.array(np.full(n, write_id, dtype=np.int64)),
        BUCKET: pa.array(np.full(n, bucket, dtype=np.int32)),
        ROW_ID: pa.array(np.arange(first_row_id, first_row_id + n, dtype=np.int64)),
        CURRENT_TRANSACTION: pa.array(np.full(n, write_id, dtype=np.int64)),
        ROW: row,
    }, schema=event_arrow_schema(table.schema))


def delete_events(keys: pa.Table | Sequence[AcidKey], write_id: int, row_schema: pa.Schema) -> pa.Table:
    """Delete events (row NULL) by ``write_id`` for the given ROW__IDs (a table with the three key columns)."""
    if not isinstance(keys, pa.Table):
        keys = pa.table({
            ORIGINAL_TRANSACTION: pa.array([k[0] for k in keys], pa.int64()),
            BUCKET: pa.array([k[1] for k in keys], pa.int32()),
            ROW_ID: pa.array([k[2] for k in keys], pa.int64()),
        })
    n = keys.num_rows
    return pa.table({
        OPERATION: pa.array(np.full(n, int(Operation.DELETE), dtype=np.int32)),
        ORIGINAL_TRANSACTION: keys.column(ORIGINAL_TRANSACTION).cast(pa.int64()),
        BUCKET: keys.column(BUCKET).cast(pa.int32()),
        ROW_ID: keys.column(ROW_ID).cast(pa.int64()),
        CURRENT_TRANSACTION: pa.array(np.full(n, write_id, dtype=np.int64)),
        ROW: pa.nulls(n, pa.struct(list(row_schema))),
    }, schema=event_arrow_schema(row_schema))
