"""DESCRIBE [FORMATTED] rows as Hive prints them: ``col_name, data_type, comment``, with the partition keys under
``# Partition Information`` and, when FORMATTED, the table's (or partition's) details, parameters and storage."""

from __future__ import annotations

import datetime as dt

from airflow_acid.metastore.catalog import (
    ORC_INPUT_FORMAT,
    ORC_OUTPUT_FORMAT,
    ORC_SERDE,
    ColumnInfo,
    PartitionInfo,
    TableInfo,
)

COLUMNS = ["col_name", "data_type", "comment"]
Row = list[str]


def describe_rows(info: TableInfo, partition: PartitionInfo | None = None, *, formatted: bool = False) -> list[Row]:
    """The rows of DESCRIBE (FORMATTED) ``info`` [PARTITION]."""
    header = ["# col_name", "data_type", "comment"]
    rows: list[Row] = [header] if formatted else []
    rows += [_column(c) for c in info.columns]
    if not formatted:
        rows += [_column(k) for k in info.partition_keys]
    if info.partition_keys:
        rows += [["", "", ""], ["# Partition Information", "", ""], header]
        rows += [_column(k) for k in info.partition_keys]
    if formatted:
        rows += [["", "", ""]]
        rows += _partition_details(info, partition) if partition is not None else _table_details(info)
        rows += _view(info) if info.is_view else _storage(info) + _defaults(info)
    return rows


def _view(info: TableInfo) -> list[Row]:
    """Hive's ``# View Information`` section."""
    return [["", "", ""], ["# View Information", "", ""],
            ["Original Query:", info.view_original_text or "", ""],
            ["Expanded Query:", info.view_expanded_text or "", ""]]


def _defaults(info: TableInfo) -> list[Row]:
    """Hive's ``# Constraints`` / ``# Default Constraints`` section: each column's DEFAULT value."""
    columns = [c for c in info.columns if c.default is not None]
    if not columns:
        return []
    return ([["", "", ""], ["# Constraints", "", ""], ["", "", ""], ["# Default Constraints", "", ""],
             ["Table:", info.full_name, ""]]
            + [[f"Column Name:{c.name}", f"Default Value:{c.default}", ""] for c in columns])


def _column(c: ColumnInfo) -> Row:
    return [c.name, c.type, c.comment or ""]


def _time(ms: int | None) -> str:
    if not ms:
        return "UNKNOWN"
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")


def _params(title: str, params: dict[str, str]) -> list[Row]:
    return [[f"{title}:", "", ""]] + [["", key, value] for key, value in sorted(params.items())]


def _table_details(info: TableInfo) -> list[Row]:
    return [["# Detailed Table Information", "", ""],
            ["Database:", info.database, ""],
            ["OwnerType:", "USER", ""],
            ["Owner:", info.owner or "", ""],
            ["CreateTime:", _time(info.create_time), ""],
            ["LastAccessTime:", "UNKNOWN", ""],
            ["Retention:", "0", ""],
            ["Location:", info.location, ""],
            ["Table Type:", info.table_type, ""]] + _params("Table Parameters", info.properties)


def _partition_details(info: TableInfo, partition: PartitionInfo) -> list[Row]:
    return [["# Detailed Partition Information", "", ""],
            ["Partition Value:", "[" + ", ".join(partition.spec.values()) + "]", ""],
            ["Database:", info.database, ""],
            ["Table:", info.name, ""],
            ["CreateTime:", _time(partition.create_time), ""],
            ["LastAccessTime:", "UNKNOWN", ""],
            ["Location:", partition.location, ""]] + _params("Partition Parameters", partition.params)


def _storage(info: TableInfo) -> list[Row]:
    return [["", "", ""],
            ["# Storage Information", "", ""],
            ["SerDe Library:", info.serde or ORC_SERDE, ""],
            ["InputFormat:", info.input_format or ORC_INPUT_FORMAT, ""],
            ["OutputFormat:", info.output_format or ORC_OUTPUT_FORMAT, ""],
            ["Compressed:", "No", ""],
            ["Num Buckets:", str(info.num_buckets if info.bucket_cols else -1), ""],
            ["Bucket Columns:", "[" + ", ".join(info.bucket_cols) + "]", ""],
            ["Sort Columns:", "[]", ""]] + (_params("Storage Desc Params", info.serde_params) if info.serde_params
                                            else [])
