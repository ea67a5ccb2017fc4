"""DataFrame-level UPDATE / DELETE / MERGE on an ACID table, run as distributed Spark jobs with the same layout
the Python client writes (split-update: delete events for the old ROW__IDs in ``delete_delta_W_W_S``, new row
versions in ``delta_W_W_S``), all in ONE Hive transaction:

    table = AcidTable(spark, "db.orders", metastore_url=url)
    table.delete("amount < 0")
    table.update({"status": "'late'"}, "due < current_date()")
    table.merge(changes_df, on=["id"], when=[WhenMatched(delete=True, condition="s.op = 'd'"),
                                             WhenMatched(update={"amount": Sql("s.amount")}), WhenNotMatched()])

The driver opens the transaction, allocates the write id and takes Hive's lock (EXCL_WRITE with the default
``hive.txn.xlock.write``); the target is read at the transaction's own snapshot through the ``hive_acid`` source
with ROW__ID; Spark SQL evaluates conditions and values (Hive syntax, transpiled by sqlglot); each task stages its
events with its own statement id (task × clauses + clause for MERGE); the driver commits. A failed job aborts and
removes every staged file; a retried task's output replaces its failed attempt's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlglot

from airflow_acid.acid.codes import DataOperation, OperationType
from airflow_acid.acid.event_schema import KEY_FIELDS
from airflow_acid.client.errors import SchemaMismatchError, UnsupportedOperationError
from airflow_acid.client.merge_clauses import (
    MergeClause,
    SourceColumn,
    WhenMatched,
    WhenNotMatched,
    cardinality_error,
    checked_clauses,
    clause_chooser,
    insert_values,
    on_condition,
    set_values,
)
from airflow_acid.client.spark_source import (
    CONF_PREFIX,
    ROW_ID,
    SHORT_NAME,
    Snapshot,
    SparkTxn,
    open_warehouse,
    register,
    task_attempt,
)
from airflow_acid.client.sql_eval import Sql

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

ACTION = "__acid_action"
CLAUSE = "__acid_clause"
_DELETE, _UPDATE, _INSERT = "d", "u", "i"


def spark_sql(text: str, *, what: str) -> str:
    """A Hive expression as Spark SQL."""
    try:
        return sqlglot.transpile(text, read="hive", write="spark")[0]
    except sqlglot.errors.ParseError as exc:
        raise SchemaMismatchError(f"{what}: {text!r} is not a Hive expression: {str(exc).splitlines()[0]}") \
            from None


def _value(value: Any, *, what: str) -> str:
    if isinstance(value, Sql):
        return spark_sql(value.text, what=what)
    return sqlglot.exp.convert(value).sql(dialect="spark")


class AcidTable:
    """An ACID table seen from a SparkSession; each method is one Hive transaction."""

    def __init__(self, spark: SparkSession, table: str, *, metastore_url: str | None = None,
                 warehouse: str | None = None) -> None:
        register(spark)
        self.spark = spark
        self.options: dict[str, Any] = {k: v for k, v in {"metastore_url": metastore_url,
                                                            "warehouse": warehouse}.items() if v}
        self.defaults = {key: value for key in ("metastore_url", "warehouse")
                         if (value := spark.conf.get(CONF_PREFIX + key, None))}
        with open_warehouse(self.options, self.defaults) as wh:
            info = wh.transactional_table(table)
            if info.is_insert_only:
                raise UnsupportedOperationError(f"table {info.full_name} is insert-only: UPDATE, DELETE and MERGE "
                                                "are not supported; append with df.write.format('hive_acid')")
            self.name = info.full_name
            self.columns = wh.io.full_schema(info).names
            self.data_columns = wh.io.data_schema(info).names
            self.updatable = [c for c in self.data_columns if c not in info.bucket_cols]

    def read(self) -> DataFrame:
        """The table at a fresh snapshot (``spark.read.format("hive_acid")``)."""
        return self.spark.read.format(SHORT_NAME).options(**self.options).load(self.name)

    # --- the three statements ------------------------------------------------------------------------------------

    def delete(self, condition: str | None = None) -> int:
        """DELETE the rows where ``condition`` (Hive SQL; None: every row) holds; returns the rows deleted."""
        where = spark_sql(condition, what=f"DELETE {self.name}: WHERE") if condition else "TRUE"
        return self._run(lambda t, _s: t.where(where).selectExpr(
            f"'{_DELETE}' AS {ACTION}", f"0 AS {CLAUSE}", "*"), what="delete")

    def update(self, set: Mapping[str, Any], condition: str | None = None) -> int:
        """UPDATE ``set`` ({column: literal or Sql(expression)}) where ``condition`` holds; returns the rows
        updated. Partition and bucket columns cannot be updated (as in Hive)."""
        values = self._assignments(set, what=f"UPDATE {self.name}")
        where = spark_sql(condition, what=f"UPDATE {self.name}: WHERE") if condition else "TRUE"
        projection = [f"'{_UPDATE}' AS {ACTION}", f"0 AS {CLAUSE}", f"`{ROW_ID}`"] + [
            f"{values[c]} AS `{c}`" if c in values else f"`{c}`" for c in self.columns]
        return self._run(lambda t, _s: t.where(where).selectExpr(*projection), what="update")

    def merge(self, source: DataFrame, on: str | Sequence[str], when: Sequence[MergeClause], *,
              target_alias: str = "t", source_alias: str = "s") -> int:
        """MERGE ``source`` into the table with Hive's grammar (clauses in order, the first whose condition holds;
        Hive's cardinality check); ``on`` is a list of equal columns or a Hive SQL condition. Returns the target
        rows matched plus the rows inserted."""
        what = f"MERGE into {self.name}"
        matched, unmatched = checked_clauses(when, what=what)
        t, s = f"`{target_alias}`", f"`{source_alias}`"
        on_sql = spark_sql(on_condition(on, target_alias, source_alias, what=what), what=f"{what}: ON")

        def condition(text: str) -> str:
            return spark_sql(text, what=f"{what}: WHEN")

        n = len(matched) + len(unmatched)

        def plan(target: DataFrame, _snap: Snapshot) -> DataFrame:
            target.createOrReplaceTempView("__acid_merge_target")
            source.createOrReplaceTempView("__acid_merge_source")
            parts = []
            if matched:
                joined = f"__acid_merge_target AS {t} JOIN __acid_merge_source AS {s} ON ({on_sql})"
                dup = self.spark.sql(f"SELECT {t}.`{ROW_ID}` AS id, count(*) AS n FROM {joined} GROUP BY "
                                     f"{t}.`{ROW_ID}` HAVING count(*) > 1 LIMIT 1").collect()
                if dup:
                    rid = dup[0]["id"]
                    raise cardinality_error(self.name, (rid.writeid, rid.bucketid, rid.rowid), dup[0]["n"])
                choose = clause_chooser(matched, condition)
                for index, clause in matched:
                    if clause.delete:
                        cols = [f"{t}.`{c}`" for c in self.columns]
                        action = _DELETE
                    else:
                        values = self._assignments(clause.update or {}, what=what)
                        cols = [f"{values[c]} AS `{c}`" if c in values else f"{t}.`{c}`" for c in self.columns]
                        action = _UPDATE
                    parts.append(f"SELECT '{action}' AS {ACTION}, {index} AS {CLAUSE}, {t}.`{ROW_ID}`, "
                                 f"{', '.join(cols)} FROM {joined} WHERE {choose} = {index}")
            if unmatched:
                choose = clause_chooser(unmatched, condition)
                anti = f"__acid_merge_source AS {s} LEFT ANTI JOIN __acid_merge_target AS {t} ON ({on_sql})"
                for index, insert_clause in unmatched:
                    cols = self._insert_values(insert_clause, source, s, what=what)
                    parts.append(f"SELECT '{_INSERT}' AS {ACTION}, {index} AS {CLAUSE}, "
                                 f"CAST(NULL AS STRUCT<writeid: BIGINT, bucketid: INT, rowid: BIGINT>) AS "
                                 f"`{ROW_ID}`, {', '.join(cols)} FROM {anti} WHERE {choose} = {index}")
            return self.spark.sql(" UNION ALL ".join(parts))

        return self._run(plan, what="merge", clauses=n,
                         operation=DataOperation.UPDATE if matched else DataOperation.INSERT)

    # --- pieces --------------------------------------------------------------------------------------------------

    def _assignments(self, values: Mapping[str, Any], *, what: str) -> dict[str, str]:
        return {name: _value(value, what=f"{what}: SET {name}")
                for name, value in set_values(values, self.columns, self.updatable, what=what).items()}

    def _insert_values(self, clause: WhenNotMatched, source: DataFrame, s: str, *, what: str) -> list[str]:
        given = insert_values(clause.insert, self.columns, source.columns, what=what)
        return [f"{s}.`{v.name}` AS `{c}`" if isinstance(v, SourceColumn) else
                f"{_value(v, what=f'{what}: INSERT {c}')} AS `{c}`" for c, v in zip(self.columns, given)]

    def _run(self, plan: Callable[[DataFrame, Snapshot], DataFrame], *, what: str, clauses: int = 1,
             operation: DataOperation = DataOperation.UPDATE) -> int:
        """Open the transaction, plan the changes over the target at its snapshot, stage them in tasks, commit."""
        from pyspark.sql.pandas.types import from_arrow_schema

        txn = SparkTxn.open({**self.options, "path": self.name}, self.defaults, operation, what=what)
        try:
            with open_warehouse(self.options, self.defaults) as wh:
                info = wh.transactional_table(self.name)
                txns = wh.metastore.snapshots.valid_txn_list(txn.txn_id)
                write_ids = wh.metastore.snapshots.valid_write_id_list(info.full_name, txns)
                full = wh.io.full_schema(info)
            snap = Snapshot(txn.txn_id, txns.to_string(), write_ids.to_string())
            target = self.spark.read.format(SHORT_NAME).options(**self.options).option("row_id", "true") \
                .option("snapshot", snap.to_json()).load(self.name)
            changes = plan(target, snap)
            out_schema = from_arrow_schema(pa.schema([("entries", pa.string()), ("rows", pa.int64())]))
            stage = _stager(txn, full, clauses)
            results = changes.mapInArrow(stage, out_schema).collect()
        except BaseException:
            txn.abort()
            raise
        import json

        entries = [e for r in results for e in json.loads(r["entries"])]
        txn.commit(entries, OperationType.UPDATE if operation is DataOperation.UPDATE else OperationType.INSERT)
        return sum(int(r["rows"]) for r in results)


def _stager(txn: SparkTxn, full: pa.Schema, clauses: int) -> Callable[[Iterator[pa.RecordBatch]],
                                                                      Iterator[pa.RecordBatch]]:
    """The task function: split its rows by clause and action and stage delete/insert events."""
    import json

    def stage(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from airflow_acid.client.spark_source import _Heartbeat
        from airflow_acid.client.sql_eval import conform

        task, attempt = task_attempt()
        beat = _Heartbeat(txn.metastore_url, txn.txn_id)
        collected = [b for b in batches if b.num_rows]
        beat.maybe()
        entries: list[dict[str, Any]] = []
        rows = 0
        if collected:
            table = pa.Table.from_batches(collected)
            actions = table.column(ACTION).to_pylist()
            clause_of = table.column(CLAUSE).to_pylist()
            for clause in sorted(set(clause_of)):
                pick = [i for i, c in enumerate(clause_of) if c == clause]
                part = table.take(pa.array(pick))
                kinds = {actions[i] for i in pick}
                inserts = deletes = None
                if kinds & {_UPDATE, _INSERT}:
                    inserts = conform(part.select(full.names), full, what=f"table {txn.table}")
                if kinds & {_UPDATE, _DELETE}:
                    rid = part.column(ROW_ID).combine_chunks()
                    deletes = pa.table({KEY_FIELDS[0]: rid.field("writeid").cast(pa.int64()),
                                        KEY_FIELDS[1]: rid.field("bucketid").cast(pa.int32()),
                                        KEY_FIELDS[2]: rid.field("rowid").cast(pa.int64()),
                                        **{k: part.column(k) for k in txn.partition_keys}})
                entries += txn.stage(task, attempt, statement=task * clauses + int(clause), inserts=inserts,
                                     deletes=deletes)
                rows += len(pick)
                beat.maybe()
        yield pa.record_batch([pa.array([json.dumps(entries)]), pa.array([rows], pa.int64())],
                              names=["entries", "rows"])

    return stage


__all__ = ["AcidTable", "Sql", "WhenMatched", "WhenNotMatched"]
