"""A whole airflow-acid deployment across simulated hosts (one network namespace each):

========  =============================================================
db        PostgreSQL: the ACID metastore and Airflow's database
s3        moto's S3 server: the warehouse ``s3://acid/warehouse``
broker    Redis: Celery's broker
spark     Spark standalone master
spark1/2  Spark standalone workers (one core each)
airflow   scheduler, api-server (with the ACID console), dag-processor
worker    Celery worker: runs the tasks, submits Spark jobs (client mode)
client    the writers and readers (Python client API)
========  =============================================================

Hosts share nothing but the network: own HOME/TMPDIR/AIRFLOW_HOME, warehouse only on S3, databases only over TCP.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.deployment import services
from tests.deployment.netns import Daemon, Host, Network
from tests.deployment.services import fail, http_json, run_checked, wait_for

CLIENT_SCRIPT = Path(__file__).with_name("client_host.py")
WAREHOUSE = "s3://acid/warehouse"
ADMIN_PASSWORD = "acid-admin-pw"
# Hive's settings of this deployment ([acid] section): small thresholds, Airflow's shortest schedules, and no
# grace period for transactions that opened without writing (the Cleaner must not wait for them).
ACID_SETTINGS = {
    "AIRFLOW__ACID__HIVE.COMPACTOR.CHECK.INTERVAL": "60",
    "AIRFLOW__ACID__HIVE.COMPACTOR.CLEANER.RUN.INTERVAL": "60000",
    "AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD": "3",
    # a delta written during the job stays beside the new base (no second MAJOR for delta/base size)
    "AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.PCT.THRESHOLD": "100",
    "AIRFLOW__ACID__HIVE.TXN.OPENTXN.TIMEOUT": "0",
    # every queued row of a run in ONE Spark application (one JVM start on a 2-core machine)
    "AIRFLOW__ACID__COMPACTION_BATCH_SIZE": "4",
    # a compaction's heartbeat counts as stopped 30 s after its last beat (0.75 × hive.txn.timeout): a retried task
    # takes over the row of a killed Celery worker soon after the scheduler notices the task died
    "AIRFLOW__ACID__HIVE.TXN.TIMEOUT": "40",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "45",
}


@dataclass
class Deployment:
    """The running deployment: hosts, daemons and the URLs between them."""

    network: Network
    hosts: dict[str, Host] = field(default_factory=dict)
    daemons: dict[str, Daemon] = field(default_factory=dict)
    metastore_url: str = ""
    s3_endpoint: str = ""
    spark_master: str = ""
    spark_status_url: str = ""
    api_url: str = ""
    worker_command: list[str] = field(default_factory=list)
    worker_env: dict[str, str] = field(default_factory=dict)
    _token: str | None = None

    def restart_celery_worker(self) -> None:
        """Start the worker host's Celery worker again (after it was killed), under the same settings."""
        self.daemons["worker"] = self.hosts["worker"].start("worker", self.worker_command, self.worker_env)

    @property
    def storage_options(self) -> dict[str, str]:
        """How the warehouse's S3 is reached (no secrets: those are in each host's environment)."""
        return {"endpoint_url": self.s3_endpoint, "region": services.S3_REGION}

    # --- the client host ---------------------------------------------------------------------------------------

    def client(self, command: str, payload: dict[str, Any] | None = None, timeout_s: float = 120) -> Any:
        """Run one client_host.py command on the client host; its JSON answer."""
        host = self.hosts["client"]
        env = {**host.base_env(services.PATH), **services.s3_credentials()}
        args = {"metastore": self.metastore_url, "warehouse": WAREHOUSE, "storage_options": self.storage_options,
                **(payload or {})}
        out = run_checked(host, [sys.executable, str(CLIENT_SCRIPT), command, json.dumps(args)], env,
                          what=f"client {command}", timeout_s=timeout_s)
        return json.loads(out.strip().splitlines()[-1])

    # --- Airflow's API (as an operator's browser or script would use it) --------------------------------------

    @property
    def token(self) -> str:
        if self._token is None:
            status, answer = http_json(f"{self.api_url}/auth/token", method="POST",
                                       body={"username": "admin", "password": ADMIN_PASSWORD})
            if status not in (200, 201):
                fail(f"POST /auth/token answered {status}: {answer}", [self.daemons["api-server"]])
            self._token = answer["access_token"]
        return self._token

    def api(self, path: str, *, method: str = "GET", body: Any = None, expect: tuple[int, ...] = (200,)) -> Any:
        status, answer = http_json(f"{self.api_url}{path}", method=method, body=body, token=self.token,
                                   timeout_s=30)
        if status not in expect:
            fail(f"{method} {path} answered {status}: {answer}", [self.daemons["api-server"]])
        return answer

    def airflow_logs(self) -> list[Daemon]:
        return [self.daemons[n] for n in ("scheduler", "worker", "api-server", "dag-processor")]

    def spark_logs(self) -> list[Daemon]:
        return [self.daemons[n] for n in ("spark-master", "spark-worker-1", "spark-worker-2")]

    def task_logs(self, dag_id: str) -> str:
        """Every task log the Celery worker wrote for ``dag_id`` (the worker host's own AIRFLOW_HOME)."""
        base = self.hosts["worker"].root / "airflow" / "logs" / f"dag_id={dag_id}"
        return "\n".join(f"=== {p.relative_to(base)}\n{p.read_text(errors='replace')}"
                         for p in sorted(base.rglob("*.log"))) if base.exists() else ""

    def files_containing(self, text: str) -> list[str]:
        """Process logs, task logs and Spark executor logs of any host that contain ``text`` (e.g. a secret)."""
        found = []
        for host in self.hosts.values():
            for path in [*(host.root / "logs").rglob("*"), *(host.root / "airflow" / "logs").rglob("*.log"),
                         *(host.root / "work").rglob("std*")]:
                if path.is_file() and text in path.read_text(errors="replace"):
                    found.append(str(path))
        return found


def _parallel(*jobs) -> None:
    """Run set-up steps at once (each blocks on its own waits); re-raise the first failure."""
    errors: list[BaseException] = []

    def run(job):
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - pytest.fail raises Failed (a BaseException)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def start_deployment(network: Network, tables: list[dict[str, Any]]) -> Deployment:
    """Create the hosts, start every service, create the warehouse's tables; returns when all are up."""
    network.create()
    d = Deployment(network)
    for name in ("db", "s3", "broker", "spark", "spark1", "spark2", "airflow", "worker", "client"):
        d.hosts[name] = network.add_host(name)
    h = d.hosts

    d.daemons["postgres"], database = services.start_postgres(h["db"], ["airflow", "metastore"])
    d.metastore_url = f"postgresql+psycopg://postgres@{database}/metastore"
    d.daemons["moto"], d.s3_endpoint = services.start_s3(h["s3"])
    d.daemons["redis"], broker = services.start_redis(h["broker"])
    storage = services.s3_credentials()

    d.daemons["spark-master"], d.spark_master, d.spark_status_url = services.start_spark_master(h["spark"])
    d.daemons["spark-worker-1"] = services.start_spark_worker(h["spark1"], d.spark_master, storage)
    d.daemons["spark-worker-2"] = services.start_spark_worker(h["spark2"], d.spark_master, storage)

    shared = services.shared_airflow_settings(database=database, broker=broker, api_ip=h["airflow"].ip,
                                              dags=services.REPO / "dags")
    shared.update(ACID_SETTINGS)
    acid_conn = json.dumps({"conn_type": "acid_metastore", "host": d.metastore_url,
                            "extra": {"warehouse": WAREHOUSE, "storage_options": d.storage_options}})
    scheduler_env = services.airflow_env(h["airflow"], shared)
    password_file = h["airflow"].root / "simple_auth_manager_passwords.json"
    password_file.write_text(json.dumps({"admin": ADMIN_PASSWORD}))
    api_env = {**scheduler_env, **storage, "AIRFLOW_CONN_ACID_METASTORE_DEFAULT": acid_conn,
               "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file)}
    worker_env = {**services.airflow_env(h["worker"], shared), **storage,
                  "AIRFLOW_CONN_ACID_METASTORE_DEFAULT": acid_conn,
                  "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": d.spark_master}),
                  # the Spark driver runs here (client mode): executors on the Spark hosts connect back to it
                  "SPARK_LOCAL_IP": h["worker"].ip, "SPARK_LOCAL_DIRS": str(h["worker"].tmp),
                  "PYSPARK_PYTHON": sys.executable}
    airflow = str(services.BIN / "airflow")

    def airflow_components() -> None:
        run_checked(h["airflow"], [airflow, "db", "migrate"], scheduler_env, what="airflow db migrate",
                    timeout_s=300)
        d.daemons["api-server"] = h["airflow"].start(
            "api-server", [airflow, "api-server", "--host", h["airflow"].ip, "--port", str(services.API_PORT),
                           "--workers", "1"], api_env)
        d.daemons["scheduler"] = h["airflow"].start("scheduler", [airflow, "scheduler"], scheduler_env)
        d.daemons["dag-processor"] = h["airflow"].start("dag-processor", [airflow, "dag-processor"], scheduler_env)
        d.worker_command = [airflow, "celery", "worker", "--concurrency", "2", "--without-mingle", "--without-gossip",
                            "--skip-serve-logs"]
        d.worker_env = worker_env
        d.daemons["worker"] = h["worker"].start("worker", d.worker_command, worker_env)
        d.api_url = f"http://{h['airflow'].ip}:{services.API_PORT}"
        wait_for(lambda: http_json(f"{d.api_url}/api/v2/monitor/health", timeout_s=3)[0] == 200, timeout_s=180,
                 what="Airflow api-server healthy", logs=d.airflow_logs(), must_live=d.airflow_logs(), interval_s=1)
        wait_for(lambda: all(d.api(f"/api/v2/dags/{dag}", expect=(200, 404)).get("dag_id") == dag
                             for dag in ("acid_compaction", "acid_cleanup")),
                 timeout_s=180, what="dag-processor parsed acid_compaction and acid_cleanup", logs=d.airflow_logs(),
                 must_live=d.airflow_logs(), interval_s=1)
        wait_for(lambda: "ready." in d.daemons["worker"].log.read_text(errors="replace"), timeout_s=120,
                 what="Celery worker connected to the broker", logs=[d.daemons["worker"]],
                 must_live=[d.daemons["worker"]], interval_s=1)

    def warehouse() -> None:
        d.client("setup", {"tables": tables})

    def spark_cluster() -> None:
        def two_workers():
            state = services.spark_status(d.spark_status_url)
            return sum(w.get("state") == "ALIVE" for w in state.get("workers", [])) == 2

        wait_for(two_workers, timeout_s=180, what="Spark master with 2 ALIVE workers", logs=d.spark_logs(),
                 must_live=d.spark_logs(), interval_s=1)

    _parallel(airflow_components, warehouse, spark_cluster)
    return d


def network_root() -> Path:
    """A directory the postgres user can enter (pytest's tmp dirs are private to root)."""
    root = Path(tempfile.mkdtemp(prefix="acid-multihost-"))
    root.chmod(0o755)
    return root
