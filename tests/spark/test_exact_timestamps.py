"""Issue 29, items 2–4: a table holding timestamps outside 1677–2262 keeps every value to the nanosecond through
UPDATE and MERGE with SQL, a streaming batch mixing such transactions with in-span ones, and MINOR, MAJOR and
REBALANCE compaction (before, one such value made every path run at microseconds and cut the nanoseconds of every
row)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_acid.acid.timestamps import WIDE_TIMESTAMP, TimestampForm, convert, in_form
from airflow_acid.acid.writeids import ValidReaderWriteIdList
from airflow_acid.client import Sql, WhenMatched, WhenNotMatched
from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus
from airflow_acid.spark.runners import LocalRunner
from tests.spark.helpers import compactor_snapshot, plan_one, rows_with_ids

YEAR_ONE, YEAR_9999 = -62135596800, 253402300799


def ts(seconds: int, nanos: int = 0) -> dict[str, int]:
    """A timestamp in the wide form's fields, as the client takes it for any year at nanoseconds."""
    return {"epoch_seconds": seconds, "nanos_of_second": nanos}


ROWS = [(1, ts(YEAR_ONE)), (2, ts(0, 987_654_321)), (3, ts(YEAR_9999, 999_999_999)),
        (4, ts(-14831724304, 123_456_789)), (5, ts(-2, 999_999_999)), (6, None)]


def exact(table: pa.Table) -> dict[int, tuple[int, int] | None]:
    """id -> (seconds, nanos) of column t, whatever its Arrow form."""
    t = table.column("t").combine_chunks()
    wide = convert(t, in_form(t.type, TimestampForm.WIDE))
    return {i: None if v is None else (v["epoch_seconds"], v["nanos_of_second"])
            for i, v in zip(table.column("id").to_pylist(), wide.to_pylist())}


def pairs(rows) -> dict[int, tuple[int, int] | None]:
    return {i: None if v is None else (v["epoch_seconds"], v["nanos_of_second"]) for i, v in rows}


def _compact(location: str, ctype: str, high: int, txn: int, **kw) -> None:
    plan = plan_one(location, ctype, txn, compactor_snapshot(high), **kw)
    (result,) = LocalRunner().run(CompactionPlan((plan,)), job_name="ts", spark_conf={}).compactions
    assert result.status == JobStatus.SUCCEEDED, result.error


@pytest.mark.slow
def test_every_path_keeps_nanoseconds_beside_values_outside_the_nanosecond_span(warehouse):
    location = warehouse.create_table("t", [("id", "int"), ("t", "timestamp"), ("s", "string")]) \
        .location.removeprefix("file://")
    with warehouse.transaction() as txn:
        txn.insert("t", [(i, v, "x") for i, v in ROWS[:3]])
    with warehouse.transaction() as txn:  # an UPDATE whose SQL condition compares the wide-form column
        txn.update("t", {"s": Sql("'updated'")}, where="t < '1000-01-01' OR id = 2")
    with warehouse.transaction() as txn:  # the three MERGE forms' engine: clauses with SQL conditions
        txn.merge("t", [(3, None, "m"), (4, ROWS[3][1], "new")], ["id"],
                  when=[WhenMatched(update={"s": Sql("s.s")}, condition="t.t > '9000-01-01'"),
                        WhenNotMatched()])
    with warehouse.streaming_connection("t", batch_size=2) as conn:  # one batch: an in-span and a wide txn
        conn.write([(5, ROWS[4][1], "stream")])
        conn.commit()
        conn.write([(6, None, "stream"), (7, ts(YEAR_ONE, 1), "stream")])
        conn.commit()
    expected = {**pairs(ROWS), 7: (YEAR_ONE, 1)}
    read = warehouse.read("t")
    assert exact(read) == expected
    assert dict(zip(read.column("id").to_pylist(), read.column("s").to_pylist())) == {
        1: "updated", 2: "updated", 3: "m", 4: "new", 5: "stream", 6: "stream", 7: "stream"}
    assert read.schema.field("t").type == WIDE_TIMESTAMP  # neither nanoseconds nor microseconds hold them all

    high = 6
    before = rows_with_ids(location, ValidReaderWriteIdList(high_watermark=high))
    _compact(location, "minor", high, 101)
    assert rows_with_ids(location, ValidReaderWriteIdList(high_watermark=high)) == before
    _compact(location, "major", high, 102)
    assert rows_with_ids(location, ValidReaderWriteIdList(high_watermark=high)) == before
    _compact(location, "rebalance", high, 103, number_of_buckets=1)
    assert exact(warehouse.read("t")) == expected


def test_a_table_with_one_value_outside_the_span_reads_in_span_rows_at_nanoseconds(warehouse):
    warehouse.create_table("n", [("id", "int"), ("t", "timestamp")])
    with warehouse.transaction() as txn:
        txn.insert("n", [(1, ts(0, 987_654_321)), (2, ts(-1, 5))])
    with warehouse.transaction() as txn:
        txn.insert("n", [(3, ts(YEAR_ONE))])
    read = warehouse.read("n")
    assert exact(read) == {1: (0, 987_654_321), 2: (-1, 5), 3: (YEAR_ONE, 0)}
    with warehouse.transaction() as txn:
        txn.delete("n", "id = 3")
    assert warehouse.read("n").schema.field("t").type == pa.timestamp("ns")


def test_a_value_orc_cannot_store_is_refused_and_nothing_is_written(warehouse, tmp_path: Path):
    from airflow_acid.acid.errors import UnstorableTimestampError

    location = Path(warehouse.create_table("r", [("id", "int"), ("t", "timestamp")]).location.removeprefix("file://"))
    with pytest.raises(UnstorableTimestampError, match="column t: timestamp 1969-12-31 23:59:59.5 cannot be stored"):
        with warehouse.transaction() as txn:
            txn.insert("r", [(1, ts(-1, 500_000_000))])
    assert not list(location.glob("delta_*/bucket_*"))


def test_sql_statements_refuse_to_store_digits_they_cannot_carry(warehouse):
    from airflow_acid.client.errors import SchemaMismatchError
    from airflow_acid.statements import StatementExecutor, parse_statement

    def run_statement(wh, text):
        return StatementExecutor(wh).run(parse_statement(text))

    warehouse.create_table("src", [("id", "int"), ("t", "timestamp")])
    warehouse.create_table("dst", [("id", "int"), ("t", "timestamp")])
    with warehouse.transaction() as txn:
        txn.insert("src", [(1, ts(YEAR_9999, 999_999_999))])
    with pytest.raises(SchemaMismatchError, match="column\\(s\\) t hold timestamps outside 1677–2262"):
        run_statement(warehouse, "INSERT INTO dst SELECT * FROM src")
    with warehouse.transaction() as txn:
        txn.insert("src", [(2, ts(YEAR_ONE))])
        txn.delete("src", "id = 1")
    run_statement(warehouse, "INSERT INTO dst SELECT * FROM src")  # microseconds hold these exactly
    assert exact(warehouse.read("dst")) == {2: (YEAR_ONE, 0)}


def test_select_says_when_it_shows_timestamps_at_microseconds(warehouse):
    from airflow_acid.statements import StatementExecutor, parse_statement

    warehouse.create_table("sel", [("id", "int"), ("t", "timestamp")])
    with warehouse.transaction() as txn:
        txn.insert("sel", [(1, ts(YEAR_9999, 999_999_999))])
    result = StatementExecutor(warehouse).run(parse_statement("SELECT t FROM sel"))
    assert str(result.rows[0][0]).startswith("9999-12-31 23:59:59.999999")
    assert result.messages and "column(s) t hold timestamps outside 1677–2262" in result.messages[0]
    with warehouse.transaction() as txn:
        txn.update("sel", {"t": ts(0, 1)})
    assert StatementExecutor(warehouse).run(parse_statement("SELECT t FROM sel")).messages == []
