"""The committer: what happens to a compaction's output after the job ran — verified before the compactor
transaction commits, removed when the attempt fails, the queue row marked compacted only while it still records
this attempt, and the run's figures stored (see docs/architecture.md for the path of one compaction)."""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable, Sequence

import fsspec

from airflow_acid.acid import names
from airflow_acid.acid.codes import CompactionState
from airflow_acid.acid.errors import AcidFileError
from airflow_acid.acid.event_reader import FileFormat, open_data_file
from airflow_acid.acid.fs import ListedFile, Storage, storage_for
from airflow_acid.acid.layout_check import Severity, check_layout
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.writeids import ValidReaderWriteIdList, ValidTxnList
from airflow_acid.compactor.errors import OutputVerificationError, describe_error
from airflow_acid.compactor.proof import final_digests
from airflow_acid.job.layout import tmp_dir_name
from airflow_acid.job.plan import BASE_WRITING_TYPES, Compaction
from airflow_acid.job.result import CompactionResult
from airflow_acid.metastore.compactions import CompactionInfo
from airflow_acid.metastore.errors import NoSuchObjectError
from airflow_acid.metastore.runs import RunFigures
from airflow_acid.metastore.store import Metastore
from airflow_acid.pycompat import StrEnum

log = logging.getLogger(__name__)


class RowOwner(StrEnum):
    """Who holds a queue row an attempt claimed (:meth:`Committer.owner`)."""

    OURS = "ours"
    """Queued and recording this attempt (its txn, or before set_running its worker id)."""
    OTHER = "other"
    """Revoked and claimed again by another attempt."""
    GONE = "gone"
    """In the history (or deleted)."""


class Committer:
    """The metastore side of finishing an attempt: marking its row compacted (only while the row is still ours)
    and recording the run's figures."""

    def __init__(self, metastore: Metastore) -> None:
        self.metastore = metastore

    def owner(self, info: CompactionInfo, txn_id: int | None) -> RowOwner:
        """Whether the row ``info`` (as claimed) still records the attempt with compactor transaction ``txn_id``."""
        try:
            current = self.metastore.compactions.get(info.id)
        except NoSuchObjectError:
            return RowOwner.GONE
        if not current.state.is_queued:
            return RowOwner.GONE
        if txn_id is not None and current.txn_id is not None:
            return RowOwner.OURS if current.txn_id == txn_id else RowOwner.OTHER
        ours = current.state is CompactionState.WORKING and current.worker_id == info.worker_id
        return RowOwner.OURS if ours else RowOwner.OTHER

    def mark_compacted_if_owner(self, compaction_id: int, txn_id: int | None) -> bool:
        """'working' → 'ready for cleaning' only while the row still records this attempt's txn C."""
        return self.metastore.compactions.mark_compacted(compaction_id, txn_id=txn_id)

    def record_figures(self, info: CompactionInfo, compaction: Compaction, result: CompactionResult,
                       wall_seconds: float) -> None:
        """Store the run's figures (ACID_COMPACTION_RUNS); best effort: the compaction is committed already."""
        try:
            self.metastore.runs.record(info.id, run_figures(compaction, result, wall_seconds))
        except Exception as exc:  # noqa: BLE001 - figures are reporting, never a reason to fail a compaction
            log.warning("compaction %s of %s: recording its run figures failed: %s", info.id,
                        info.full_partition_name, describe_error(exc))


def verify_output(compaction: Compaction, result: CompactionResult, txns: ValidTxnList, *,
                  filesystem: fsspec.AbstractFileSystem | None = None) -> None:
    """Check a successful job's output before C commits (raises :class:`OutputVerificationError`).

    Every output directory in the result is one the plan allows and exists with ``_orc_acid_version`` = 2;
    every bucket file is a readable ACID event file carrying hive.acid.key.index, hive.acid.stats and
    hive.acid.version; files and events add up to the result's counts; and getAcidState at the snapshot in
    which C is committed (``txns``: C's own snapshot) would read the final output. Insert-only outputs instead
    hold plain ORC files named ``00000N_0`` (no ACID columns, no hive.acid.* keys, no ``_orc_acid_version``),
    and the final output holds exactly the rows of the plan's input files (a union: nothing may be lost).
    """
    where = f"compaction {compaction.id} of {compaction.location}"
    storage = storage_for(compaction.location, filesystem)
    files = storage.list_files()
    by_dir: dict[str, list[ListedFile]] = {}
    for f in files:
        top, sep, _ = f.path.partition("/")
        if sep:
            by_dir.setdefault(top, []).append(f)
    allowed = set(compaction.all_outputs)
    unexpected = [o for o in result.outputs if o not in allowed]
    if unexpected:
        raise OutputVerificationError(f"{where}: the job reports outputs {unexpected} the plan does not name")
    final = compaction.final_outputs
    if compaction.type in BASE_WRITING_TYPES and final[0] not in result.outputs:
        raise OutputVerificationError(f"{where}: the {compaction.type.keyword} compaction reports no {final[0]}")
    check = _check_plain_output if compaction.insert_only else _check_acid_output
    rows = n_files = final_rows = 0
    for out in result.outputs:
        listed = by_dir.get(out)
        if not listed and not compaction.insert_only:  # an empty MM base has no file at all
            raise OutputVerificationError(f"{where}: output directory {storage.url(out)} is missing")
        out_rows, out_files = check(storage, out, listed or [], where)
        rows += out_rows
        n_files += out_files
        final_rows += out_rows if out in final else 0
    if compaction.insert_only:
        expected = _input_rows(storage, compaction)
        if final_rows != expected:
            raise OutputVerificationError(f"{where}: the output {list(final)} holds {final_rows} rows but the "
                                          f"plan's input files hold {expected}")
    if rows != result.rows_out or n_files != result.files:
        raise OutputVerificationError(f"{where}: the output holds {rows} events in {n_files} files but the job "
                                      f"reports {result.rows_out} events in {result.files} files")
    if not compaction.insert_only:
        check_output_layout(storage, files, result.outputs, where)
    wil = compaction.write_id_list
    reader = ValidReaderWriteIdList(table=wil.table, high_watermark=wil.high_watermark, aborted=wil.aborted)
    state = get_acid_state(files, reader, txns, metadata_reader=lambda p: storage.read_bytes(p).decode())
    written = [o for o in final if o in result.outputs]
    if compaction.type in BASE_WRITING_TYPES:
        picked = state.base == final[0]
    else:
        picked = all(o in state.current_deltas for o in written)
    if not picked:
        raise OutputVerificationError(f"{where}: a reader at the committed snapshot would not select {written} "
                                      f"(it selects base {state.base} and deltas {list(state.current_deltas)})")


def check_output_layout(storage: Storage, listing: Sequence[ListedFile], outputs: Iterable[str], where: str) -> None:
    """The output directories hold no layout another engine misreads (:mod:`airflow_acid.acid.layout_check`; key
    indexes compared with the stripe counts from the tails); the first error fails the attempt."""
    errors = [f for f in check_layout(storage, listing, directories=outputs, verify_keys=False)
              if f.severity is Severity.ERROR]
    if errors:
        more = f" (and {len(errors) - 1} more layout error(s))" if len(errors) > 1 else ""
        raise OutputVerificationError(f"{where}: {errors[0].message}{more}")


def run_figures(compaction: Compaction, result: CompactionResult, wall_seconds: float) -> RunFigures:
    """What one compaction read and wrote: inputs and outputs from the job's result, deltas before (the delta
    directories the plan reads from the directory) and after (the deltas it wrote in their place)."""
    produced = {o for step in compaction.steps for o in step.outputs}
    read = {d for step in compaction.steps for d in step.deltas if d not in produced}
    final = set(compaction.final_outputs)
    after = [o for o in result.outputs if o in final and isinstance(names.parse_dir(o), names.DeltaDir)]
    digest_in, digest_out = final_digests(compaction, result)
    return RunFigures(digest_in=digest_in, digest_out=digest_out,
                      files_in=result.files_in, bytes_in=result.bytes_in, rows_in=result.rows_in,
                      files_out=result.files, bytes_out=result.bytes, rows_out=result.rows_out,
                      deltas_before=len(read), deltas_after=len(after), spark_app_id=result.app_id,
                      core_seconds=round(result.core_seconds, 3), wall_seconds=round(wall_seconds, 3))


def _check_acid_output(storage: Storage, out: str, listed: Sequence[ListedFile], where: str) -> tuple[int, int]:
    """A full-ACID output directory: ``_orc_acid_version`` = 2 and ACID event files with the hive.acid.* keys;
    returns (events, files)."""
    marker = posixpath.join(out, names.ORC_ACID_VERSION_FILE)
    if not any(f.path == marker for f in listed) or \
            storage.read_bytes(marker).strip() != str(names.ORC_ACID_VERSION).encode():
        raise OutputVerificationError(f"{where}: {storage.url(marker)} is missing or does not say "
                                      f"{names.ORC_ACID_VERSION}")
    rows = n_files = 0
    for f in listed:
        if not names.is_bucket_file(f.path.rsplit("/", 1)[-1]):
            continue
        data = open_data_file(storage, f.path, f.size, expect=FileFormat.ACID, where=out)
        missing = [k for k, v in (("hive.acid.key.index", data.key_index), ("hive.acid.stats", data.stats),
                                  ("hive.acid.version", data.acid_version)) if v is None]
        if missing:
            raise OutputVerificationError(f"{where}: {storage.url(f.path)} lacks ORC user metadata {missing}")
        rows += data.num_rows
        n_files += 1
    return rows, n_files


def _check_plain_output(storage: Storage, out: str, listed: Sequence[ListedFile], where: str) -> tuple[int, int]:
    """An insert-only output directory: only plain ORC files named ``00000N_0``, without ACID columns or
    hive.acid.* keys (as Hive's MM compactors write); returns (rows, files)."""
    rows = n_files = 0
    for f in listed:
        name = f.path.rsplit("/", 1)[-1]
        if f.path == posixpath.join(out, names.METADATA_ACID_FILE):
            continue  # an empty base's marker (spark/driver.py)
        if names.parse_original_file(name) is None:
            raise OutputVerificationError(f"{where}: {storage.url(f.path)} does not belong in an insert-only "
                                          "output (expected plain data files named like 000000_0)")
        try:
            data = open_data_file(storage, f.path, f.size, expect=FileFormat.ORIGINAL, where=out)
        except AcidFileError as exc:
            raise OutputVerificationError(f"{where}: {exc}") from None
        acid_keys = sorted(k for k in data.user_metadata if k.startswith("hive.acid."))
        if acid_keys:
            raise OutputVerificationError(f"{where}: {storage.url(f.path)} carries ACID metadata {acid_keys}")
        rows += data.num_rows
        n_files += 1
    return rows, n_files


def _input_rows(storage: Storage, compaction: Compaction) -> int:
    """Rows of the plan's input files (each input of an MM compaction is listed by exactly one step)."""
    return sum(open_data_file(storage, path).num_rows for step in compaction.steps
               for path in (*step.original_files, *step.input_files))


def remove_outputs(location: str, outputs: Iterable[str], txn_id: int, *,
                   filesystem: fsspec.AbstractFileSystem | None = None) -> list[str]:
    """Delete a compaction attempt's output and temporary directories under ``location`` (only names carrying
    ``_v<txn_id>``); returns those that existed."""
    storage = storage_for(location, filesystem)
    doomed = [*outputs, tmp_dir_name(txn_id)]
    for name in doomed:
        parsed = names.parse_dir(name)
        if parsed is not None and parsed.visibility_txn_id != txn_id:
            raise ValueError(f"refusing to remove {storage.url(name)}: it is not an output of transaction {txn_id}")
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"refusing to remove {name!r} under {location}: not a top-level directory name")
    return storage.delete_paths(doomed)


__all__ = ["Committer", "RowOwner", "remove_outputs", "run_figures", "verify_output"]
