"""The main-job demo on the embedded default: real transactions in the metastore, Hive-named delta files on
disk, directory classification by getAcidState, and merge-on-read at two snapshots.

It grows into the full compaction demo (Initiator → Spark compaction → Cleaner) as those layers land.
"""

from __future__ import annotations

import getpass
import shutil
import socket
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console
from rich.table import Table

from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.statement_writer import write_statement
from airflow_acid.acid.writeids import ValidTxnList
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.codes import OperationType

DATABASE, TABLE = "demo", "sales"
ROW_SCHEMA = pa.schema([("id", pa.int32()), ("region", pa.string()), ("amount", pa.float64())])
KEY_COLUMNS = ["originalTransaction", "bucket", "rowId"]


def _rows(ids, regions, amounts) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "region": regions, "amount": pa.array(amounts, pa.float64())})


class _DemoWriter:
    """A minimal writer over the format and metastore layers (the full client API is airflow_acid.warehouse)."""

    def __init__(self, ms: Metastore, location: str) -> None:
        self.ms, self.location = ms, location
        self.user, self.host = getpass.getuser(), socket.gethostname()

    def begin(self) -> tuple[int, int]:
        txn = self.ms.txns.open_txn(user=self.user, host=self.host, agent_info="airflow-acid demo")
        return txn, self.ms.txns.allocate_write_id(txn, DATABASE, TABLE)

    def snapshot(self, txn: int | None = None):
        txns = self.ms.snapshots.valid_txn_list(txn)
        return txns, self.ms.snapshots.valid_write_id_list(f"{DATABASE}.{TABLE}", txns)

    def row_ids(self, txn: int, where: pc.Expression) -> pa.Table:
        txns, wids = self.snapshot(txn)
        rows = read_acid_table(self.location, wids, txns, filter=where, include_row_ids=True)
        return rows.select(KEY_COLUMNS)

    def statement(self, txn: int, write_id: int, stmt: int, op: OperationType, *, inserts=None, deletes=None):
        write_statement(self.location, write_id, stmt, ROW_SCHEMA, inserts=inserts, deletes=deletes)
        self.ms.txns.add_write_components(txn, DATABASE, TABLE, [None], op)


def run_demo(ms: Metastore, warehouse: Path, console: Console) -> None:
    location = str(warehouse / f"{DATABASE}.db" / TABLE)
    _reset(ms, warehouse, location)
    ms.catalog.create_database(DATABASE, str(warehouse / f"{DATABASE}.db"), if_not_exists=True)
    ms.catalog.create_table(DATABASE, TABLE, [("id", "int"), ("region", "string"), ("amount", "double")],
                            location=location)
    console.rule(f"[bold]airflow-acid demo[/bold] · table {DATABASE}.{TABLE} · metastore {ms.url}")
    w = _DemoWriter(ms, location)
    log: list[tuple[str, str, str]] = []

    txn, wid = w.begin()
    w.statement(txn, wid, 0, OperationType.INSERT,
                inserts=_rows(range(1, 7), ["north", "south", "east", "west", "north", "south"],
                              [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]))
    ms.txns.commit(txn)
    log.append((f"txn {txn}", f"write id {wid}", "INSERT 6 rows → committed"))

    txn, wid = w.begin()
    w.statement(txn, wid, 0, OperationType.INSERT, inserts=_rows([7, 8], ["east", "west"], [70.0, 80.0]))
    w.statement(txn, wid, 1, OperationType.INSERT, inserts=_rows([9], ["north"], [90.0]))
    ms.txns.commit(txn)
    log.append((f"txn {txn}", f"write id {wid}", "two INSERT statements (stmt 0 and 1) → committed"))

    txn, wid = w.begin()
    old = w.row_ids(txn, pc.field("id") == 2)
    w.statement(txn, wid, 0, OperationType.UPDATE, inserts=_rows([2], ["south"], [25.0]), deletes=old)
    ms.txns.commit(txn)
    log.append((f"txn {txn}", f"write id {wid}", "UPDATE id=2 amount 20→25 (delete_delta + delta) → committed"))

    txn, wid = w.begin()
    w.statement(txn, wid, 0, OperationType.INSERT, inserts=_rows([100, 101], ["bad", "bad"], [-1.0, -1.0]))
    ms.txns.abort(txn)
    log.append((f"txn {txn}", f"write id {wid}", "INSERT 2 rows → aborted (files stay, invisible)"))

    early_txns, early_wids = w.snapshot()
    log.append(("snapshot S1", str(early_wids), "a reader's snapshot taken here"))

    txn, wid = w.begin()
    w.statement(txn, wid, 0, OperationType.DELETE, deletes=w.row_ids(txn, pc.field("region") == "west"))
    ms.txns.commit(txn)
    log.append((f"txn {txn}", f"write id {wid}", "DELETE region='west' → committed"))

    open_txn, wid = w.begin()
    w.statement(open_txn, wid, 0, OperationType.INSERT, inserts=_rows([200], ["in-flight"], [0.0]))
    log.append((f"txn {open_txn}", f"write id {wid}", "INSERT 1 row → still open (a writer in flight)"))

    now_txns, now_wids = w.snapshot()
    log.append(("snapshot S2", str(now_wids), "a reader's snapshot now"))
    _print_log(console, log)
    _print_directories(console, location, now_wids, now_txns)
    _print_rows(console, "rows at S1 (before the delete)", read_acid_table(location, early_wids, early_txns,
                                                                            include_row_ids=True))
    _print_rows(console, "rows at S2 (now)", read_acid_table(location, now_wids, now_txns, include_row_ids=True))
    ms.txns.commit(open_txn)
    console.print(f"[dim]committed the in-flight txn {open_txn}; re-reading sees row 200 too: "
                  f"{read_acid_table(location, *reversed(w.snapshot())).num_rows} rows[/dim]")


def _reset(ms: Metastore, warehouse: Path, location: str) -> None:
    if DATABASE in ms.catalog.list_databases():
        ms.catalog.drop_database(DATABASE, cascade=True)
    shutil.rmtree(warehouse / f"{DATABASE}.db", ignore_errors=True)


def _print_log(console: Console, log) -> None:
    table = Table(title="what happened", title_justify="left")
    for col in ("transaction", "write id / snapshot", "action"):
        table.add_column(col)
    for row in log:
        table.add_row(*row)
    console.print(table)


def _print_directories(console: Console, location: str, wids, txns: ValidTxnList) -> None:
    files = storage_for(location).list_files()
    state = get_acid_state(files, wids, txns)
    role: dict[str, str] = {}
    for name in state.obsolete:
        role[name] = "[yellow]obsolete[/yellow] (the Cleaner may delete it)"
    for name in state.aborted:
        role[name] = "[red]aborted[/red] (invisible; the Cleaner deletes it)"
    for i, name in enumerate(state.current_deltas):
        role[name] = f"[green]current #{i + 1}[/green] (read, in this order)"
    if state.base:
        role[state.base] = "[green]base[/green]"
    table = Table(title=f"directories of {location} at S2 (getAcidState)", title_justify="left")
    table.add_column("directory")
    table.add_column("files")
    table.add_column("bytes", justify="right")
    table.add_column("role")
    dirs: dict[str, list] = {}
    for f in files:
        top = f.path.split("/", 1)[0]
        dirs.setdefault(top, []).append(f)
    for name in sorted(dirs):
        entries = dirs[name]
        table.add_row(name, ", ".join(sorted(f.path.split("/", 1)[-1] for f in entries)),
                      str(sum(f.size for f in entries)),
                      role.get(name, "[dim]ignored (write id not visible: open transaction)[/dim]"))
    console.print(table)


def _print_rows(console: Console, title: str, rows: pa.Table) -> None:
    table = Table(title=f"{title}: {rows.num_rows} rows", title_justify="left")
    for name in rows.column_names:
        table.add_column(name, justify="right" if name != "region" else "left")
    for record in rows.to_pylist():
        table.add_row(*(str(v) for v in record.values()))
    console.print(table)
