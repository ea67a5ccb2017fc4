"""The write paths of issue 29's type matrix: each writes the matrix rows (tests/type_matrix.py) into its own table
through one of the project's writers and records what every row must read back as. A path that raises keeps its
error (the test reports it) and the others still run.

Paths: client INSERT + DELETE (statement delta, delete delta), UPDATE by keyword expressions and literals, UPDATE by
SQL text (``where="…"``, :class:`Sql` values), the three MERGE forms (keywords, ``when=[…]`` clauses, ``airflow-acid
sql "MERGE …"``), ``airflow-acid sql "UPDATE …"``, streaming (small transactions on the default writer, large ones
on pyarrow stripes, each file also cut at its first flush), insert-only deltas, INSERT OVERWRITE, and MINOR / MAJOR /
REBALANCE compaction output (LocalRunner) — on an unbucketed table and one clustered by ``k`` into 2 buckets.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.compute as pc
from click.testing import CliRunner

from airflow_acid.acid import streaming_event_writer
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.cli.commands import main as cli_main
from airflow_acid.client.merge_clauses import WhenMatched, WhenNotMatched
from airflow_acid.client.sql_eval import Sql
from airflow_acid.client.warehouse import AcidWarehouse
from tests.spark.helpers import snapshot
from tests.spark.orc_files import compact, location, stream
from tests.type_matrix import (
    COLUMNS,
    NAMES,
    ROW_TYPE,
    ROWS_N,
    VARIANTS,
    WIDE_VARIANTS,
    api_rows,
    expected_row,
    matrix_rows,
)

PREFIX = {"microseconds": "us", "nanoseconds in 1677-2262": "nsr", "nanoseconds": "ns"}
"""Table name prefix of each variant of the rows (tests/type_matrix.py VARIANTS)."""
DATA = NAMES[1:]
"""Every column but the key ``k`` (which UPDATE and MERGE never change: it is also the bucketing column)."""


@dataclass
class Written:
    """One path's table: what it must hold, the reads taken along the way and the error that stopped it, if any."""

    path: str
    table: str
    folder: Path
    final: dict[int, dict[str, Any]] = field(default_factory=dict)
    """k -> expected row of the table's final state."""
    versions: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """k -> every expected row version ever written (a delta holds one of them)."""
    reads: list[tuple[str, pa.Table, dict[int, dict[str, Any]]]] = field(default_factory=list)
    """(label, rows read by our reader, the rows the table held then)."""
    extra_files: list[Path] = field(default_factory=list)
    """Files outside the table folder (streaming files cut at their first flush) and the rows they hold."""
    extra_expect: dict[Path, dict[int, dict[str, Any]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    """Every statement that raised: what it was, the error and where it came from."""
    insert_only: bool = False

    def attempt(self, what: str, action: Callable[[], object]) -> bool:
        """Run one statement; an error is recorded (the path goes on with its other statements)."""
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - the statement's failure is what the test reports
            frames = traceback.extract_tb(exc.__traceback__)[-2:]
            where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
            text = str(exc)
            text = text if len(text) < 900 else text[:450] + " … " + text[-450:]
            self.errors.append(f"{what}: {type(exc).__name__}: {text} [at {where}]")
            return False
        return True

    def wrote(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            exp = expected_row(row)
            self.final[row["k"]] = exp
            self.versions.setdefault(row["k"], []).append(exp)

    def deleted(self, keys: list[int]) -> None:
        for k in keys:
            self.final.pop(k, None)

    def files(self) -> list[Path]:
        """Every ORC data file of the table folder (bucket files, insert-only files), then the extra ones."""
        found = [p for p in sorted(self.folder.rglob("*")) if p.is_file() and not p.name.startswith(("_", "."))
                 and not p.name.endswith("_flush_length")]
        return found + self.extra_files

    def expect_file(self, path: Path) -> tuple[dict[int, dict[str, Any]] | None, dict[int, list[dict[str, Any]]]]:
        """(exact rows by k, or None) and the versions a file's rows may be: a base holds the final state."""
        if path in self.extra_expect:
            return self.extra_expect[path], self.versions
        if any(part.startswith("base_") for part in path.relative_to(self.folder).parts):
            return self.final, self.versions
        return None, self.versions


class Scenario:
    """Builds every path's table of one timestamp variant on one warehouse."""

    def __init__(self, wh: AcidWarehouse, metastore_url: str, root: Path, work: Path, variant: str) -> None:
        self.wh, self.url, self.root, self.work, self.variant = wh, metastore_url, root, work, variant
        self.written: dict[str, Written] = {}

    def api(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows in the form the client takes for this variant."""
        return api_rows(rows, wide=self.variant in WIDE_VARIANTS)

    def rows(self, start: int = 0, count: int = ROWS_N, *, shift: int = 0) -> list[dict[str, Any]]:
        return VARIANTS[self.variant](matrix_rows(start, count, shift=shift))

    def run(self, name: str, build: Callable[[Written], None], *, bucketed: bool = False, insert_only: bool = False
            ) -> None:
        table = f"{PREFIX[self.variant]}_{name.replace(' ', '_').replace('-', '_')}"
        props = {"transactional_properties": "insert_only"} if insert_only else {}
        extra = {"bucket_by": ["k"], "num_buckets": 2} if bucketed else {}
        self.wh.create_table(table, COLUMNS, **props, **extra)
        written = Written(name, table, location(self.wh, table), insert_only=insert_only)
        self.written[name] = written
        written.attempt(name, lambda: build(written))

    # --- the statements -----------------------------------------------------------------------------------------

    def insert(self, w: Written, rows: list[dict[str, Any]]) -> None:
        with self.wh.transaction() as txn:
            txn.insert(w.table, self.api(rows))
        w.wrote(rows)

    def read(self, w: Written, label: str) -> None:
        with self.wh.transaction() as txn:
            w.reads.append((label, txn.read(w.table), dict(w.final)))

    def sql(self, statement: str) -> None:
        """``airflow-acid sql STATEMENT`` through the CLI entry point; a non-zero exit raises with its output."""
        result = CliRunner().invoke(cli_main, ["sql", statement, "--metastore-url", self.url, "--warehouse",
                                               str(self.root)])
        if result.exit_code != 0:
            raise AssertionError(f"airflow-acid sql exited {result.exit_code}: {result.output.strip()[-2000:]}"
                                 + (f"\n{result.exception!r}" if result.exception else ""))

    def compactions(self, w: Written, high: int, *, rebalance: bool) -> None:
        """MINOR, MAJOR and (unbucketed) REBALANCE of ``w`` up to write id ``high``, reading the table after each."""
        for ctype, txn, kw in (("minor", 100 + high, {}), ("major", 200 + high, {}),
                               *((("rebalance", 300 + high, {"number_of_buckets": 1}),) if rebalance else ())):
            compact(w.folder, ctype, high, row_schema=ROW_TYPE, txn=txn, **kw)
            w.reads.append((f"after {ctype}", read_acid_table(str(w.folder), snapshot(high)), dict(w.final)))

    # --- the paths ----------------------------------------------------------------------------------------------

    def build(self) -> dict[str, Written]:
        for bucketed, tag in ((False, ""), (True, " bucketed")):
            self.run("insert delete" + tag, lambda w, b=bucketed: self.insert_delete(w, b), bucketed=bucketed)
            self.run("update keyword" + tag, self.update_keyword, bucketed=bucketed)
            self.run("update sql" + tag, self.update_sql, bucketed=bucketed)
            self.run("merge keywords" + tag, lambda w, b=bucketed: self.merge_keywords(w, b), bucketed=bucketed)
            self.run("merge clauses" + tag, self.merge_clauses, bucketed=bucketed)
            self.run("cli update" + tag, self.cli_update, bucketed=bucketed)
            self.run("cli merge" + tag, self.cli_merge, bucketed=bucketed)
        self.run("streaming small", lambda w: self.streaming(w, large=False))
        self.run("streaming large", lambda w: self.streaming(w, large=True))
        self.run("insert-only", self.insert_only, insert_only=True)
        self.run("insert overwrite", self.insert_overwrite)
        return self.written

    def insert_delete(self, w: Written, bucketed: bool) -> None:
        """INSERT, DELETE, INSERT, then MINOR (deltas + delete delta), MAJOR and (unbucketed) REBALANCE of them."""
        self.insert(w, self.rows())
        gone = [1, 5]
        with self.wh.transaction() as txn:
            txn.delete(w.table, pc.field("k").isin(gone))
        w.deleted(gone)
        self.read(w, "after delete")
        self.insert(w, self.rows(ROWS_N, 4, shift=5))
        self.compactions(w, 3, rebalance=not bucketed)

    def update_keyword(self, w: Written) -> None:
        """Every value through an identity expression, then each row set to another row's values as literals."""
        self.insert(w, self.rows())
        with self.wh.transaction() as txn:
            txn.update(w.table, {n: pc.field(n) for n in DATA})
        w.wrote(self.rows())
        for row in self.rows(shift=1):
            literals = self.api([row])[0]
            if w.attempt(f"UPDATE SET every column to literals WHERE k = {row['k']}",
                         lambda row=row, literals=literals: self._update(w, {n: literals[n] for n in DATA},
                                                                        pc.field("k") == row["k"])):
                w.wrote([row])
        self.read(w, "after update")

    def _update(self, w: Written, values: dict[str, Any], where: Any) -> None:
        with self.wh.transaction() as txn:
            txn.update(w.table, values, where=where)

    def update_sql(self, w: Written) -> None:
        """Every value through ``SET c = Sql("c")`` (SQL engine round trip), then timestamp literals in SQL text."""
        self.insert(w, self.rows())
        with self.wh.transaction() as txn:
            txn.update(w.table, {n: Sql(n) for n in DATA}, where="k >= 0")
        w.wrote(self.rows())
        for old, new in zip(self.rows(), self.rows(shift=1)):
            literal = "NULL" if new["ts"] is None else f"TIMESTAMP '{new['ts'].text()}'"
            if w.attempt(f"UPDATE SET ts = {literal} WHERE k = {old['k']}",
                         lambda literal=literal, k=old["k"]: self._update(w, {"ts": Sql(literal)}, f"k = {k}")):
                w.wrote([{**old, "ts": new["ts"]}])
        self.read(w, "after update")

    def _merge_source(self) -> list[dict[str, Any]]:
        return self.rows(0, ROWS_N + 3, shift=1)  # every key matched, three new ones

    def merge_keywords(self, w: Written, bucketed: bool) -> None:
        """Keyword MERGE (both branches) then, unbucketed, MINOR, MAJOR and REBALANCE of the result."""
        self.insert(w, self.rows())
        source = self._merge_source()
        with self.wh.transaction() as txn:
            txn.merge(w.table, self.api(source), on="k", when_matched_update=True, when_not_matched_insert=True)
        w.wrote(source)
        self.read(w, "after merge")
        self.compactions(w, 2, rebalance=not bucketed)

    def merge_clauses(self, w: Written) -> None:
        self.insert(w, self.rows())
        source = self._merge_source()
        with self.wh.transaction() as txn:
            txn.merge(w.table, self.api(source), on=["k"],
                      when=[WhenMatched(update={n: Sql(f"s.{n}") for n in DATA}), WhenNotMatched()])
        w.wrote(source)
        self.read(w, "after merge")

    def cli_update(self, w: Written) -> None:
        self.insert(w, self.rows())
        self.sql(f"UPDATE {w.table} SET " + ", ".join(f"{n} = {n}" for n in DATA) + " WHERE k >= 0")
        w.wrote(self.rows())
        self.read(w, "after UPDATE")

    def cli_merge(self, w: Written) -> None:
        self.insert(w, self.rows())
        source = f"{w.table}_src"
        self.wh.create_table(source, COLUMNS)
        rows = self._merge_source()
        with self.wh.transaction() as txn:
            txn.insert(source, self.api(rows))
        self.sql(f"MERGE INTO {w.table} AS t USING {source} AS s ON t.k = s.k "
                 "WHEN MATCHED THEN UPDATE SET " + ", ".join(f"{n} = s.{n}" for n in DATA) +
                 " WHEN NOT MATCHED THEN INSERT VALUES (" + ", ".join(f"s.{n}" for n in NAMES) + ")")
        w.wrote(rows)
        self.read(w, "after MERGE")

    def streaming(self, w: Written, *, large: bool) -> None:
        """Two streaming transactions of one batch; the file also cut at the first commit's flush length. ``large``
        forces the pyarrow-stripe writer (``piece_min_rows`` = 0) that large transactions take."""
        first, second = self.rows(0, ROWS_N // 2), self.rows(ROWS_N // 2, ROWS_N - ROWS_N // 2)
        prefix = self.work / f"{w.table}_first_flush.orc"
        with mock.patch.object(streaming_event_writer, "piece_min_rows", lambda: 0) if large else nullcontext():
            stream(self.wh, w.table, w.folder / "delta_0000001_0000002", prefix, (self.api(first), self.api(second)))
        w.wrote(first + second)
        w.extra_files.append(prefix)
        w.extra_expect[prefix] = {r["k"]: expected_row(r) for r in first}
        self.read(w, "after streaming")

    def insert_only(self, w: Written) -> None:
        half = ROWS_N // 2
        self.insert(w, self.rows(0, half))
        self.insert(w, self.rows(half, ROWS_N - half))
        self.read(w, "after inserts")
        compact(w.folder, "major", 2, row_schema=None, insert_only=True)
        w.reads.append(("after major", read_acid_table(str(w.folder), snapshot(2)), dict(w.final)))

    def insert_overwrite(self, w: Written) -> None:
        rows = self.rows()
        with self.wh.transaction() as txn:
            txn.insert_overwrite(w.table, self.api(rows))
        w.wrote(rows)
        self.read(w, "after insert overwrite")

