"""One listing of a table/partition directory turned into getAcidState, and a compaction planned straight from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import fsspec

from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import AcidState, get_acid_state
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidTxnList, ValidWriteIdList
from airflow_acid.compactor.planning import NothingToCompact, plan_compaction
from airflow_acid.job.plan import Compaction


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


def plan_directory(location: str, write_ids: ValidCompactorWriteIdList, compactor_txn_id: int,
                   compaction_type: CompactionType | str, *, compaction_id: str, txns: ValidTxnList | None = None,
                   row_schema: str | None = None, table_properties: Mapping[str, str] = {},
                   request_properties: Mapping[str, str] = {}, max_num_delta: int | None = None,
                   filesystem: fsspec.AbstractFileSystem | None = None, insert_only: bool = False,
                   number_of_buckets: int | None = None, order_by: Sequence[tuple[str, bool]] = (),
                   job_queue: str = "") -> Compaction | NothingToCompact:
    """List ``location`` once and plan its compaction (§5.2 step 8: empty files ignored, as Hive does)."""
    state = directory_state(location, write_ids, txns, filesystem=filesystem, ignore_empty_files=True)
    return plan_compaction(state, write_ids, compactor_txn_id, compaction_type, location=location,
                           compaction_id=compaction_id, row_schema=row_schema, table_properties=table_properties,
                           request_properties=request_properties, max_num_delta=max_num_delta,
                           insert_only=insert_only, number_of_buckets=number_of_buckets, order_by=order_by,
                           job_queue=job_queue)
