"""Table and partition directories may not be nested in one another.

Two tables sharing a directory share delta names: ``delta_0000001_0000001_0000`` of one is the other's, so a write
to one overwrites the other's committed files, and one table's Cleaner deletes the other's "obsolete" data. Hive
keeps each managed table in its own directory; the catalog refuses a location that is, contains or lies inside
another table's or partition's directory (a partition's own table directory excepted).
"""

from __future__ import annotations

import posixpath

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.schema import DBS, PARTITIONS, SDS, TBLS


def normalize_location(location: str, what: str) -> str:
    """An absolute path or URI without ``.``/``..`` segments or a trailing ``/``; a relative path is refused
    (it would mean a different directory in every process that opens the table)."""
    text = location.strip()
    scheme, sep, path = text.partition("://")
    if not sep:
        scheme, path = "", text
        if not path.startswith("/"):
            raise InvalidInputError(f"{what}: location {location!r} is a relative path; give an absolute path or a URI")
    normal = posixpath.normpath(path) if path else path
    if normal.startswith("//"):  # normpath keeps a leading double slash
        normal = "/" + normal.lstrip("/")
    normal = normal.rstrip("/") or "/"
    return f"{scheme}://{normal}" if sep else normal


def _nested(inner: str, outer: str) -> bool:
    return inner.startswith(outer.rstrip("/") + "/")


def overlap(conn: Connection, location: str, *, own_table_id: int | None = None) -> str | None:
    """The table or partition whose directory is, contains or lies inside ``location`` (None when it is free).
    ``own_table_id``: the location is a partition of that table, which may lie inside the table's directory."""
    tables = conn.execute(sa.select(TBLS.c.TBL_ID, DBS.c.NAME, TBLS.c.TBL_NAME, SDS.c.LOCATION)
                          .join_from(TBLS, DBS, TBLS.c.DB_ID == DBS.c.DB_ID).join(SDS, TBLS.c.SD_ID == SDS.c.SD_ID))
    for tbl_id, db, name, where in tables:
        if not where:  # a view: no directory
            continue
        other = where.rstrip("/") or "/"
        if own_table_id == tbl_id and _nested(location, other):
            continue
        if location == other or _nested(location, other) or _nested(other, location):
            return f"table {db}.{name} at {where}"
    partitions = conn.execute(
        sa.select(DBS.c.NAME, TBLS.c.TBL_NAME, PARTITIONS.c.PART_NAME, SDS.c.LOCATION)
        .join_from(PARTITIONS, TBLS, PARTITIONS.c.TBL_ID == TBLS.c.TBL_ID).join(DBS, TBLS.c.DB_ID == DBS.c.DB_ID)
        .join(SDS, PARTITIONS.c.SD_ID == SDS.c.SD_ID))
    for db, name, part, where in partitions:
        other = where.rstrip("/") or "/"
        if location == other or _nested(location, other) or _nested(other, location):
            return f"partition {part} of {db}.{name} at {where}"
    return None


def check_free(conn: Connection, location: str, what: str, *, own_table_id: int | None = None) -> None:
    """InvalidInputError naming the table or partition whose directory overlaps ``location``."""
    taken = overlap(conn, location, own_table_id=own_table_id)
    if taken is not None:
        raise InvalidInputError(f"{what}: location {location} overlaps the directory of {taken}; every table and "
                                "partition needs a directory of its own (their delta directories would collide)")
