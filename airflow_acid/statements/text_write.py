"""INSERT into a plain text table (STORED AS TEXTFILE) as Hive writes one: rows laid out as LazySimpleSerDe does
(fields joined by ``field.delim`` / ``serialization.format``, default ``\\001``; NULL as ``\\N`` or
``serialization.null.format``; with ``escape.delim`` the delimiter, the escape character and line breaks inside a
value escaped; values spelled as Hive's CLI prints them: ``true``, ``3.14``, ``2014-08-25 17:21:30``, binary as
base64), one line each.

INSERT INTO adds one file named as Hive names it (``000000_0``, then ``000000_0_copy_1``, …); INSERT OVERWRITE
replaces the directory's data files. The file is written under a hidden name and renamed, so a reader never sees
half of it. A plain table has no transactions or write ids (as in Hive): writers of one table are not isolated
from each other. Partitioned text tables are written by Hive.
"""

from __future__ import annotations

import base64
import posixpath
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_acid.client.errors import NotTransactionalError
from airflow_acid.client.text_table import DEFAULT_NULL, delimiter_of, text_files
from airflow_acid.client.transaction import StatementResult
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.statements.hive_text import hive_text, shortest_float32

if TYPE_CHECKING:
    from airflow_acid.client.warehouse import AcidWarehouse

FIRST_FILE = "000000_0"
TEXT_OPERATIONS = ("insert text", "insert overwrite text")
"""StatementResult.operation of a text table's INSERT / INSERT OVERWRITE (no transaction or write id)."""


def writable_text_table(info: TableInfo) -> TableInfo:
    """``info`` when airflow-acid can INSERT into it as a text table; a clear refusal otherwise."""
    if info.is_partitioned:
        raise NotTransactionalError(
            f"table {info.full_name} is a partitioned text table (STORED AS TEXTFILE): airflow-acid writes "
            "unpartitioned text tables only — write this one in Hive, or use an ACID table")
    return info


def text_lines(rows: pa.Table, params: dict[str, str]) -> bytes:
    """``rows`` (the table's data columns, in order) as LazySimpleSerDe's lines, UTF-8."""
    delimiter = delimiter_of(params, ("field.delim", "serialization.format"), "\x01")
    null = params.get("serialization.null.format", DEFAULT_NULL)
    escape = delimiter_of(params, ("escape.delim",), "") or None
    for field in rows.schema:
        if pa.types.is_nested(field.type):
            raise NotTransactionalError(f"column {field.name} has type {field.type}: airflow-acid writes text tables "
                                        "with primitive columns only")
    columns = [_texts(rows.column(i), null, delimiter, escape) for i in range(rows.num_columns)]
    return "".join(delimiter.join(line) + "\n" for line in zip(*columns)).encode("utf-8")


def _texts(column: pa.ChunkedArray, null: str, delimiter: str, escape: str | None) -> list[str]:
    values: list[Any] = column.to_pylist()
    if pa.types.is_float32(column.type):
        values = [shortest_float32(v) for v in values]
    out = []
    for value in values:
        if value is None:
            out.append(null)
            continue
        text = base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else hive_text(value)
        out.append(_escaped(text, delimiter, escape) if escape else text)
    return out


def _escaped(text: str, delimiter: str, escape: str) -> str:
    return "".join(escape + c if c in (delimiter, escape, "\n", "\r") else c for c in text)


def write_text_table(warehouse: AcidWarehouse, info: TableInfo, rows: pa.Table, *, overwrite: bool) -> StatementResult:
    """Add ``rows`` to the text table (INSERT INTO) or replace its rows with them (INSERT OVERWRITE)."""
    writable_text_table(info)
    fs, root = warehouse.io.storage(info.location)
    fs.makedirs(root, exist_ok=True)
    data = text_lines(rows, info.serde_params)
    old = text_files(fs, root)
    names = {posixpath.basename(p) for p in old}
    name = FIRST_FILE if overwrite or FIRST_FILE not in names else \
        next(f"{FIRST_FILE}_copy_{n}" for n in range(1, len(names) + 2) if f"{FIRST_FILE}_copy_{n}" not in names)
    hidden = posixpath.join(root, f".{name}.airflow-acid-tmp")
    fs.pipe_file(hidden, data)
    if overwrite:
        for path in old:
            fs.rm_file(path)
    fs.mv(hidden, posixpath.join(root, name))
    return StatementResult(info.full_name, TEXT_OPERATIONS[1] if overwrite else TEXT_OPERATIONS[0], None, (),
                           inserted=rows.num_rows)


__all__ = ["TEXT_OPERATIONS", "text_lines", "writable_text_table", "write_text_table"]
