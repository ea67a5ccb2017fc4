"""The services of the multi-host test, each started on its own simulated host (see netns.py): a throwaway
PostgreSQL cluster, moto's S3 server, a Redis broker, a Spark standalone master and workers, Airflow's components
with the CeleryExecutor. Every wait is bounded and fails with the logs of the processes concerned."""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.deployment.netns import Daemon, Host

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
PATH = f"{BIN}{os.pathsep}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
S3_PORT, REDIS_PORT, PG_PORT, SPARK_PORT, SPARK_UI_PORT, API_PORT = 5000, 6379, 5432, 7077, 8080, 8080
S3_KEY, S3_SECRET, S3_REGION = "acid-test-key", "acid-test-secret", "us-east-1"
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
T = TypeVar("T")


def wait_for(check: Callable[[], T | None], *, timeout_s: float, what: str, logs: Sequence[Daemon] = (),
             interval_s: float = 0.5, must_live: Sequence[Daemon] = ()) -> T:
    """Poll ``check`` until it returns a truthy value; fail naming ``what`` with the tails of ``logs`` when
    ``timeout_s`` passes or a process of ``must_live`` exits."""
    deadline = time.monotonic() + timeout_s
    last_error = None
    while True:
        for daemon in must_live:
            if not daemon.alive:
                fail(f"{daemon.host.name}/{daemon.name} exited with {daemon.process.returncode} while waiting "
                     f"for {what}", [daemon, *logs])
        try:
            value = check()
        except Exception as exc:  # noqa: BLE001 - a service not up yet; shown if the wait times out
            value, last_error = None, exc
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            fail(f"{what} did not happen within {timeout_s:.0f} s{detail}", logs)
        time.sleep(interval_s)


def fail(message: str, logs: Sequence[Daemon] = (), chars: int = 4000) -> None:
    """pytest.fail with the message and the tails of the given process logs."""
    seen, tails = set(), []
    for daemon in logs:
        if id(daemon) not in seen:
            seen.add(id(daemon))
            tails.append(daemon.tail(chars))
    pytest.fail("\n".join([message, *tails]), pytrace=False)


def http_json(url: str, *, method: str = "GET", body: Any = None, token: str | None = None,
              timeout_s: float = 10) -> tuple[int, Any]:
    """(status, decoded JSON or text) of one HTTP request; HTTP errors are returned, not raised."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def run_checked(host: Host, argv: list[str], env: dict[str, str], *, what: str, timeout_s: float,
                user: str | None = None) -> str:
    """Run a command on ``host``; fail with its output when it exits non-zero or runs out of time."""
    try:
        result = host.run(argv, env, timeout=timeout_s, user=user)
    except Exception as exc:  # noqa: BLE001 - TimeoutExpired carries the partial output
        output = getattr(exc, "output", None) or b""
        pytest.fail(f"{what} on {host.name} did not finish in {timeout_s:.0f} s: {exc}\n"
                    f"{output.decode(errors='replace') if isinstance(output, bytes) else output}", pytrace=False)
    if result.returncode != 0:
        pytest.fail(f"{what} on {host.name} exited with {result.returncode}:\n"
                    f"{(result.stdout + result.stderr)[-5000:]}", pytrace=False)
    return result.stdout


# --- PostgreSQL ------------------------------------------------------------------------------------------------

def postgres_bin(name: str) -> str:
    """A PostgreSQL server binary (Debian keeps them under /usr/lib/postgresql/<version>/bin)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"PostgreSQL's {name} is not installed (apt-get install postgresql)", pytrace=False)
    return path


def start_postgres(host: Host, databases: Sequence[str]) -> tuple[Daemon, str]:
    """A throwaway cluster owned by user postgres, listening only on ``host``'s address (trust auth for the test
    subnet); returns (daemon, ``host:port``) once ``databases`` exist."""
    data = host.root / "pgdata"
    shutil.chown(host.root, "postgres")
    data.mkdir()
    shutil.chown(data, "postgres")
    env = host.base_env(PATH)
    run_checked(host, [postgres_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                       "--no-sync"], env, what="initdb", timeout_s=120, user="postgres")
    subnet = host.network.subnet
    with (data / "pg_hba.conf").open("a") as hba:
        hba.write(f"host all all {subnet} trust\n")
    daemon = host.start("postgres", [postgres_bin("postgres"), "-D", str(data), "-c", f"listen_addresses={host.ip}",
                                     "-c", f"port={PG_PORT}", "-c", f"unix_socket_directories={data}",
                                     "-c", "fsync=off", "-c", "synchronous_commit=off",
                                     "-c", "full_page_writes=off", "-c", "max_connections=300"],
                        env, user="postgres")
    pg_isready = postgres_bin("pg_isready")
    wait_for(lambda: host.run([pg_isready, "-h", host.ip, "-p", str(PG_PORT), "-q"], env, timeout=10).returncode == 0,
             timeout_s=60, what="PostgreSQL accepting connections", logs=[daemon], must_live=[daemon])
    for name in databases:
        run_checked(host, [postgres_bin("createdb"), "-h", host.ip, "-p", str(PG_PORT), "-U", "postgres", name],
                    env, what=f"createdb {name}", timeout_s=30)
    return daemon, f"{host.ip}:{PG_PORT}"


# --- S3 (moto) and Redis ---------------------------------------------------------------------------------------

def start_s3(host: Host) -> tuple[Daemon, str]:
    """moto's S3-compatible server on ``host``; returns (daemon, endpoint URL)."""
    daemon = host.start("moto", [str(BIN / "moto_server"), "-H", host.ip, "-p", str(S3_PORT)], host.base_env(PATH))
    endpoint = f"http://{host.ip}:{S3_PORT}"
    wait_for(lambda: http_json(f"{endpoint}/moto-api/data.json", timeout_s=2)[0] == 200, timeout_s=60,
             what="moto's S3 server answering", logs=[daemon], must_live=[daemon])
    return daemon, endpoint


def s3_credentials() -> dict[str, str]:
    """The object store's credentials, as a deployment hands them to every host that touches the warehouse: in
    the environment only. The endpoint is not among them: it travels as storage options (connection extra →
    task process → Spark driver and executors)."""
    return {"AWS_ACCESS_KEY_ID": S3_KEY, "AWS_SECRET_ACCESS_KEY": S3_SECRET, "AWS_DEFAULT_REGION": S3_REGION}


def start_redis(host: Host) -> tuple[Daemon, str]:
    """A private Redis (no persistence) on ``host``; returns (daemon, broker URL)."""
    daemon = host.start("redis", [shutil.which("redis-server") or "redis-server", "--bind", host.ip, "--port",
                                  str(REDIS_PORT), "--save", "", "--appendonly", "no", "--protected-mode", "no",
                                  "--dir", str(host.tmp)], host.base_env(PATH))
    wait_for(lambda: "Ready to accept connections" in daemon.log.read_text(errors="replace"), timeout_s=30,
             what="Redis ready", logs=[daemon], must_live=[daemon])
    return daemon, f"redis://{host.ip}:{REDIS_PORT}/0"


# --- Spark standalone ------------------------------------------------------------------------------------------

def spark_env(host: Host, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = host.base_env(PATH)
    env.update({"SPARK_LOCAL_IP": host.ip, "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1",
                "SPARK_LOG_DIR": str(host.root / "logs"), "SPARK_WORKER_DIR": str(host.root / "work"),
                "SPARK_LOCAL_DIRS": str(host.tmp)})  # scratch space stays on the host (not the machine's /tmp)
    env.update(extra or {})
    return env


def start_spark_master(host: Host) -> tuple[Daemon, str, str]:
    """The standalone master on ``host``; returns (daemon, spark:// URL, JSON status URL)."""
    daemon = host.start("spark-master", [str(BIN / "spark-class"), "org.apache.spark.deploy.master.Master",
                                         "--host", host.ip, "--port", str(SPARK_PORT),
                                         "--webui-port", str(SPARK_UI_PORT)], spark_env(host))
    return daemon, f"spark://{host.ip}:{SPARK_PORT}", f"http://{host.ip}:{SPARK_UI_PORT}/json/"


def start_spark_worker(host: Host, master_url: str, env: dict[str, str]) -> Daemon:
    """A standalone worker with one core on ``host`` (executors inherit ``env``: storage settings)."""
    return host.start("spark-worker", [str(BIN / "spark-class"), "org.apache.spark.deploy.worker.Worker", master_url,
                                       "--host", host.ip, "--cores", "1", "--memory", "1536m",
                                       "--webui-port", "8081", "--work-dir", str(host.root / "work")],
                      spark_env(host, env))


def spark_status(status_url: str) -> dict[str, Any]:
    return http_json(status_url, timeout_s=3)[1]


# --- Airflow -----------------------------------------------------------------------------------------------------

def airflow_env(host: Host, shared: dict[str, str]) -> dict[str, str]:
    """One Airflow host's environment: its own AIRFLOW_HOME, the settings every component shares."""
    env = host.base_env(PATH)
    env.update(shared)
    env["AIRFLOW_HOME"] = str(host.root / "airflow")
    env["PYTHONPATH"] = str(REPO)  # this checkout's airflow_acid, whichever checkout the virtualenv's install points at
    return env


def shared_airflow_settings(*, database: str, broker: str, api_ip: str, dags: Path) -> dict[str, str]:
    """Settings every Airflow component must agree on (database, broker, where tasks report, token secrets)."""
    from cryptography.fernet import Fernet

    return {
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg2://postgres@{database}/airflow",
        "AIRFLOW__CELERY__BROKER_URL": broker,
        "AIRFLOW__CELERY__RESULT_BACKEND": f"db+postgresql+psycopg2://postgres@{database}/airflow",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://{api_ip}:{API_PORT}/execution/",
        "AIRFLOW__API__BASE_URL": f"http://{api_ip}:{API_PORT}",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(48),
        "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        # a 2-core machine: look for work often, parse the DAGs once
        "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.5",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "600",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
        "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
    }
