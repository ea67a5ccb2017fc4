"""Reading plain text tables as Hive's LazySimpleSerDe lays them out (STORED AS TEXTFILE).

Hive's rules, each applied here:

- one row a line (``\\n``); fields split at the field delimiter: SERDE_PARAMS ``field.delim``, else
  ``serialization.format``, else ``\\001``. A delimiter spelled as a number is that byte (``'9'`` is a tab, ``'1'``
  is ``\\001``: Hive's ``LazyUtils.getByte``); otherwise its first character;
- ``\\N`` (or ``serialization.null.format``) is NULL; with ``escape.delim`` a delimiter preceded by the escape
  character is part of the field (and the escape character escapes itself);
- fields beyond the table's columns are ignored; missing fields are NULL;
- each field converted to its column's type as Hive casts it (:mod:`airflow_acid.client.hive_casts`): a field that
  does not parse is NULL, never an error; booleans are ``true``/``false`` in any case; binary is base64 (raw bytes
  when not base64); varchar/char keep their first n characters;
- files whose names start with ``_`` or ``.`` are skipped (Hive's hidden files); ``.gz`` / ``.bz2`` files are
  decompressed.

The parse itself is pyarrow.csv's (quoting off) when every line has the table's field count and no escape character
is set; otherwise (short or long lines, carriage returns Hive keeps in the field, escapes, whose NULL check sees the
field as written) a line-by-line split in Python.
Integers, dates and timestamps spelled the one way Arrow's cast and Hive's casts read alike are cast by Arrow;
any other field goes through Hive's casts value by value.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from collections.abc import Mapping, Sequence

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from airflow_acid.client.errors import NotTransactionalError
from airflow_acid.client.hive_casts import converts_strings, string_values
from airflow_acid.client.table_schema import python_column

DEFAULT_NULL = "\\N"
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2"}
_LENGTH = re.compile(r"^\s*(?:var)?char\s*\(\s*(\d+)\s*\)\s*$", re.IGNORECASE)


def delimiter_of(params: Mapping[str, str], keys: Sequence[str], default: str) -> str:
    """The first of ``keys`` set in ``params`` as one character, by Hive's ``LazyUtils.getByte`` rule."""
    for key in keys:
        value = params.get(key)
        if value:
            try:
                number = int(value)
            except ValueError:
                return value[0]
            if -128 <= number <= 127:
                return chr(number & 0xFF)
            return value[0]
    return default


def text_files(fs: fsspec.AbstractFileSystem, root: str) -> list[str]:
    """The data files of one table/partition directory, by name: hidden files (``_…``, ``.…``) skipped."""
    if not fs.exists(root):
        return []
    files = [info["name"] for info in fs.ls(root, detail=True) if info.get("type") == "file"]
    return sorted(f for f in files if not posixpath.basename(f.rstrip("/")).startswith(("_", ".")))


def read_text_directory(fs: fsspec.AbstractFileSystem, root: str, schema: pa.Schema, hive_types: Sequence[str],
                        params: Mapping[str, str], *, table: str) -> pa.Table:
    """Every text file of ``root`` as rows of ``schema`` (the table's data columns, ``hive_types`` their Hive types)."""
    for field in schema:
        if pa.types.is_nested(field.type):
            raise NotTransactionalError(
                f"table {table}: column {field.name} has type {hive_type_of(hive_types, schema, field.name)}; "
                "airflow-acid reads text tables with primitive columns only — read this one in Hive or Spark")
    delimiter = delimiter_of(params, ("field.delim", "serialization.format"), "\x01")
    null = params.get("serialization.null.format", DEFAULT_NULL)
    escape = delimiter_of(params, ("escape.delim",), "") or None
    parts = []
    for path in text_files(fs, root):
        compression = _COMPRESSION.get(posixpath.splitext(path)[1].lower())
        with fs.open(path, "rb", compression=compression) as handle:
            data = handle.read()
        fields = _split(data.decode("utf-8", errors="replace"), len(schema), delimiter, escape, null)
        parts.append(_typed(fields, schema, hive_types, table))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def hive_type_of(hive_types: Sequence[str], schema: pa.Schema, name: str) -> str:
    return hive_types[schema.names.index(name)]


def _split(text: str, width: int, delimiter: str, escape: str | None, null: str) -> list[list[str | None]]:
    """The file's fields column by column, ``width`` columns: strings, None for NULL or a missing field. NULL is
    the field as written (before unescaping: Hive's ``\\N`` stays NULL with ESCAPED BY '\\')."""
    if not text:
        return [[] for _ in range(width)]
    if text.endswith("\n"):
        text = text[:-1]
    empty_line = width > 1 and (not text or text.startswith("\n") or "\n\n" in text or text.endswith("\n"))
    if "\r" not in text and escape is None and not empty_line:  # pyarrow gives an empty line all '' fields
        columns = _split_arrow(text, width, delimiter)
        if columns is not None:
            return [[None if v == null else v for v in column] for column in columns]
    rows = [_split_line(line, delimiter, escape, null) for line in text.split("\n")]
    return [[row[i] if i < len(row) else None for row in rows] for i in range(width)]


def _split_arrow(text: str, width: int, delimiter: str) -> list[list[str]] | None:
    """pyarrow.csv's parse (quoting off, every field a string, nothing NULL yet); None when a line's field count is
    not ``width`` (Hive pads and cuts lines; pyarrow refuses them)."""
    names = [f"f{i}" for i in range(width)]
    try:
        table = pacsv.read_csv(
            pa.py_buffer(text.encode("utf-8") + b"\n"),
            read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False, double_quote=False,
                                             escape_char=False, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                                 null_values=[], strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False))
    except pa.ArrowInvalid:
        return None
    return [table.column(i).to_pylist() for i in range(width)]


def _split_line(line: str, delimiter: str, escape: str | None, null: str) -> list[str | None]:
    """One line's fields; with an escape character, an escaped character is kept (the escape dropped) and the NULL
    check sees the field as written."""
    if escape is None or escape not in line:
        return [None if field == null else field for field in line.split(delimiter)]
    fields: list[str | None] = []
    current: list[str] = []
    start, i = 0, 0
    while i < len(line):
        char = line[i]
        if char == escape and i + 1 < len(line):
            current.append(line[i + 1])
            i += 2
            continue
        if char == delimiter:
            fields.append(None if line[start:i] == null else "".join(current))
            current, start = [], i + 1
        else:
            current.append(char)
        i += 1
    fields.append(None if line[start:] == null else "".join(current))
    return fields


def _typed(columns: list[list[str | None]], schema: pa.Schema, hive_types: Sequence[str], table: str) -> pa.Table:
    arrays = [_column(field, hive, values, table) for field, hive, values in zip(schema, hive_types, columns)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _column(field: pa.Field, hive: str, values: list[str | None], table: str) -> pa.Array:
    """One column's fields as Hive's LazySimpleSerDe reads them into ``field``'s type (unparsable: NULL)."""
    typ = field.type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        length = _LENGTH.match(hive)
        if length:
            values = [None if v is None else v[:int(length.group(1))] for v in values]
        return python_column(field, values, table)
    if pa.types.is_boolean(typ):
        return pa.array([None if v is None else {"true": True, "false": False}.get(v.lower()) for v in values],
                        type=typ)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return pa.array([None if v is None else _binary(v) for v in values], type=typ)
    if converts_strings(typ):
        fast = vectorized(pa.array(values, pa.string()), typ)
        return fast if fast is not None else python_column(field, string_values(values, typ), table)
    return pa.array(values, pa.string()).cast(typ, safe=False)  # any other primitive type: Arrow's cast


_YEAR = r"(?:000[1-9]|00[1-9]\d|0[1-9]\d{2}|[1-9]\d{3})"  # 0001-9999: Hive has no year 0, Arrow does
_STRICT = (
    (pa.types.is_integer, r"^[+-]?\d{1,18}$"),
    (pa.types.is_date32, rf"^{_YEAR}-\d{{2}}-\d{{2}}$"),
    (lambda t: pa.types.is_timestamp(t) and t.tz is None and t.unit == "ns",
     rf"^{_YEAR}-\d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}}(?:\.\d{{1,9}})?$"),
)
"""Field spellings Arrow's cast reads exactly as Hive's casts do; any other spelling, or a value the cast refuses (out
of range, 2023-02-29, hour 25), goes through :mod:`~airflow_acid.client.hive_casts` value by value."""


def vectorized(strings: pa.Array, typ: pa.DataType) -> pa.Array | None:
    """``strings`` cast to ``typ`` by Arrow when every field is spelled the one way both read alike; else None."""
    pattern = next((p for matches, p in _STRICT if matches(typ)), None)
    if pattern is None:
        return None
    present = strings.drop_null()
    if len(present) and not pc.all(pc.match_substring_regex(present, pattern)).as_py():
        return None
    try:
        return strings.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _binary(text: str) -> bytes:
    """Hive's LazyBinary: base64 when the field is base64, else its bytes as they are."""
    raw = text.encode("utf-8")
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw
