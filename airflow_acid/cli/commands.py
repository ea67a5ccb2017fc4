"""The ``airflow-acid`` command line: metastore set-up, the demo, Hive's ACID statements (``sql``), table health,
"why (not) compacted", the Cleaner and undoing a compaction. Every reporting command prints rich tables, or JSON
with ``--json``.

Exit codes: 0 done, 1 the metastore or warehouse refused (unknown table, bad partition spec, invalid property,
unknown id, a compaction that failed while waiting), 2 a statement that is malformed or not supported.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.filesize import decimal as human_size
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from airflow_acid.errors import INTERNAL_EXIT_CODE, AcidUserError
from airflow_acid.version import __version__

if TYPE_CHECKING:
    from airflow_acid.config import AcidConfig

METASTORE_URL_ENV = "AIRFLOW_ACID_METASTORE_URL"
METASTORE_FLAVOUR_ENV = "AIRFLOW_ACID_METASTORE_FLAVOUR"
FLAVOURS = click.Choice(["auto", "acid", "hive"], case_sensitive=False)
console = Console(width=None if Console().is_terminal else 160)
err_console = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 160)


def _metastore(url: str | None, warehouse: Path | None = None, flavour: str | None = None):
    from airflow_acid.metastore import Metastore

    if url is None and warehouse is not None:
        url = f"sqlite:///{(warehouse / 'metastore.db').resolve()}"
    return Metastore(url, flavour=flavour)


def flavour_option(command: Callable) -> Callable:
    """--metastore-flavour: auto (detect Hive's VERSION/CTLGS tables), acid or hive."""
    return click.option(
        "--metastore-flavour", "flavour", type=FLAVOURS, envvar=METASTORE_FLAVOUR_ENV, default="auto",
        show_default=True, help=f"What the metastore database is: airflow-acid's own schema (acid), an existing Hive 4 "
        f"metastore (hive), or detect it (auto; env {METASTORE_FLAVOUR_ENV}).")(command)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="airflow-acid")
def main() -> None:
    """Hive-style ACID tables on plain files, compacted by Spark and orchestrated by Airflow."""


@main.command()
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, default=None,
              help=f"SQLAlchemy URL of the metastore (env {METASTORE_URL_ENV}); default: embedded SQLite.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (URL and schema revision).")
@flavour_option
def init(metastore_url: str | None, as_json: bool, flavour: str) -> None:
    """Create or upgrade the metastore schema (idempotent). Refused on a Hive metastore: Hive owns its schema."""
    from airflow_acid.metastore.errors import MetastoreError
    from airflow_acid.metastore.init import current_revision

    with _metastore(metastore_url, flavour=flavour) as ms:
        try:
            ms.init()
        except MetastoreError as exc:  # e.g. a Hive metastore: its schema is Hive's
            _exit(str(exc), 1)
        if as_json:
            _echo_json({"metastore": ms.url, "revision": current_revision(ms.db)})
        else:
            console.print(f"metastore ready at [bold]{ms.url}[/bold]")


@main.command()
@click.option("--warehouse", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-warehouse"),
              show_default=True, help="Local warehouse folder (created; the demo table in it is recreated).")
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, default=None,
              help="SQLAlchemy URL of the metastore; default: SQLite file inside the warehouse folder.")
def demo(warehouse: Path, metastore_url: str | None) -> None:
    """Build a sample warehouse (bucketed, partitioned and insert-only tables; inserts, updates, deletes, a MERGE,
    streaming batches, aborted and in-flight transactions), show each directory's role and the rows at two snapshots."""
    from airflow_acid.cli.demo import run_demo

    warehouse.mkdir(parents=True, exist_ok=True)
    with _metastore(metastore_url, warehouse) as ms:
        ms.init()
        run_demo(ms, warehouse.resolve(), console)


@main.command()
@click.option("--warehouse", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-warehouse"),
              show_default=True, help="The demo's warehouse folder.")
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, default=None,
              help="SQLAlchemy URL of the metastore; default: SQLite file inside the warehouse folder.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (row counts and SHOW COMPACTIONS).")
@flavour_option
def status(warehouse: Path, metastore_url: str | None, as_json: bool, flavour: str) -> None:
    """Show what the metastore is (airflow-acid's own or a Hive metastore), then the demo tables' directories and
    row counts and SHOW COMPACTIONS (e.g. after the Airflow DAGs ran); on a Hive metastore the compaction states."""
    from airflow_acid.cli.demo import TABLES, show_status
    from airflow_acid.client.warehouse import AcidWarehouse
    from airflow_acid.metastore.errors import MetastoreError

    with _metastore(metastore_url, warehouse, flavour) as ms:
        try:
            profile = ms.profile
        except MetastoreError as exc:
            _exit(str(exc), 1)
        if profile.is_hive:
            states: dict[str, int] = {}
            for row in ms.compactions.show_compactions():
                states[row.state] = states.get(row.state, 0) + 1
            if as_json:
                _echo_json({"metastore": {"url": ms.url, "flavour": profile.flavour.value,
                                          "hive_schema_version": profile.hive_version,
                                          "decisions_recorded": profile.decisions_table}, "compactions": states})
            else:
                _say(f"metastore {ms.url}: {profile.describe()}")
                _say("compactions: " + (", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "none"))
            return
        if not as_json:
            _say(f"metastore {ms.url}: {profile.describe()}")
            show_status(ms, warehouse.resolve(), console)
            return
        wh = AcidWarehouse(ms, warehouse.resolve(), init=False)
        _echo_json({"metastore": {"url": ms.url, "flavour": profile.flavour.value},
                    "tables": {name: wh.read(name).num_rows for name in TABLES},
                    "compactions": [dataclasses.asdict(r) for r in ms.compactions.show_compactions()]})


# --- warehouse access shared by the operator commands -------------------------------------------------------------


_STORAGE_META = "airflow_acid.storage_options"
_CONFIG_META = "airflow_acid.config"


def _acid_config() -> AcidConfig:
    """The ``[acid]`` configuration the DAGs see (airflow.cfg when present, ``AIRFLOW__ACID__*`` variables), read
    once per command."""
    from airflow_acid.config import config_from_environment

    context = click.get_current_context(silent=True)
    if context is None:
        return config_from_environment()
    if _CONFIG_META not in context.meta:
        context.meta[_CONFIG_META] = config_from_environment()
    return context.meta[_CONFIG_META]


class WarehouseLocation(click.ParamType):
    """A local folder (a Path) or an fsspec URL such as ``s3://bucket/warehouse`` (kept intact, as a str)."""

    name = "PATH|URL"

    def convert(self, value: Any, param: Any, ctx: Any) -> Path | str:
        if isinstance(value, Path):
            return value
        text = str(value)
        return text.rstrip("/") if "://" in text else Path(text)


def _storage_options_of(pairs: tuple[str, ...]):
    """The ``--storage-option`` pairs (they override ``[acid] storage_options`` when the warehouse opens)."""
    from airflow_acid.acid.errors import StorageOptionsError
    from airflow_acid.acid.storage_options import StorageOptions

    try:
        return StorageOptions.parse_pairs(pairs)
    except StorageOptionsError as exc:
        raise click.BadParameter(str(exc), param_hint="--storage-option") from None


def warehouse_options(command: Callable) -> Callable:
    """--metastore-url, --metastore-flavour, --warehouse, --storage-option and --json."""
    inner = command

    @functools.wraps(inner)
    def with_storage_options(*args: Any, storage_option: tuple[str, ...] = (), **kwargs: Any) -> Any:
        click.get_current_context().meta[_STORAGE_META] = _storage_options_of(storage_option)
        return inner(*args, **kwargs)

    command = with_storage_options
    command = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(command)
    command = flavour_option(command)
    command = click.option(
        "--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE",
        help="Object-store option of the warehouse: endpoint_url, region, anonymous, profile or another fsspec "
             "argument; repeatable; adds to [acid] storage_options (airflow.cfg or $AIRFLOW__ACID__STORAGE_OPTIONS, JSON). "
             "Credentials come from the environment "
             "(AWS_ACCESS_KEY_ID …), never from options.")(command)
    command = click.option(
        "--warehouse", type=WarehouseLocation(), default=None,
        help="Warehouse folder or URL (s3://bucket/warehouse, gs://…, abfs://…; default: "
             "$AIRFLOW_ACID_HOME/warehouse). Without --metastore-url, a metastore.db inside a local folder (the "
             "demo's layout) is used if present.")(command)
    return click.option(
        "--metastore-url", envvar=METASTORE_URL_ENV, default=None,
        help=f"SQLAlchemy URL of the metastore (env {METASTORE_URL_ENV}); default: the embedded SQLite metastore "
             "($AIRFLOW_ACID_HOME/metastore.db).")(command)


class _Failure(Exception):
    """Stop the command: print ``message`` on stderr and exit with ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _handles_errors(command: Callable) -> Callable:
    """Errors users can hit (:class:`AcidUserError`) become one line on stderr and their exit code (1 refused,
    2 statement not understood); anything else is an internal error: traceback, exit code 3."""
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except _Failure as exc:
            _exit(str(exc), exc.code)
        except AcidUserError as exc:
            _exit(str(exc), exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt):
            raise
        except Exception:  # noqa: BLE001 - a bug: keep the traceback for the report, say so plainly
            err_console.print_exception()
            _exit("internal error (a bug in airflow-acid; the traceback above belongs in a bug report)",
                  INTERNAL_EXIT_CODE)

    return wrapper


def _exit(message: str, code: int) -> None:
    one_line = " ".join(line.strip() for line in message.splitlines() if line.strip())  # e.g. a driver's message
    err_console.print(Text(f"Error: {one_line}", style="red"), soft_wrap=True)
    raise click.exceptions.Exit(code)


@contextmanager
def _open_metastore(metastore_url: str | None, warehouse: Path | str | None, flavour: str | None = None
                    ) -> Iterator[tuple[Any, Callable[[Any], Any]]]:
    """The metastore the options name, and a function opening the warehouse over it when a command needs the
    files (pyarrow, fsspec and the table format load only then). The embedded default metastore is created on
    first use, a named one must already have the schema (``airflow-acid init``). A database that cannot be reached
    raises the metastore's error, which the command prints as one line."""
    from airflow_acid.metastore import Metastore
    from airflow_acid.metastore.init import current_revision, head_revision

    embedded = metastore_url is None
    if embedded and isinstance(warehouse, Path) and (warehouse / "metastore.db").is_file():
        metastore_url, embedded = f"sqlite:///{(warehouse / 'metastore.db').resolve()}", False
    config = _acid_config()
    ms = Metastore(metastore_url, config.settings, flavour=flavour)
    try:
        hive = ms.profile.is_hive  # a Hive metastore is used as Hive's schematool made it: no revision
        revision, head = (None, None) if hive else (current_revision(ms.db), head_revision())
        if revision != head:
            if embedded:
                ms.init()
            else:
                state = "has no airflow-acid schema" if revision is None else \
                    f"is at schema revision {revision}, this version needs {head}"
                raise _Failure(f"the metastore at {ms.url} {state}; run: airflow-acid init --metastore-url <url>")
        context = click.get_current_context(silent=True)
        pairs = context.meta.get(_STORAGE_META) if context is not None else None
        options = config.storage_options.merged(pairs) if pairs is not None else config.storage_options

        def open_warehouse(metastore: Any) -> Any:
            from airflow_acid.cli.lazy_pandas import arrow_without_pandas
            from airflow_acid.client.warehouse import AcidWarehouse

            arrow_without_pandas()  # the CLI hands pyarrow no pandas objects: not worth importing pandas
            return AcidWarehouse(metastore, warehouse, init=False, storage_options=options)

        yield ms, open_warehouse
    finally:
        ms.close()


@contextmanager
def _open_warehouse(metastore_url: str | None, warehouse: Path | str | None, flavour: str | None = None
                    ) -> Iterator[Any]:
    """The warehouse and metastore the options name (see :func:`_open_metastore`)."""
    with _open_metastore(metastore_url, warehouse, flavour) as (ms, open_warehouse):
        yield open_warehouse(ms)


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str))


def _table(title: str | None, columns: list[str], rows: Iterable[Sequence[Any]]) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(v if isinstance(v, Text) else Text("" if v is None else str(v)) for v in row))
    return table


def _show(table: Table) -> None:
    """Print a table at its natural width (wide ones are not squashed; the terminal wraps them, as beeline's do)."""
    needed = Measurement.get(console, console.options.update_width(100_000), table).maximum
    target = console if needed <= console.width else \
        Console(file=console.file, width=needed, force_terminal=console.is_terminal, no_color=console.no_color)
    target.print(table)


def _say(text: str, style: str | None = None) -> None:
    console.print(Text(text, style=style or ""), soft_wrap=True)


# --- sql ----------------------------------------------------------------------------------------------------------


@main.command()
@click.argument("statement", required=False)
@click.option("-e", "--execute", "execute", default=None, metavar="SQL",
              help="Run these ';'-separated statements, like hive -e / beeline -e.")
@click.option("-f", "--file", "script", type=click.File("r"), default=None,
              help="Read the statements from a file ('-' for stdin), like hive -f.")
@click.option("--shell", is_flag=True,
              help="Read statements from stdin one at a time, as the interactive shell does (the default when "
                   "stdin is a terminal and no statement is given).")
@click.option("--wait-timeout", type=float, default=None, metavar="SECONDS",
              help="Stop an AND WAIT after this long (the compaction stays queued); default: wait until it ends.")
@click.option("--vertical", is_flag=True, help="One block of 'column value' lines per row (for wide results).")
@warehouse_options
@_handles_errors
def sql(statement: str | None, execute: str | None, script: Any, shell: bool, wait_timeout: float | None,
        vertical: bool, metastore_url: str | None, warehouse: Path | str | None, as_json: bool,
        flavour: str = "auto") -> None:
    """Run Hive statements: SELECT, INSERT INTO / OVERWRITE, UPDATE, DELETE, MERGE, TRUNCATE TABLE (each its own
    transaction), SHOW COMPACTIONS / TRANSACTIONS / LOCKS, ALTER TABLE … COMPACT, ABORT TRANSACTIONS / COMPACTIONS,
    CREATE TABLE, ALTER TABLE … SET/UNSET TBLPROPERTIES / ADD / REPLACE / CHANGE COLUMNS, DESCRIBE [FORMATTED];
    and the session commands SET key=value, SET key, SET, SET -v and help.

    STATEMENT (or -e) may hold several statements separated by ';'; -f reads a script. All statements are parsed
    before the first one runs; they run in order, in one session, and stop at the first failure. Without any of
    them, on a terminal, an interactive shell starts (history, statements over several lines ending with ';',
    !quit or Ctrl-D to leave).
    """
    from airflow_acid.statements import ScriptRunner, Session, StatementExecutor, parse_script

    given = [x for x in (statement, execute, script) if x is not None]
    if len(given) > 1:
        raise _Failure("give one of STATEMENT, -e/--execute or -f/--file", 2)
    if statement == "-":
        statement, script = None, sys.stdin
    interactive = shell or (not given and sys.stdin.isatty())
    items: list[Any] = []
    if not interactive:
        text = statement if statement is not None else execute if execute is not None else \
            (script or sys.stdin).read()
        try:
            items = parse_script(text)
        except AcidUserError as exc:  # not a script: nothing is opened
            _statement_failed(exc)
    with _open_metastore(metastore_url, warehouse, flavour) as (ms, open_warehouse):
        executor = StatementExecutor(metastore=ms, open_warehouse=open_warehouse, wait_timeout_s=wait_timeout,
                                     on_wait=lambda line: err_console.print(Text(line, style="dim")))
        runner = ScriptRunner(executor.run, Session(ms.conf, on_change=executor.reconfigure))
        if interactive:
            from airflow_acid.cli.shell import run_shell

            run_shell(lambda text: _run_in_shell(runner, text, as_json, vertical), err_console)
            return
        _run_items(runner, items, as_json, vertical)


def _statement_failed(exc: AcidUserError) -> None:
    """Stop with the line Hive's CLI prints (``FAILED: ParseException line 1:7 …``) and the error's exit code."""
    from airflow_acid.statements import hive_error_line

    err_console.print(Text(hive_error_line(exc), style="red"), soft_wrap=True)
    raise click.exceptions.Exit(exc.exit_code)


def _run_items(runner: Any, items: list[Any], as_json: bool, vertical: bool) -> None:
    """Run a parsed script and print each result; with ``--json`` print every result at the end, and nothing on
    stdout when a statement fails (the error goes to stderr), so a consumer never reads half an answer."""
    results: list[Any] = []
    try:
        for item in items:
            try:
                result = runner.run(item)
            except AcidUserError as exc:
                _statement_failed(exc)
            results.append(result)
            _print_warnings(result)
            if not as_json:
                _print_result(result, vertical)
            if result.failed:
                if as_json:
                    _echo_json([r.to_dict() for r in results])
                _failed_line(f"FAILED: {result.statement} did not succeed (see above)", 1)
    except KeyboardInterrupt:
        _failed_line("FAILED: stopped waiting (Ctrl-C); the compaction stays queued — see SHOW COMPACTIONS", 130)
    if as_json:
        _echo_json([r.to_dict() for r in results])


def _run_in_shell(runner: Any, text: str, as_json: bool, vertical: bool) -> None:
    """One entry of the shell: parse and run it; a failure prints Hive's FAILED line and the shell goes on."""
    from airflow_acid.statements import hive_error_line, parse_script

    try:
        for item in parse_script(text):
            result = runner.run(item)
            _print_warnings(result)
            if as_json:
                _echo_json([result.to_dict()])
            else:
                _print_result(result, vertical)
    except AcidUserError as exc:
        err_console.print(Text(hive_error_line(exc), style="red"), soft_wrap=True)
    except KeyboardInterrupt:
        err_console.print(Text("stopped (Ctrl-C); a queued compaction stays queued", style="yellow"))


def _failed_line(line: str, code: int) -> None:
    err_console.print(Text(line, style="red"), soft_wrap=True)
    raise click.exceptions.Exit(code)


def _print_warnings(result: Any) -> None:
    for warning in result.warnings:
        err_console.print(Text(f"WARNING: {warning}", style="yellow"), soft_wrap=True)


def _print_result(result: Any, vertical: bool = False) -> None:
    if result.columns == ["set"]:  # SET k / SET / SET -v: Hive's plain key=value lines
        for row in result.text_rows():
            click.echo(row[0])
        return
    if result.columns and vertical:
        for number, row in enumerate(result.text_rows(), 1):
            table = _table(f"{result.statement} row {number}", ["column", "value"], list(zip(result.columns, row)))
            table.show_header = False
            _show(table)
    elif result.columns:
        _show(_table(result.statement, result.columns, result.text_rows()))
    if result.columns and not result.rows:
        _say(f"{result.statement}: no rows", "dim")
    for message in result.messages:
        _say(message, "red" if result.failed else None)


# --- health -------------------------------------------------------------------------------------------------------


@main.command()
@click.argument("table", required=False)
@click.option("--database", default=None, help="Only the tables of this database.")
@warehouse_options
@_handles_errors
def health(table: str | None, database: str | None, metastore_url: str | None, warehouse: Path | str | None,
           as_json: bool, flavour: str = "auto") -> None:
    """Per table/partition: base, deltas and delete deltas, delta/base ratio, obsolete and aborted directories,
    aborted transactions, the queued and the last compaction. TABLE is [db.]table; default: every ACID table."""
    from airflow_acid.compactor.errors import CompactorSettingsError
    from airflow_acid.compactor.settings import table_thresholds
    from airflow_acid.services import table_health, warehouse_health

    if table is not None and database is not None:
        raise _Failure("give either TABLE or --database, not both", 2)
    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        rows = table_health(wh, table) if table is not None else warehouse_health(wh, database)
        if as_json:
            _echo_json([r.to_dict() for r in rows])
            return
        if not rows:
            _say("nothing to show: no transactional table" + (f" in database {database}" if database else "") +
                 (" has partitions yet" if table else " with data directories yet"), "dim")
            return
        limits: dict[str, tuple[int, float] | None] = {}
        for r in rows:
            name = f"{r.database}.{r.table}"
            if name not in limits:
                try:
                    t = table_thresholds(wh.conf, wh.table(name).properties, table=name)
                    limits[name] = (t.delta_num_threshold, t.delta_pct_threshold)
                except CompactorSettingsError:
                    limits[name] = None
        _show(_health_table(rows, limits))


def _health_table(rows: list[Any], limits: dict[str, tuple[int, float] | None]) -> Table:
    columns = ["table", "partition", "base", "deltas", "delete deltas", "delta bytes", "delta/base", "obsolete",
               "aborted dirs", "aborted txns", "compaction", "last compaction"]
    out = []
    for r in rows:
        limit = limits.get(f"{r.database}.{r.table}")
        many = limit is not None and r.deltas + r.delete_deltas > limit[0]
        big = limit is not None and r.delta_base_ratio is not None and r.delta_base_ratio > limit[1]
        last = r.last_compaction
        base = "—" if r.base_write_id is None and not r.base_bytes else \
            f"{human_size(r.base_bytes)}" + (f" (write id {r.base_write_id})" if r.base_write_id is not None else "")
        out.append([
            f"{r.database}.{r.table}", r.partition or "", base,
            Text(str(r.deltas), style="yellow" if many else ""),
            Text(str(r.delete_deltas), style="yellow" if many else ""),
            human_size(r.delta_bytes),
            Text("—" if r.delta_base_ratio is None else f"{r.delta_base_ratio:.3g}", style="yellow" if big else ""),
            r.obsolete_dirs, r.aborted_dirs, r.aborted_txns, r.current_compaction or "",
            Text(r.error, style="red") if r.error else
            ("" if last is None else Text(f"{last.type} {last.id} {last.state}",
                                          style="red" if last.state == "failed" else ""))])
    return _table("table health (yellow: above the compaction thresholds)", columns, out)


# --- why ----------------------------------------------------------------------------------------------------------


@main.command()
@click.argument("table")
@click.option("--partition", default=None, metavar="'k=v[/k2=v2]'", help="The partition, e.g. 'ds=2024-01-01'.")
@warehouse_options
@_handles_errors
def why(table: str, partition: str | None, metastore_url: str | None, warehouse: Path | str | None, as_json: bool,
        flavour: str = "auto") -> None:
    """Why TABLE (or one partition of it) was or was not compacted, and what keeps its old files from being cleaned."""
    from airflow_acid.services import explain

    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        e = explain(wh, table, partition)
    if as_json:
        _echo_json(e.to_dict())
        return
    console.rule(Text(e.name, style="bold"))
    for sentence in e.summary:
        _say(f"• {sentence}")
    if e.cleanup_blockers:
        _show(_table("open transactions blocking cleanup",
                             ["compaction", "txnid", "user", "host", "open for", "why"],
                             [[b["compaction_id"], b["txn_id"], b["user"], b["host"], f"{b['age_s']:.0f} s", b["why"]]
                              for b in e.cleanup_blockers]))
    deletions = [[c["compaction_id"], d["path"], d["reason"]] for c in e.cleanup for d in c["deletions"]]
    if deletions:
        _show(_table("the next Cleaner run deletes", ["compaction", "directory", "why"], deletions))


# --- check --------------------------------------------------------------------------------------------------------

CHECK_FAILED_EXIT_CODE = 4
"""``check`` found at least one error: a layout some engine reads wrongly."""


@main.command()
@click.argument("table")
@click.argument("partition", required=False)
@click.option("--tails-only", is_flag=True, help="Compare each key index with the stripe count only (reads file "
              "tails, not the key columns of every stripe).")
@warehouse_options
@_handles_errors
def check(table: str, partition: str | None, tails_only: bool, metastore_url: str | None,
          warehouse: Path | str | None, as_json: bool, flavour: str = "auto") -> None:
    """Check TABLE's files (every partition, or PARTITION such as 'ds=2024-01-01') for layouts Hive, Trino or plain
    readers read wrongly: attempt suffixes in delete deltas, _copy_N files and sub-directories in ACID directories,
    original files beside ACID ones, missing _orc_acid_version, key indexes not matching the stripes. Works on files
    Hive or CDP wrote too. Exit code 4 when any finding is an error."""
    from airflow_acid.services.layout import check_table_layout

    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        reports = check_table_layout(wh, table, partition, verify_keys=not tails_only)
    failed = any(r.has_errors for r in reports)
    if as_json:
        _echo_json([r.to_dict() for r in reports])
    else:
        rows = [[Text(f.severity.value, style="red" if f.severity.value == "error" else "yellow"), f.problem.value,
                 r.partition + "/" + f.path if r.partition else f.path, f.message,
                 "\n".join(f"{m.engine}: {m.effect}" for m in f.misread_by)]
                for r in reports for f in r.findings]
        if rows:
            _show(_table(f"layout findings of {table}" + (f" partition {partition}" if partition else ""),
                         ["severity", "problem", "path", "finding", "read wrongly by"], rows))
        else:
            _say(f"no findings in {len(reports)} director{'y' if len(reports) == 1 else 'ies'} of {table}", "green")
    if failed:
        raise click.exceptions.Exit(CHECK_FAILED_EXIT_CODE)


# --- cleaner ------------------------------------------------------------------------------------------------------


@main.command()
@click.option("--dry-run", is_flag=True, help="Only say what would be deleted and why; change nothing.")
@warehouse_options
@_handles_errors
def cleaner(dry_run: bool, metastore_url: str | None, warehouse: Path | str | None, as_json: bool,
            flavour: str = "auto") -> None:
    """Run one Cleaner cycle: delete what compactions and aborted writers made obsolete, once no reader can still
    need it; list what waits and which open transactions block it."""
    from airflow_acid.services.reports import cleaner_cycle

    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        report = cleaner_cycle(wh.metastore, dry_run=dry_run, filesystem=wh.filesystem,
                               scope=_acid_config().scope).report
    if as_json:
        _echo_json(dataclasses.asdict(report))
        return
    if report.skipped:
        _say(f"Cleaner {report.skipped}", "yellow")
        return
    entries = report.entries + report.abort_cleanups + report.waiting
    if report.undone:
        _show(_table("output of undone compactions", ["compaction", "table/partition", "status", "message"],
                     [[u.compaction_id, u.entity, u.status, u.message] for u in report.undone]))
    if not entries:
        _say("nothing to clean: no compaction is ready for cleaning and no aborted writes are due", "dim")
        return
    _show(_table("Cleaner (dry run: nothing was deleted)" if dry_run else "Cleaner",
                         ["compaction", "table/partition", "status", "message"],
                         [[e.compaction_id if e.compaction_id is not None else "aborted writes", e.entity, e.status,
                           e.message or ""] for e in entries]))
    deletions = [[e.compaction_id if e.compaction_id is not None else "", d.url, d.reason]
                 for e in report.entries + report.abort_cleanups for d in e.deletions]
    if deletions:
        _show(_table("would delete" if dry_run else "deleted", ["compaction", "directory", "why"], deletions))
    blockers = [[e.compaction_id, b.txn_id, b.user, b.host, f"{b.age_s:.0f} s", b.why]
                for e in report.waiting for b in e.blockers]
    if blockers:
        _show(_table("open transactions blocking cleanup", ["compaction", "txnid", "user", "host",
                                                                    "open for", "why"], blockers))


@main.command()
@warehouse_options
@_handles_errors
def plan(metastore_url: str | None, warehouse: Path | str | None, as_json: bool, flavour: str = "auto") -> None:
    """Dry run: what the next Initiator cycle would queue (and why not the rest), and the Worker's plan of every
    waiting compaction — inputs, outputs, bytes, files, estimated core-seconds, benefit — in the order the next
    compaction run takes them within the compaction budgets (the DAG's [acid] compaction_budget_* options, from
    airflow.cfg or AIRFLOW__ACID__COMPACTION_BUDGET_*). Nothing is written: no queue row, decision, lock, transaction
    or file."""
    from airflow_acid.services.reports import next_run

    budgets = _acid_config().budgets
    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        upcoming = next_run(wh.metastore, budgets, filesystem=wh.filesystem)
    if as_json:
        _echo_json(upcoming.to_xcom())
        return
    report, order = upcoming.report, upcoming.order
    would = report.would_queue
    _show(_table("the next Initiator cycle would queue (dry run: nothing was queued)",
                 ["table/partition", "type", "reason"],
                 [[r.name, r.type.display if r.type else "", r.reason] for r in would]))
    declined = [r for r in report.initiator.results if r not in would]
    if declined:
        _show(_table("and would not queue", ["table/partition", "outcome", "reason"],
                     [[r.name, r.outcome.display, r.reason] for r in declined]))
    rows = []
    for rank, item in enumerate(order.items, 1):
        p, e = item.preview, item.preview.estimate
        last = p.steps[-1] if p.steps else {"inputs": [], "outputs": []}
        rows.append([rank if item.admitted else "held", p.compaction_id if p.compaction_id is not None else "new",
                     p.name, p.type.display, len(last["inputs"]), " ".join(last["outputs"]),
                     e.bytes_in if e else "", e.files_in if e else "", f"{e.core_seconds:.1f}" if e else "",
                     f"{e.benefit:g}" if e else "", p.nothing_to_do or p.error or item.held or ""])
    _show(_table("the Worker would run, in this order", ["order", "compaction", "table/partition", "type", "inputs",
                                                         "outputs", "bytes in", "files in", "est. core-s",
                                                         "benefit", "note"], rows))


# --- preflight ----------------------------------------------------------------------------------------------------

_SEVERITY_STYLE = {"blocker": "bold red", "warning": "yellow", "note": ""}


@main.command()
@warehouse_options
@_handles_errors
def preflight(metastore_url: str | None, warehouse: Path | str | None, as_json: bool, flavour: str = "auto") -> None:
    """Check a metastore database before airflow-acid works on it: Hive's schema of its VERSION (tables, columns,
    types, primary keys, indexes, foreign keys, unique constraints) or airflow-acid's own schema revision, the
    known Hive metastore issues of that version, whether Hive's compactor and airflow-acid would compact the same
    tables ([acid] mode / scope), the server's isolation level and time zone. Prints the verdict, ready or not ready
    with the reasons; exit code 1 when not ready. Only reads."""
    from airflow_acid.metastore.db import create_engine
    from airflow_acid.metastore.init import head_revision
    from airflow_acid.metastore.store import default_url
    from airflow_acid.services.preflight import CompactionSettings, run_preflight

    if metastore_url is None:
        local = warehouse / "metastore.db" if isinstance(warehouse, Path) else None
        metastore_url = f"sqlite:///{local.resolve()}" if local is not None and local.is_file() else default_url()
    config = _acid_config()
    settings = CompactionSettings(mode=_optional_setting(config, "mode"), scope=_optional_setting(config, "scope"))
    engine = create_engine(metastore_url)
    try:
        with engine.connect() as conn:
            report = run_preflight(conn, settings, head_revision())
    finally:
        engine.dispose()
    if as_json:
        _echo_json(report.to_json())
    else:
        _show_preflight(report)
    if not report.ready:
        raise click.exceptions.Exit(1)


def _optional_setting(config: Any, name: str) -> str | None:
    """An [acid] option that this version may not define yet (None then, and None when empty), as text; a parsed
    scope (``explicit``/``describe()``) is None unless one was configured."""
    value = getattr(config, name, None)
    if value is None or getattr(value, "explicit", True) is False:
        return None
    if callable(getattr(value, "describe", None)):
        return str(value.describe()) or None
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(str(v) for v in value) or None
    return str(getattr(value, "value", value)) or None


def _show_preflight(report: Any) -> None:
    facts = report.facts
    _say(f"{report.describe()} on {facts.dialect} {facts.server_version}"
         + (f"; compared with {report.reference}" if report.reference else ""))
    if report.reference is not None:
        if report.drift:
            _show(_table("schema drift", ["kind", "table", "name", "expected", "found"],
                         [[d.kind.value, d.table, d.name or "", d.expected or "", d.actual or ""]
                          for d in report.drift]))
        else:
            _say("schema: no drift", "green")
    if report.known_issues:
        _show(_table(f"known issues of Hive {facts.hive_version}", ["issue", "what", "affected versions"],
                     [[i.key, i.summary, i.window()] for i in report.known_issues]))
    for finding in report.findings:
        line = Text.assemble((f"{finding.severity.value}: ", _SEVERITY_STYLE[finding.severity.value]),
                             f"{finding.topic}: {finding.message}")
        console.print(line, soft_wrap=True)
        if finding.fix:
            _say(f"    fix: {finding.fix}")
    if report.ready:
        _say("verdict: ready", "bold green")
    else:
        _say("verdict: not ready — " + "; ".join(f.message for f in report.blockers), "bold red")


if __name__ == "__main__":  # pragma: no cover
    main()


# --- hive ---------------------------------------------------------------------------------------------------------


@main.group()
def hive() -> None:
    """Commands for an existing Hive 4 metastore database (airflow-acid never alters Hive's schema by itself)."""


@hive.command("create-decisions-table")
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, required=True,
              help=f"SQLAlchemy URL of the Hive metastore database (env {METASTORE_URL_ENV}).")
@_handles_errors
def create_decisions_table(metastore_url: str) -> None:
    """Add airflow-acid's decisions tables, ACID_INITIATOR_DECISIONS (the Initiator's latest decision per table or
    partition, shown by 'why') and ACID_INITIATOR_DECISION_LOG (every shadow cycle's decisions, for 'shadow report'
    over a time range), to a Hive metastore database. Hive does not read them; without them nothing is recorded."""
    with _metastore(metastore_url, flavour="hive") as ms:
        created = ms.create_decisions_table()
    _say(f"created ACID_INITIATOR_DECISIONS and ACID_INITIATOR_DECISION_LOG (whichever was missing) in {ms.url}"
         if created else f"already present: ACID_INITIATOR_DECISIONS and ACID_INITIATOR_DECISION_LOG in {ms.url}")


@hive.command("create-extra-tables")
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, required=True,
              help=f"SQLAlchemy URL of the Hive metastore database (env {METASTORE_URL_ENV}).")
@_handles_errors
def create_extra_tables(metastore_url: str) -> None:
    """Add airflow-acid's own tables that are missing — ACID_INITIATOR_DECISIONS ('why'), ACID_INITIATOR_DECISION_LOG
    ('shadow report' over time) and ACID_COMPACTION_RUNS
    (run figures in SHOW COMPACTIONS) — to a Hive metastore database, beside Hive's. Hive's tables are not touched."""
    with _metastore(metastore_url, flavour="hive") as ms:
        created = ms.create_extra_tables()
    _say(f"created {', '.join(created)} in {ms.url}" if created else f"already present: every extra table in {ms.url}")


# --- shadow mode -------------------------------------------------------------------------------------------------


@main.group()
def shadow() -> None:
    """Shadow mode: what airflow-acid's Initiator would do, recorded without acting, compared with Hive's compactor."""


@shadow.command("run")
@warehouse_options
@_handles_errors
def shadow_run(metastore_url: str | None, warehouse: Path | str | None, as_json: bool, flavour: str = "auto") -> None:
    """Evaluate every table as the Initiator would, reading only (no queue rows, nothing written to a Hive table),
    and record the decisions in ACID_INITIATOR_DECISIONS for 'shadow report'."""
    from airflow_acid.compactor.initiator import Initiator
    from airflow_acid.metastore.initiator_store import Outcome

    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        if not wh.metastore.profile.decisions_table:
            _exit("this Hive metastore has no ACID_INITIATOR_DECISIONS table, so shadow decisions cannot be recorded; "
                  "create it with: airflow-acid hive create-decisions-table --metastore-url URL", 1)
        report = Initiator(wh.metastore, filesystem=wh.filesystem).run_shadow()
    if as_json:
        _echo_json(report.to_dict())
        return
    _show(_table(f"shadow run: {report.candidates} candidate(s), nothing queued",
                 ["table/partition", "decision", "type", "deltas", "reason"],
                 [[r.name, r.outcome.display, r.type.display if r.type else "",
                   r.stats.delta_count if r.stats else "", r.reason] for r in report.results]))
    would = sum(r.outcome is Outcome.WOULD_QUEUE for r in report.results)
    _say(f"{would} compaction(s) would be queued; compare with Hive: airflow-acid shadow report")


def _time_ms(text: str | None, now_ms: int) -> int | None:
    """--since/--until: epoch ms, an ISO date/time (UTC unless it says otherwise) or an age (30m, 12h, 7d ago)."""
    from datetime import datetime, timezone

    from airflow_acid.metastore.conf import parse_duration_s

    if text is None:
        return None
    value = text.strip()
    if value.isdigit():
        return int(value)
    if value[-1:] in "smhd" and value[:-1].replace(".", "", 1).isdigit():
        return now_ms - int(parse_duration_s("--since/--until", value) * 1000)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not epoch ms, an ISO date/time or an age like 7d") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


@shadow.command("report")
@click.option("--since", default=None, help="Start of the range: ISO date/time (UTC), epoch ms or an age (7d); "
              "default: 7 days before --until.")
@click.option("--until", default=None, help="End of the range (same forms); default: now.")
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, required=True,
              help=f"SQLAlchemy URL of the metastore (env {METASTORE_URL_ENV}).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@flavour_option
@_handles_errors
def shadow_report_command(since: str | None, until: str | None, metastore_url: str, as_json: bool,
                          flavour: str) -> None:
    """Per table/partition over a time range: airflow-acid's recorded decisions beside what Hive's compactor did —
    agreed, would compact earlier/later, Hive never compacted (starved), Hive refused/failed — with the deltas,
    sizes and Hive's rows behind each."""
    from airflow_acid.services.shadow import shadow_report

    with _metastore(metastore_url, flavour=flavour) as ms:
        now = ms.initiator.now_ms()
        report = shadow_report(ms, _time_ms(since, now), _time_ms(until, now))
    if as_json:
        _echo_json(report.to_dict())
        return
    _show(_table("shadow report: airflow-acid's decisions beside Hive's compactor",
                 ["table/partition", "category", "airflow-acid (oldest first)", "deltas", "delta bytes", "base bytes",
                  "decided to compact", "vs Hive", "Hive", "reason"],
                 [[r.name, r.category.value, r.timeline_text, _maybe(b.delta_count if b else None),
                   _size(b.delta_size if b else None), _size(b.base_size if b else None), _moment(r.compact_at),
                   _lead(r.lead_ms), r.hive_summary, b.reason if b else ""]
                  for r, b in ((r, r.basis) for r in report.rows)]))
    _say("deltas, sizes and reason: airflow-acid's last decision before Hive first acted, else its latest")
    _say(", ".join(f"{n} {c.value}" for c, n in report.counts.items() if n) or "nothing decided or done in the range")


def _moment(ms: int | None) -> str:
    """Epoch ms as ``YYYY-MM-DD HH:MM:SS`` UTC; empty when missing."""
    from datetime import datetime, timezone

    return "" if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _lead(ms: int | None) -> str:
    """How long before (or after) Hive airflow-acid decided to compact: ``2h 05m before``, ``40s after``."""
    if ms is None:
        return ""
    seconds = abs(ms) // 1000
    hours, rest = divmod(seconds, 3600)
    text = f"{hours}h {rest // 60:02d}m" if hours else f"{rest // 60}m {rest % 60:02d}s" if rest >= 60 else \
        f"{rest}s" if rest else f"{abs(ms)}ms"
    return f"{text} {'before' if ms >= 0 else 'after'}"


def _maybe(value: Any) -> str:
    return "" if value is None else str(value)


def _size(value: int | None) -> str:
    return "" if value is None else human_size(value)


@main.group()
def compaction() -> None:
    """Act on one compaction of the queue."""


@compaction.command("undo")
@click.argument("compaction_id", type=int, metavar="ID")
@warehouse_options
@_handles_errors
def undo(compaction_id: int, metastore_url: str | None, warehouse: Path | str | None, as_json: bool,
         flavour: str = "auto") -> None:
    """Undo compaction ID while it is inside its delayed-cleanup window ([acid] cleaner_retention): readers see
    the files it replaced again and its output is deleted. Refused (exit code 1, with the reason) when the window
    passed, the Cleaner started, a later compaction built on it, or it is a REBALANCE whose new row ids later
    deletes or updates may name."""
    import getpass

    from airflow_acid.services import undo_compaction

    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        result = undo_compaction(wh, compaction_id, user=f"cli:{getpass.getuser()}")
    if as_json:
        _echo_json(result.to_dict())
        if not result.undone:
            raise click.exceptions.Exit(1)
        return
    if not result.undone:
        raise _Failure(f"undo refused: {result.message}")
    _say(result.message, "green")
    for path in result.removed:
        _say(f"deleted {path}", "dim")


def _cli_user() -> str:
    """How the metastore names a CLI user (``cli:<login>``, as undo does)."""
    import getpass

    return f"cli:{getpass.getuser()}"


@compaction.command("abort")
@click.argument("compaction_id", type=int, metavar="ID")
@warehouse_options
@_handles_errors
def abort_compaction_command(compaction_id: int, metastore_url: str | None, warehouse: Path | str | None,
                             as_json: bool, flavour: str = "auto") -> None:
    """Abort compaction ID while it is 'initiated' or 'working' (Hive's ABORT COMPACTIONS, which stops at
    'initiated', plus running ones): it moves to the history as 'aborted'; a working one's compactor transaction is
    aborted, so its Spark job can never commit. Refused (exit code 1, with the reason) for a 'ready for cleaning'
    compaction (use 'compaction undo') or a finished one."""
    from airflow_acid.services import abort_compaction

    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        result = abort_compaction(wh.metastore, compaction_id, user=_cli_user())
    _action_answer(result.to_dict(), result.aborted, result.message, as_json, "abort refused")


@compaction.command("requeue")
@click.argument("compaction_id", type=int, metavar="ID")
@warehouse_options
@_handles_errors
def requeue_compaction_command(compaction_id: int, metastore_url: str | None, warehouse: Path | str | None,
                               as_json: bool, flavour: str = "auto") -> None:
    """Queue 'failed' or 'refused' compaction ID again: a new 'initiated' compaction of the same table/partition,
    type, pool and properties. Refused (exit code 1, with the reason) for another state, a table or partition that
    is gone, or while a compaction of it is already scheduled (Hive's rule)."""
    import getpass
    import socket

    from airflow_acid.services import requeue_compaction

    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        result = requeue_compaction(wh.metastore, compaction_id,
                                    initiator_id=f"{socket.gethostname()}-cli:{getpass.getuser()}"[:128])
    _action_answer(result.to_dict(), result.requeued, result.message, as_json, "requeue refused")


def _action_answer(answer: dict[str, Any], done: bool, message: str, as_json: bool, refused: str) -> None:
    """Print an action's answer (JSON, or its message); a refusal exits with 1."""
    if as_json:
        _echo_json(answer)
        if not done:
            raise click.exceptions.Exit(1)
        return
    if not done:
        raise _Failure(f"{refused}: {message}")
    _say(message, "green")


@main.group()
def transaction() -> None:
    """Act on one transaction."""


@transaction.command("abort")
@click.argument("txn_id", type=int, metavar="ID")
@click.option("--dry-run", is_flag=True, help="Only show what the transaction blocks and what aborting it does.")
@warehouse_options
@_handles_errors
def abort_transaction_command(txn_id: int, dry_run: bool, metastore_url: str | None, warehouse: Path | str | None,
                              as_json: bool, flavour: str = "auto") -> None:
    """Abort open transaction ID (ABORT TRANSACTIONS), showing first what it blocks: cleanups waiting for it, the
    locks it holds and those waiting behind them, the compaction it belongs to, the tables it writes. Refused (exit
    code 1) when it is not open."""
    from airflow_acid.services import abort_transaction, transaction_blocking

    with _open_warehouse(metastore_url, warehouse, flavour) as wh:
        impact = transaction_blocking(wh.metastore, txn_id)
        if dry_run:
            if as_json:
                _echo_json(impact.to_dict())
                return
            _show_impact(impact, "aborting it would")
            return
        result = abort_transaction(wh.metastore, txn_id, user=_cli_user())
    if as_json:
        _echo_json(result.to_dict())
        if not result.aborted:
            raise click.exceptions.Exit(1)
        return
    if not result.aborted:
        raise _Failure(f"abort refused: {result.message}")
    _show_impact(impact, "aborting it")
    _say(result.message, "green")


def _show_impact(impact: Any, heading: str) -> None:
    """What a transaction blocks, as tables, then the consequences of aborting it."""
    _say(f"transaction {impact.txn_id} ({impact.state}, {impact.txn_type}) of {impact.user}@{impact.host}", "bold")
    if impact.cleanings:
        _show(_table("cleanups waiting for it", ["compaction", "table/partition", "why", "also waits for"],
                     [[c.compaction_id, c.entity, c.why, ", ".join(map(str, c.other_blockers))]
                      for c in impact.cleanings]))
    if impact.locks:
        _show(_table("locks it holds or waits for", ["lock", "resource", "type", "state"],
                     [[lk["lockid"], lk["resource"], lk["lock_type"], lk["lock_state"]] for lk in impact.locks]))
    if impact.waiting_locks:
        _show(_table("locks waiting behind its locks", ["lock", "resource", "type", "txn", "user"],
                     [[lk["lockid"], lk["resource"], lk["lock_type"], lk["txn_id"], lk["user"]]
                      for lk in impact.waiting_locks]))
    _say(f"{heading}:")
    for line in impact.consequences:
        _say(f"  - {line}")


# --- doctor -------------------------------------------------------------------------------------------------------


@main.command()
@click.option("--fix", "fix_id", default=None, metavar="ID",
              help="Apply the fix of finding ID (e.g. stuck-working:cq=12) after showing what it changes.")
@click.option("--yes", is_flag=True, help="With --fix: apply without asking (scripts).")
@warehouse_options
@_handles_errors
def doctor(fix_id: str | None, yes: bool, metastore_url: str | None, warehouse: Path | str | None, as_json: bool,
           flavour: str = "auto") -> None:
    """Find the states compaction gets stuck in, on a Hive 4 metastore or airflow-acid's own: each finding with
    its rows, what it blocks and its fix. Only reads; --fix ID applies one fix after confirmation. The check for
    compactions waiting on a paused acid_compaction DAG needs Airflow's database: it is in the console only."""
    from airflow_acid.services.doctor import apply_fix, diagnose

    with _open_metastore(metastore_url, warehouse, flavour) as (ms, _):
        findings = diagnose(ms)
        if fix_id is None:
            if as_json:
                _echo_json({"findings": [f.to_dict() for f in findings]})
            else:
                _show_findings(findings)
            return
        finding = next((f for f in findings if f.id == fix_id), None)
        if finding is None:
            raise _Failure(f"the doctor finds no '{fix_id}' now (fixed meanwhile, or a wrong id); run 'airflow-acid "
                           "doctor' for the current findings")
        if finding.fix is None:
            raise _Failure(f"{finding.id} has no automatic fix: {finding.advice}")
        if not as_json:
            _show_findings([finding])
        if not yes and not click.confirm(f"apply: {finding.fix.statement}?", err=True):
            raise _Failure("nothing changed")
        result = apply_fix(ms, fix_id, user=_cli_user())
    _action_answer(result.to_dict(), result.applied, result.message, as_json, "fix refused")


def _show_findings(findings: Sequence[Any]) -> None:
    """Findings as a table, then each one's evidence ids, what it blocks and its fix."""
    if not findings:
        _say("no findings: nothing is stuck", "green")
        return
    _show(_table("findings", ["severity", "id", "finding"],
                 [[Text(f.severity.value, style="red" if f.severity.value == "critical" else "yellow"), f.id,
                   f.summary] for f in findings]))
    for f in findings:
        _say(f.id, "bold")
        if f.compaction_ids:
            _say(f"  compactions: {', '.join(map(str, f.compaction_ids))}")
        if f.txn_ids:
            _say(f"  transactions: {', '.join(map(str, f.txn_ids))}")
        _say(f"  blocks: {f.blocks}")
        if f.fix is not None:
            _say(f"  fix (airflow-acid doctor --fix '{f.id}'): {f.fix.statement}")
            _say(f"  changes: {f.fix.changes}")
        else:
            _say(f"  no automatic fix: {f.advice}")
