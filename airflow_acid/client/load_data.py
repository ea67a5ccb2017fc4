"""LOAD DATA's files, checked and named as Hive 4 takes them.

A LOAD moves the files themselves into the table: a full-ACID table's must be ORC files holding plain rows of the
table's columns (no ACID columns: Hive's "was created by Acid write" refusal), an insert-only or plain ORC table's ORC
files, a text table's any files. Every file is checked before anything is written. The files keep Hive's original-file
names (``000000_0``, then ``000000_0_copy_N``; a name that is already one is kept), which readers take as original
("raw") files with synthesized ROW__IDs. When the files cannot become the table's data as they are (a bucketed table,
a partitioned table without a full PARTITION spec, a directory with sub-directories), Hive rewrites the LOAD into
INSERT … SELECT over the files: :func:`read_rows` gives those rows.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

import fsspec
import pyarrow as pa
import pyarrow.orc as po

from airflow_acid.acid import names
from airflow_acid.acid.errors import AcidFileError
from airflow_acid.acid.event_reader import FileFormat, open_orc_file
from airflow_acid.acid.merge import widens_to
from airflow_acid.client.errors import SchemaMismatchError
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.errors import InvalidInputError

ORC_MAGIC = b"ORC"


@dataclass(frozen=True)
class LoadSource:
    """What LOAD DATA INPATH names: its data files (sorted), and whether it holds sub-directories."""

    fs: fsspec.AbstractFileSystem
    path: str
    files: tuple[str, ...]
    nested: bool


def list_source(fs: fsspec.AbstractFileSystem, path: str) -> LoadSource:
    """A file, or a directory's visible files (names starting with ``_`` or ``.`` skipped, as Hive's listing);
    Hive's "No files matching path" when there is none."""
    if not fs.exists(path):
        raise InvalidInputError(f"Invalid path '{path}': No files matching path {path}")
    if not fs.isdir(path):
        return LoadSource(fs, path, (path,), nested=False)
    entries = [e for e in fs.ls(path, detail=True)
               if not posixpath.basename(e["name"].rstrip("/")).startswith(("_", "."))]
    files = tuple(sorted(e["name"] for e in entries if e.get("type") == "file"))
    nested = any(e.get("type") == "directory" for e in entries)
    if nested:  # Hive reads such a directory as a table: every file below it
        files = tuple(sorted(f for f in fs.find(path)
                             if not any(part.startswith(("_", ".")) for part in
                                        posixpath.relpath(f, path).split("/"))))
    if not files:
        raise InvalidInputError(f"Invalid path '{path}': No files matching path {path}")
    return LoadSource(fs, path, files, nested)


def check_files(info: TableInfo, source: LoadSource, schema: pa.Schema) -> None:
    """Each file fits the table as a file of its data (see the module docstring); raises naming the first that
    does not. Text tables take any file, as Hive's LazySimpleSerDe reads any bytes."""
    if info.is_text:
        return
    for path in source.files:
        with source.fs.open(path, "rb") as handle:
            head = handle.read(3)
        if head != ORC_MAGIC:
            raise InvalidInputError(
                f"The file that you are trying to load does not match the file format of the destination table: "
                f"{path} is not an ORC file and table {info.full_name} is stored as ORC")
        try:
            orc = open_orc_file(path, filesystem=source.fs)
        except AcidFileError as exc:
            raise InvalidInputError(f"cannot load {path}: {exc}") from None
        if orc.format is FileFormat.ACID:
            raise InvalidInputError(
                f'"{path}" was created by Acid write - it cannot be loaded into another Acid table; LOAD DATA takes '
                "plain ORC files (copy rows between ACID tables with INSERT … SELECT)")
        _check_schema(info, path, orc.row_schema, schema)


def _check_schema(info: TableInfo, path: str, file_schema: pa.Schema, schema: pa.Schema) -> None:
    """The file's columns are the table's, by position (Hive reads original files positionally): same count, each
    type the column's or one it widens to."""
    def listing(s: pa.Schema) -> str:
        return ", ".join(f"{f.name} {f.type}" for f in s)

    if len(file_schema) != len(schema):
        raise SchemaMismatchError(f"cannot load {path} into table {info.full_name}: the file has "
                                  f"{len(file_schema)} column(s) ({listing(file_schema)}), the table "
                                  f"{len(schema)} ({listing(schema)}); the files must hold the table's columns in "
                                  "order")
    for i, (got, wanted) in enumerate(zip(file_schema, schema, strict=True)):
        if not widens_to(got.type, wanted.type):
            raise SchemaMismatchError(f"cannot load {path} into table {info.full_name}: column {i + 1} of the file "
                                      f"({got.name} {got.type}) does not fit the table's column {wanted.name} "
                                      f"({wanted.type}); the files must hold the table's columns in order")


def destination_names(paths: Sequence[str], taken: Sequence[str] = ()) -> list[str]:
    """The names the files get in the table: theirs when they are Hive original-file names, else ``000000_0``;
    a name already used gets Hive's ``_copy_N`` suffix."""
    used = set(taken)
    out = []
    for path in paths:
        base = posixpath.basename(path)
        original = names.parse_original_file(base)
        stem = base if original is not None and not original.copy else \
            names.format_original_file(original.bucket_id) if original is not None else names.format_original_file(0)
        name, copy = stem, 0
        while name in used:
            copy += 1
            name = f"{stem}_copy_{copy}"
        used.add(name)
        out.append(name)
    return out


def read_rows(info: TableInfo, source: LoadSource, schema: pa.Schema) -> pa.Table:
    """The ORC files' rows as ``schema`` (the table's columns, then the partition keys the LOAD leaves dynamic), by
    position — Hive's rewrite of such a LOAD into INSERT … SELECT (airflow-acid's ACID tables are ORC)."""
    tables = []
    for path in source.files:
        with source.fs.open(path, "rb") as handle:
            if handle.read(3) != ORC_MAGIC:
                raise InvalidInputError(f"The file that you are trying to load does not match the file format of the "
                                        f"destination table: {path} is not an ORC file and table {info.full_name} "
                                        "is stored as ORC")
            handle.seek(0)
            rows = po.ORCFile(handle).read()
        if rows.num_columns != len(schema):
            raise SchemaMismatchError(f"cannot load {path} into table {info.full_name}: the file has "
                                      f"{rows.num_columns} column(s), the load expects {len(schema)} "
                                      f"({', '.join(schema.names)}: the table's columns, then the partition keys "
                                      "the PARTITION clause leaves out)")
        try:
            tables.append(pa.table(rows.columns, names=schema.names).cast(schema))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaMismatchError(f"cannot load {path} into table {info.full_name}: {exc}") from None
    return pa.concat_tables(tables) if tables else schema.empty_table()


__all__ = ["LoadSource", "check_files", "destination_names", "list_source", "read_rows"]
