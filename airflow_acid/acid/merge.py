"""Merge-on-read: base (or original files) + insert deltas − delete events, at one snapshot, into pyarrow.

Work goes bucket by bucket: the delete keys of one bucket are loaded (only events whose own write id is valid in
the snapshot; streamed in key order beyond ``hive.transactional.events.mem``: acid/delete_events.py), then that
bucket's data is streamed stripe by stripe, each event filtered by its own write id
(``currentTransaction``) and by the delete keys (vectorised ``is_in`` on packed ROW__IDs). Original files get
synthetic ROW__IDs (docs/hive-acid.md#original-files): originalTransaction 0, bucket = BucketCodec V1 of the bucket id in the
file name, rowId = running row offset across that bucket's original files in path order.

Only what a read needs is decoded (:meth:`_Reader._event_key_columns`): the read columns, and the ACID columns only
for files a delete event may touch or whose write ids the snapshot does not all accept.

Output order: bucket id, then file order (original files / base, then deltas in getAcidState order), which is
(originalTransaction, bucket, rowId) order for every layout Hive produces; :func:`read_acid_table` checks that and
sorts a bucket if it is not.
"""

from __future__ import annotations

import bisect
import enum
import posixpath
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.delete_events import DeleteEvents, DeleteFilter, valid_write_id_mask
from airflow_acid.acid.delete_settings import DEFAULT_EVENTS_MEM
from airflow_acid.acid.errors import AcidFileError, AcidNameError, AcidSchemaError, TimestampFormError, TimestampRangeError
from airflow_acid.acid.event_reader import FileFormat, KeyInterval, OrcDataFile, open_data_file, read_flush_length
from airflow_acid.acid.event_schema import (
    BUCKET,
    CURRENT_TRANSACTION,
    KEY_FIELDS,
    OPERATION,
    ORIGINAL_TRANSACTION,
    ROW,
    ROW_ID,
    Operation,
)
from airflow_acid.acid.event_writer import decoded_bucket_ids
from airflow_acid.acid.fs import ListedFile, Storage, storage_for
from airflow_acid.acid.hive_chars import conform as conform_chars
from airflow_acid.acid.state import AcidState, get_acid_state
from airflow_acid.acid.timestamps import (
    convert,
    has_timestamps,
    is_out_of_nanosecond_range,
    is_timestamp_type,
    keep_timestamp_forms,
    narrowest_table,
    same_but_timestamps,
    wide_schema,
)
from airflow_acid.acid.writeids import ValidTxnList, ValidWriteIdList

ROW_ID_COLUMNS: tuple[str, ...] = KEY_FIELDS
"""Columns added by ``include_row_ids``: the ROW__ID triple (originalTransaction, bucket, rowId)."""

_KEY_TYPES = {ORIGINAL_TRANSACTION: pa.int64(), BUCKET: pa.int32(), ROW_ID: pa.int64()}

FILE_NAME_COLUMN = "INPUT__FILE__NAME"
"""Hive's virtual column: the file a row was read from, as a URI (``file:/…`` locally, ``s3://…``)."""
IS_DELETED_COLUMN = "ROW__IS__DELETED"
"""Hive 4's virtual column of a read with ``acid.fetch.deleted.rows``: whether a delete event removed the row."""


@dataclass(frozen=True)
class VirtualColumns:
    """Which of Hive's virtual columns a read appends after the table columns."""

    file_name: bool = False
    """:data:`FILE_NAME_COLUMN`."""
    deleted_rows: bool = False
    """Keep rows a delete event removed, flagged in :data:`IS_DELETED_COLUMN` (Hive's ``acid.fetch.deleted.rows``)."""

    def fields(self) -> list[pa.Field]:
        return ([pa.field(FILE_NAME_COLUMN, pa.string())] if self.file_name else []) + \
            ([pa.field(IS_DELETED_COLUMN, pa.bool_())] if self.deleted_rows else [])


class SourceKind(enum.Enum):
    """How rows of a data file get their ROW__IDs."""

    EVENTS = "events"          # ACID event file (base, delta, or an ACID file among the originals)
    ORIGINAL = "original"      # pre-ACID file in the table directory: synthetic ids, originalTransaction 0
    RAW = "raw"                # original-format file inside base_W / delta_W_W (LOAD DATA): originalTransaction W


@dataclass(frozen=True)
class DataSource:
    """One file to read for a bucket."""

    path: str
    size: int
    kind: SourceKind
    directory: str | None = None
    write_id: int = 0
    """Synthetic originalTransaction for ORIGINAL/RAW files."""
    side_file: str | None = None
    """``_flush_length`` side file bounding the readable length (streaming deltas)."""
    stripes: tuple[int, int] | None = None
    """Only these stripes (half-open range) of an ACID event file: one split of a large bucket. Every event row
    stands alone given the bucket's delete events, so splits merge independently."""


@dataclass(frozen=True)
class BucketPlan:
    """Everything to read for one bucket id: data in read order and delete-event files."""

    bucket_id: int
    data: tuple[DataSource, ...]
    deletes: tuple[DataSource, ...]


@dataclass(frozen=True)
class MergePlan:
    """The files of one snapshot of one partition, grouped by bucket id (ascending)."""

    buckets: tuple[BucketPlan, ...]

    @property
    def data_files(self) -> list[DataSource]:
        return [s for b in self.buckets for s in b.data]


def _bucket_of_original(name: str) -> int:
    parsed = names.parse_original_file(name)
    if parsed is not None:
        return parsed.bucket_id
    try:
        return names.parse_bucket_file(name).bucket_id
    except AcidNameError:
        return 0  # Hive cannot parse a bucket id either; such files land in bucket 0


def plan_merge(files: Iterable[ListedFile], *, base: str | None, original_files: Sequence[str],
               deltas: Sequence[str], compacted_base: bool = False) -> MergePlan:
    """Group a listing's files by bucket for an explicit selection (base dir / originals / ordered deltas).

    Bucket files must be ACID event files; original-named files inside ``base_W`` (LOAD DATA / INSERT OVERWRITE, or an
    insert-only table's major compaction), an insert ``delta_W_W`` or an insert-only minor compaction's
    ``delta_V_W_vC`` are plain rows with originalTransaction W; anywhere else they are an error.
    ``compacted_base`` is accepted for callers that pass it; plain files read the same in any base.
    """
    by_dir: dict[str, list[ListedFile]] = defaultdict(list)
    sizes: dict[str, int] = {}
    for f in files:
        sizes[f.path] = f.size
        if "/" in f.path:
            by_dir[f.path.split("/", 1)[0]].append(f)
    data: dict[int, list[DataSource]] = defaultdict(list)
    deletes: dict[int, list[DataSource]] = defaultdict(list)

    for path in sorted(original_files):
        name = posixpath.basename(path)
        data[_bucket_of_original(name)].append(DataSource(path, sizes.get(path, -1), SourceKind.ORIGINAL))

    def add_dir(dirname: str, *, delete: bool, raw_write_id: int | None, side_files: bool) -> None:
        present = {f.path for f in by_dir.get(dirname, [])}
        for f in sorted(by_dir.get(dirname, [])):
            inner = f.path[len(dirname) + 1:]
            if "/" in inner or names.is_hidden(inner) or inner.endswith(names.FLUSH_LENGTH_SUFFIX):
                continue
            if names.is_bucket_file(inner):
                try:
                    bucket = names.parse_bucket_file(inner).bucket_id
                except AcidNameError:
                    continue
                side = f"{f.path}{names.FLUSH_LENGTH_SUFFIX}"
                src = DataSource(f.path, f.size, SourceKind.EVENTS, dirname,
                                 side_file=side if side_files and side in present else None)
                (deletes if delete else data)[bucket].append(src)
            elif names.parse_original_file(inner) is not None:
                if raw_write_id is None:
                    raise AcidFileError(f.path, f"an original-format (raw) file cannot be part of {dirname}: only "
                                                "an insert delta_W_W, a base_W or an insert-only table's compacted "
                                                "delta_V_W_vC may hold plain (LOAD DATA or insert-only) files")
                data[_bucket_of_original(inner)].append(
                    DataSource(f.path, f.size, SourceKind.RAW, dirname, write_id=raw_write_id))

    if base is not None:
        # Plain files in a compacted base are an insert-only table's major compaction output (Hive's MM major
        # writes ``base_W_vC/000000_0``); their rows are all older than W, so W stands for their write id.
        add_dir(base, delete=False, raw_write_id=names.parse_base(base).write_id, side_files=False)
    for dirname in deltas:
        d = names.parse_delta(dirname)
        raw = None
        if not d.is_delete and d.min_write_id == d.max_write_id:
            raw = d.min_write_id
        elif not d.is_delete and d.visibility_txn_id > 0:
            raw = d.max_write_id  # an insert-only minor compaction's delta_V_W_vC of plain files
        streaming = not d.is_delete and d.min_write_id != d.max_write_id and d.visibility_txn_id <= 0
        add_dir(dirname, delete=d.is_delete, raw_write_id=raw, side_files=streaming)

    ids = sorted(set(data) | set(deletes))
    return MergePlan(tuple(BucketPlan(b, tuple(data.get(b, ())), tuple(deletes.get(b, ()))) for b in ids))


def plan_from_state(state: AcidState, files: Iterable[ListedFile]) -> MergePlan:
    """A merge plan for what :func:`get_acid_state` selected."""
    compacted = state.base_directory.is_compacted if state.base_directory is not None else False
    return plan_merge(files, base=state.base, original_files=state.original_files, deltas=state.current_deltas,
                      compacted_base=compacted)


# ---------------------------------------------------------------------------------------------------
# Snapshot filtering and delete keys


_PACKED = np.dtype([("o", "<i8"), ("b", "<i4"), ("r", "<i8")])


def pack_keys(o: np.ndarray, b: np.ndarray, r: np.ndarray) -> pa.Array:
    """ROW__IDs as 20-byte binary values, so one hash lookup compares all three fields."""
    packed = np.empty(len(o), dtype=_PACKED)
    packed["o"], packed["b"], packed["r"] = o, b, r
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(20), len(o), [None, pa.py_buffer(packed.tobytes())])


def _np(array: pa.Array) -> np.ndarray:
    values: np.ndarray = array.to_numpy(zero_copy_only=False)
    return values


@dataclass(frozen=True)
class Deletes:
    """The bucket's delete filter, when it is needed (it may still be being read on the read-ahead thread).

    ``max_write_id`` is the highest write id of the bucket's delete deltas (-1: none): a delete event at write id W
    only deletes rows inserted at or before W, so a file whose rows were all inserted later needs no delete lookup
    (Hive's ``isQualifiedDeleteDeltaForSplit``)."""

    pending: Future[DeleteFilter | None] | None = None
    max_write_id: int = -1

    @classmethod
    def ready(cls, delete_filter: DeleteFilter | None, max_write_id: int) -> Deletes:
        """A filter already built (the streamed cursor: nothing to wait for)."""
        done: Future[DeleteFilter | None] = Future()
        done.set_result(delete_filter)
        return cls(done, max_write_id)

    def __call__(self) -> DeleteFilter | None:
        return self.pending.result() if self.pending is not None else None

    def may_touch(self, lo: tuple[int, int, int], hi: tuple[int, int, int]) -> bool:
        """Whether a delete event may fall in the ROW__ID range [lo, hi]; from the filter when it is ready (a
        streamed cursor always says it may), else from the delete deltas' write ids (no waiting)."""
        if self.pending is None or lo[0] > self.max_write_id:
            return False
        if not self.pending.done():
            return True
        delete_filter = self.pending.result()
        return delete_filter is not None and delete_filter.may_touch(lo, hi)


READ_AHEAD_BYTES = 8 << 20
"""Event files up to this many bytes on storage, in all, are read ahead of the current file on a second thread
(bench_merge_on_read.py: a base and 20 small deltas). Kept small: a compaction's memory holds them decoded."""


def _read_ahead(src: DataSource) -> bool:
    """Only ACID event files are read ahead: original files number their rows in order, file after file."""
    return src.kind is SourceKind.EVENTS and 0 < src.size <= READ_AHEAD_BYTES


SLICE_BYTES = 16 << 20
"""Decoded stripes are merged in slices of about this many bytes: a 64 MiB ZLIB stripe can decode to ~1 GB, and every
step after decoding (masks, filtering, the compaction writer's input) then copies a slice, not the whole stripe
(bench_compaction_anchor.py, 0.28 GiB bucket: peak RSS 1976 MiB unsliced, 1607 MiB at 64 MiB, 1470 MiB at 16 MiB)."""


def _slices(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each batch as zero-copy slices of at most about :data:`SLICE_BYTES`."""
    for batch in batches:
        n = batch.num_rows
        if n < 2 or batch.nbytes <= SLICE_BYTES:
            yield batch
            continue
        step = max(1, n * SLICE_BYTES // batch.nbytes)
        for start in range(0, n, step):
            yield batch.slice(start, step)


_INT32, _INT64 = np.iinfo(np.int32), np.iinfo(np.int64)
_LOWEST_KEY = (int(_INT64.min), int(_INT32.min), int(_INT64.min))
_HIGHEST_KEY = (int(_INT64.max), int(_INT32.max), int(_INT64.max))


def _write_id_range(directory: str | None) -> tuple[int, int] | None:
    """Write ids an event file's rows were inserted by, from its directory's name: ``delta_x_y`` holds inserts of
    write ids x..y, ``base_W`` of write ids up to W; None when the name tells nothing (an ACID file among the
    original files)."""
    try:
        parsed = names.parse_dir(directory) if directory is not None else None
    except AcidNameError:
        return None
    if isinstance(parsed, names.BaseDir):
        return 0, parsed.write_id
    if isinstance(parsed, names.DeltaDir):
        return parsed.min_write_id, parsed.max_write_id
    return None


def _max_write_id(deletes: Sequence[DataSource]) -> int:
    """The highest write id of these delete-delta files (a directory without one counts as any)."""
    ranges = [_write_id_range(src.directory) for src in deletes]
    return max((int(_INT64.max) if w is None else w[1] for w in ranges), default=-1)


def _event_key_range(f: OrcDataFile, src: DataSource) -> tuple[tuple[int, int, int], tuple[int, int, int],
                                                               tuple[int, int] | None]:
    """Inclusive bounds of an event file's ROW__IDs and the range of its write ids (None: unknown).

    Rows of a directory for write ids x..y have originalTransaction and currentTransaction in [x, y] (as Hive's
    split reader assumes); the ``hive.acid.key.index`` gives the file's last key exactly when it covers every
    stripe (a streaming file read to an earlier flush may carry an index of fewer)."""
    write_ids = _write_id_range(src.directory)
    if write_ids is None:
        return _LOWEST_KEY, _HIGHEST_KEY, None
    stats = f.stats  # update events (ACID v1) keep the row's older originalTransaction
    lo = (write_ids[0], _LOWEST_KEY[1], _LOWEST_KEY[2]) if stats is not None and not stats.updates else _LOWEST_KEY
    hi = (write_ids[1], _HIGHEST_KEY[1], _HIGHEST_KEY[2])
    index = f.stripe_keys
    if index:
        hi = min(hi, index[-1])
        split = f.key_interval(src.stripes)  # a stripe range: its keys lie above the previous stripe's last key
        if split.after is not None:
            lo = max(lo, split.after)
        if split.upto is not None:
            hi = min(hi, split.upto)
    return lo, hi, write_ids


def _all_valid(write_ids: ValidWriteIdList, lo: int, hi: int) -> bool:
    """Whether the snapshot accepts every write id in [lo, hi] (then no row needs its currentTransaction read)."""
    exceptions = write_ids.exceptions
    return hi <= write_ids.high_watermark and bisect.bisect_left(exceptions, lo) == bisect.bisect_right(exceptions, hi)


class _Reader:
    """Shared state of one merge: storage, snapshot, table schema, projection."""

    def __init__(self, storage: Storage, write_ids: ValidWriteIdList, schema: pa.Schema,
                 read_columns: Sequence[int], floor_timestamps: bool = False,
                 events_mem: int = DEFAULT_EVENTS_MEM, *, keys: bool = True,
                 virtual: VirtualColumns = VirtualColumns()) -> None:
        self.storage = storage
        self.virtual = virtual
        self.write_ids = write_ids
        self.schema = schema
        self.read_columns = list(read_columns)
        self.floor_timestamps = floor_timestamps
        self.keys = keys or not self.read_columns
        """Whether batches carry the ROW__ID columns. Without them, an event file's key columns are decoded only
        where a delete event may touch it (a batch of no columns would lose its row count: then they always are)."""
        self.events_mem = events_mem
        self.bounded_splits = True
        """Read a split's delete events over its keys' interval only (False: every event, as for a whole bucket)."""

    def open(self, src: DataSource, expect: FileFormat | None) -> OrcDataFile:
        length = read_flush_length(self.storage, src.side_file) if src.side_file else None
        return open_data_file(self.storage, src.path, src.size if src.size >= 0 else None, logical_length=length,
                              expect=expect, where=src.directory)

    # -- deletes -----------------------------------------------------------------------------------
    def delete_events(self, bucket: BucketPlan) -> DeleteEvents:
        """The bucket's delete deltas, opened: their footers' row counts choose in-memory or streamed deletes. A
        split (stripe ranges of event files) reads only the delete events in its keys' interval
        (:meth:`split_bounds`)."""
        files = tuple(self.open(src, FileFormat.ACID) for src in bucket.deletes if src.size != 0)
        bounds = self.split_bounds(bucket) if files and self.bounded_splits else KeyInterval()
        return DeleteEvents(files, self.write_ids, self.events_mem, bounds)

    def split_bounds(self, bucket: BucketPlan) -> KeyInterval:
        """The keys a split's rows can have, when every data file of it is a stripe range of an event file: keys >
        the last key before its first stripe and ≤ its last stripe's last key (``hive.acid.key.index``); no bound
        for whole files or without a usable key index."""
        sources = [src for src in bucket.data if src.size != 0]
        if not sources or any(src.kind is not SourceKind.EVENTS or src.stripes is None for src in sources):
            return KeyInterval()
        intervals = [self.open(src, FileFormat.ACID).key_interval(src.stripes) for src in sources]
        afters, uptos = [i.after for i in intervals], [i.upto for i in intervals]
        return KeyInterval(None if None in afters else min(a for a in afters if a is not None),
                           None if None in uptos else max(u for u in uptos if u is not None))

    # -- data --------------------------------------------------------------------------------------
    def column_map(self, f: OrcDataFile) -> list[int | None]:
        """Table column index → file row column index (positional, like Hive for ACID tables); checks types."""
        file_schema = f.row_schema
        if len(file_schema) > len(self.schema):
            raise AcidFileError(f.path, f"row struct has {len(file_schema)} columns "
                                        f"{_fmt(file_schema)} but the table has {len(self.schema)} {_fmt(self.schema)}")
        out: list[int | None] = []
        for i, wanted in enumerate(self.schema):
            if i >= len(file_schema):
                out.append(None)
                continue
            ftype = file_schema.field(i).type
            if not widens_to(ftype, wanted.type):
                raise AcidFileError(f.path, f"column {i} ({file_schema.field(i).name}: {ftype}) does not match the "
                                            f"table column {wanted.name}: {wanted.type}; table schema "
                                            f"{_fmt(self.schema)}, file row struct {_fmt(file_schema)}")
            out.append(i)
        return out

    def batches(self, bucket: BucketPlan) -> Iterator[pa.RecordBatch]:
        """The bucket's surviving rows: ROW__ID columns then the read columns, file by file in plan order.

        A second thread reads the delete deltas while the first data file decodes, then reads small event files
        ahead of the current one (deltas, up to :data:`READ_AHEAD_BYTES` on storage at once): ORC decoding and
        Arrow filtering run without the GIL, so a base, its deltas and its delete deltas are read side by side."""
        offsets: dict[str | None, int] = defaultdict(int)  # running synthetic rowId per directory (None = root)
        sources = [src for src in bucket.data if src.size != 0]
        if len(sources) < 2 and not any(src.size for src in bucket.deletes):
            for src in sources:
                yield from self._source_batches(src, bucket, Deletes(), offsets)
            return
        deletes = self.delete_events(bucket)
        if deletes.streamed:  # too many to hold: merged with the rows as they come, file after file, in key order
            cursor_deletes = Deletes.ready(deletes.filter(), _max_write_id(bucket.deletes))
            for src in sources:
                yield from self._source_batches(src, bucket, cursor_deletes, offsets)
            return
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="acid-read-ahead")
        # first in the worker's queue: read-ahead waits on it
        deleted = Deletes(pool.submit(deletes.filter), _max_write_id(bucket.deletes))
        ahead: dict[int, Future[list[pa.RecordBatch]]] = {}
        ahead_bytes, upcoming = 0, 1
        try:
            for i, src in enumerate(sources):
                upcoming = max(upcoming, i + 1)
                while (upcoming < len(sources) and _read_ahead(sources[upcoming])
                       and ahead_bytes + sources[upcoming].size <= READ_AHEAD_BYTES):
                    nxt = sources[upcoming]
                    ahead[upcoming] = pool.submit(self._all_batches, nxt, bucket, deleted, offsets)
                    ahead_bytes += nxt.size
                    upcoming += 1
                future = ahead.pop(i, None)
                if future is not None and future.cancel():  # the worker has not started it: read it here
                    ahead_bytes -= src.size
                    future = None
                if future is not None:
                    self._read_while_waiting(future, ahead, sources, bucket, deleted, offsets)
                if future is None:
                    yield from self._source_batches(src, bucket, deleted, offsets)
                else:
                    ahead_bytes -= src.size
                    yield from future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _read_while_waiting(self, future: Future[list[pa.RecordBatch]], ahead: dict[int, Future[list[pa.RecordBatch]]],
                            sources: Sequence[DataSource], bucket: BucketPlan, deleted: Deletes,
                            offsets: dict[str | None, int]) -> None:
        """While the worker reads ``future``'s file, read files queued behind it here, the last first (so the two
        threads do not meet): with a projection or a cheap base the reading thread would otherwise wait on the
        worker's queue of deltas. Their batches take the queued future's place (an error is raised at once)."""
        for j in sorted(ahead, reverse=True):
            if future.done():
                return
            if not ahead[j].cancel():
                continue
            done: Future[list[pa.RecordBatch]] = Future()
            done.set_result(self._all_batches(sources[j], bucket, deleted, offsets))
            ahead[j] = done

    def _all_batches(self, src: DataSource, bucket: BucketPlan, deleted: Deletes,
                     offsets: dict[str | None, int]) -> list[pa.RecordBatch]:
        return list(self._source_batches(src, bucket, deleted, offsets))

    def _source_batches(self, src: DataSource, bucket: BucketPlan, deleted: Deletes,
                        offsets: dict[str | None, int]) -> Iterator[pa.RecordBatch]:
        expect = FileFormat.ACID if src.kind is SourceKind.EVENTS else None
        f = self.open(src, expect)
        mapping = self.column_map(f)
        wanted = sorted({c for j in self.read_columns if (c := mapping[j]) is not None})
        if f.format is FileFormat.ACID:
            yield from self._event_batches(f, src, mapping, wanted, deleted)
            return
        if src.kind is SourceKind.EVENTS:  # unreachable: expect=ACID raised already
            raise AcidFileError(f.path, "not an ACID event file")
        key = src.directory
        prop = bucket_codec.encode(bucket.bucket_id, 0)
        for batch in _slices(f.iter_batches(row_columns=wanted)):
            n = batch.num_rows
            start = offsets[key]
            offsets[key] += n
            keep = None
            keys: tuple[np.ndarray, ...] = ()
            lookup = deleted.may_touch((src.write_id, prop, start), (src.write_id, prop, start + n - 1))
            if self.keys or lookup:
                keys = (np.full(n, src.write_id, dtype=np.int64), np.full(n, prop, dtype=np.int32),
                        np.arange(start, start + n, dtype=np.int64))
                delete_set = deleted() if lookup else None
                keep = delete_set.survivors(*keys) if delete_set is not None else None
            cols = self._columns(batch, f, mapping, wanted)
            yield self._finish(cols, keys if self.keys else (), None, src, n, survivors=keep)

    def _event_key_columns(self, f: OrcDataFile, src: DataSource, deleted: Deletes) -> tuple[list[str], bool]:
        """The ACID columns of an event file to decode, and whether its rows need a delete lookup.

        The ROW__ID triple only when the caller wants it or a delete event may touch the file's key range;
        ``currentTransaction`` only when the file may hold a write id the snapshot does not accept; ``operation``
        only when the file's ``hive.acid.stats`` do not rule out delete events in it."""
        lo, hi, write_ids = _event_key_range(f, src)
        lookup = deleted.may_touch(lo, hi)
        need = [ORIGINAL_TRANSACTION, BUCKET, ROW_ID] if self.keys or lookup else []
        if write_ids is None or not _all_valid(self.write_ids, *write_ids):
            need.append(CURRENT_TRANSACTION)
        stats = f.stats
        if stats is None or stats.deletes > 0 or src.side_file is not None:
            need.append(OPERATION)
        return need, lookup

    def _event_batches(self, f: OrcDataFile, src: DataSource, mapping: Sequence[int | None], wanted: Sequence[int],
                       deleted: Deletes) -> Iterator[pa.RecordBatch]:
        need, lookup = self._event_key_columns(f, src, deleted)
        for batch in _slices(f.iter_batches(row_columns=wanted, keys=need, stripes=src.stripes)):
            keep = None
            if OPERATION in need:
                ops = batch.column(OPERATION)
                if batch.num_rows and pc.max(ops).as_py() >= int(Operation.DELETE):
                    keep = pc.not_equal(ops, int(Operation.DELETE))
            if CURRENT_TRANSACTION in need:
                valid = valid_write_id_mask(batch.column(CURRENT_TRANSACTION), self.write_ids)
                if valid is not None:
                    keep = valid if keep is None else pc.and_(keep, valid)
            survivors = None
            if lookup:
                o, b, r = (_np(batch.column(k)) for k in KEY_FIELDS)
                delete_set = deleted()  # the batch is decoded: now wait for the delete deltas, if still reading
                if delete_set is not None:
                    survivors = delete_set.survivors(o, b, r)
            children: dict[str, pa.Array] = {}
            if ROW in batch.schema.names:
                row = batch.column(ROW)
                children = dict(zip([fld.name for fld in row.type], row.flatten()))
            cols = self._columns_from(children, f, mapping, wanted, batch.num_rows)
            keys = tuple(batch.column(k) for k in KEY_FIELDS) if self.keys else ()
            yield self._finish(cols, keys, keep, src, batch.num_rows, survivors=survivors)

    def _columns(self, batch: pa.RecordBatch, f: OrcDataFile, mapping: Sequence[int | None],
                 wanted: Sequence[int]) -> list[pa.Array]:
        children = {name: batch.column(name) for name in batch.schema.names}
        return self._columns_from(children, f, mapping, wanted, batch.num_rows)

    def _columns_from(self, children: Mapping[str, pa.Array], f: OrcDataFile, mapping: Sequence[int | None],
                      wanted: Sequence[int], n: int) -> list[pa.Array]:
        cols = []
        for j in self.read_columns:
            field = self.schema.field(j)
            fi = mapping[j]
            if fi is None:
                cols.append(pa.nulls(n, field.type))
                continue
            arr = children[f.row_schema.field(fi).name]
            if arr.type != field.type:
                try:  # timestamps change form exactly or not at all (timestamps.py); the rest is schema evolution
                    if has_timestamps(arr.type):
                        arr = convert(arr, keep_timestamp_forms(arr.type, field.type), what=f"column {field.name}",
                                      exact=not self.floor_timestamps)
                    if arr.type != field.type:
                        arr = arr.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TimestampFormError) as exc:
                    error = TimestampRangeError if is_out_of_nanosecond_range(exc) else AcidFileError
                    raise error(f.path, f"column {field.name}: cannot convert {arr.type} to "
                                        f"{field.type}: {exc}") from None
            cols.append(conform_chars(arr, field))  # char/varchar as Hive reads them, whatever the file's type
        return cols

    def _finish(self, cols: list[pa.Array], keys: tuple[pa.Array | np.ndarray, ...], keep: pa.Array | None,
                src: DataSource, n: int, *, survivors: pa.Array | np.ndarray | None = None) -> pa.RecordBatch:
        """ROW__ID columns (when the reader gives them) + read columns + the virtual columns asked for, with the
        rows ``keep`` keeps (aborted or invisible writes, delete events) and ``survivors`` (rows no delete event
        removed; with :attr:`VirtualColumns.deleted_rows` the others stay, flagged)."""
        fields = [pa.field(c, _KEY_TYPES[c], nullable=False) for c in ROW_ID_COLUMNS] if self.keys else []
        fields += [self.schema.field(j) for j in self.read_columns]
        arrays = [k if isinstance(k, pa.Array) else pa.array(k) for k in keys] + cols
        if survivors is not None and not isinstance(survivors, pa.Array):
            survivors = pa.array(survivors, pa.bool_())
        if self.virtual.file_name:
            arrays.append(pa.repeat(pa.scalar(self.storage.hive_uri(src.path), pa.string()), n))
        if self.virtual.deleted_rows:
            arrays.append(pc.invert(survivors) if survivors is not None else pa.repeat(pa.scalar(False), n))
        elif survivors is not None:
            keep = survivors if keep is None else pc.and_(keep, survivors)
        batch = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields + self.virtual.fields()))
        return batch if keep is None else batch.filter(keep)


def _fmt(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name}: {f.type}" for f in schema) + ")"


def widens_to(file_type: pa.DataType, table_type: pa.DataType) -> bool:
    """Types a file column may have for a table column: equal, or a safe widening (schema evolution)."""
    if file_type == table_type or same_but_timestamps(file_type, table_type):
        return True
    t = pa.types
    if t.is_integer(file_type) and t.is_integer(table_type):
        return bool(file_type.bit_width <= table_type.bit_width)
    if t.is_floating(file_type) and t.is_floating(table_type):
        return bool(file_type.bit_width <= table_type.bit_width)
    if (t.is_string(file_type) or t.is_large_string(file_type)) and \
            (t.is_string(table_type) or t.is_large_string(table_type)):
        return True
    if (t.is_binary(file_type) or t.is_large_binary(file_type)) and \
            (t.is_binary(table_type) or t.is_large_binary(table_type)):
        return True
    if is_timestamp_type(file_type) and is_timestamp_type(table_type) and getattr(table_type, "tz", None) is None:
        return True
    if t.is_decimal(file_type) and t.is_decimal(table_type):
        return bool(file_type.scale == table_type.scale and file_type.precision <= table_type.precision)
    if t.is_nested(file_type) and t.is_nested(table_type) and type(file_type) is type(table_type):
        try:
            pa.array([], file_type).cast(table_type)
            return True
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
    return False


# ---------------------------------------------------------------------------------------------------
# Public entry points


@dataclass(frozen=True)
class _Projection:
    schema: pa.Schema            # table schema
    read_columns: list[int]      # table columns to read (requested + filter needs)
    out_columns: list[str]       # final columns (row ids first when requested)
    filter_keys: bool = False    # the filter refers to ROW__ID columns


def _applies(filter: pc.Expression, fields: Sequence[pa.Field]) -> bool:
    """Whether ``filter`` evaluates on a table of these fields."""
    try:
        pa.table({f.name: pa.array([], f.type) for f in fields}).filter(filter)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, KeyError):
        return False
    return True


def _projection(schema: pa.Schema, columns: Sequence[str] | None, filter: pc.Expression | None,
                include_row_ids: bool) -> _Projection:
    names_ = schema.names
    if include_row_ids:
        clash = [c for c in ROW_ID_COLUMNS if c in names_]
        if clash:
            raise AcidSchemaError(f"include_row_ids would add {clash}, which are already table columns")
    if columns is None:
        wanted = list(range(len(schema)))
    else:
        missing = [c for c in columns if c not in names_]
        if missing:
            raise AcidSchemaError(f"unknown column(s) {missing}; the table has {names_}")
        wanted = [names_.index(c) for c in columns]
    read = list(dict.fromkeys(wanted))
    if filter is not None:
        probe_fields = [pa.field(c, _KEY_TYPES[c]) for c in ROW_ID_COLUMNS] + [schema.field(j) for j in read]
        try:
            pa.table({f.name: pa.array([], f.type) for f in probe_fields}).filter(filter)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, KeyError):
            read = list(range(len(schema)))  # the filter needs columns outside the projection
            probe = pa.table({f.name: pa.array([], f.type) for f in
                              [pa.field(c, _KEY_TYPES[c]) for c in ROW_ID_COLUMNS] + list(schema)})
            try:
                probe.filter(filter)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, KeyError) as exc:
                raise AcidSchemaError(f"filter {filter} does not apply to the table schema {_fmt(schema)}: "
                                      f"{exc}") from None
    out = ([*ROW_ID_COLUMNS] if include_row_ids else []) + [names_[j] for j in wanted]
    filter_keys = filter is not None and not _applies(filter, [schema.field(j) for j in read])
    return _Projection(schema, read, out, filter_keys)


def _infer_schema(reader_storage: Storage, plan: MergePlan) -> pa.Schema | None:
    for src in plan.data_files:
        if src.size != 0:
            length = read_flush_length(reader_storage, src.side_file) if src.side_file else None
            f = open_data_file(reader_storage, src.path, src.size if src.size >= 0 else None, logical_length=length,
                               where=src.directory)
            return f.row_schema
    return None


def iter_plan_batches(storage: Storage, plan: MergePlan, write_ids: ValidWriteIdList, *,
                      schema: pa.Schema | None = None, columns: Sequence[str] | None = None,
                      filter: pc.Expression | None = None, include_row_ids: bool = False,
                      floor_timestamps: bool = False, _keys: bool = False,
                      events_mem: int = DEFAULT_EVENTS_MEM,
                      virtual: VirtualColumns = VirtualColumns()) -> Iterator[pa.RecordBatch]:
    """Merged batches for an explicit :class:`MergePlan` (the core behind :func:`iter_acid_batches`).

    Timestamps change form exactly or raise :class:`TimestampRangeError` (read again with
    :func:`~airflow_acid.acid.timestamps.wide_schema`); ``floor_timestamps`` floors digits ``schema``'s forms
    cannot hold instead — for engines that hold no more (Spark's microseconds), never for storing.
    ``events_mem`` is ``hive.transactional.events.mem``: a bucket with more delete events streams them
    (:mod:`airflow_acid.acid.delete_cursor`) instead of holding them in memory."""
    if schema is None:
        schema = _infer_schema(storage, plan)
        if schema is None:
            return
    proj = _projection(schema, columns, filter, include_row_ids)
    reader = _Reader(storage, write_ids, schema, proj.read_columns, floor_timestamps, events_mem,
                     keys=include_row_ids or _keys or proj.filter_keys, virtual=virtual)
    out = list(proj.out_columns) + [f.name for f in virtual.fields()]
    if _keys and not include_row_ids:
        out = [*ROW_ID_COLUMNS, *out]
    for bucket in plan.buckets:
        if not bucket.data:
            continue
        for full in reader.batches(bucket):
            if filter is not None and full.num_rows:
                full = full.filter(filter)
            if full.num_rows:
                yield full.select(out)


def _listing_and_plan(location: str, write_ids: ValidWriteIdList, txns: ValidTxnList | None,
                      filesystem: fsspec.AbstractFileSystem | None) -> tuple[Storage, MergePlan]:
    storage = storage_for(location, filesystem)
    files = storage.list_files()

    def metadata_reader(path: str) -> str:
        return storage.read_bytes(path).decode("utf-8", errors="replace")

    state = get_acid_state(files, write_ids, txns, metadata_reader=metadata_reader)
    return storage, plan_from_state(state, files)


def iter_acid_batches(location: str, write_ids: ValidWriteIdList, txns: ValidTxnList | None = None, *,
                      filesystem: fsspec.AbstractFileSystem | None = None, schema: pa.Schema | None = None,
                      columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                      include_row_ids: bool = False) -> Iterator[pa.RecordBatch]:
    """Stream the rows of one table/partition directory visible to the snapshot, batch by batch.

    One recursive listing, :func:`~airflow_acid.acid.state.get_acid_state`, then the merge. ``schema`` is the
    table schema (files are matched to it by position); without it the first data file's schema is used.
    """
    storage, plan = _listing_and_plan(location, write_ids, txns, filesystem)
    yield from iter_plan_batches(storage, plan, write_ids, schema=schema, columns=columns, filter=filter,
                                 include_row_ids=include_row_ids)


def _batch_key(batch: pa.RecordBatch, i: int) -> tuple[int, int, int, int]:
    bucket = batch.column(BUCKET)[i].as_py()
    return (int(decoded_bucket_ids(np.array([bucket]))[0]), batch.column(ORIGINAL_TRANSACTION)[i].as_py(), bucket,
            batch.column(ROW_ID)[i].as_py())


def _in_key_order(batches: Sequence[pa.RecordBatch]) -> bool:
    """Batches are each sorted (files are, by format); check the seams between consecutive batches."""
    last = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if last is not None and _batch_key(batch, 0) < last:
            return False
        last = _batch_key(batch, batch.num_rows - 1)
    return True


def _sort_by_bucket_and_key(table: pa.Table) -> pa.Table:
    o, b, r = (_np(table.column(k).combine_chunks()) for k in KEY_FIELDS)
    return table.take(pa.array(np.lexsort((r, b, o, decoded_bucket_ids(b)))))


def _ordered_by_names(plan: MergePlan) -> bool:
    """Whether the plan's files, read in order, give rows in key order by their directories' names alone: within a
    bucket each file's write ids lie above the previous one's (``base_W`` [0, W], ``delta_x_y`` [x, y]), or both
    are original files numbered in one run (same directory). Multi-statement deltas of one write id, overlapping
    deltas and ACID files among the originals are not: their keys are read and checked."""
    for bucket in plan.buckets:
        previous: tuple[DataSource, tuple[int, int]] | None = None
        for src in bucket.data:
            if src.kind is SourceKind.EVENTS:
                span = _write_id_range(src.directory)
                if span is None:
                    return False
            else:
                span = (src.write_id, src.write_id)
            if previous is not None:
                before, (_, last) = previous
                numbered_on = (src.kind is not SourceKind.EVENTS and before.kind is src.kind
                               and before.directory == src.directory)
                if last >= span[0] and not numbered_on:
                    return False
            previous = src, span
    return True


def read_plan(storage: Storage, plan: MergePlan, write_ids: ValidWriteIdList, *, schema: pa.Schema | None = None,
              columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
              include_row_ids: bool = False, events_mem: int = DEFAULT_EVENTS_MEM,
              virtual: VirtualColumns = VirtualColumns()) -> pa.Table:
    """Merged table for an explicit plan, ordered by bucket id then (originalTransaction, bucket, rowId).

    The key columns are read only when the order needs checking (:func:`_ordered_by_names`) or the caller wants
    them; otherwise only files a delete event may touch decode them."""
    if schema is None:
        schema = _infer_schema(storage, plan)
    check_order = not _ordered_by_names(plan)
    try:
        batches = list(iter_plan_batches(storage, plan, write_ids, schema=schema, columns=columns, filter=filter,
                                         include_row_ids=include_row_ids, _keys=check_order, events_mem=events_mem,
                                         virtual=virtual))
    except TimestampRangeError:
        if schema is None or schema == wide_schema(schema):
            raise
        schema = wide_schema(schema)  # a timestamp outside 1677–2262: read again in the form that holds any
        batches = list(iter_plan_batches(storage, plan, write_ids, schema=schema, columns=columns, filter=filter,
                                         include_row_ids=include_row_ids, _keys=check_order, events_mem=events_mem,
                                         virtual=virtual))
    if schema is None:
        return pa.table({})
    keyed = check_order or include_row_ids  # the batches carry the ROW__ID columns
    if batches:
        table = pa.Table.from_batches(batches)
        if keyed and not _in_key_order(batches):
            table = _sort_by_bucket_and_key(table)
    else:
        proj = _projection(schema, columns, filter, include_row_ids)
        fields = [pa.field(c, _KEY_TYPES[c], nullable=False) for c in ROW_ID_COLUMNS if c not in proj.out_columns]
        fields += [pa.field(c, _KEY_TYPES[c], nullable=False) if c in _KEY_TYPES else schema.field(c)
                   for c in proj.out_columns] + virtual.fields()
        table = pa.schema(fields).empty_table()
        keyed = True
    if keyed and not include_row_ids:
        table = table.drop_columns(list(ROW_ID_COLUMNS))
    return narrowest_table(table)  # each column in the narrowest form that holds its values exactly


def read_acid_table(location: str, write_ids: ValidWriteIdList, txns: ValidTxnList | None = None, *,
                    filesystem: fsspec.AbstractFileSystem | None = None, schema: pa.Schema | None = None,
                    columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                    include_row_ids: bool = False, virtual: VirtualColumns = VirtualColumns()) -> pa.Table:
    """All rows of one table/partition directory visible to the snapshot, as one pyarrow Table.

    Rows are ordered by bucket id, then (originalTransaction, bucket, rowId). ``columns`` projects, ``filter`` is
    a pyarrow compute expression over table columns (and the ROW__ID columns), ``include_row_ids`` prepends
    ``originalTransaction``, ``bucket``, ``rowId``.
    """
    storage, plan = _listing_and_plan(location, write_ids, txns, filesystem)
    return read_plan(storage, plan, write_ids, schema=schema, columns=columns, filter=filter,
                     include_row_ids=include_row_ids, virtual=virtual)
