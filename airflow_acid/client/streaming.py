"""Streaming ingest as Hive Streaming does it: a batch of transactions shares ONE ``delta_min_max`` directory.

A connection opens ``batch_size`` transactions at once (capped by ``hive.txn.max.open.batch``) and allocates
their consecutive write ids min…max; every transaction of the batch appends its rows to the same
``bucket_N`` files of ``delta_min_max`` (opened with ``streaming=True``). Committing a transaction first
flushes the files — its rows appended as a stripe written by pyarrow, then an ORC intermediate footer whose length
is appended to ``bucket_N_flush_length`` — so readers see exactly the committed prefix; rows of an aborted
transaction are dropped before they reach the files (rows of a transaction that dies with the writer are
invisible anyway: its write id gets aborted). When the batch is used up the files are closed (side files removed,
``_orc_acid_version`` written) and the next write opens a new batch. A background thread heartbeats every
still-open transaction of the batch; ``close()`` (or leaving the ``with`` block, also on error) aborts what
is left. After a crash the open transactions time out (``hive.txn.timeout``) and housekeeping aborts them.

Object stores cannot flush: an object exists only once its upload completes, so a committed prefix of an open file
would be invisible to readers and lost with the writer. There (``Storage.durable_flush`` false) every transaction
writes its own ``delta_W_W`` directory, whose files are closed — uploaded, durable, readable — before the
transaction commits: one durable object per bucket per committed transaction, never a committed row that a
reader cannot see or a crash can lose. The write ids are still allocated per batch.

>>> with warehouse.streaming_connection("db.events", {"ds": "2024-01-01"}, batch_size=100) as conn:
...     for chunk in chunks:
...         conn.write(chunk)
...         conn.commit()
"""

from __future__ import annotations

import logging
import posixpath
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from airflow_acid.acid import bucket_codec, names
from airflow_acid.acid.codes import DataOperation, LockState, OperationType
from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.orc_settings import OrcSettings
from airflow_acid.acid.streaming_event_writer import StreamingEventFileWriter
from airflow_acid.client.errors import TransactionClosedError, UnsupportedOperationError
from airflow_acid.client.table_schema import to_arrow_table
from airflow_acid.metastore.errors import LockNotAcquiredError, TxnStateError
from airflow_acid.metastore.heartbeat import Heartbeater
from airflow_acid.metastore.locks import lock_component_for

if TYPE_CHECKING:
    from airflow_acid.client.table_io import PartitionTarget
    from airflow_acid.client.warehouse import AcidWarehouse

log = logging.getLogger(__name__)

STREAMING_STATEMENT_ID = -1
"""Hive Streaming writes without a statement id (encoded as 0 in the bucket property, no ``_SSSS`` suffix)."""


@dataclass
class StreamingStats:
    """Counters of one connection."""

    batches: int = 0
    committed: int = 0
    aborted: int = 0
    rows: int = 0


class StreamingConnection:
    """Writes small transactions into one delta directory per transaction batch (see the module docstring)."""

    def __init__(self, warehouse: AcidWarehouse, table: str, partition: Mapping[str, Any] | str | None = None, *,
                 batch_size: int | None = None, agent_info: str | None = None) -> None:
        self._io = io = warehouse.io
        self._ms = io.metastore
        self.info = io.transactional_table(table)
        if self.info.is_insert_only:
            raise UnsupportedOperationError(
                f"table {self.info.full_name} is insert-only; streaming ingest writes full-ACID tables only")
        self.dynamic = self.info.is_partitioned and partition is None
        """Dynamic partitioning (Hive Streaming without static partition values): every row carries its partition
        column values and goes to that partition; partitions are added when the transaction commits."""
        self.target = None if self.dynamic else io.partition_target(self.info, partition)
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.batch_size = min(batch_size or io.conf.txn_max_open_batch, io.conf.txn_max_open_batch)
        self.agent_info = agent_info or f"airflow-acid streaming {self.info.full_name}"
        self.schema = io.data_schema(self.info)
        self._bucket_of = io.bucket_assigner(self.info)
        self.stats = StreamingStats()
        self.closed = False
        self._lock = threading.Lock()
        self._batch: list[int] = []
        self._write_ids: dict[int, int] = {}
        self._used = 0
        self._current: int | None = None
        self._directory: str | None = None
        self._writers: dict[tuple[str, int], StreamingEventFileWriter] = {}
        """Open files by (partition location, bucket)."""
        self._dirty: set[tuple[str, int]] = set()
        self._row_ids: dict[tuple[str, int], int] = {}
        self._txn_partitions: dict[str, PartitionTarget] = {}
        """Partitions the current transaction wrote (dynamic partitioning)."""
        location = self.info.location if self.target is None else self.target.location
        self.per_transaction_files = not storage_for(location, io.filesystem).durable_flush
        """True on object stores: each transaction's rows go into its own closed ``delta_W_W`` files."""
        if self.target is not None and self.target.spec:
            self._ms.catalog.add_partition(self.info.database, self.info.name, self.target.spec,
                                           location=self.target.location, if_not_exists=True)
        self._heartbeater = Heartbeater(self._ms.txns.heartbeat, self._open_txns, io.conf.txn_timeout_s / 2,
                                        name=f"acid-heartbeat-stream-{self.info.full_name}").start()

    # --- context manager -------------------------------------------------------------------------------

    def __enter__(self) -> StreamingConnection:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self.closed:
            self.close()

    def __repr__(self) -> str:
        partition = "dynamic" if self.target is None else repr(self.target.name)
        return (f"StreamingConnection({self.info.full_name}, partition={partition}, "
                f"batch={self._batch[:1]}…, current={self._current})")

    # --- properties ------------------------------------------------------------------------------------

    @property
    def current_txn(self) -> int | None:
        """The transaction rows are being written to, if any."""
        return self._current

    @property
    def current_write_id(self) -> int | None:
        return None if self._current is None else self._write_ids[self._current]

    @property
    def directory(self) -> str | None:
        """The directory rows go to: the batch's ``delta_min_max`` (or, on object stores, the current
        transaction's ``delta_W_W``)."""
        if self.per_transaction_files:
            wid = self.current_write_id
            return None if wid is None else names.format_delta(wid, wid)
        return self._directory

    def _open_txns(self) -> list[int]:
        with self._lock:
            return self._batch[self._used - (1 if self._current is not None else 0):] if self._batch else []

    def _check_open(self, action: str) -> None:
        if self.closed:
            raise TransactionClosedError(f"cannot {action}: the streaming connection to {self.info.full_name} is "
                                         "closed; open a new one")

    # --- batches ---------------------------------------------------------------------------------------

    def _open_batch(self) -> None:
        ids = self._ms.txns.open_txns(self.batch_size, user=self._io.user, host=self._io.host,
                                      agent_info=self.agent_info)
        try:
            wids = self._ms.txns.allocate_write_ids(ids, self.info.database, self.info.name)
        except BaseException:
            self._ms.txns.abort_txns(ids)
            raise
        with self._lock:
            self._batch = list(ids)
            self._write_ids = dict(zip(ids, wids))
            self._used = 0
        self._directory = names.format_delta(min(wids), max(wids))
        self.stats.batches += 1

    def begin(self) -> int:
        """Start the next transaction of the batch (opening a new batch when needed); returns its txn id."""
        self._check_open("begin a transaction")
        if self._current is not None:
            raise TransactionClosedError(f"transaction {self._current} is still open: commit or abort it first")
        if not self._batch or self._used >= len(self._batch):
            self._close_writers()
            self._open_batch()
        with self._lock:
            txn = self._batch[self._used]
            self._used += 1
            self._current = txn
        self._row_ids = {}
        self._txn_partitions = {}
        comp = lock_component_for(DataOperation.INSERT, self.info.database, self.info.name,
                                  None if self.target is None else self.target.name, conf=self._io.conf,
                                  is_dynamic_partition_write=self.dynamic)
        response = self._ms.locks.lock([comp], txn_id=txn, user=self._io.user, host=self._io.host,
                                       agent_info=self.agent_info)
        if response.state is not LockState.ACQUIRED:
            self.abort()
            where = "the table" if self.target is None or not self.target.name else self.target.name
            raise LockNotAcquiredError(f"streaming into {self.info.full_name}: transaction {txn} could not lock "
                                       f"{where}")
        return txn

    def _writer(self, location: str, bucket: int) -> StreamingEventFileWriter:
        writer = self._writers.get((location, bucket))
        if writer is None:
            current = self.directory
            assert current is not None, "set once a batch is open, which begin() does first"
            directory = posixpath.join(location, current)
            writer = StreamingEventFileWriter(directory, bucket, self.schema, filesystem=self._io.filesystem,
                                              orc=OrcSettings.from_properties(self.info.properties))
            self._writers[(location, bucket)] = writer
        return writer

    def _groups(self, data: Any) -> list[tuple[PartitionTarget, pa.Table]]:
        """The rows by target partition: the static one, or (dynamic) by their partition column values."""
        if self.target is not None:
            return [(self.target, to_arrow_table(data, self.schema, table=self.info.full_name))]
        if isinstance(data, list) and data and all(isinstance(r, (tuple, list)) for r in data):
            names = [*self.schema.names, *(k.name for k in self.info.partition_keys)]  # Hive: partition values last
            data = [dict(zip(names, r)) if len(r) == len(names) else r for r in data]
        return self._io.split_by_partition(self.info, data, None)

    def write(self, data: Any) -> int:
        """Append rows to the current transaction (begun automatically); returns the number of rows."""
        self._check_open("write")
        groups = self._groups(data)  # bad input: nothing written
        txn = self._current if self._current is not None else self.begin()
        count = sum(rows.num_rows for _target, rows in groups)
        if not count:
            return 0
        write_id = self._write_ids[txn]
        try:
            for target, rows in groups:
                self._write_rows(target, rows, write_id)
        except BaseException:
            self.abort()
            raise
        self.stats.rows += count
        return count

    def _write_rows(self, target: PartitionTarget, rows: pa.Table, write_id: int) -> None:
        if target.name is not None and self.target is None:
            self._txn_partitions[target.name] = target
        buckets = np.zeros(rows.num_rows, dtype=np.int64) if self._bucket_of is None else self._bucket_of(rows)
        for bucket in np.unique(buckets):
            part = rows if len(buckets) == 1 or (buckets == bucket).all() else rows.filter(pa.array(buckets == bucket))
            key = (target.location, int(bucket))
            first = self._row_ids.get(key, 0)
            prop = bucket_codec.encode(int(bucket), STREAMING_STATEMENT_ID)
            self._writer(*key).write_inserts(part, write_id, prop, first)
            self._row_ids[key] = first + part.num_rows
            self._dirty.add(key)

    def commit(self) -> None:
        """Flush the batch's files (``_flush_length``) and commit the current transaction."""
        self._check_open("commit")
        if self._current is None:
            raise TransactionClosedError("no transaction to commit: write rows (or call begin()) first")
        try:
            if self.per_transaction_files:
                self._close_writers()  # uploaded before the commit: durable and visible once it commits
            else:
                for key in sorted(self._dirty):
                    self._writers[key].flush()
            if self._txn_partitions:
                self._add_partitions(self._current)
        except BaseException:
            self.abort()
            raise
        self._dirty.clear()
        txn, self._current = self._current, None
        self._ms.txns.commit(txn)
        self.stats.committed += 1
        if self._used >= len(self._batch):
            self._close_writers()

    def _add_partitions(self, txn: int) -> None:
        """Dynamic partitioning, before the commit: register the partitions the transaction wrote in the catalog
        and record them as the transaction's components (Hive's addDynamicPartitions), so snapshots, write
        conflicts and the Initiator see each partition."""
        for target in self._txn_partitions.values():
            self._ms.catalog.add_partition(self.info.database, self.info.name, dict(target.spec or {}),
                                           location=target.location, if_not_exists=True)
        self._ms.txns.add_dynamic_partitions(txn, self.info.database, self.info.name, list(self._txn_partitions),
                                             OperationType.INSERT, self._write_ids[txn])

    def abort(self) -> None:
        """Abort the current transaction; its rows stay in the batch's files, invisible."""
        self._check_open("abort")
        if self._current is None:
            raise TransactionClosedError("no transaction to abort")
        txn, self._current = self._current, None
        self._dirty.clear()
        if self.per_transaction_files:
            self._abort_writers()
        else:  # its events never reach the batch's files
            for writer in self._writers.values():
                writer.discard()
        try:
            self._ms.txns.abort(txn)
        except TxnStateError as exc:
            log.info("streaming abort of transaction %s: %s", txn, exc)
        self.stats.aborted += 1

    def _abort_writers(self) -> None:
        """Drop the current transaction's unfinished files (object stores; invisible anyway: aborted write id)."""
        writers, self._writers = self._writers, {}
        for writer in writers.values():
            try:
                writer.abort()
            except Exception as exc:  # noqa: BLE001 - best effort
                log.info("streaming abort: dropping %s failed: %s", writer.path, exc)

    def _close_writers(self) -> None:
        writers, self._writers = self._writers, {}
        errors = []
        for writer in writers.values():
            try:
                writer.close()
            except Exception as exc:  # noqa: BLE001 - the batch's write ids are committed/aborted already; report, keep going
                errors.append(exc)
        if errors:
            raise errors[0]

    def close(self) -> None:
        """Abort the current and all unused transactions of the batch, finish the files, stop heartbeating."""
        if self.closed:
            return
        self.closed = True
        try:
            with self._lock:
                left = self._batch[self._used - (1 if self._current is not None else 0):] if self._batch else []
                self._used = len(self._batch)
                self._current = None
            if left:
                self.stats.aborted += len(self._ms.txns.abort_txns(left))
            if self.per_transaction_files:
                self._abort_writers()
            else:
                self._close_writers()
        finally:
            self._heartbeater.stop()
