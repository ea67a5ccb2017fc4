"""Converting a plain ORC table to a transactional one — ALTER TABLE … SET TBLPROPERTIES ('transactional'='true') —
with Hive's check (TransactionalValidationListener) that its files can serve as ACID *original* files.

After the conversion the files stay where they are: readers see them as original files with synthetic ROW__IDs
(write id 0, the bucket id of the file name, the row's offset in the bucket's files in path order —
docs/hive-acid.md#original-files), UPDATE/DELETE write delete events against those ROW__IDs, and the first MAJOR compaction
rewrites them into a ``base_N``. Hive requires, for a full-ACID conversion, that every data file is named like a
bucket file Hive writes (``000000_0``, ``000001_0_copy_1``), since the name carries the bucket id; an insert-only
conversion takes any names.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_acid.acid import names
from airflow_acid.acid.fs import ListedFile, storage_for
from airflow_acid.metastore.catalog import TableInfo
from airflow_acid.metastore.errors import InvalidInputError

MAX_NAMED = 5


def nonconforming_files(files: Iterable[ListedFile]) -> list[str]:
    """Data files (hidden ones and ACID directories skipped) whose names are not Hive bucket file names."""
    bad = []
    for f in files:
        parts = f.path.split("/")
        if any(names.is_hidden(p) for p in parts):
            continue
        if len(parts) > 1 and names.dir_kind(parts[0]) is not names.DirKind.ORIGINAL:
            continue
        if names.parse_original_file(parts[-1]) is None:
            bad.append(f.path)
    return bad


def check_convertible(info: TableInfo, locations: Iterable[str], *, insert_only: bool, filesystem: object = None
                      ) -> None:
    """Refuse (InvalidInputError, naming the files) a full-ACID conversion of a table whose files Hive would not
    accept as original files; nothing is changed."""
    if insert_only:
        return
    for location in locations:
        try:
            files = storage_for(location, filesystem).list_files()
        except FileNotFoundError:
            continue
        bad = nonconforming_files(files)
        if bad:
            shown = ", ".join(repr(p) for p in bad[:MAX_NAMED]) + (f" (+{len(bad) - MAX_NAMED} more)"
                                                                     if len(bad) > MAX_NAMED else "")
            raise InvalidInputError(
                f"table {info.full_name} cannot be converted to a transactional table: in {location} the file(s) "
                f"{shown} are not named like Hive's bucket files (000000_0, 000001_0_copy_1), whose names give the "
                "bucket id of original files; rename them, or convert to an insert-only table "
                "('transactional_properties'='insert_only')")
