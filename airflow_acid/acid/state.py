"""Directory selection: Hive's ``getAcidState`` over a listing of one table or partition directory.

Given the files under a partition directory and a snapshot (write-id list, optionally a transaction
list), decide which base, deltas and original files a reader or compactor uses, which directories
are obsolete (the Cleaner may delete them) and which are aborted — docs/hive-acid.md#directory-selection, rule by rule.
The function is pure: it never touches a filesystem (``_metadata_acid`` text comes from a callback).
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from airflow_acid.acid.errors import AcidNameError, AcidStateError, NotEnoughHistoryError
from airflow_acid.acid.names import (
    FLUSH_LENGTH_SUFFIX,
    LONG_MIN,
    METADATA_ACID_FILE,
    ORC_ACID_VERSION_FILE,
    PARSED_NAMES_CACHED,
    BaseDir,
    DeltaDir,
    DirKind,
    dir_kind,
    is_bucket_file,
    is_hidden,
    parse_base,
    parse_delta,
    parse_original_file,
)
from airflow_acid.acid.writeids import RangeResponse, ValidTxnList, ValidWriteIdList

MetadataReader = Callable[[str], str]
"""Returns the text of a ``_metadata_acid`` file, given its path relative to the partition directory."""



class DataFormat(enum.Enum):
    """``dataFormat`` of a ``_metadata_acid`` file (docs/hive-acid.md#metadata-file)."""

    COMPACTED = "compacted"
    TRUNCATED = "truncated"
    DROPPED = "dropped"


METADATA_ACID_VERSION = "0"


@dataclass(frozen=True)
class AcidMetadata:
    """Parsed ``_metadata_acid``: ``{"thisFileVersion":"0","dataFormat":"compacted"}``."""

    data_format: DataFormat
    this_file_version: str = METADATA_ACID_VERSION

    def to_json(self) -> str:
        return json.dumps({"thisFileVersion": self.this_file_version, "dataFormat": self.data_format.value},
                          separators=(",", ":"))


def parse_metadata_acid(text: str | bytes, path: str = METADATA_ACID_FILE) -> AcidMetadata:
    """Parse a ``_metadata_acid`` file; version other than "0" or an unknown format is an error naming ``path``."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise AcidStateError(f"{path}: _metadata_acid is not valid JSON ({exc}); expected "
                             '{"thisFileVersion":"0","dataFormat":"compacted|truncated|dropped"}') from None
    if not isinstance(doc, dict):
        raise AcidStateError(f"{path}: _metadata_acid must hold a JSON object, found {type(doc).__name__}")
    version = doc.get("thisFileVersion")
    if version != METADATA_ACID_VERSION:
        raise AcidStateError(f"{path}: _metadata_acid thisFileVersion is {version!r}; only "
                             f"{METADATA_ACID_VERSION!r} is supported (written by a newer Hive?)")
    fmt = doc.get("dataFormat")
    try:
        data_format = DataFormat(str(fmt).lower())
    except ValueError:
        raise AcidStateError(f"{path}: _metadata_acid dataFormat {fmt!r} is not one of "
                             f"{[f.value for f in DataFormat]}") from None
    return AcidMetadata(data_format, version)


@dataclass(frozen=True, order=True)
class AcidFile:
    """One listed file: path relative to the partition directory ('/'-separated) and its length in bytes.

    ``size`` is 0 when the listing gave plain path strings.
    """

    path: str
    size: int = 0

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class BaseEntry:
    """A base directory as listed: parsed name, data files and how it was written."""

    name: str
    dir: BaseDir
    files: tuple[AcidFile, ...]
    """Bucket files (``bucket_N[_attempt]``, no side files), sorted by path."""
    original_files: tuple[AcidFile, ...]
    """Original-named files (``000000_0[_copy_N]``) — the data of a raw-format base (LOAD DATA), sorted."""
    is_compacted: bool
    """Written by a major compaction: has a visibility suffix, or ``_metadata_acid`` says ``compacted``."""
    metadata: AcidMetadata | None
    has_acid_version_file: bool

    @property
    def write_id(self) -> int:
        return self.dir.write_id

    @property
    def visibility_txn_id(self) -> int:
        return self.dir.visibility_txn_id

    @property
    def size(self) -> int:
        """Bytes of data in the base (bucket files plus original-named files)."""
        return sum(f.size for f in self.files) + sum(f.size for f in self.original_files)


@dataclass(frozen=True)
class DeltaEntry:
    """A delta or delete-delta directory as listed: parsed name, data files and side files."""

    name: str
    dir: DeltaDir
    files: tuple[AcidFile, ...]
    """Bucket files (``bucket_N[_attempt]``, no side files), sorted by path."""
    original_files: tuple[AcidFile, ...]
    """Original-named files — the data of a raw-format delta (LOAD DATA), sorted."""
    flush_length_files: tuple[AcidFile, ...]
    """``bucket_N_flush_length`` side files of an open or crashed streaming writer (docs/hive-acid.md#flush-length),
    sorted."""
    has_acid_version_file: bool

    @property
    def min_write_id(self) -> int:
        return self.dir.min_write_id

    @property
    def max_write_id(self) -> int:
        return self.dir.max_write_id

    @property
    def statement_id(self) -> int | None:
        return self.dir.statement_id

    @property
    def visibility_txn_id(self) -> int:
        return self.dir.visibility_txn_id

    @property
    def is_delete(self) -> bool:
        return self.dir.is_delete

    @property
    def size(self) -> int:
        """Bytes of data in the delta (bucket files plus original-named files)."""
        return sum(f.size for f in self.files) + sum(f.size for f in self.original_files)

    def sort_key(self) -> tuple[int, int, int, str]:
        """Rule 9: min ascending, max descending, statement ascending (none = −1), then path."""
        return (self.dir.min_write_id, -self.dir.max_write_id, self.dir.sort_statement_id, self.name)


@dataclass(frozen=True)
class AcidState:
    """What one snapshot sees in one partition directory (docs/hive-acid.md#directory-selection rule 13), plus sizes for the
    Initiator."""

    base: str | None
    """Name of the chosen base directory, or None."""
    base_directory: BaseEntry | None
    current_deltas: tuple[str, ...]
    """Insert and delete deltas to read, in rule-9 order."""
    deltas: tuple[DeltaEntry, ...]
    """The same deltas as ``current_deltas``, parsed, with their files."""
    obsolete: tuple[str, ...]
    """Directories (and, when a base is chosen, root original files) made redundant; sorted."""
    aborted: tuple[str, ...]
    """Directories written by aborted transactions or failed compactions; sorted."""
    original_files: tuple[str, ...]
    """Original (pre-ACID) files to read, by path — only when no base is chosen; this order numbers rows."""
    originals: tuple[AcidFile, ...]
    """The same original files with sizes."""
    original_directories: tuple[str, ...]
    """Top-level sub-directories that are neither base nor delta (their files are originals); sorted."""
    aborted_write_ids: tuple[int, ...]
    """Write ids of aborted directories (aborted IOW bases, all-aborted deltas); ascending."""
    has_uncompacted_aborts: bool
    """A current delta mixes aborted and committed write ids: the abort metadata must be kept."""

    @property
    def insert_deltas(self) -> tuple[DeltaEntry, ...]:
        return tuple(d for d in self.deltas if not d.is_delete)

    @property
    def delete_deltas(self) -> tuple[DeltaEntry, ...]:
        return tuple(d for d in self.deltas if d.is_delete)

    @property
    def base_size(self) -> int:
        """docs/hive-acid.md#compaction-type step 3: bytes of the chosen base, or of the original files when there is no
        base."""
        if self.base_directory is not None:
            return self.base_directory.size
        return sum(f.size for f in self.originals)

    @property
    def delta_size(self) -> int:
        """docs/hive-acid.md#compaction-type step 3: bytes of data files in the current deltas and delete deltas."""
        return sum(d.size for d in self.deltas)

    @property
    def delta_count(self) -> int:
        """docs/hive-acid.md#compaction-type step 3: number of current deltas plus delete deltas."""
        return len(self.deltas)

    @property
    def has_obsolete_base(self) -> bool:
        """Initiator's ``multiBase``: an obsolete directory is a base."""
        return any(dir_kind(name) is DirKind.BASE for name in self.obsolete)


# ---------------------------------------------------------------------------------------------------
# Listing → per-directory groups


@dataclass
class _DirListing:
    files: list[tuple[str, AcidFile]]  # (path inside the directory, file)


def _entry(item: object) -> tuple[str, int]:
    if isinstance(item, str):
        return item, 0
    if isinstance(item, tuple) and len(item) == 2:
        return str(item[0]), int(item[1] or 0)
    try:
        return str(item.path), int(getattr(item, "size", 0) or 0)  # type: ignore[attr-defined]
    except AttributeError:
        raise AcidStateError(f"listing entry {item!r} is neither a path string, a (path, size) pair "
                             "nor an object with .path and .size") from None


def _split(path: str) -> tuple[list[str], bool]:
    is_dir = path.endswith("/")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise AcidStateError(f"listing entry {path!r} is not a path relative to the partition directory")
    return parts, is_dir


def _visible(parts: Sequence[str]) -> bool:
    """Hive's hidden filter, applied at every level: only the last component may be an ACID marker file."""
    return not any(is_hidden(p) for p in parts) and not any(
        p in (ORC_ACID_VERSION_FILE, METADATA_ACID_FILE) for p in parts[:-1])


@functools.lru_cache(maxsize=PARSED_NAMES_CACHED)
def _path_parts(path: str) -> tuple[tuple[str, ...], bool, bool]:
    """(components, names a directory, visible) of a listed path; cached — partitions repeat the same names."""
    parts, is_dir = _split(path)
    return tuple(parts), is_dir, _visible(parts)


def _is_marker_or_side_file(name: str) -> bool:
    return name in (ORC_ACID_VERSION_FILE, METADATA_ACID_FILE) or name.endswith(FLUSH_LENGTH_SUFFIX)


def _group(files: Iterable[object], ignore_empty_files: bool) -> tuple[list[AcidFile], dict[str, _DirListing]]:
    root_files: list[AcidFile] = []
    dirs: dict[str, _DirListing] = {}
    for item in files:
        raw, size = _entry(item)
        parts, is_dir, visible = _path_parts(raw)
        if not visible:
            continue
        top = parts[0]
        if len(parts) == 1 and not is_dir:
            if not _is_marker_or_side_file(top) and not (ignore_empty_files and size == 0):
                root_files.append(AcidFile(top, size))
            continue
        listing = dirs.setdefault(top, _DirListing([]))
        if len(parts) > 1 and not is_dir:
            listing.files.append(("/".join(parts[1:]), AcidFile("/".join(parts), size)))
    return root_files, dirs


def _classify(listing: _DirListing) -> tuple[list[AcidFile], list[AcidFile], list[AcidFile], bool, bool]:
    """Split a directory's files into bucket files, original-named files, side files, markers present."""
    buckets: list[AcidFile] = []
    originals: list[AcidFile] = []
    side: list[AcidFile] = []
    has_version = has_metadata = False
    for inner, f in listing.files:
        name = f.name
        if inner == ORC_ACID_VERSION_FILE:
            has_version = True
        elif inner == METADATA_ACID_FILE:
            has_metadata = True
        elif name.endswith(FLUSH_LENGTH_SUFFIX):
            side.append(f)
        elif is_bucket_file(name):
            buckets.append(f)
        elif parse_original_file(name) is not None:
            originals.append(f)
    return sorted(buckets), sorted(originals), sorted(side), has_version, has_metadata


def _parse_acid_dir(name: str, kind: DirKind) -> BaseDir | DeltaDir:
    try:
        return parse_base(name) if kind is DirKind.BASE else parse_delta(name)
    except AcidNameError as exc:
        raise AcidNameError(
            f"directory {name!r} starts with {kind.value + '_'!r}, so Hive treats it as an ACID directory, but its "
            f"name cannot be parsed ({exc}); rename or move it out of the table location") from None


# ---------------------------------------------------------------------------------------------------
# The rules


def _gate(visibility_txn_id: int, txns: ValidTxnList | None) -> tuple[bool, bool]:
    """Rule 2: (usable, aborted) for a directory's visibility txn id. No txn list = every txn committed."""
    if visibility_txn_id == 0 or txns is None:
        return True, False
    if txns.is_txn_valid(visibility_txn_id):
        return True, False
    return False, txns.is_txn_aborted(visibility_txn_id)


def _is_usable_base(base: BaseEntry, write_ids: ValidWriteIdList) -> bool:
    """Rule 5, as Hive codes it (including ``writeId <= minOpenWriteId``)."""
    w = base.write_id
    if w == LONG_MIN:
        return True
    min_open = write_ids.min_open
    if min_open is not None and w <= min_open:
        return True
    if base.is_compacted:
        return write_ids.is_valid_base(w)
    return write_ids.is_write_id_valid(w)


def _base_entry(name: str, parsed: BaseDir, listing: _DirListing,
                metadata_reader: MetadataReader | None) -> BaseEntry:
    buckets, originals, _side, has_version, has_metadata = _classify(listing)
    metadata = None
    if has_metadata and metadata_reader is not None and parsed.visibility_txn_id == 0:
        path = f"{name}/{METADATA_ACID_FILE}"
        metadata = parse_metadata_acid(metadata_reader(path), path)
    compacted = parsed.visibility_txn_id > 0 or (metadata is not None and metadata.data_format is DataFormat.COMPACTED)
    return BaseEntry(name, parsed, tuple(buckets), tuple(originals), compacted, metadata, has_version)


def _delta_entry(name: str, parsed: DeltaDir, listing: _DirListing) -> DeltaEntry:
    buckets, originals, side, has_version, _has_metadata = _classify(listing)
    return DeltaEntry(name, parsed, tuple(buckets), tuple(originals), tuple(side), has_version)


def _not_enough_history(oldest: BaseEntry, write_ids: ValidWriteIdList) -> NotEnoughHistoryError:
    exceptions = write_ids.exceptions
    first_invalid = str(exceptions[0]) if exceptions else "x"
    return NotEnoughHistoryError(
        f"not enough history: the snapshot {write_ids.to_string()!r} (high watermark "
        f"{write_ids.high_watermark}, lowest open/aborted write id {first_invalid}) cannot read this directory, "
        f"because its oldest base {oldest.name!r} was written by a compaction that already merged write ids "
        f"this snapshot must not see, and no older base or complete deltas remain. The snapshot is older than "
        f"the compaction: retry with a fresh snapshot (open a new transaction), and keep transactions short.")


def get_acid_state(
    files: Iterable[object],
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None = None,
    *,
    metadata_reader: MetadataReader | None = None,
    ignore_empty_files: bool = False,
) -> AcidState:
    """Select base, deltas and originals of one partition directory for one snapshot (docs/hive-acid.md#directory-selection).

    ``files``: paths relative to the partition directory ('/'-separated; a trailing '/' marks an
    explicitly listed, possibly empty, directory), ``(path, size)`` pairs, or objects with ``.path``
    and ``.size``. Directories are implied by the paths below them.
    ``write_ids``: a reader or compactor write-id list for the table.
    ``txns``: the transaction snapshot that gates ``_vT`` directories (rule 2). ``None`` disables the
    gate — every visibility txn counts as committed — for callers that already know all compactions in
    the listing committed (tests, offline tools); readers and the Cleaner must pass one.
    ``metadata_reader``: returns the text of a ``_metadata_acid`` file; used to recognise a Hive 3
    compacted base (no ``_v`` suffix). Without it a base is compacted iff it has a visibility suffix.
    ``ignore_empty_files``: drop zero-length original files (Hive's ``ignoreEmptyFiles``).

    Raises ``AcidNameError`` for a ``base_``/``delta_``/``delete_delta_`` directory whose name does not
    parse, ``NotEnoughHistoryError`` per rule 12, ``AcidStateError`` for a bad ``_metadata_acid``.
    """
    root_files, dirs = _group(files, ignore_empty_files)

    aborted: list[str] = []
    aborted_write_ids: set[int] = set()
    obsolete: list[str] = []
    original_dirs: list[str] = []
    bases: list[BaseEntry] = []
    candidates: list[DeltaEntry] = []
    uncompacted_aborts = False

    # Rules 1, 2, 8: classify, gate by visibility, filter deltas by the write-id list.
    for name, listing in dirs.items():
        kind = dir_kind(name)
        if kind is DirKind.ORIGINAL:
            original_dirs.append(name)
            continue
        parsed = _parse_acid_dir(name, kind)
        usable, is_aborted = _gate(parsed.visibility_txn_id, txns)
        if not usable:
            if is_aborted:
                aborted.append(name)
            continue
        if isinstance(parsed, BaseDir):
            bases.append(_base_entry(name, parsed, listing, metadata_reader))
            continue
        lo, hi = parsed.min_write_id, parsed.max_write_id
        abort_range = write_ids.is_write_id_range_aborted(lo, hi)
        if abort_range is RangeResponse.ALL:
            aborted.append(name)
            aborted_write_ids.update(range(lo, hi + 1))
            continue
        if abort_range is RangeResponse.SOME:
            uncompacted_aborts = True
        if write_ids.is_write_id_range_valid(lo, hi) is not RangeResponse.NONE:
            candidates.append(_delta_entry(name, parsed, listing))

    # Rules 3-6: oldest base, aborted IOW bases, usable bases, the choice and obsolete bases.
    oldest: BaseEntry | None = None
    if bases:
        low = min(b.write_id for b in bases)
        lowest = [b for b in bases if b.write_id == low]
        oldest = next((b for b in lowest if b.is_compacted), lowest[0])
    live_bases: list[BaseEntry] = []
    for b in bases:
        if write_ids.is_write_id_aborted(b.write_id) and not b.is_compacted:
            aborted.append(b.name)
            aborted_write_ids.add(b.write_id)
        else:
            live_bases.append(b)
    usable_base = {b.name: _is_usable_base(b, write_ids) for b in live_bases}
    chosen: BaseEntry | None = None
    for b in live_bases:
        # Highest write id; on a tie the compacted base wins (HIVE-25777), then the later compaction.
        if usable_base[b.name] and (chosen is None or (b.write_id, b.is_compacted, b.visibility_txn_id)
                               > (chosen.write_id, chosen.is_compacted, chosen.visibility_txn_id)):
            chosen = b
    if chosen is not None:
        for b in live_bases:
            if b is not chosen and (b.write_id < chosen.write_id
                                    or (b.write_id == chosen.write_id and usable_base[b.name])):
                obsolete.append(b.name)

    # Rule 12: a compacted oldest base but nothing usable.
    if oldest is not None and chosen is None and oldest.is_compacted:
        raise _not_enough_history(oldest, write_ids)

    # Rule 7: originals only without a base.
    originals: list[AcidFile] = []
    if chosen is not None:
        obsolete.extend(f.path for f in root_files)
        obsolete.extend(original_dirs)
    else:
        originals.extend(root_files)
        for name in original_dirs:
            for _inner, f in dirs[name].files:
                if not _is_marker_or_side_file(f.name) and not (ignore_empty_files and f.size == 0):
                    originals.append(f)
        originals.sort()

    # Rules 9-10: sort once, then the cover walk.
    candidates.sort(key=DeltaEntry.sort_key)
    current = chosen.write_id if chosen is not None else 0
    last_stmt = -1
    prev: DeltaEntry | None = None
    selected: list[DeltaEntry] = []
    for d in candidates:
        if d.max_write_id > current:
            if write_ids.is_write_id_range_valid(current + 1, d.max_write_id) is not RangeResponse.NONE:
                selected.append(d)
                current, last_stmt, prev = d.max_write_id, d.dir.sort_statement_id, d
        elif d.max_write_id == current and last_stmt >= 0:
            selected.append(d)
            prev = d
        elif (prev is not None and d.min_write_id == prev.min_write_id and d.max_write_id == prev.max_write_id
              and d.dir.sort_statement_id == prev.dir.sort_statement_id):
            selected.append(d)
            prev = d
        else:
            obsolete.append(d.name)

    return AcidState(
        base=chosen.name if chosen is not None else None,
        base_directory=chosen,
        current_deltas=tuple(d.name for d in selected),
        deltas=tuple(selected),
        obsolete=tuple(sorted(obsolete)),
        aborted=tuple(sorted(aborted)),
        original_files=tuple(f.path for f in originals),
        originals=tuple(originals),
        original_directories=tuple(sorted(original_dirs)),
        aborted_write_ids=tuple(sorted(aborted_write_ids)),
        has_uncompacted_aborts=uncompacted_aborts,
    )
