"""Tables bucketed on decimal and timestamp columns: INSERT puts each row in the bucket file Hive would (bucketing
version 2, hashes from Hive's own classes in tests/client/test_bucketing.py), on each backend."""

from __future__ import annotations

import datetime as dt
import glob
import os
from decimal import Decimal

from airflow_acid.acid.event_reader import read_event_file
from airflow_acid.statements import StatementExecutor, parse_statements
from tests.client.test_bucketing import HIVE_DECIMAL_HASHES, HIVE_TIMESTAMP_HASHES
from tests.services.support import unique


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def hive_bucket(hash_code: int, buckets: int) -> int:
    """ObjectInspectorUtils.getBucketNumber."""
    return (hash_code & 0x7FFFFFFF) % buckets


def rows_by_bucket_file(wh, table: str) -> dict[int, list[dict]]:
    found: dict[int, list[dict]] = {}
    for path in glob.glob(os.path.join(wh.table(table).location, "delta_*", "bucket_*")):
        bucket = int(os.path.basename(path).split("_")[1])
        found.setdefault(bucket, []).extend(r["row"] for r in read_event_file(path).to_pylist())
    return found


def test_decimal_bucket_column_rows_land_in_hives_buckets(wh):
    t = unique("bdec")
    run(wh, f"CREATE TABLE {t} (d DECIMAL(30,9), v STRING) CLUSTERED BY (d) INTO 4 BUCKETS STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')")
    values = [text for text, _ in HIVE_DECIMAL_HASHES if text != "1.50"]
    run(wh, f"INSERT INTO {t} VALUES " + ", ".join(f"({text}, '{text}')" for text in values) + ", (NULL, 'null')")
    expected = {text: hive_bucket(h, 4) for text, h in HIVE_DECIMAL_HASHES} | {"null": 0}
    found = rows_by_bucket_file(wh, t)
    assert {row["v"]: bucket for bucket, rows in found.items() for row in rows} == \
        {v: expected[v] for v in values + ["null"]}
    assert sorted(r["d"] for r in wh.read(t).to_pylist() if r["d"] is not None) == sorted(Decimal(v) for v in values)


def test_timestamp_bucket_column_rows_land_in_hives_buckets(wh):
    t = unique("bts")
    run(wh, f"CREATE TABLE {t} (ts TIMESTAMP, id INT) CLUSTERED BY (ts) INTO 3 BUCKETS STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')")
    cases = [(s, n, h) for s, n, h in HIVE_TIMESTAMP_HASHES  # years 1 and 9999 aside; the last second before
             if -62135596800 < s < 253402300799 and not (s == -1 and n)]  # 1970 keeps no millis in ORC
    literal = [(dt.datetime(1970, 1, 1) + dt.timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S") + f".{n:09d}"
               for s, n, _ in cases]
    run(wh, f"INSERT INTO {t} VALUES " + ", ".join(f"('{text}', {i})" for i, text in enumerate(literal)))
    found = rows_by_bucket_file(wh, t)
    assert {row["id"]: bucket for bucket, rows in found.items() for row in rows} == \
        {i: hive_bucket(h, 3) for i, (_, _, h) in enumerate(cases)}
