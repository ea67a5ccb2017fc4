"""REBALANCE: every row of a partition visible to the compactor snapshot, spread evenly over N bucket files with new
ROW__IDs (Hive's RebalanceQueryCompactor / CompactionQueryBuilder, docs/hive-acid.md#compacting-one-row,
docs/hive-acid.md#commands).

Rows are ordered by the request's ORDER BY columns (Hive's null order: first when ascending, last when descending),
else by ROW__ID. The new ROW__ID of the k-th row (k from 0) is (writeId, bucket k // ⌈rows / N⌉, rowId k); writeId
is the row's own when the order is ROW__ID's, and the highest writeId of all rows under an ORDER BY (the rows'
original write ids cannot stay once they are reordered). Each bucket file is written with the writer of major
compactions (operation 0, currentTransaction = originalTransaction, sorted by ROW__ID as every ACID file must be).

The whole partition is one work unit (Hive funnels it through one ``row_number() over (…)`` as well): rebalance a
partition whose rows fit in an executor's memory.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.event_schema import BUCKET, KEY_FIELDS, ORIGINAL_TRANSACTION, ROW_ID, event_arrow_schema
from airflow_acid.acid.event_writer import FileKind
from airflow_acid.acid.fast_event_writer import write_acid_orc
from airflow_acid.acid.fs import Storage
from airflow_acid.acid.merge import BucketPlan, MergePlan, iter_plan_batches
from airflow_acid.acid.writeids import ValidCompactorWriteIdList
from airflow_acid.errors import AcidInputError
from airflow_acid.job.plan import OrcSettings
from airflow_acid.spark.output_check import Expected


@dataclass(frozen=True)
class Rebalance:
    """What a rebalance unit spreads: every bucket of the step, into ``number_of_buckets`` files."""

    buckets: tuple[BucketPlan, ...]
    number_of_buckets: int
    order_by: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class RebalancedFile:
    name: str
    rows: int
    bytes: int


def _merged_rows(storage: Storage, spec: Rebalance, write_ids: ValidCompactorWriteIdList,
                 row_schema: pa.Schema) -> pa.Table:
    batches = list(iter_plan_batches(storage, MergePlan(spec.buckets), write_ids, schema=row_schema,
                                     include_row_ids=True))
    if batches:
        return pa.Table.from_batches(batches).combine_chunks()
    keys = [pa.field(c, t) for c, t in zip(KEY_FIELDS, (pa.int64(), pa.int32(), pa.int64()))]
    return pa.schema(keys + list(row_schema)).empty_table()


def _sort_keys(table: pa.Table, order_by: Sequence[tuple[str, bool]]) -> tuple[pa.Table, list[tuple[str, str]]]:
    """(table with null-order helper columns, pyarrow sort keys): each ORDER BY column sorts its NULLs first when
    ascending and last when descending (Hive), then ROW__ID keeps equal rows in a stable order."""
    keys: list[tuple[str, str]] = []
    for i, (column, descending) in enumerate(order_by):
        if column not in table.column_names or column in KEY_FIELDS:
            raise AcidInputError(f"REBALANCE … ORDER BY {column}: the table has no column {column!r}; order by one "
                                 "of " + ", ".join(c for c in table.column_names if c not in KEY_FIELDS))
        values = table.column(column)
        if pa.types.is_nested(values.type):
            raise AcidInputError(f"REBALANCE … ORDER BY {column}: a {values.type} column cannot be ordered; order by "
                                 "primitive columns")
        helper = f"__null_order_{i}"
        table = table.append_column(helper, pc.is_null(values).cast(pa.int8()))
        direction = "descending" if descending else "ascending"
        keys += [(helper, "ascending" if descending else "descending"), (column, direction)]
    keys += [(ORIGINAL_TRANSACTION, "ascending"), (BUCKET, "ascending"), (ROW_ID, "ascending")]
    return table, keys


def rebalanced_events(table: pa.Table, row_schema: pa.Schema, number_of_buckets: int,
                      order_by: Sequence[tuple[str, bool]] = ()) -> list[pa.Table]:
    """Merged rows with ROW__IDs → one table of insert events per bucket id 0..N-1 (empty tables for empty buckets)."""
    n = table.num_rows
    sortable, keys = _sort_keys(table, order_by)
    table = table.take(pc.sort_indices(sortable, sort_keys=keys))
    if order_by:
        top = pc.max(table.column(ORIGINAL_TRANSACTION)).as_py()
        write_ids = pa.array(np.full(n, top if top is not None else 0, dtype=np.int64))
    else:
        write_ids = table.column(ORIGINAL_TRANSACTION).combine_chunks().cast(pa.int64())
    per_bucket = max(1, math.ceil(n / number_of_buckets))
    schema = event_arrow_schema(row_schema)
    rows = pa.StructArray.from_arrays([table.column(f.name).combine_chunks() for f in row_schema],
                                      fields=list(row_schema)) if n else pa.array([], pa.struct(list(row_schema)))
    out = []
    for b in range(number_of_buckets):
        lo, hi = min(n, b * per_bucket), min(n, (b + 1) * per_bucket)
        count = hi - lo
        otid = write_ids.slice(lo, count)
        out.append(pa.Table.from_arrays(
            [pa.array(np.zeros(count, dtype=np.int32)), otid,
             pa.array(np.full(count, bucket_codec.encode(b), dtype=np.int32)),
             pa.array(np.arange(lo, hi, dtype=np.int64)), otid, rows.slice(lo, count)], schema=schema))
    return out


def write_rebalanced(storage: Storage, spec: Rebalance, directory: str, write_ids: ValidCompactorWriteIdList,
                     row_schema: pa.Schema, orc: OrcSettings, expected: Expected | None = None) -> list[RebalancedFile]:
    """Read, order and spread the rows; write ``<directory>/bucket_0000b`` for every bucket that got rows
    (``expected`` gets the rows read, without their old ROW__IDs)."""
    table = _merged_rows(storage, spec, write_ids, row_schema)
    if expected is not None:
        expected.add_merged(table, row_schema)
    written = []
    for b, events in enumerate(rebalanced_events(table, row_schema, spec.number_of_buckets, spec.order_by)):
        if events.num_rows == 0:
            continue
        name = names.format_bucket_file(b)
        result = write_acid_orc(storage, posixpath.join(directory, name), events, kind=FileKind.BASE, orc=orc)
        written.append(RebalancedFile(name, result.rows, result.bytes))
    return written
