"""Deployment files: docker-compose validates offline (Debian's docker-compose 1.29) and wires Airflow, Spark and
the ACID metastore consistently; the Dockerfile's versions follow setup.cfg; the deployment scripts parse.

There is no Docker engine here, so these checks read the files (and docker-compose's resolved configuration) and
feed the connections to the project's own hooks, the way the containers will.
"""

from __future__ import annotations

import configparser
import fnmatch
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
COMPOSE = REPO / "docker-compose.yaml"
ENV_EXAMPLE = REPO / ".env.example"
AIRFLOW_SERVICES = ("airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
                    "airflow-triggerer")
SPARK_SERVICES = ("spark-master", "spark-worker")
# Settings every Airflow component must agree on (tokens, database, where tasks report to, connections).
SHARED_SETTINGS = ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__API__SECRET_KEY",
                   "AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__CORE__EXECUTION_API_SERVER_URL", "AIRFLOW__CORE__EXECUTOR",
                   "AIRFLOW_CONN_SPARK_DEFAULT", "AIRFLOW_CONN_ACID_METASTORE_DEFAULT", "AIRFLOW_ACID_METASTORE_URL")
SECRET_NAME = re.compile(r"(PASSWORD|SECRET|SECRET_KEY|FERNET_KEY)$")
URL_PASSWORD = re.compile(r"://[^:/@\s]+:([^@\s]+)@")
INTERPOLATION = re.compile(r"(?<!\$)\$\{(\w+)(?::?[-?]([^}]*))?\}")


def docker_compose(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("docker-compose")
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("docker-compose is missing on CI; .ci/run installs Debian's docker-compose")
        pytest.skip("Debian's docker-compose is not installed (apt-get install docker-compose)")
    return subprocess.run([tool, "-f", str(COMPOSE), *args], capture_output=True, text=True, timeout=60, cwd=REPO)


@pytest.fixture(scope="module")
def compose() -> dict:
    """docker-compose.yaml as written (anchors and merge keys resolved by YAML, ${…} left as is)."""
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def resolved() -> dict:
    """The configuration docker-compose itself resolves with the settings of .env.example."""
    result = docker_compose("--env-file", str(ENV_EXAMPLE), "config")
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def env_example() -> dict[str, str]:
    lines = [line for line in ENV_EXAMPLE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def dockerfile() -> tuple[dict[str, str], str, list[tuple[str, str]]]:
    """(ARG defaults, the FROM image with global ARGs substituted, every instruction) of the Dockerfile."""
    text = re.sub(r"\\\n", "", (REPO / "Dockerfile").read_text())
    instructions = [tuple(line.split(None, 1)) for line in text.splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
    args = {}
    for keyword, rest in instructions:
        if keyword == "ARG" and "=" in rest:
            name, value = rest.split("=", 1)
            args[name] = value
    [base] = [rest for keyword, rest in instructions if keyword == "FROM"]
    return args, re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base), instructions


def dockerfile_env() -> dict[str, str]:
    """The variables the Dockerfile's ENV instructions set (key=value form)."""
    _, _, instructions = dockerfile()
    return dict(pair.split("=", 1) for keyword, rest in instructions if keyword == "ENV" for pair in rest.split())


def setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg


def install_requires() -> dict[str, Requirement]:
    reqs = [Requirement(line) for line in setup_cfg()["options"]["install_requires"].splitlines() if line.strip()]
    return {r.name.lower(): r for r in reqs}


def warehouse_target(service: dict) -> str | None:
    """Where the `warehouse` named volume is mounted in a service (short syntax), or None."""
    targets = [str(m).split(":")[1] for m in service.get("volumes", []) if str(m).split(":")[0] == "warehouse"]
    return targets[0] if targets else None


@pytest.mark.parametrize("env_file", [None, ".env.example"], ids=["defaults", "env-example"])
def test_docker_compose_validates_offline(env_file):
    result = docker_compose(*(["--env-file", str(REPO / env_file)] if env_file else []), "config", "-q")
    assert result.returncode == 0, result.stderr


def test_every_airflow_and_spark_service_runs_the_one_image(compose):
    services = compose["services"]
    assert set(AIRFLOW_SERVICES + SPARK_SERVICES + ("postgres",)) <= set(services)
    builds = {name: (services[name].get("build"), services[name].get("image"), services[name].get("user"))
              for name in AIRFLOW_SERVICES + SPARK_SERVICES}
    assert len(set(map(json.dumps, builds.values()))) == 1, builds
    build, image, _ = builds["airflow-scheduler"]
    assert (REPO / build["context"] / build["dockerfile"]).is_file()
    assert image.startswith("${AIRFLOW_ACID_IMAGE")


def test_warehouse_volume_is_one_path_everywhere(compose, resolved, monkeypatch):
    from airflow_acid.hooks.metastore import WAREHOUSE_DIR, embedded_home

    services = compose["services"]
    need_it = AIRFLOW_SERVICES + ("spark-worker",)
    targets = {name: warehouse_target(services[name]) for name in need_it}
    assert None not in targets.values() and len(set(targets.values())) == 1, targets
    [path] = set(targets.values())
    assert "warehouse" in compose["volumes"]
    env = resolved["services"]["airflow-scheduler"]["environment"]
    assert json.loads(env["AIRFLOW_CONN_ACID_METASTORE_DEFAULT"])["extra"]["warehouse"] == path
    # The image's AIRFLOW_ACID_HOME puts the command line's and the client API's default warehouse on the volume
    # (and is what airflow-init checks for write access).
    monkeypatch.setenv("AIRFLOW_ACID_HOME", dockerfile_env()["AIRFLOW_ACID_HOME"])
    assert str(embedded_home() / WAREHOUSE_DIR) == path


def test_airflow_components_agree_on_shared_settings(resolved):
    services = resolved["services"]
    for setting in SHARED_SETTINGS:
        values = {name: services[name]["environment"].get(setting) for name in AIRFLOW_SERVICES}
        assert None not in values.values() and len(set(values.values())) == 1, (setting, values)
    env = services["airflow-scheduler"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://airflow-apiserver:8080/execution/"
    assert {"published": 8080, "target": 8080} in services["airflow-apiserver"]["ports"]
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].endswith("@postgres:5432/airflow")


def test_spark_connection_points_at_the_master(resolved, monkeypatch):
    from airflow_acid.operators.spark import AcidSparkSubmitHook

    services = resolved["services"]
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", services["airflow-scheduler"]["environment"]
                       ["AIRFLOW_CONN_SPARK_DEFAULT"])
    connection = AcidSparkSubmitHook(conn_id="spark_default")._connection
    assert (connection["master"], connection["deploy_mode"]) == ("spark://spark-master:7077", "client")
    master, worker = (" ".join(services[name]["command"]) for name in SPARK_SERVICES)
    assert "spark-class org.apache.spark.deploy.master.Master --host spark-master --port 7077 " in master
    assert re.search(r"spark-class org\.apache\.spark\.deploy\.worker\.Worker .*spark://spark-master:7077$", worker)
    # The driver runs in the scheduler's tasks (LocalExecutor): executors must resolve its name.
    assert services["airflow-scheduler"]["hostname"] == "airflow-scheduler"


def test_metastore_connection_is_read_by_the_hook_as_the_init_script_creates_it(resolved, monkeypatch):
    from airflow_acid.hooks.metastore import AcidMetastoreHook

    env = resolved["services"]["airflow-scheduler"]["environment"]
    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", env["AIRFLOW_CONN_ACID_METASTORE_DEFAULT"])
    hook = AcidMetastoreHook()
    url = sa.engine.make_url(hook.get_uri())
    password = env_example()["ACID_METASTORE_PASSWORD"]
    assert (url.drivername, url.username, url.password, url.host, url.port, url.database) == (
        "postgresql+psycopg", "acid", password, "postgres", 5432, "acid")
    assert hook.warehouse_location == warehouse_target(resolved["services"]["airflow-scheduler"])
    # The command line (airflow-acid init in airflow-init) opens the same metastore.
    assert sa.engine.make_url(env["AIRFLOW_ACID_METASTORE_URL"]) == url
    # PostgreSQL's init script creates that user and database, with the password the postgres service is given.
    script = (REPO / "deploy/postgres-init/10-acid-metastore.sh").read_text()
    assert f"CREATE ROLE {url.username} LOGIN PASSWORD :'acid_password'" in script
    assert f"CREATE DATABASE {url.database} OWNER {url.username}" in script
    assert resolved["services"]["postgres"]["environment"]["ACID_METASTORE_PASSWORD"] == password
    assert "./deploy/postgres-init:/docker-entrypoint-initdb.d:ro" in " ".join(
        yaml.safe_load(COMPOSE.read_text())["services"]["postgres"]["volumes"])


def test_dockerfile_versions_follow_setup_cfg():
    args, base, _ = dockerfile()
    reqs = install_requires()
    assert base == f"apache/airflow:{args['AIRFLOW_VERSION']}-python{args['PYTHON_VERSION']}"
    # Airflow: the image's release satisfies setup.cfg's range (a bump of either side alone fails here).
    assert Version(args["AIRFLOW_VERSION"]) in reqs["apache-airflow"].specifier, (args, reqs["apache-airflow"])
    # Spark: the build installs pyspark and pyspark-client of this release (and checks Python files and jars); it is
    # in setup.cfg's range and is the suite's own Spark (the test extra's pins).
    assert Version(args["SPARK_VERSION"]) in reqs["pyspark"].specifier, (reqs["pyspark"], args)
    text = (REPO / "Dockerfile").read_text()
    for name in ("pyspark", "pyspark-client"):
        assert text.count(f'"{name}==${{SPARK_VERSION}}"') == 2, name  # both pip installs
    test_pins = {r.name.lower(): r for r in (Requirement(line) for line in
                 setup_cfg()["options.extras_require"]["test"].splitlines() if line.strip())}
    for name in ("pyspark", "pyspark-client"):
        assert str(test_pins[name].specifier) == f"=={args['SPARK_VERSION']}", (name, test_pins[name], args)
    # Python: the image's minor is the one setup.cfg declares (driver and executors use this same image).
    cfg = setup_cfg()
    minors = re.findall(r"Programming Language :: Python :: (3\.\d+)", cfg["metadata"]["classifiers"])
    assert args["PYTHON_VERSION"] in minors, minors
    assert Version(args["PYTHON_VERSION"]) in Requirement(f"python{cfg['options']['python_requires']}").specifier


def test_image_copies_what_compose_runs_and_dockerignore_keeps_it():
    _, _, instructions = dockerfile()
    sources = [src for keyword, rest in instructions if keyword == "COPY"
               for src in [a for a in rest.split() if not a.startswith("--")][:-1]]
    ignored = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for src in sources:
        assert (REPO / src).exists(), src
        assert not any(fnmatch.fnmatch(src, pattern) for pattern in ignored), src
    for pattern in (".venv", ".git", ".env", "demo", "test-artifacts"):
        assert pattern in ignored, pattern
    commands = [" ".join(s["command"]) for s in yaml.safe_load(COMPOSE.read_text())["services"].values()
                if isinstance(s.get("command"), list)]
    scripts = re.findall(r"/opt/airflow-acid/(deploy/\S+\.sh)", " ".join(commands))
    assert scripts, commands
    for script in scripts:
        assert (REPO / script).is_file() and any(script.startswith(src.rstrip("/")) for src in sources), script


def test_settings_are_documented_in_env_example_and_no_secret_is_literal(compose):
    text = COMPOSE.read_text()
    example = env_example()
    for match in INTERPOLATION.finditer(text):
        name, default = match.group(1), match.group(2)
        assert name in example, f"{name} is used in docker-compose.yaml but missing from .env.example"
        assert default is None or default == example[name], (name, default, example[name])
    for name, service in compose["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if SECRET_NAME.search(key):
                assert INTERPOLATION.fullmatch(str(value)) or str(value) == "", (name, key)
            if key.startswith("AIRFLOW_CONN_") and "password" in str(value):
                assert INTERPOLATION.fullmatch(json.loads(value)["password"]), (name, key)
            for password in URL_PASSWORD.findall(str(value)):
                assert INTERPOLATION.fullmatch(password), (name, key)


def test_storage_settings_reach_airflow_and_the_spark_worker_and_s3_is_optional(compose, resolved):
    """The warehouse URL, [acid] storage_options and the store's credentials are the same for every Airflow
    component and the Spark worker (its executors inherit them); the S3-compatible service runs only with the
    ``s3`` profile and its root user is that key pair."""
    services = resolved["services"]
    keys = ("AIRFLOW__ACID__STORAGE_OPTIONS", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    seen = {name: tuple(services[name]["environment"].get(k) for k in keys)
            for name in AIRFLOW_SERVICES + ("spark-worker",)}
    assert None not in {v for values in seen.values() for v in values[1:]} and len(set(seen.values())) == 1, seen
    raw = compose["services"]
    assert raw["s3"]["profiles"] == ["s3"] and raw["s3-init"]["profiles"] == ["s3"]
    example = env_example()
    assert raw["s3"]["environment"]["MINIO_ROOT_USER"] == raw["spark-worker"]["environment"]["AWS_ACCESS_KEY_ID"]
    conn = json.loads(services["airflow-scheduler"]["environment"]["AIRFLOW_CONN_ACID_METASTORE_DEFAULT"])
    assert conn["extra"]["warehouse"] == example["ACID_WAREHOUSE"]
    with_s3 = docker_compose("--env-file", str(ENV_EXAMPLE), "--profile", "s3", "config", "-q")
    assert with_s3.returncode == 0, with_s3.stderr


def test_deployment_scripts_parse():
    scripts = sorted((REPO / "deploy").rglob("*.sh"))
    assert scripts
    for script in scripts:
        result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, (script, result.stderr)
