"""Plan a compaction straight from a directory: one listing, getAcidState with the compactor snapshot, the plan."""

from __future__ import annotations

from collections.abc import Mapping

import fsspec

from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidTxnList
from airflow_acid.compactor.plan import Compaction, CompactionType, NothingToCompact, plan_compaction


def plan_directory(location: str, write_ids: ValidCompactorWriteIdList, compactor_txn_id: int,
                   compaction_type: CompactionType | str, *, compaction_id: str, txns: ValidTxnList | None = None,
                   row_schema: str | None = None, table_properties: Mapping[str, str] = {},
                   request_properties: Mapping[str, str] = {}, max_num_delta: int | None = None,
                   filesystem: fsspec.AbstractFileSystem | None = None) -> Compaction | NothingToCompact:
    """List ``location`` once and plan its compaction (§5.2 step 8: empty files ignored, as Hive does)."""
    storage = storage_for(location, filesystem)

    def metadata_reader(path: str) -> str:
        return storage.read_bytes(path).decode("utf-8", errors="replace")

    state = get_acid_state(storage.list_files(), write_ids, txns, metadata_reader=metadata_reader,
                           ignore_empty_files=True)
    return plan_compaction(state, write_ids, compactor_txn_id, compaction_type, location=location,
                           compaction_id=compaction_id, row_schema=row_schema, table_properties=table_properties,
                           request_properties=request_properties, max_num_delta=max_num_delta)
