"""Layouts other engines misread: check a table or partition directory for files Hive reads one way and Trino,
Impala or a plain ORC reader another (or not at all), and say who reads each one wrongly and how.

The check takes the directory's listing (:meth:`Storage.list_files`) and opens data files' tails (and, to compare
the key index, the key columns) only where a rule needs them. It never changes anything. The CLI's ``check`` and
the compactor's pre-commit verification both use it (docs/operations.md#layout-check).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_acid.acid import names
from airflow_acid.acid.errors import AcidFileError, AcidNameError
from airflow_acid.acid.event_reader import FileFormat, OrcDataFile, open_data_file
from airflow_acid.acid.event_schema import AcidKey
from airflow_acid.acid.fs import ListedFile, Storage
from airflow_acid.pycompat import StrEnum

_COPY_RE = re.compile(r"_copy_[0-9]+$")
_MARKERS = (names.ORC_ACID_VERSION_FILE, names.METADATA_ACID_FILE)


class Severity(StrEnum):
    """How bad a finding is: an ERROR makes some engine return wrong rows (or fail); a WARNING is a layout Hive
    reads correctly that another reader, or a later change to the directory, can get wrong."""

    ERROR = "error"
    WARNING = "warning"


class Problem(StrEnum):
    """What is wrong with a file or directory (the ``code`` of a finding)."""

    DELETE_DELTA_ATTEMPT_SUFFIX = "delete-delta-attempt-suffix"
    COPY_IN_ACID_DIRECTORY = "copy-in-acid-directory"
    NESTED_DIRECTORY = "nested-directory"
    ORIGINALS_BESIDE_BASE = "originals-beside-base"
    ORIGINALS_BESIDE_DELTAS = "originals-beside-deltas"
    ORIGINAL_NAME_NOT_BUCKET = "original-name-not-bucket"
    MIXED_FILE_FORMATS = "mixed-file-formats"
    MISSING_ACID_VERSION = "missing-acid-version"
    KEY_INDEX_MISMATCH = "key-index-mismatch"
    UNPARSEABLE_NAME = "unparseable-name"
    UNREADABLE_FILE = "unreadable-file"


@dataclass(frozen=True)
class Misread:
    """One engine and what it does with the layout."""

    engine: str
    effect: str


@dataclass(frozen=True)
class Finding:
    """One problem at one path (relative to the checked directory)."""

    path: str
    problem: Problem
    severity: Severity
    message: str
    misread_by: tuple[Misread, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"path": self.path, "problem": self.problem.value, "severity": self.severity.value,
                "message": self.message, "misread_by": [{"engine": m.engine, "effect": m.effect}
                                                        for m in self.misread_by]}


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)


# --- what each layout does to which reader ---------------------------------------------------------------------

_TRINO_ATTEMPT = Misread(
    "Trino", "looks a delete delta's file up by the name bucket_N with the attempt suffix cut off, finds no such "
             "file and skips it without an error: the deleted rows reappear in Trino")
_HIVE_READS = Misread("Hive", "reads it correctly (the bucket pattern allows an attempt suffix)")
_COPY_EFFECTS = (
    Misread("Hive", "takes a bucket's events from one file per bucket; a copy is a second file for the same bucket, "
                    "outside the bucket file pattern, which the merge and split logic do not expect (events read "
                    "twice or under the wrong bucket)"),
    Misread("Trino", "reads every file of an insert delta but looks a delete delta's events up under the name "
                     "bucket_N only: delete events in a copy are never applied and the deleted rows reappear"))
_NESTED_ACID_EFFECTS = (
    Misread("Hive", "lists the partition recursively and counts files below the sub-directory as the delta's"),
    Misread("Trino", "skips every file below a sub-directory of a base or delta: rows missing, or deletes not "
                     "applied; on a bucketed table it fails the query calling the table corrupt"))
_NESTED_ORIGINAL_EFFECTS = (
    Misread("Hive", "reads every file below a non-ACID sub-directory as an original file, recursively"),
    Misread("Trino", "also reads them recursively, numbering their rows by full path"),
    Misread("plain readers", "a reader that is not ACID-aware and lists the location one level deep (Hadoop's "
                             "default input listing) misses these files or fails on the directory"))
_ORIGINAL_NAME_EFFECTS = (
    Misread("Hive", "takes an original file's bucket from its name (000001_0 is bucket 1) to match delete events; "
                    "another name gives no bucket, so delete events of its rows miss them"),
    Misread("Trino", "requires a bucket-shaped name for every original file of a transactional table and fails "
                     "the query otherwise"))
_BESIDE_BASE_EFFECTS = (
    Misread("Hive", "ignores original files once a base exists (the base replaced them) and its Cleaner deletes "
                    "them: rows put there after the table was converted are lost"),
    Misread("plain ORC readers", "a reader that does not apply ACID (Spark's built-in ORC source, an external "
                                 "table on the location) reads them next to the base: rows twice"))
_BESIDE_DELTAS_EFFECTS = (
    Misread("Hive", "gives original rows synthetic ROW__IDs from the files' path order: adding, renaming or removing "
                    "an original file renumbers rows, so pending delete events hit other rows"),
    Misread("Trino", "numbers original rows the same way; the same renumbering applies"))
_MIXED_EFFECTS = (
    Misread("Hive", "decides whether a directory holds raw (original) or ACID files by opening ONE file; the other "
                    "kind in the same directory is then read with the wrong schema or wrong ROW__IDs"),
    Misread("Trino", "tells files apart by directory and name, not content: a file of the other kind fails the "
                     "query or is read with synthetic ROW__IDs"))
_ROOT_ACID_EFFECTS = (
    Misread("Hive", "counts every file outside base and delta directories as an original file, whatever it holds"),
    Misread("Trino", "reads root files as original files: an ACID event file there fails the query or is read "
                     "with wrong ROW__IDs"))
_NO_VERSION_FALLBACK = (
    Misread("Hive", "reads it (ACID and original files are told apart by their schema)"),
    Misread("Trino", "checks the format version in _orc_acid_version of the base or first delta and, without it, "
                     "in the data files' hive.acid.version (an extra footer read); versions before that fallback "
                     "refuse the table as pre-Hive-3 data"))
_NO_VERSION_AT_ALL = (
    Misread("Hive", "Hive 3+ writes _orc_acid_version and hive.acid.version = 2 into everything it writes; a "
                    "directory with neither looks like pre-Hive-3 ACID data, which Hive 3+ expects a major "
                    "compaction to have rewritten"),
    Misread("Trino", "fails the query: transactional tables are supported from Hive 3.0 (format version 2), and "
                     "it asks for a major compaction after the upgrade"))
_KEY_INDEX_EFFECTS = (
    Misread("Hive", "takes each stripe's last ROW__ID from hive.acid.key.index to bound the keys of a split: with "
                    "an entry count or keys that do not match the stripes a split starts or stops at the wrong row, so "
                    "rows are skipped or read twice and delete events are matched against the wrong range"),)


# --- the check --------------------------------------------------------------------------------------------------


def check_layout(storage: Storage, listing: Sequence[ListedFile] | None = None, *,
                 directories: Iterable[str] | None = None, verify_keys: bool = True) -> list[Finding]:
    """Findings for the table/partition directory ``storage`` (its listing, or ``listing`` when given).

    ``directories`` limits the check to these top-level ACID directories (the compactor checks only its output);
    ``verify_keys`` compares each key index entry with its stripe's last ROW__ID (reads the key columns), else only
    the entry count is compared with the stripe count (tails only).
    """
    files = storage.list_files() if listing is None else listing
    wanted = set(directories) if directories is not None else None
    root_files: list[ListedFile] = []
    by_dir: dict[str, list[tuple[str, ListedFile]]] = {}
    for f in files:
        parts = f.path.split("/")
        if any(names.is_hidden(p) for p in parts) or any(p in _MARKERS for p in parts[:-1]):
            continue
        if len(parts) == 1:
            if parts[0] not in _MARKERS and not parts[0].endswith(names.FLUSH_LENGTH_SUFFIX):
                root_files.append(f)
            continue
        by_dir.setdefault(parts[0], []).append(("/".join(parts[1:]), f))

    findings: list[Finding] = []
    acid_dirs: dict[str, names.BaseDir | names.DeltaDir] = {}
    original_dirs: list[str] = []
    for name in sorted(by_dir):
        if wanted is not None and name not in wanted:
            continue
        if names.dir_kind(name) is names.DirKind.ORIGINAL:
            original_dirs.append(name)
            continue
        try:
            acid_dirs[name] = names.parse_dir(name)  # type: ignore[assignment]
        except AcidNameError as exc:
            findings.append(Finding(name, Problem.UNPARSEABLE_NAME, Severity.ERROR,
                                    f"{name}: starts like an ACID directory but its name does not parse ({exc}); "
                                    "Hive fails to list the directory", (Misread("Hive", "fails the query"),)))
    for name, parsed in acid_dirs.items():
        findings += _check_acid_dir(storage, name, parsed, by_dir[name], verify_keys)
    if wanted is None:
        findings += _check_originals(storage, root_files, original_dirs, by_dir, acid_dirs)
    return findings


def _check_acid_dir(storage: Storage, name: str, parsed: names.BaseDir | names.DeltaDir,
                    entries: list[tuple[str, ListedFile]], verify_keys: bool) -> list[Finding]:
    findings: list[Finding] = []
    is_delete = isinstance(parsed, names.DeltaDir) and parsed.is_delete
    nested = sorted({inner.split("/", 1)[0] for inner, _f in entries if "/" in inner})
    for sub in nested:
        findings.append(Finding(
            f"{name}/{sub}", Problem.NESTED_DIRECTORY, Severity.ERROR,
            f"{name}/{sub}: a sub-directory inside an ACID directory; ACID writers put bucket files directly in "
            "the base or delta, so readers that list one level deep miss these files", _NESTED_ACID_EFFECTS))
    has_version = any(inner == names.ORC_ACID_VERSION_FILE for inner, _f in entries)
    data: list[ListedFile] = [f for inner, f in entries
                              if inner not in _MARKERS and not inner.endswith(names.FLUSH_LENGTH_SUFFIX)]
    opened: list[tuple[ListedFile, OrcDataFile]] = []
    for f in data:
        file_name = f.path.rsplit("/", 1)[-1]
        if _COPY_RE.search(file_name) and file_name.startswith(names.BUCKET_PREFIX):
            findings.append(_copy_finding(f.path, name))
        elif is_delete and names.is_bucket_file(file_name):
            try:
                attempt = names.parse_bucket_file(file_name).attempt_id
            except AcidNameError:
                attempt = None
            if attempt is not None:
                findings.append(Finding(
                    f.path, Problem.DELETE_DELTA_ATTEMPT_SUFFIX, Severity.ERROR,
                    f"{f.path}: a delete-delta bucket file with an attempt suffix (_{attempt}); Hive reads it, "
                    "Trino silently skips it, so rows deleted here still show in Trino",
                    (_HIVE_READS, _TRINO_ATTEMPT)))
        try:
            opened.append((f, open_data_file(storage, f.path, f.size)))
        except AcidFileError as exc:
            findings.append(Finding(f.path, Problem.UNREADABLE_FILE, Severity.ERROR,
                                    f"{f.path}: not a readable ORC file: {exc}",
                                    (Misread("every reader", "fails the query"),)))
    acid = [(f, d) for f, d in opened if d.format is FileFormat.ACID]
    plain = [(f, d) for f, d in opened if d.format is FileFormat.ORIGINAL]
    if acid and plain:
        findings.append(Finding(
            name, Problem.MIXED_FILE_FORMATS, Severity.ERROR,
            f"{name}: holds ACID event files ({', '.join(_base(f) for f, _d in acid[:3])}) and plain ORC files "
            f"without the ACID columns ({', '.join(_base(f) for f, _d in plain[:3])}) in one directory",
            _MIXED_EFFECTS))
    for f, _d in acid:
        file_name = _base(f)
        if _COPY_RE.search(file_name) and not file_name.startswith(names.BUCKET_PREFIX):
            findings.append(_copy_finding(f.path, name))
    if acid and not has_version:
        versions = [d.acid_version for _f, d in acid]
        if all(v == names.ORC_ACID_VERSION for v in versions):
            findings.append(Finding(
                name, Problem.MISSING_ACID_VERSION, Severity.WARNING,
                f"{name}: no _orc_acid_version file (Hive 3+ writers put one in every base and delta); the data "
                f"files say hive.acid.version={names.ORC_ACID_VERSION}, so readers fall back to them",
                _NO_VERSION_FALLBACK))
        else:
            findings.append(Finding(
                name, Problem.MISSING_ACID_VERSION, Severity.ERROR,
                f"{name}: no _orc_acid_version file and data files without hive.acid.version="
                f"{names.ORC_ACID_VERSION}; the directory reads as pre-Hive-3 ACID data", _NO_VERSION_AT_ALL))
    for f, d in acid:
        finding = _check_key_index(f.path, d, verify_keys)
        if finding is not None:
            findings.append(finding)
    return findings


def _copy_finding(path: str, directory: str) -> Finding:
    return Finding(path, Problem.COPY_IN_ACID_DIRECTORY, Severity.ERROR,
                   f"{path}: a _copy_N file in the full-ACID directory {directory} (a copy made when a file was "
                   "moved onto an existing name); one bucket must be one bucket_N file", _COPY_EFFECTS)


def _check_key_index(path: str, data: OrcDataFile, verify_keys: bool) -> Finding | None:
    """The key index against the stripes: one entry per stripe, each the stripe's last ROW__ID."""
    try:
        index = data.key_index
    except AcidFileError as exc:
        return Finding(path, Problem.KEY_INDEX_MISMATCH, Severity.ERROR,
                       f"{path}: hive.acid.key.index does not parse: {exc}", _KEY_INDEX_EFFECTS)
    if index is None:
        return None  # Hive 3's query-based compactor writes none: readers then do without
    if len(index) != data.num_stripes:
        return Finding(path, Problem.KEY_INDEX_MISMATCH, Severity.ERROR,
                       f"{path}: hive.acid.key.index has {len(index)} entries but the file has {data.num_stripes} "
                       "stripes", _KEY_INDEX_EFFECTS)
    if not verify_keys:
        return None
    for i, expected in enumerate(index):
        last = _last_key(data, i)
        if last is not None and last != expected:
            return Finding(path, Problem.KEY_INDEX_MISMATCH, Severity.ERROR,
                           f"{path}: hive.acid.key.index says stripe {i} ends with ROW__ID "
                           f"({expected[0]},{expected[1]},{expected[2]}) but its last row is "
                           f"({last[0]},{last[1]},{last[2]})", _KEY_INDEX_EFFECTS)
    return None


def _last_key(data: OrcDataFile, stripe: int) -> AcidKey | None:
    last = None
    for batch in data.iter_batches(row_columns=[], stripes=(stripe, stripe + 1)):
        if batch.num_rows:
            last = batch.slice(batch.num_rows - 1)
    if last is None:
        return None
    return AcidKey(int(last.column(1)[0].as_py()), int(last.column(2)[0].as_py()), int(last.column(3)[0].as_py()))


def _check_originals(storage: Storage, root_files: list[ListedFile], original_dirs: list[str],
                     by_dir: dict[str, list[tuple[str, ListedFile]]],
                     acid_dirs: dict[str, names.BaseDir | names.DeltaDir]) -> list[Finding]:
    findings: list[Finding] = []
    for sub in original_dirs:
        findings.append(Finding(
            sub, Problem.NESTED_DIRECTORY, Severity.WARNING,
            f"{sub}: a sub-directory that is neither a base nor a delta; its files are original files to Hive, "
            "read recursively, and missed by readers that list the partition one level deep",
            _NESTED_ORIGINAL_EFFECTS))
    plain: list[ListedFile] = []
    for f in [*root_files, *(f for d in original_dirs for _i, f in by_dir[d])]:
        try:
            d = open_data_file(storage, f.path, f.size)
        except AcidFileError as exc:
            findings.append(Finding(f.path, Problem.UNREADABLE_FILE, Severity.ERROR,
                                    f"{f.path}: not a readable ORC file: {exc}",
                                    (Misread("every reader", "fails the query"),)))
            continue
        if d.format is FileFormat.ACID:
            findings.append(Finding(
                f.path, Problem.MIXED_FILE_FORMATS, Severity.ERROR,
                f"{f.path}: an ACID event file outside any base or delta directory, where only original "
                "(pre-ACID) files belong", _ROOT_ACID_EFFECTS))
        else:
            plain.append(f)
    if acid_dirs:
        for f in plain:
            if names.parse_original_file(_base(f)) is None:
                findings.append(Finding(
                    f.path, Problem.ORIGINAL_NAME_NOT_BUCKET, Severity.ERROR,
                    f"{f.path}: an original file of an ACID table whose name is not bucket-shaped (like 000000_0 "
                    "or 000000_0_copy_1); readers take the bucket of its rows from the name", _ORIGINAL_NAME_EFFECTS))
    originals = [f.path for f in plain]
    if not originals or not acid_dirs:
        return findings
    shown = ", ".join(originals[:3]) + (", …" if len(originals) > 3 else "")
    bases = sorted(n for n, p in acid_dirs.items() if isinstance(p, names.BaseDir))
    if bases:
        findings.append(Finding(
            ".", Problem.ORIGINALS_BESIDE_BASE, Severity.WARNING,
            f"{len(originals)} original file(s) ({shown}) beside the base {bases[-1]}: Hive no longer reads them "
            "and its Cleaner deletes them (expected only between a major compaction of a converted table and its "
            "cleaning)", _BESIDE_BASE_EFFECTS))
    else:
        findings.append(Finding(
            ".", Problem.ORIGINALS_BESIDE_DELTAS, Severity.WARNING,
            f"{len(originals)} original file(s) ({shown}) beside ACID deltas (a table converted to ACID, not yet "
            "major-compacted): their rows are numbered by file order, so the set of original files must not "
            "change until a major compaction", _BESIDE_DELTAS_EFFECTS))
    return findings


def _base(f: ListedFile) -> str:
    return f.path.rsplit("/", 1)[-1]


__all__ = ["Finding", "Misread", "Problem", "Severity", "check_layout", "has_errors"]
