"""Hostile inputs for the reliability suite: hypothesis strategies for directory names, partition values, table
names and table properties, the fixed SQL-looking names, and corrupt ORC files."""

from __future__ import annotations

import io
import unicodedata
from collections.abc import Callable

import pyarrow as pa
import pyarrow.orc as po
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.event_schema import insert_events
from airflow_acid.acid.event_writer import write_event_file

NAME_MAX = 255
"""Bytes in one path component on Linux filesystems."""

_UNICODE = st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00")
_ACIDISH = st.sampled_from(["delta_", "delete_delta_", "base_", "Delta_", "BASE_", "delta", "base_-", "_", ".",
                            "_tmp_", "_orc_acid_version", "delta_0000001_", ""])
_PIECES = st.sampled_from(["0000001", "0000005", "9", "0", "_", "_v", "_v0000099", "_0000", "-1", "٣", "１",
                           "99999999999999999999", " ", ".", "..", "~", "%2F", "\\", "\n", "é", "😀", "=", ":"])


def creatable_name(name: str) -> bool:
    """Whether a local filesystem can hold a directory of this name (no separator or NUL, not . or ..)."""
    return (bool(name) and "/" not in name and "\x00" not in name and name not in (".", "..")
            and len(name.encode("utf-8")) <= NAME_MAX)


def directory_names() -> st.SearchStrategy[str]:
    """Names that look almost like (or exactly like) ACID directories, plus unicode, separators and long names."""
    near_acid = st.builds(lambda prefix, pieces: prefix + "".join(pieces), _ACIDISH, st.lists(_PIECES, max_size=6))
    formatted = st.builds(lambda kind, a, b, v: f"{kind}{a:07d}_{b:07d}" + (f"_v{v:07d}" if v else ""),
                          st.sampled_from(["delta_", "delete_delta_"]), st.integers(0, 12), st.integers(0, 12),
                          st.integers(0, 30))
    bases = st.builds(lambda n, v: f"base_{n:07d}" + (f"_v{v:07d}" if v else ""), st.integers(0, 12),
                      st.integers(0, 30))
    long = st.builds(lambda prefix, n: (prefix + "x" * n)[:NAME_MAX], _ACIDISH, st.integers(200, 260))
    return st.one_of(near_acid, formatted, bases, st.text(_UNICODE, min_size=1, max_size=40), long).filter(
        creatable_name)


def partition_values() -> st.SearchStrategy[str]:
    """Partition values: unicode, separators, escapes, path traversal, SQL, very long."""
    sql = st.sampled_from(["'; DROP TABLE \"PARTITIONS\"; --", "x' OR '1'='1", '"quoted"', "a%2Fb", "%", "%%41",
                           "../../etc", "..", ".", "a/b", "a\\b", "=", "k=v", "__HIVE_DEFAULT_PARTITION__", " ",
                           "\t", "a\x00b", "", "NULL", "😀", "ß", "İ", "x" * 300])
    return st.one_of(sql, st.text(_UNICODE, max_size=24), st.text(st.characters(blacklist_categories=("Cs",)),
                                                                  max_size=8))


def confusables(value: str) -> list[str]:
    """Values a case/accent-insensitive or space-padding comparison would take for ``value``."""
    out = [value.swapcase(), value + " ", value.upper(), unicodedata.normalize("NFD", value),
           unicodedata.normalize("NFKC", value)]
    return [v for v in dict.fromkeys(out) if v != value]


SQL_LOOKING_NAMES = [
    "t; DROP TABLE TXNS--", "t; DROP TABLE \"TXNS\"; --", "t' OR '1'='1", 'x"; DELETE FROM "TXNS"; --',
    "Robert'); DROP TABLE Students;--", "t`x`", "t--", "t/*x*/", "../../etc/passwd", "..", "db/../t", "t\x00",
    "t\n", "ｔａｂｌｅ", "täble", "t$", "t-1", "t.x.y", " t", "t ", "", "x" * 300, "db." + "y" * 300,
    "t" * 255, "t" * 256, "TXNS", "default.TBLS", "sys.t", "_", "0",
]


def table_names() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(SQL_LOOKING_NAMES), st.text(_UNICODE, max_size=30),
                     st.from_regex(r"[A-Za-z0-9_]{1,12}(\.[A-Za-z0-9_]{1,12})?", fullmatch=True))


THRESHOLD_KEYS = ["compactorthreshold.hive.compactor.delta.num.threshold",
                  "compactorthreshold.hive.compactor.delta.pct.threshold",
                  "compactorthreshold.hive.compactor.abortedtxn.threshold",
                  "compactorthreshold.hive.compactor.max.num.delta"]
OTHER_KEYS = ["compactor.hive.compactor.max.num.delta", "compactor.spark.executor.memory", "no_auto_compaction",
              "no_cleanup", "transactional", "transactional_properties", "bucketing_version",
              "hive.compactor.worker.pool", "orc.compress"]


def property_items() -> st.SearchStrategy[tuple[str, str]]:
    values = st.one_of(st.sampled_from(["abc", "-1", "1e400", "nan", "inf", "-inf", "", " ", "1.5", "0", "10",
                                        "9" * 400, "1e308", " 5 ", "true", "TRUE", "maybe", "x" * 5000, "0x10"]),
                       st.integers(-10, 10**30).map(str), st.floats(allow_nan=True).map(repr),
                       st.text(_UNICODE, max_size=12))
    keys = st.one_of(st.sampled_from(THRESHOLD_KEYS + OTHER_KEYS), st.sampled_from(THRESHOLD_KEYS).map(str.upper),
                     st.text(_UNICODE, min_size=1, max_size=20), st.just("k" * 300))
    return st.tuples(keys, values)


# --- corrupt ORC ---------------------------------------------------------------------------------------------


def _plain_orc(rows: pa.Table) -> bytes:
    sink = io.BytesIO()
    po.write_table(rows, sink)
    return sink.getvalue()


def _acid_orc_with_schema(tmp_dir, rows: pa.Table) -> bytes:
    info = write_event_file(str(tmp_dir), 0, insert_events(rows, 6, bucket_codec.encode(0)))
    return open(info.path, "rb").read()


def corruptions(tmp_dir) -> dict[str, Callable[[bytes], bytes]]:
    """Ways to spoil a good ACID bucket file: each maps its bytes to the bytes that replace it. (A zero-byte file is
    not among them: Hive skips empty files, so one cut to nothing reads as empty.)"""
    wrong_types = pa.table({"id": pa.array(["not", "an", "int"]), "name": pa.array([1, 2, 3], pa.int32())})
    return {
        "truncated": lambda good: good[: len(good) // 2],
        "wrong_magic": lambda good: b"XYZ" + good[3:],
        "garbage": lambda good: b"this is not an ORC file\n" * 8,
        "plain_orc_in_a_delta": lambda good: _plain_orc(pa.table({"id": [1], "name": ["plain"]})),
        "acid_orc_wrong_schema": lambda good: _acid_orc_with_schema(tmp_dir, wrong_types),
    }
