"""What ``SET key=value`` means to airflow-acid, for each key a Hive script sets (docs/cli.md#set).

- A **setting**: one of Hive's transaction, lock and compactor keys airflow-acid has (:class:`MetastoreConf`, any of
  its ``hive.*``/``metastore.*`` names): the value is checked as ``[acid]`` checks it and applies to the session.
- An **acknowledged** key: it configures HiveServer2 or Hive's query engine (the transaction manager, concurrency,
  dynamic partitioning, the compactor threads of a metastore, execution engines …). airflow-acid behaves as the
  value a Hive ACID script needs; the value is checked when it has a fixed domain and a note says what applies.
- A **query setting**: a key of Hive's query engine airflow-acid's evaluation honours (``hive.default.nulls.last``):
  checked, and it applies to the statements that follow in the session.
- Anything else is **unknown**: kept for the session (``SET k`` shows it) and warned about once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from airflow_acid.metastore.conf import MetastoreConf

DB_TXN_MANAGER = "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager"
_BOOLEAN = ("true", "false")
_ALWAYS_ACID = "airflow-acid always runs with transactions and locks (Hive's DbTxnManager)"
_DAGS = "run as Airflow DAGs"


class KeyKind(enum.Enum):
    """How airflow-acid treats a SET key."""

    SETTING = "setting"
    QUERY = "query"
    ACKNOWLEDGED = "acknowledged"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Acknowledged:
    """A key airflow-acid does not need: what applies instead, and the values Hive accepts for it (None: any)."""

    note: str
    allowed: tuple[str, ...] | None = None
    expected: str | None = None
    """The value a Hive ACID script sets; another value gets a note that airflow-acid still behaves as this one."""


ACKNOWLEDGED: dict[str, Acknowledged] = {
    "hive.support.concurrency": Acknowledged(_ALWAYS_ACID, _BOOLEAN, "true"),
    "hive.txn.manager": Acknowledged(_ALWAYS_ACID, None, DB_TXN_MANAGER),
    "hive.exec.dynamic.partition": Acknowledged("dynamic partitions are always allowed", _BOOLEAN, "true"),
    "hive.exec.dynamic.partition.mode": Acknowledged(
        "dynamic partitions never need a static key here (nonstrict)", ("strict", "nonstrict"), "nonstrict"),
    "hive.enforce.bucketing": Acknowledged("bucketed tables are always written bucketed", _BOOLEAN, "true"),
    "hive.enforce.sorting": Acknowledged("transactional tables are never sorted", _BOOLEAN),
    "hive.compactor.initiator.on": Acknowledged(
        f"the Initiator and the Worker {_DAGS} (acid_compaction); pause or unpause that DAG instead", _BOOLEAN),
    "metastore.compactor.initiator.on": Acknowledged(
        f"the Initiator and the Worker {_DAGS} (acid_compaction); pause or unpause that DAG instead", _BOOLEAN),
    "hive.compactor.cleaner.on": Acknowledged(
        f"the Cleaner {_DAGS} (acid_cleanup); pause or unpause that DAG instead", _BOOLEAN),
    "metastore.compactor.cleaner.on": Acknowledged(
        f"the Cleaner {_DAGS} (acid_cleanup); pause or unpause that DAG instead", _BOOLEAN),
    "hive.metastore.housekeeping.threads.on": Acknowledged(
        f"housekeeping {_DAGS} (acid_housekeeping)", _BOOLEAN),
    "metastore.housekeeping.threads.on": Acknowledged(f"housekeeping {_DAGS} (acid_housekeeping)", _BOOLEAN),
    "hive.merge.cardinality.check": Acknowledged(
        "MERGE always checks that a target row is matched at most once", _BOOLEAN, "true"),
    "hive.split.update": Acknowledged("an UPDATE is always written as a delete and an insert", _BOOLEAN),
    "hive.merge.split.update": Acknowledged("an UPDATE is always written as a delete and an insert", _BOOLEAN),
    "hive.create.as.insert.only": Acknowledged(
        "CREATE TABLE makes a full ACID table unless TBLPROPERTIES says 'transactional_properties'='insert_only'",
        _BOOLEAN),
    "hive.create.as.acid": Acknowledged("CREATE TABLE makes a transactional table unless TBLPROPERTIES says "
                                        "'transactional'='false'", _BOOLEAN),
    "hive.acid.direct.insert.enabled": Acknowledged("inserts always write their delta directly", _BOOLEAN),
    "hive.exec.orc.default.compress": Acknowledged(
        "set the table property orc.compress instead (ZLIB when absent, as Hive's default)"),
    "hive.default.fileformat": Acknowledged("transactional tables are ORC"),
    "hive.default.fileformat.managed": Acknowledged("transactional tables are ORC"),
    "hive.cli.print.header": Acknowledged("results always show their column names", _BOOLEAN),
    "hive.cli.print.current.db": Acknowledged("the prompt does not show a database", _BOOLEAN),
    "hive.execution.engine": Acknowledged("statements are evaluated by DuckDB; compactions run on Spark",
                                          ("mr", "tez", "spark")),
    "hive.mapred.mode": Acknowledged("not used by airflow-acid's evaluation", ("strict", "nonstrict")),
}
"""Keys a Hive ACID script sets that only configure HiveServer2 or Hive's query engine."""

@dataclass(frozen=True)
class QuerySetting:
    """A key of Hive's query engine that airflow-acid's evaluation honours: its default and the values it takes."""

    default: str
    allowed: tuple[str, ...]
    note: str


QUERY_SETTINGS: dict[str, QuerySetting] = {
    "hive.default.nulls.last": QuerySetting(
        "true", _BOOLEAN, "ORDER BY keys without NULLS FIRST/LAST put NULLs last when ascending and first when "
        "descending (true, Hive 4's default), or first when ascending and last when descending (false)"),
}
"""Hive query settings a session's SET changes for the statements that follow."""

ENGINE_PREFIXES = (
    "hive.vectorized.", "hive.optimize.", "hive.cbo.", "hive.stats.", "hive.exec.", "hive.merge.", "hive.auto.convert.",
    "hive.fetch.", "hive.tez.", "hive.llap.", "hive.server2.", "hive.spark.", "hive.query.", "hive.strict.checks.",
    "hive.explain.", "hive.input.", "hive.map.", "hive.groupby.", "hive.compute.", "hive.security.", "hive.cli.",
    "hive.mapjoin.", "hive.join.", "hive.limit.", "hive.support.", "hive.txn.stats.", "hive.test.", "hive.in.test",
    "hive.materializedview.", "hive.log.", "hive.blobstore.", "hive.metastore.", "hive.conf.", "hive.ignore.",
    "hive.typecheck.", "hive.default.", "mapred.", "mapreduce.", "tez.", "yarn.", "fs.", "dfs.", "spark.",
)
"""Namespaces of HiveServer2 and query-engine options (execution, optimizer, statistics, MapReduce/Tez/Spark, HDFS):
airflow-acid's SQL front end has no such knobs."""


@dataclass(frozen=True)
class SessionKey:
    """How a key is treated, the MetastoreConf field it sets (settings) or what applies (acknowledged)."""

    kind: KeyKind
    field: str | None = None
    acknowledged: Acknowledged | None = None


def classify(key: str) -> SessionKey:
    """The kind of a SET key (any case)."""
    name = key.strip().lower()
    field = MetastoreConf.field_of(name)
    if field is not None:
        return SessionKey(KeyKind.SETTING, field=field)
    if name in QUERY_SETTINGS:
        return SessionKey(KeyKind.QUERY)
    if name in ACKNOWLEDGED:
        return SessionKey(KeyKind.ACKNOWLEDGED, acknowledged=ACKNOWLEDGED[name])
    if name.startswith(ENGINE_PREFIXES) and not name.startswith(("hive.compactor.", "hive.txn.", "metastore.")):
        return SessionKey(KeyKind.ACKNOWLEDGED, acknowledged=Acknowledged(
            "it configures HiveServer2 or Hive's query engine, which airflow-acid does not use"))
    return SessionKey(KeyKind.UNKNOWN)


__all__ = ["ACKNOWLEDGED", "DB_TXN_MANAGER", "ENGINE_PREFIXES", "QUERY_SETTINGS", "Acknowledged", "KeyKind",
           "QuerySetting", "SessionKey", "classify"]
