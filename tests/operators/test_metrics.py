"""ACID metrics through Airflow's metrics interface: Airflow configured for StatsD ([metrics] statsd_on) sends to a
real UDP listener on loopback; the names received are the documented ones (docs/operations.md table, services METRICS)."""

from __future__ import annotations

import socket
import time

import pytest
from airflow.sdk.observability import stats
from airflow.sdk.observability.metrics import stats_utils

from airflow_acid.operators.compaction import AcidCompactionOperator
from airflow_acid.operators.maintenance import AcidCleanerOperator
from airflow_acid.operators.metrics import AcidMetricsOperator
from airflow_acid.sensors.initiator import AcidInitiatorSensor
from airflow_acid.services.metrics import METRICS
from airflow_acid.spark.runners import LocalRunner
from tests.airflow_support import insert_rows

DOCUMENTED = {f"airflow.acid.{spec.name}": spec for spec in METRICS}


@pytest.fixture
def statsd(monkeypatch):
    """A UDP socket on 127.0.0.1 and Airflow's metrics pointed at it, initialised as the task runner does."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_ON", "True")
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_HOST", "127.0.0.1")
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PORT", str(sock.getsockname()[1]))
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PREFIX", "airflow")
    stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
    yield sock
    monkeypatch.delenv("AIRFLOW__METRICS__STATSD_ON")
    stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
    sock.close()


def received(sock: socket.socket, quiet_s: float = 0.5) -> list[tuple[str, float, str]]:
    """Every (name, value, type) datagram line until the socket stays quiet for ``quiet_s``."""
    lines: list[tuple[str, float, str]] = []
    deadline = time.monotonic() + quiet_s
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65535).decode()
        except TimeoutError:
            continue
        deadline = time.monotonic() + quiet_s
        for line in data.splitlines():
            name, _, rest = line.partition(":")
            value, _, kind = rest.partition("|")
            lines.append((name, float(value), kind.split("|")[0]))
    return lines


def base_name(stat: str) -> str:
    """``airflow.acid.<name>`` without a per-table/pool suffix."""
    parts = stat.split(".")
    return ".".join(parts[:3])


def test_housekeeping_metrics_task_sends_the_documented_names(statsd, acid_wh, monkeypatch):
    acid_wh.create_database("db")
    acid_wh.create_table("db.t", [("id", "int")], partition_by=[("ds", "string")])
    insert_rows(acid_wh, "db.t", 3, {"ds": "a"})
    monkeypatch.setenv("AIRFLOW__ACID__METASTORE.DELTAMETRICS.DELTA.NUM.THRESHOLD", "2")
    result = AcidMetricsOperator(task_id="metrics").execute({})
    got = received(statsd)
    names = {name for name, _, _ in got}
    assert names, "no datagram reached the StatsD listener"
    assert {base_name(n) for n in names} <= set(DOCUMENTED), "an undocumented name was sent"
    kinds = {name: kind for name, _, kind in got}
    assert kinds["airflow.acid.compaction_queue_initiated"] == "g"
    assert ("airflow.acid.compaction_num_active_deltas.db.t.ds_a", 3.0, "g") in got
    assert ("airflow.acid.num_open_non_repl_transactions", 0.0, "g") in got
    assert result["metrics"]["acid.compaction_num_active_deltas.db.t.ds_a"] == 3


def test_initiator_compaction_and_cleaner_send_cycle_and_worker_figures(statsd, acid_wh):
    acid_wh.create_database("db")
    acid_wh.create_table("db.u", [("id", "int")],
                         properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"})
    insert_rows(acid_wh, "db.u", 3)
    [item] = AcidInitiatorSensor(task_id="initiator").poke({}).xcom_value
    [outcome] = AcidCompactionOperator(task_id="compact", compaction=item, runner=LocalRunner()).execute({})
    AcidCleanerOperator(task_id="clean").execute({})
    got = received(statsd)
    by_name: dict[str, list[tuple[float, str]]] = {}
    for name, value, kind in got:
        by_name.setdefault(name, []).append((value, kind))
    assert {base_name(n) for n in by_name} <= set(DOCUMENTED)
    assert by_name["airflow.acid.compaction_initiator_cycle"] == [(1.0, "c")]
    assert by_name["airflow.acid.compaction_initiator_cycle_duration"][0][1] == "ms"
    assert by_name["airflow.acid.compaction_worker_cycle"] == [(1.0, "c")]
    assert by_name["airflow.acid.compaction_rows_in"] == [(float(outcome["rows_in"]), "c")]
    assert by_name["airflow.acid.compaction_rows_out"] == [(3.0, "c")]
    assert by_name["airflow.acid.compaction_bytes_written"] == [(float(outcome["bytes"]), "c")]
    assert outcome["bytes"] > 0
    assert by_name["airflow.acid.compaction_cleaner_cycle"] == [(1.0, "c")]
    assert by_name["airflow.acid.compaction_cleaner_deletions"][0][0] >= 3
