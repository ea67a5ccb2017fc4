"""MERGE's WHEN clauses and the rules they follow, once for both engines: the client's (DuckDB over Arrow,
:func:`airflow_acid.client.sql_eval.evaluate_merge`) and the Spark one (:class:`airflow_acid.client.spark_table.AcidTable`).

Each engine renders the checked clauses in its own SQL dialect; what a clause may say — which columns a SET may
name, what an INSERT gives each column, the ON condition, the order clauses are tried in and Hive's cardinality
check — is decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_acid.client.errors import SchemaMismatchError, UnsupportedOperationError


@dataclass(frozen=True)
class WhenMatched:
    """``WHEN MATCHED [AND condition] THEN UPDATE SET … | DELETE`` of a MERGE. ``update`` maps target columns to
    literals or :class:`~airflow_acid.client.sql_eval.Sql` expressions over the target and source aliases;
    ``condition`` is Hive SQL text."""

    update: Mapping[str, Any] | None = None
    delete: bool = False
    condition: str | None = None

    def __post_init__(self) -> None:
        if (self.update is None) == (not self.delete):
            raise SchemaMismatchError("WHEN MATCHED needs exactly one of update={column: value, …} or delete=True")


@dataclass(frozen=True)
class WhenNotMatched:
    """``WHEN NOT MATCHED [AND condition] THEN INSERT VALUES(…)``: ``insert`` maps columns to literals or
    :class:`~airflow_acid.client.sql_eval.Sql` expressions over the source alias, or lists a value per column
    (data then partition columns, as Hive's VALUES); None inserts the source row's same-named columns."""

    insert: Mapping[str, Any] | Sequence[Any] | None = None
    condition: str | None = None


MergeClause = WhenMatched | WhenNotMatched


@dataclass(frozen=True)
class SourceColumn:
    """An INSERT value that is the source row's column ``name`` (the whole source row is inserted)."""

    name: str


def checked_clauses(when: Sequence[MergeClause], *, what: str
                    ) -> tuple[list[tuple[int, WhenMatched]], list[tuple[int, WhenNotMatched]]]:
    """The WHEN MATCHED and WHEN NOT MATCHED clauses with their index in ``when`` (at least one clause)."""
    clauses = list(when)
    if not clauses:
        raise SchemaMismatchError(f"{what} needs at least one WHEN clause")
    matched = [(i, c) for i, c in enumerate(clauses) if isinstance(c, WhenMatched)]
    unmatched = [(i, c) for i, c in enumerate(clauses) if isinstance(c, WhenNotMatched)]
    return matched, unmatched


def on_condition(on: str | Sequence[str], target_alias: str, source_alias: str, *, what: str) -> str:
    """The ON condition as Hive SQL: ``on`` itself when text, else each listed column equal on both sides."""
    text = on if isinstance(on, str) else " AND ".join(
        f"`{target_alias}`.`{k}` = `{source_alias}`.`{k}`" for k in on)
    if not text:
        raise SchemaMismatchError(f"{what} needs ON columns or an ON condition")
    return text


def clause_chooser(items: Sequence[tuple[int, MergeClause]], condition_sql: Callable[[str], str]) -> str:
    """SQL giving the index of the first clause whose condition holds (-1: none), conditions rendered by
    ``condition_sql``: each row takes the first matching clause, as Hive's MERGE."""
    whens = " ".join(f"WHEN ({condition_sql(c.condition)}) THEN {i}" if c.condition else f"WHEN TRUE THEN {i}"
                     for i, c in items)
    return f"CASE {whens} ELSE -1 END"


def set_values(update: Mapping[str, Any], columns: Sequence[str], updatable: Sequence[str], *,
               what: str) -> dict[str, Any]:
    """A SET's values by the table's spelling of each column; unknown columns and partition or bucket columns
    (``columns`` not in ``updatable``) are refused, as in Hive."""
    lowered = {c.lower(): c for c in columns}
    out = {}
    for col, value in update.items():
        name = lowered.get(str(col).lower())
        if name is None:
            raise SchemaMismatchError(f"{what}: unknown column {col!r}; columns are {list(columns)}")
        if name not in updatable:
            raise UnsupportedOperationError(f"{what}: cannot update {name}: partition and bucket columns cannot be "
                                            "updated (as in Hive)")
        out[name] = value
    return out


def insert_values(spec: Mapping[str, Any] | Sequence[Any] | None, columns: Sequence[str],
                  source_columns: Sequence[str], *, what: str) -> list[Any]:
    """What a WHEN NOT MATCHED inserts in each of ``columns`` (data then partition columns): a
    :class:`SourceColumn`, a given value, or None (NULL) for a column a mapping leaves out."""
    if spec is None:
        present = {c.lower() for c in source_columns}
        missing = [c for c in columns if c.lower() not in present]
        if missing:
            raise SchemaMismatchError(f"{what}: inserting the source row needs column(s) {missing}, which the "
                                      f"source lacks ({list(source_columns)})")
        return [SourceColumn(c) for c in columns]
    if isinstance(spec, Mapping):
        lowered = {c.lower(): c for c in columns}
        unknown = [c for c in spec if str(c).lower() not in lowered]
        if unknown:
            raise SchemaMismatchError(f"{what}: INSERT names unknown column(s) {unknown}")
        given = {lowered[str(c).lower()]: v for c, v in spec.items()}
        return [given.get(c) for c in columns]
    if len(spec) != len(columns):
        raise SchemaMismatchError(f"{what}: INSERT VALUES has {len(spec)} value(s); the table has {len(columns)} "
                                  f"column(s) {list(columns)} (data columns, then partition columns)")
    return list(spec)


def cardinality_error(table: str, row_id: tuple[Any, Any, Any], sources: int) -> SchemaMismatchError:
    """Hive's cardinality check failed: a target row (its ROW__ID) matched more than one source row."""
    return SchemaMismatchError(
        f"table {table}: MERGE matched target row ROW__ID ({row_id[0]}, {row_id[1]}, {row_id[2]}) with {sources} "
        "source rows; each target row may match at most one source row (Hive's cardinality check). "
        "Deduplicate the source.")


__all__ = ["MergeClause", "SourceColumn", "WhenMatched", "WhenNotMatched", "cardinality_error", "checked_clauses",
           "clause_chooser", "insert_values", "on_condition", "set_values"]
