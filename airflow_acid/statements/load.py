"""LOAD DATA [LOCAL] INPATH 'path' [OVERWRITE] INTO TABLE t [PARTITION (…)] as Hive 4 runs it, on airflow-acid's own
metastore (a Hive metastore's tables are loaded in Hive).

An ACID table's LOAD is one transaction: the files, every one checked first, become a new ``delta_W_W_S`` (OVERWRITE:
``base_W``) of original files under the lock INSERT (INSERT OVERWRITE) takes. Where Hive rewrites the LOAD into
INSERT … SELECT over the files — a bucketed table, a partitioned table without a full PARTITION spec (the partition
keys left out are the files' last columns), a directory with sub-directories — so does airflow-acid. A plain table's
files are copied into its directory under an EXCLUSIVE lock. Without LOCAL the files are moved, as Hive moves them:
removed from ``path`` once the load has committed.
"""

from __future__ import annotations

import logging
import posixpath
import shutil
from typing import TYPE_CHECKING

from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.statements.ddl_lock import exclusive_lock
from airflow_acid.statements.model import LoadData
from airflow_acid.statements.result import Result

if TYPE_CHECKING:
    import fsspec

    from airflow_acid.client.load_data import LoadSource
    from airflow_acid.statements.execute import StatementExecutor

log = logging.getLogger(__name__)


def load_data(ex: StatementExecutor, s: LoadData) -> Result:
    from airflow_acid.client.load_data import check_files, list_source
    from airflow_acid.statements.views import DML_AGAINST_VIEW

    info = ex.table_info(s.table)
    ex.metastore.catalog.check_ddl(f"load data into {info.full_name}")
    if info.is_view:
        raise InvalidInputError(f"{DML_AGAINST_VIEW}: {info.full_name} is a view")
    spec = _partition_spec(info, s)
    fs, path = _source_fs(ex, s)
    source = list_source(fs, path)
    dynamic = info.is_partitioned and (spec is None or len(spec) < len(info.partition_keys))
    rewrite = source.nested or bool(info.bucket_cols) or dynamic
    where = info.full_name + (f" partition {info.partition_name(spec)}" if spec and not dynamic else "")
    if not info.is_transactional:
        if rewrite:
            raise InvalidInputError(f"LOAD DATA into plain table {info.full_name}: airflow-acid copies files into a "
                                    "plain table as they are — give the full PARTITION (…) spec and a directory "
                                    "of files (no sub-directories), or load it in Hive")
        check_files(info, source, ex.warehouse.io.data_schema(info))
        message = _copy_into_plain_table(ex, info, source, spec, s.overwrite)
    elif rewrite:
        message = _insert_rows(ex, info, source, spec, s.overwrite)
    else:
        check_files(info, source, ex.warehouse.io.data_schema(info))
        with ex.warehouse.transaction(agent_info="airflow-acid LOAD DATA") as txn:
            done = txn.load_files(info.full_name, source, spec, overwrite=s.overwrite)
        message = (f"loaded {len(source.files)} file(s) into {where} as {done.directories[0]} (write id "
                   f"{done.write_id})")
    if not s.local:
        _remove_sources(source)
    return Result(s.TITLE, messages=[message])


def _partition_spec(info: TableInfo, s: LoadData) -> dict[str, str] | None:
    if s.partition is None:
        return None
    if not info.is_partitioned:
        raise InvalidInputError(f"table {info.full_name} is not partitioned; LOAD DATA … INTO TABLE "
                                f"{info.full_name} takes no PARTITION clause")
    keys = {k.name.lower(): k.name for k in info.partition_keys}
    unknown = [k for k in s.partition if k.lower() not in keys]
    if unknown:
        raise InvalidInputError(f"unknown partition key {unknown[0]!r} of table {info.full_name}; its partition keys "
                                f"are {', '.join(keys.values())}")
    return {keys[k.lower()]: v for k, v in s.partition.items() if v is not None}


def _source_fs(ex: StatementExecutor, s: LoadData) -> tuple[fsspec.AbstractFileSystem, str]:
    """LOCAL: this machine's filesystem (Hive: "Source file system should be \"file\""); else the warehouse's."""
    if s.local:
        import fsspec

        if "://" in s.path and not s.path.startswith("file://"):
            raise InvalidInputError(f"Invalid path '{s.path}': Source file system should be \"file\" if \"local\" "
                                    "is specified")
        local = fsspec.filesystem("file")
        return local, local._strip_protocol(s.path)
    return ex.warehouse.io.storage(s.path)


def _insert_rows(ex: StatementExecutor, info: TableInfo, source: LoadSource, spec: dict[str, str] | None,
                 overwrite: bool) -> str:
    """Hive's rewrite: INSERT [OVERWRITE] … SELECT over the files, the partition keys left out of the spec read as
    the files' last columns."""
    import pyarrow as pa

    from airflow_acid.client.load_data import read_rows
    from airflow_acid.client.table_schema import arrow_schema

    static = spec or {}
    dynamic_keys = [k for k in info.partition_keys if k.name not in static]
    schema = pa.schema(list(ex.warehouse.io.data_schema(info)) + list(arrow_schema(dynamic_keys)))
    rows = read_rows(info, source, schema)
    whole_spec = info.is_partitioned and not dynamic_keys
    for key in info.partition_keys:
        if key.name in static:
            rows = rows.append_column(key.name, pa.array([static[key.name]] * rows.num_rows, pa.string()))
    with ex.warehouse.transaction(agent_info="airflow-acid LOAD DATA") as txn:
        partition = spec if whole_spec else None
        data = rows.select(ex.warehouse.io.data_schema(info).names) if whole_spec else rows
        if overwrite:
            done = txn.insert_overwrite(info.full_name, data, partition)
        else:
            done = txn.insert(info.full_name, data, partition)
    return (f"loaded {done.inserted} row(s) from {len(source.files)} file(s) into {info.full_name} as INSERT"
            f"{' OVERWRITE' if overwrite else ''} … SELECT (write id {done.write_id})")


def _copy_into_plain_table(ex: StatementExecutor, info: TableInfo, source: LoadSource, spec: dict[str, str] | None,
                           overwrite: bool) -> str:
    """A plain table's LOAD: the files copied next to its own (OVERWRITE: its own removed once they are in)."""
    from airflow_acid.client.load_data import destination_names

    target = ex.warehouse.io.partition_target(info, spec)
    fs, root = ex.warehouse.io.storage(target.location)
    with exclusive_lock(ex, f"load data into {info.full_name}", info.database, info.name, target.name):
        fs.makedirs(root, exist_ok=True)
        before = [e["name"] for e in fs.ls(root, detail=True) if e.get("type") == "file"]
        taken = [posixpath.basename(p) for p in before]
        copied = []
        try:
            for path, name in zip(source.files, destination_names(source.files, taken), strict=True):
                dest = posixpath.join(root, name)
                with source.fs.open(path, "rb") as src, fs.open(dest, "wb") as dst:
                    copied.append(dest)
                    shutil.copyfileobj(src, dst, 8 << 20)
            if target.spec:
                ex.metastore.catalog.add_partition(info.database, info.name, target.spec, location=target.location,
                                                   if_not_exists=True)
        except BaseException:
            for dest in copied:
                if fs.exists(dest):
                    fs.rm(dest)
            raise
        if overwrite:
            for old in before:
                if not posixpath.basename(old).startswith(("_", ".")):
                    fs.rm(old)
    where = info.full_name + (f" partition {target.name}" if target.name else "")
    return f"loaded {len(source.files)} file(s) into {where}"


def _remove_sources(source: LoadSource) -> None:
    """Hive moves a non-LOCAL LOAD's files: the loaded copies are the data now."""
    for path in source.files:
        try:
            source.fs.rm(path)
        except OSError as exc:
            log.warning("LOAD DATA: could not remove the loaded file %s: %s", path, exc)


__all__ = ["load_data"]
