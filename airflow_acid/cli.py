"""The ``airflow-acid`` command line: metastore set-up and the end-to-end demo."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from airflow_acid import __version__

METASTORE_URL_ENV = "AIRFLOW_ACID_METASTORE_URL"
console = Console(width=None if Console().is_terminal else 160)


def _metastore(url: str | None, warehouse: Path | None = None):
    from airflow_acid.metastore import Metastore

    if url is None and warehouse is not None:
        url = f"sqlite:///{(warehouse / 'metastore.db').resolve()}"
    return Metastore(url)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="airflow-acid")
def main() -> None:
    """Hive-style ACID tables on plain files, compacted by Spark and orchestrated by Airflow."""


@main.command()
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, default=None,
              help=f"SQLAlchemy URL of the metastore (env {METASTORE_URL_ENV}); default: embedded SQLite.")
def init(metastore_url: str | None) -> None:
    """Create or upgrade the metastore schema (idempotent)."""
    with _metastore(metastore_url) as ms:
        ms.init()
        console.print(f"metastore ready at [bold]{ms.url}[/bold]")


@main.command()
@click.option("--warehouse", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-warehouse"),
              show_default=True, help="Local warehouse folder (created; the demo table in it is recreated).")
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, default=None,
              help="SQLAlchemy URL of the metastore; default: SQLite file inside the warehouse folder.")
def demo(warehouse: Path, metastore_url: str | None) -> None:
    """Build a sample warehouse (bucketed, partitioned and insert-only tables; inserts, updates, deletes, a MERGE,
    streaming batches, aborted and in-flight transactions), show each directory's role and the rows at two snapshots."""
    from airflow_acid.demo import run_demo

    warehouse.mkdir(parents=True, exist_ok=True)
    with _metastore(metastore_url, warehouse) as ms:
        ms.init()
        run_demo(ms, warehouse.resolve(), console)


@main.command()
@click.option("--warehouse", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-warehouse"),
              show_default=True, help="The demo's warehouse folder.")
@click.option("--metastore-url", envvar=METASTORE_URL_ENV, default=None,
              help="SQLAlchemy URL of the metastore; default: SQLite file inside the warehouse folder.")
def status(warehouse: Path, metastore_url: str | None) -> None:
    """Show the demo tables' directories and row counts, and SHOW COMPACTIONS (e.g. after the Airflow DAGs ran)."""
    from airflow_acid.demo import show_status

    with _metastore(metastore_url, warehouse) as ms:
        show_status(ms, warehouse.resolve(), console)


if __name__ == "__main__":  # pragma: no cover
    main()
