"""Proof before commit, on the Worker: every compaction unit's rows read must equal the rows its files hold.

The job reports, per unit and output directory, the rows (and under ``compaction_verify = digest`` the content
digest, ``acid/digest.py``) it read at the compaction's snapshot and those of its files read back from storage
(``spark/output_check.py``). :func:`verify_proof` refuses the commit on any difference, naming the unit, the counts
and whether the digests differ; the Worker then fails the compaction, which removes its output.
"""

from __future__ import annotations

from airflow_acid.acid.digest import RowDigest
from airflow_acid.compactor.errors import OutputVerificationError
from airflow_acid.job.plan import Compaction
from airflow_acid.job.result import CompactionResult, OutputCheck
from airflow_acid.job.verify import VERIFY_MODES


def verify_proof(compaction: Compaction, result: CompactionResult) -> None:
    """Raise :class:`OutputVerificationError` unless every unit's output matches what it read (``compaction.verify``
    says how strictly; ``off`` checks nothing)."""
    mode = compaction.verify
    if mode == "off":
        return
    where = f"compaction {compaction.id} of {compaction.location}"
    if result.verify != mode:
        raise OutputVerificationError(
            f"{where}: compaction_verify={mode} but the job checked {result.verify or 'nothing'} (a compaction job "
            f"of another release?); run the job of this release, or set [acid] compaction_verify to one of "
            f"{', '.join(m for m in VERIFY_MODES if m != mode)}")
    if result.files and not result.checks:
        raise OutputVerificationError(f"{where}: the job wrote {result.files} files but reports no output checks")
    for check in result.checks:
        problem = _difference(check, mode)
        if problem is not None:
            raise OutputVerificationError(
                f"{where}: output check failed for {check.unit} (step {check.step}, {check.output}): {problem}; "
                "the output is discarded and nothing is committed")


def _difference(check: OutputCheck, mode: str) -> str | None:
    counts = f"read {check.rows_read} rows, the written files hold {check.rows_written}"
    if mode == "digest":
        if check.read_digest is None or check.written_digest is None:
            return f"{counts}; the job reports no digests"
        if check.read_digest != check.written_digest:
            read, written = RowDigest.from_text(check.read_digest), RowDigest.from_text(check.written_digest)
            return f"{counts}; the digests differ (read {read.short()}, written {written.short()})"
    if check.rows_read != check.rows_written:
        return counts
    return None


def final_digests(compaction: Compaction, result: CompactionResult) -> tuple[str | None, str | None]:
    """(read, written) digests of the compaction's final step, every unit combined — what the run history keeps;
    (None, None) without digests."""
    last = len(compaction.steps) - 1
    checks = [c for c in result.checks if c.step == last]
    if result.verify != "digest" or any(c.read_digest is None or c.written_digest is None for c in checks):
        return None, None
    read, written = RowDigest(), RowDigest()
    for c in checks:
        read = read.combine(RowDigest.from_text(c.read_digest or ""))
        written = written.combine(RowDigest.from_text(c.written_digest or ""))
    return read.to_text(), written.to_text()


__all__ = ["final_digests", "verify_proof"]
