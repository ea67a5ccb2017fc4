"""One listing of a table/partition directory turned into getAcidState."""

from __future__ import annotations

import fsspec

from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import AcidState, get_acid_state
from airflow_acid.acid.writeids import ValidTxnList, ValidWriteIdList


def directory_state(location: str, write_ids: ValidWriteIdList, txns: ValidTxnList | None = None, *,
                    filesystem: fsspec.AbstractFileSystem | None = None, ignore_empty_files: bool = False,
                    missing_ok: bool = False) -> AcidState:
    """List ``location`` once (recursively, with sizes) and select its directories for one snapshot.

    ``missing_ok``: a location that does not exist yet (no write so far) is an empty directory.
    """
    storage = storage_for(location, filesystem)

    def metadata_reader(path: str) -> str:
        return storage.read_bytes(path).decode("utf-8", errors="replace")

    try:
        files = storage.list_files()
    except FileNotFoundError:
        if not missing_ok:
            raise
        files = []
    return get_acid_state(files, write_ids, txns, metadata_reader=metadata_reader,
                          ignore_empty_files=ignore_empty_files)
