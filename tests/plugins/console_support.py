"""Helpers the UI plugin tests share: a private Airflow home with SimpleAuthManager users of known passwords, and
a small warehouse for the console to show."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from airflow_acid.acid.codes import CompactionType, LockType, OperationType
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.spark.runners import LocalRunner

BIN = Path(sys.executable).parent
USERS = {"admin": "ADMIN", "viewer": "VIEWER"}
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"


def auth_env(home: Path, passwords: dict[str, str]) -> dict[str, str]:
    """Airflow settings for a private home: its own SQLite database, SimpleAuthManager with ``USERS``."""
    password_file = home / "simple_auth_manager_passwords.json"
    password_file.write_text(json.dumps(passwords))
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r.lower()}" for u, r in USERS.items()),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(64),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }


def migrate_airflow_db(env: dict[str, str]) -> None:
    """``airflow db migrate`` in a subprocess (a fresh SQLite database takes a few seconds)."""
    result = subprocess.run([str(BIN / "airflow"), "db", "migrate"], env={**os.environ, **env}, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]


@dataclass
class Scene:
    """What :func:`build_scene` built: the warehouse and the ids of the rows the tests look for."""

    warehouse: AcidWarehouse
    compacted_id: int
    queued_id: int
    open_txn: int
    aborted_txn: int


def _insert(wh: AcidWarehouse, table: str, rows: list[tuple], partition: dict | None = None) -> None:
    with wh.transaction() as txn:
        txn.insert(table, rows, partition=partition)


def build_scene(metastore_url: str, location: Path) -> Scene:
    """Two tables in every state the console shows.

    ``default.sales`` (partitioned by ds): ds=2024-01-01 got three deltas, a MAJOR compaction (run in-process) that
    waits for cleaning because a reader opened a transaction before it committed, then two new deltas on top of
    the base; ds=2024-01-02 has one delta and an aborted write. ``default.customers``: two deltas and a queued MAJOR
    compaction; the reader's transaction holds a shared-read lock on it.
    """
    wh = AcidWarehouse(metastore_url, location, conf=MetastoreConf(opentxn_timeout_ms=0), user="tester",
                       host="testhost")
    ms = wh.metastore
    wh.create_table("sales", [("id", "int"), ("amount", "int")], partition_by=[("ds", "string")])
    wh.create_table("customers", [("id", "int"), ("name", "string")])
    for i in range(3):
        _insert(wh, "sales", [(i, 10 * i), (i + 100, i)], {"ds": "2024-01-01"})
    _insert(wh, "sales", [(3, 30)], {"ds": "2024-01-02"})
    for i in range(2):
        _insert(wh, "customers", [(i, f"c{i}")])
    reader = ms.txns.open_txn(user="analyst", host="bi-host", agent_info="dashboard")
    ms.locks.lock([LockComponent("default", "customers", lock_type=LockType.SHARED_READ,
                                 operation=OperationType.SELECT)], txn_id=reader, user="analyst", host="bi-host")
    compacted = ms.compactions.enqueue("default", "sales", "ds=2024-01-01", CompactionType.MAJOR)
    outcome = Worker(ms, runner=LocalRunner(), worker_id="testhost-7").run_next()
    assert (outcome.compaction_id, outcome.status) == (compacted.id, WorkerStatus.COMPACTED), outcome.message
    for i in range(2):
        _insert(wh, "sales", [(i + 200, i)], {"ds": "2024-01-01"})
    aborted = wh.transaction()
    aborted.insert("sales", [(99, 0)], partition={"ds": "2024-01-02"})
    aborted.abort()
    queued = ms.compactions.enqueue("default", "customers", None, CompactionType.MAJOR)
    return Scene(wh, compacted.id, queued.id, reader, aborted.txn_id)


def acid_connection(metastore_url: str, location: Path) -> str:
    """``AIRFLOW_CONN_ACID_METASTORE_DEFAULT`` for a metastore URL and warehouse folder."""
    return json.dumps({"conn_type": "acid_metastore", "host": metastore_url, "extra": {"warehouse": str(location)}})
