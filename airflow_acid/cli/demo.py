"""The main-job demo on the embedded default: a sample warehouse built with the client API (AcidWarehouse).

Four tables — ``demo.customers`` (bucketed by id into 2 buckets), ``demo.sales`` (partitioned by ds),
``demo.audit_log`` (insert-only) and ``demo.events`` (written by Spark through the ``hive_acid`` data source) — get a
stream of inserts, updates, deletes, a MERGE, streaming ingest with transaction batches, two Spark appends, a few
aborted transactions and one writer still in flight, so deltas pile up. Then it
shows every table/partition directory with the role getAcidState gives it, and the rows at two snapshots.

It grows into the full compaction demo (Initiator → Spark compaction → Cleaner) as those layers land.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console
from rich.table import Table

from airflow_acid.acid.fs import storage_for
from airflow_acid.acid.state import get_acid_state
from airflow_acid.client.predicates import source
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore import Metastore

DATABASE = "demo"
CUSTOMERS, SALES, AUDIT = f"{DATABASE}.customers", f"{DATABASE}.sales", f"{DATABASE}.audit_log"
EVENTS = f"{DATABASE}.events"
TABLES = (CUSTOMERS, SALES, AUDIT, EVENTS)


def run_demo(ms: Metastore, warehouse: Path, console: Console) -> None:
    _reset(ms, warehouse)
    wh = AcidWarehouse(ms, warehouse, init=False)
    wh.create_table(CUSTOMERS, [("id", "int"), ("name", "string"), ("tier", "string")], bucket_by=["id"],
                    num_buckets=2)
    wh.create_table(SALES, [("id", "int"), ("customer", "int"), ("amount", "double")],
                    partition_by=[("ds", "string")])
    wh.create_table(AUDIT, [("event", "string")], transactional_properties="insert_only")
    wh.create_table(EVENTS, [("id", "int"), ("event", "string")])
    console.rule(f"[bold]airflow-acid demo[/bold] · warehouse {warehouse} · metastore {ms.url}")
    log: list[tuple[str, str, str]] = []

    def note(txn: str, what: str, result: str) -> None:
        log.append((txn, what, result))

    with wh.transaction() as txn:
        r = txn.insert(CUSTOMERS, [(i, n, "basic") for i, n in
                                   enumerate(["Jerry", "Tom", "Kate", "Ann", "Bob", "Eve"], start=1)])
        txn.insert(AUDIT, [("customers loaded",)])
    note(f"txn {txn.txn_id}", f"INSERT 6 customers (2 Murmur3 buckets) + audit row, write id {r.write_id}",
         "committed")
    with wh.transaction() as txn:
        r = txn.insert(SALES, [{"id": i, "customer": 1 + i % 6, "amount": 10.0 * i,
                                "ds": "2024-01-01" if i <= 4 else "2024-01-02"} for i in range(1, 9)])
    note(f"txn {txn.txn_id}", "INSERT 8 sales into 2 partitions (dynamic partitioning)", "committed")

    with wh.streaming_connection(SALES, {"ds": "2024-01-03"}, batch_size=3) as conn:
        for k, outcome in enumerate(("commit", "commit", "abort")):
            conn.write([(101 + 2 * k, 1, 5.0), (102 + 2 * k, 2, 5.0)])
            txn_id = conn.current_txn
            conn.commit() if outcome == "commit" else conn.abort()
            note(f"txn {txn_id}", f"streaming 2 rows into ds=2024-01-03/{conn.directory}", f"{outcome}ted"
                 if outcome == "commit" else "aborted (its rows never reach the shared file)")
    with wh.streaming_connection(SALES, {"ds": "2024-01-03"}, batch_size=1) as conn:
        conn.write([(199, 3, 1.0)])
        txn_id = conn.current_txn
        conn.abort()
        note(f"txn {txn_id}", f"streaming 1 row into ds=2024-01-03/{conn.directory}",
             "aborted (nothing reached storage: no delta directory)")

    with wh.transaction() as txn:
        r = txn.update(CUSTOMERS, set={"tier": "gold"}, where=pc.field("id").isin([2, 3]))
    note(f"txn {txn.txn_id}", "UPDATE customers 2,3 tier=gold (delete_delta + delta)", "committed")
    with wh.transaction() as txn:
        r = txn.merge(CUSTOMERS, [(3, "Kate", "platinum"), (7, "Mary", "silver")], on="id",
                      when_matched_update={"tier": source("tier")}, when_not_matched_insert=True)
    note(f"txn {txn.txn_id}", "MERGE customers: Kate updated (stmt 1), Mary inserted (stmt 0)", "committed")
    try:
        with wh.transaction() as txn:
            txn.insert(CUSTOMERS, [(66, "Mallory", "fraud")])
            raise RuntimeError("writer failed")
    except RuntimeError:
        note(f"txn {txn.txn_id}", "INSERT then an exception in the with-block", "aborted (its files removed)")

    with wh.read_snapshot(wh.table(SALES)) as s1:
        early = {t.name: wh.io.read_partition(wh.table(SALES), t, s1.write_ids, s1.txns) for t in s1.targets}
        note("snapshot S1", str(s1.write_ids), "a reader's snapshot of demo.sales taken here")
        with wh.transaction() as txn:
            r = txn.delete(SALES, where=pc.field("amount") < 15)
        note(f"txn {txn.txn_id}", f"DELETE sales amount < 15 across {', '.join(str(p) for p in r.partitions)}", "committed")
    with wh.transaction() as txn:
        txn.insert(AUDIT, [("sales cleaned",)])
    note(f"txn {txn.txn_id}", "INSERT into the insert-only audit_log (plain ORC, no ACID columns)", "committed")

    console.print("[dim]starting a local Spark session to write demo.events through the hive_acid data source…[/dim]")
    for txn_label in _write_through_spark(ms, warehouse):
        note(txn_label, "Spark df.write.format('hive_acid').mode('append') of 5 events (one txn, a delta per task)",
             "committed")

    in_flight = wh.transaction(agent_info="airflow-acid demo in-flight writer")
    in_flight.insert(CUSTOMERS, [(8, "Zoe", "basic")])
    note(f"txn {in_flight.txn_id}", "INSERT customer 8", "still open (a writer in flight)")

    _print_log(console, log)
    for name in TABLES:
        _print_directories(console, wh, name)
    _print_rows(console, "demo.sales rows at S1 (before the delete)", pa.concat_tables(list(early.values())))
    _print_rows(console, "demo.sales rows at S2 (now)", wh.read(SALES))
    _print_rows(console, "demo.customers rows now", wh.read(CUSTOMERS))
    _print_rows(console, "demo.audit_log rows now", wh.read(AUDIT))
    _print_rows(console, "demo.events rows now (written by Spark)", wh.read(EVENTS))
    in_flight.commit()
    console.print(f"[dim]committed the in-flight txn {in_flight.txn_id}; re-reading demo.customers sees customer "
                  f"8 too: {wh.read(CUSTOMERS).num_rows} rows[/dim]")


def _write_through_spark(ms: Metastore, warehouse: Path) -> list[str]:
    """Two appends to demo.events from a local SparkSession through the ``hive_acid`` data source."""
    import os
    import sys

    from pyspark.sql import SparkSession

    from airflow_acid.client.spark_source import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the data source's Python workers import airflow_acid
    active = SparkSession.getActiveSession()
    spark = active or (SparkSession.builder.master("local[2]").appName("airflow-acid demo")
                       .config("spark.ui.enabled", "false").getOrCreate())
    try:
        register(spark)
        url = ms.db.engine.url.render_as_string(hide_password=False)
        labels: list[str] = []
        for first in (1, 6):
            df = spark.createDataFrame([(i, f"click {i}") for i in range(first, first + 5)], "id int, event string")
            df.write.format("hive_acid").option("metastore_url", url).option("warehouse", str(warehouse)) \
                .mode("append").save(EVENTS)
            labels.append(f"spark write {len(labels) + 1}")
        return labels
    finally:
        if active is None:
            spark.stop()


def _reset(ms: Metastore, warehouse: Path) -> None:
    if DATABASE in ms.catalog.list_databases():
        ms.catalog.drop_database(DATABASE, cascade=True)
    shutil.rmtree(warehouse / f"{DATABASE}.db", ignore_errors=True)


def _print_log(console: Console, log) -> None:
    table = Table(title="what happened", title_justify="left")
    for col in ("transaction", "statement", "outcome"):
        table.add_column(col)
    for row in log:
        table.add_row(*row)
    console.print(table)


def _print_directories(console: Console, wh: AcidWarehouse, name: str) -> None:
    info = wh.table(name)
    kind = "insert-only" if info.is_insert_only else "full ACID"
    if info.bucket_cols:
        kind += f", {info.num_buckets} buckets by {', '.join(info.bucket_cols)}"
    txns = wh.metastore.snapshots.valid_txn_list()
    wids = wh.metastore.snapshots.valid_write_id_list(info.full_name, txns)
    console.print(f"[bold]{info.full_name}[/bold] ({kind}) at {wids} — directories by getAcidState")
    table = Table()
    for col in ("partition", "directory", "files", "bytes", "role"):
        table.add_column(col, justify="right" if col == "bytes" else "left")
    for target in wh.io.partition_targets(info):
        files = storage_for(target.location, wh.filesystem).list_files()
        state = get_acid_state(files, wids, txns)
        role: dict[str, str] = {}
        for d in state.obsolete:
            role[d] = "[yellow]obsolete[/yellow] (the Cleaner may delete it)"
        for d in state.aborted:
            role[d] = "[red]aborted[/red] (invisible; the Cleaner deletes it)"
        for i, d in enumerate(state.current_deltas):
            role[d] = f"[green]current #{i + 1}[/green] (read, in this order)"
        if state.base:
            role[state.base] = "[green]base[/green]"
        dirs: dict[str, list] = {}
        for f in files:
            dirs.setdefault(f.path.split("/", 1)[0], []).append(f)
        for d in sorted(dirs):
            entries = dirs[d]
            table.add_row(target.name or "-", d, ", ".join(sorted(f.path.split("/", 1)[-1] for f in entries)),
                          str(sum(f.size for f in entries)),
                          role.get(d, "[dim]ignored (write id not visible: open transaction)[/dim]"))
    console.print(table)


def _print_rows(console: Console, title: str, rows: pa.Table) -> None:
    console.print(f"[bold]{title}: {rows.num_rows} rows[/bold]")
    table = Table()
    for name in rows.column_names:
        table.add_column(name)
    for record in rows.to_pylist():
        table.add_row(*(str(v) for v in record.values()))
    console.print(table)


def show_status(ms: Metastore, warehouse: Path, console: Console) -> None:
    """After compaction and cleaning: each demo table's directories, its row count, and SHOW COMPACTIONS."""
    wh = AcidWarehouse(ms, warehouse, init=False)
    for name in TABLES:
        _print_directories(console, wh, name)
        console.print(f"{name}: {wh.read(name).num_rows} rows")
    table = Table(title="SHOW COMPACTIONS", title_justify="left")
    columns = ("compactionid", "dbname", "tabname", "partname", "type", "state", "workerhost", "duration",
               "errormessage")
    for col in columns:
        table.add_column(col)
    for row in ms.compactions.show_compactions():
        values = dict(zip(row.columns(), row.as_strings()))
        table.add_row(*(values[c] for c in columns))
    console.print(table)
