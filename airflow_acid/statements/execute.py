"""Run typed Hive statements against a warehouse and its metastore; each returns a :class:`Result` with Hive's
output columns (docs/hive-acid.md#commands).

Errors users can hit come out as the metastore's and client API's own exceptions (unknown table, bad partition
spec, invalid property, …: :data:`USER_ERRORS`), each naming the object and what to do; nothing is changed when a
statement fails its checks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_acid.acid.codes import CompactionState, CompactionType, TxnState
from airflow_acid.errors import AcidUserError
from airflow_acid.metastore.catalog import DEFAULT_DATABASE, ColumnInfo, PartitionInfo, TableInfo
from airflow_acid.metastore.compactions import ShowCompactionsRow
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.locks import ShowLocksRow
from airflow_acid.statements import catalog, ctas, load, partitions, views
from airflow_acid.statements.describe import COLUMNS as DESCRIBE_COLUMNS
from airflow_acid.statements.describe import describe_rows
from airflow_acid.statements.model import (
    AbortCompactions,
    AbortTransactions,
    AlterTableAddPartitions,
    AlterTableColumns,
    AlterTableCompact,
    AlterTableDropPartitions,
    AlterTableProperties,
    CreateDatabase,
    CreateTable,
    CreateTableAs,
    CreateTableLike,
    CreateView,
    Delete,
    Describe,
    DescribeDatabase,
    DropDatabase,
    DropTable,
    DropView,
    Insert,
    LoadData,
    Merge,
    MultiInsert,
    PartitionSpec,
    Query,
    ShowCompactions,
    ShowCreateTable,
    ShowDatabases,
    ShowLocks,
    ShowPartitions,
    ShowTables,
    ShowTblProperties,
    ShowTransactions,
    Statement,
    TableName,
    Truncate,
    Update,
    Use,
)
from airflow_acid.statements.resolve import in_database
from airflow_acid.statements.result import Result
from airflow_acid.statements.show_create import COLUMNS as SHOW_CREATE_COLUMNS
from airflow_acid.statements.show_create import create_statement

if TYPE_CHECKING:
    from airflow_acid.client.warehouse import AcidWarehouse
    from airflow_acid.metastore.conf import MetastoreConf
    from airflow_acid.metastore.store import Metastore

USER_ERRORS = (AcidUserError,)
"""What a statement raises for a problem the user can fix (the CLI prints the message and exits with its code)."""

SHOW_TRANSACTIONS_COLUMNS = ["txnid", "state", "startedtime", "lastheartbeattime", "user", "host"]
SHOW_LOCKS_EXTENDED_COLUMNS = ["heartbeat_count", "blocked_by_txn_id"]
COMPACT_COLUMNS = ["compactionid", "dbname", "tabname", "partname", "type", "state", "message"]
ABORT_TXN_COLUMNS = ["txnid", "status", "message"]
ABORT_COMPACTION_COLUMNS = ["compactionid", "status", "message"]
_UNSUCCESSFUL = (CompactionState.FAILED, CompactionState.DID_NOT_INITIATE, CompactionState.ABORTED)


class StatementExecutor:
    """Runs statements on ``warehouse``. AND WAIT polls Hive's way, shorter (first after ``wait_first_poll_s``,
    doubling, each sleep capped at ``wait_max_poll_s`` — default a few seconds, services.compact.MAX_POLL_S), for at
    most ``wait_timeout_s`` (None: until done); ``on_wait`` receives a line to show while waiting.

    Instead of a warehouse, a ``metastore`` and ``open_warehouse`` (called with the metastore the first time a
    statement needs the files: DML, CREATE TABLE, compaction requests) may be given: SHOW statements, ABORT and
    DESCRIBE then never load the table format, pyarrow or DuckDB (docs/performance.md#cli-latency)."""

    def __init__(self, warehouse: AcidWarehouse | None = None, *, metastore: Metastore | None = None,
                 open_warehouse: Callable[[Metastore], AcidWarehouse] | None = None,
                 wait_first_poll_s: float | None = None, wait_max_poll_s: float | None = None,
                 wait_timeout_s: float | None = None, sleep: Callable[[float], None] = time.sleep,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.metastore: Metastore
        if warehouse is not None:
            self.metastore = warehouse.metastore
        elif metastore is not None and open_warehouse is not None:
            self.metastore = metastore
        else:
            raise TypeError("give a warehouse, or a metastore and open_warehouse")
        self._warehouse = warehouse
        self._open_warehouse = open_warehouse
        self.wait_first_poll_s = wait_first_poll_s
        self.wait_max_poll_s = wait_max_poll_s
        self.wait_timeout_s = wait_timeout_s
        self.sleep = sleep
        self.on_wait = on_wait
        self.database = DEFAULT_DATABASE
        """The session's current database (USE db): where unqualified table names resolve."""

    @property
    def warehouse(self) -> AcidWarehouse:
        """The warehouse (opened on first use when only a metastore was given)."""
        if self._warehouse is None:
            assert self._open_warehouse is not None, "checked in __init__"
            self._warehouse = self._open_warehouse(self.metastore)
        return self._warehouse

    def reconfigure(self, conf: MetastoreConf) -> None:
        """Use other settings from the next statement on (a session's SET of a Hive setting)."""
        if conf == self.metastore.conf:
            return
        if self._open_warehouse is None:
            from airflow_acid.client.warehouse import AcidWarehouse

            old = self.warehouse
            self.metastore = self.metastore.with_conf(conf)
            self._warehouse = AcidWarehouse(self.metastore, old.location, init=False, filesystem=old.filesystem)
            return
        self.metastore = self.metastore.with_conf(conf)
        self._warehouse = None

    def run(self, statement: Statement) -> Result:
        """Run one statement."""
        handler = _HANDLERS.get(type(statement))
        if handler is None:  # the parser never produces other types
            raise TypeError(f"not a statement: {statement!r}")
        return handler(self, in_database(statement, self.database))

    # --- SHOW ------------------------------------------------------------------------------------------------------

    def show_compactions(self, s: ShowCompactions) -> Result:
        db, table, partition = self._scope(s)
        ctype = _parse_enum(CompactionType.parse, s.type, "compaction type", "TYPE",
                            [t.name.lower() for t in CompactionType])
        state = _parse_enum(CompactionState.parse, s.status, "compaction state", "STATUS",
                            [c.display for c in CompactionState])
        order = [f"{column} {'desc' if desc else 'asc'}" for column, desc in s.order_by] or None
        rows = self.metastore.compactions.show_compactions(id=s.compaction_id, pool=s.pool, db=db, table=table,
                                                           partition=partition, type=ctype, state=state,
                                                           order_by=order, limit=s.limit)
        columns = ShowCompactionsRow.columns()
        return Result(s.TITLE, columns, [[getattr(r, c) for c in columns] for r in rows], null="---")

    def show_transactions(self, s: ShowTransactions) -> Result:
        rows = [[t.txnid, t.state.display, t.startedtime, t.lastheartbeattime, t.user, t.host]
                for t in self.metastore.txns.show_transactions()]
        return Result(s.TITLE, list(SHOW_TRANSACTIONS_COLUMNS), rows)

    def show_locks(self, s: ShowLocks) -> Result:
        db, table, partition = self._scope(s)
        columns = list(ShowLocksRow.COLUMNS) + (SHOW_LOCKS_EXTENDED_COLUMNS if s.extended else [])
        rows = self.metastore.locks.show_locks(db, table, partition, extended=s.extended)
        return Result(s.TITLE, columns, [[getattr(r, c) for c in columns] for r in rows])

    def _scope(self, s: ShowCompactions | ShowLocks) -> tuple[str | None, str | None, str | None]:
        """(database, table, partition name) a SHOW statement is limited to, each checked to exist."""
        if s.table is not None:
            info = self._table(s.table)
            return info.database, info.name, self._partition_name(info, s.partition)
        if s.database is not None:
            return self.metastore.catalog.get_database(s.database.lower()).name, None, None
        return None, None, None

    # --- ALTER TABLE -----------------------------------------------------------------------------------------------

    def compact(self, s: AlterTableCompact) -> Result:
        from airflow_acid.services.compact import FIRST_POLL_S, request_compaction, wait_for_compactions

        ctype = _parse_enum(CompactionType.parse, s.compaction_type, "compaction type", "COMPACT",
                            ["major", "minor", "rebalance"])
        requested = request_compaction(self.warehouse, s.table.qualified, s.partition, ctype,
                                       pool=s.pool, properties=s.properties, number_of_buckets=s.number_of_buckets,
                                       order_by=s.order_by)
        result = Result(s.TITLE, list(COMPACT_COLUMNS), null="---")
        result.rows = [[r.compaction_id, r.database, r.table, r.partition, r.type, r.state, r.message]
                       for r in requested]
        rows = {row[0]: row for row in result.rows if row[0] is not None}
        queued = [r.compaction_id for r in requested if r.compaction_id is not None]
        if s.wait and queued:
            if self.on_wait is not None:
                self.on_wait(f"Waiting for compaction(s) {', '.join(map(str, queued))} to be run by a worker (the "
                             "acid_compaction DAG); Ctrl-C stops waiting, the compaction stays queued")
            first = self.wait_first_poll_s if self.wait_first_poll_s is not None else FIRST_POLL_S
            final = wait_for_compactions(self.metastore, queued, first_poll_s=first,
                                         max_poll_s=self.wait_max_poll_s, timeout_s=self.wait_timeout_s,
                                         sleep=self.sleep)
            for cq_id, info in final.items():
                text = f"Compaction with id {cq_id} finished with status: {info.state.display}"
                if info.state in _UNSUCCESSFUL:
                    result.failed = True
                    text += f" ({info.error_message})" if info.error_message else ""
                rows[cq_id][5], rows[cq_id][6] = info.state.display, text
        return result

    def alter_properties(self, s: AlterTableProperties) -> Result:
        info = self._table(s.table)
        if s.partition is not None:
            part = self._partition(info, s.partition)
            missing = [k for k in s.unset if part.param(k) is None]
            _check_unset(missing, s.unset_if_exists, f"partition {part.name} of {info.full_name}")
            changes: dict[str, Any] = {**s.set, **{k: None for k in s.unset if k not in missing}}
            self.metastore.catalog.alter_partition_params(info.database, info.name, part.name, changes)
            where = f"partition {part.name} of {info.full_name}"
        else:
            missing = [k for k in s.unset if info.property(k) is None]
            _check_unset(missing, s.unset_if_exists, f"table {info.full_name}")
            self.warehouse.alter_table_properties(info.full_name, s.set,
                                                  unset=[k for k in s.unset if k not in missing])
            where = f"table {info.full_name}"
        done = [f"set {k}={v}" for k, v in s.set.items()] + [f"unset {k}" for k in s.unset if k not in missing]
        return Result(s.TITLE, messages=[f"{where}: {', '.join(done) or 'nothing to change'}"])

    def alter_columns(self, s: AlterTableColumns) -> Result:
        info = self._table(s.table)
        if s.partition is not None:
            raise InvalidInputError(f"ALTER TABLE {info.full_name} PARTITION (…) {s.action.upper()} COLUMNS: the "
                                    "partitions of a table share its columns here; change the table's columns")
        columns = [ColumnInfo(c.name, c.type, c.comment) for c in s.columns]
        after = self.metastore.catalog.alter_table_columns(info.database, info.name, s.action, columns,
                                                           old_name=s.old_name, position=s.position)
        listing = ", ".join(f"{c.name} {c.type}" for c in after.columns)
        return Result(s.TITLE, messages=[f"table {after.full_name}: columns are now ({listing})"])

    # --- ABORT -----------------------------------------------------------------------------------------------------

    def abort_transactions(self, s: AbortTransactions) -> Result:
        txns = self.metastore.txns
        aborted = set(txns.abort_txns(s.ids))
        result = Result(s.TITLE, list(ABORT_TXN_COLUMNS))
        for txn_id in dict.fromkeys(s.ids):
            if txn_id in aborted:
                result.rows.append([txn_id, "Success", "Successfully aborted transaction"])
                continue
            state = txns.txn_state(txn_id)
            why = {None: "No such transaction (never opened, or ended and cleaned up)",
                   TxnState.COMMITTED: "Transaction is already committed",
                   TxnState.ABORTED: "Transaction is already aborted"}.get(state, f"Transaction is {state}")
            result.rows.append([txn_id, "Error", why])
            result.failed = True
        return result

    def abort_compactions(self, s: AbortCompactions) -> Result:
        outcomes = self.metastore.compactions.abort_compactions(s.ids)
        return Result(s.TITLE, list(ABORT_COMPACTION_COLUMNS), [[o.id, o.status, o.message] for o in outcomes],
                      failed=any(o.status != "Success" for o in outcomes))

    # --- DDL -------------------------------------------------------------------------------------------------------

    def create_table(self, s: CreateTable) -> Result:
        catalog.before_create_table(self, s)
        name = s.table.qualified
        existed = s.if_not_exists and self.metastore.catalog.table_exists(*name.split("."))
        info = self.warehouse.create_table(
            name, [ColumnInfo(c.name, c.type, c.comment, c.default) for c in s.columns],
            partition_by=[(c.name, c.type, c.comment) for c in s.partitioned_by], bucket_by=s.bucket_by,
            num_buckets=s.num_buckets, properties=s.properties, location=s.location, if_not_exists=s.if_not_exists,
            storage=s.storage, external=s.external)
        message = f"table {info.full_name} already exists" if existed else \
            f"table {info.full_name} created at {info.location}"
        return Result(s.TITLE, messages=[message])

    def show_create_table(self, s: ShowCreateTable) -> Result:
        return Result(s.TITLE, list(SHOW_CREATE_COLUMNS), [[line] for line in create_statement(self._table(s.table))])

    def describe(self, s: Describe) -> Result:
        info = self._table(s.table)
        partition = self._partition(info, s.partition) if s.partition is not None else None
        return Result(s.TITLE, list(DESCRIBE_COLUMNS), describe_rows(info, partition, formatted=s.formatted), null="")

    # --- names -----------------------------------------------------------------------------------------------------

    def table_info(self, name: TableName) -> TableInfo:
        """The table's catalog entry (NoSuchObjectError naming it when it does not exist)."""
        return self._table(name)

    def _table(self, name: TableName) -> TableInfo:
        database, table = name.qualified.split(".", 1)
        return self.metastore.catalog.get_table(database, table)

    @staticmethod
    def _partition_name(info: TableInfo, spec: PartitionSpec | None) -> str | None:
        return None if spec is None else info.partition_name(spec)

    def _partition(self, info: TableInfo, spec: PartitionSpec) -> PartitionInfo:
        return self.metastore.catalog.get_partition(info.database, info.name, info.partition_spec(spec))


def _check_unset(missing: list[str], if_exists: bool, where: str) -> None:
    """Hive refuses to UNSET a property that is not set, unless IF EXISTS."""
    if missing and not if_exists:
        raise InvalidInputError(f"{where} has no propert{'y' if len(missing) == 1 else 'ies'} "
                                f"{', '.join(map(repr, missing))}; use UNSET TBLPROPERTIES IF EXISTS (…) when "
                                "unsure whether a property is set")


def _parse_enum(parse: Callable[[str], Any], text: str | None, what: str, keyword: str, allowed: list[str]) -> Any:
    if text is None:
        return None
    try:
        return parse(text)
    except ValueError:
        raise InvalidInputError(f"unknown {what} {text!r} after {keyword}; use one of "
                                f"{', '.join(repr(a) for a in allowed)}") from None


def _dml(method: str) -> Callable[[StatementExecutor, Any], Result]:
    """A DML handler; pyarrow, DuckDB and the client API load with the first DML statement."""
    def run(ex: StatementExecutor, s: Any) -> Result:
        from airflow_acid.statements.defaults import with_defaults
        from airflow_acid.statements.dml import DmlExecutor
        from airflow_acid.statements.views import with_views

        s = with_defaults(ex, with_views(ex, s))  # views read through their queries; column DEFAULTs written in
        dml = DmlExecutor(ex.warehouse)
        dml.compile(s)  # before the transaction opens: a refused statement leaves none behind
        result: Result = getattr(dml, method)(s)
        return result

    return run


_HANDLERS: dict[type, Callable[[StatementExecutor, Any], Result]] = {
    Query: _dml("select"),
    Insert: _dml("insert"),
    MultiInsert: _dml("multi_insert"),
    Update: _dml("update"),
    Delete: _dml("delete"),
    Merge: _dml("merge"),
    Truncate: _dml("truncate"),
    ShowCompactions: StatementExecutor.show_compactions,
    ShowTransactions: StatementExecutor.show_transactions,
    ShowLocks: StatementExecutor.show_locks,
    AlterTableCompact: StatementExecutor.compact,
    AlterTableProperties: StatementExecutor.alter_properties,
    AlterTableColumns: StatementExecutor.alter_columns,
    AbortTransactions: StatementExecutor.abort_transactions,
    AbortCompactions: StatementExecutor.abort_compactions,
    CreateTable: StatementExecutor.create_table,
    Describe: StatementExecutor.describe,
    CreateDatabase: catalog.create_database,
    DropDatabase: catalog.drop_database,
    Use: catalog.use,
    ShowDatabases: catalog.show_databases,
    ShowTables: catalog.show_tables,
    DropTable: catalog.drop_table,
    CreateTableLike: catalog.create_table_like,
    ShowCreateTable: StatementExecutor.show_create_table,
    DescribeDatabase: catalog.describe_database,
    CreateTableAs: ctas.create_table_as,
    AlterTableAddPartitions: partitions.add_partitions,
    AlterTableDropPartitions: partitions.drop_partitions,
    ShowPartitions: partitions.show_partitions,
    ShowTblProperties: partitions.show_tblproperties,
    LoadData: load.load_data,
    CreateView: views.create_view,
    DropView: views.drop_view,
}

__all__ = ["USER_ERRORS", "StatementExecutor"]
