"""The package registers as an Airflow provider and plugin (docs/airflow.md#provider-registration)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from airflow_acid.get_provider_info import get_provider_info


def test_provider_info_matches_airflow_schema():
    import airflow
    import jsonschema

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    assert info["package-name"] == "airflow-acid"


def test_entry_points_are_registered():
    providers = {ep.value for ep in entry_points(group="apache_airflow_provider")}
    plugins = {ep.value for ep in entry_points(group="airflow.plugins")}
    assert "airflow_acid.get_provider_info:get_provider_info" in providers
    assert "airflow_acid.plugins:AcidPlugin" in plugins


@pytest.fixture
def airflow_env(tmp_path):
    env = dict(os.environ, AIRFLOW_HOME=str(tmp_path / "airflow"), AIRFLOW__CORE__LOAD_EXAMPLES="false")
    return env


def _airflow(env, *args) -> str:
    airflow = Path(sys.executable).with_name("airflow")
    result = subprocess.run([str(airflow), *args], env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.slow
def test_airflow_lists_provider_and_plugin(airflow_env):
    listed = json.loads(_airflow(airflow_env, "providers", "list", "--output", "json"))
    assert any(p["package_name"] == "airflow-acid" for p in listed)
    plugins = json.loads(_airflow(airflow_env, "plugins", "--output", "json"))
    assert any(p["name"] == "airflow_acid" for p in plugins)
    shown = json.loads(_airflow(airflow_env, "providers", "get", "airflow-acid", "--full", "--output", "json"))
    assert shown[0]["package-name"] == "airflow-acid" and "acid" in shown[0]["config"]
    hooks = _airflow(airflow_env, "providers", "hooks", "--output", "json")
    assert "airflow_acid.hooks.metastore.AcidMetastoreHook" in hooks and "acid_metastore" in hooks
    triggers = _airflow(airflow_env, "providers", "triggers", "--output", "json")
    assert "airflow_acid.triggers.threshold" in triggers


def test_config_section_has_every_hive_key_with_its_default():
    from airflow_acid.config import settings_from_mapping
    from airflow_acid.metastore.conf import MetastoreConf

    options = get_provider_info()["config"]["acid"]["options"]
    assert set(MetastoreConf.KEYS.values()) <= set(options)
    assert options["compaction_pool"]["default"] == "default_pool"
    assert options["hive.compactor.delta.num.threshold"]["default"] == "10"
    assert options["hive.txn.timeout"]["default"] == "300s"
    # The defaults written into the section parse back to Hive's defaults.
    parsed = settings_from_mapping({k: o["default"] for k, o in options.items()}, source="[acid]")  # ignores DAG keys
    assert parsed == MetastoreConf()


def test_config_get_value_reads_the_acid_section(airflow_env):
    assert _airflow(airflow_env, "config", "get-value", "acid", "hive.compactor.delta.num.threshold").strip() == "10"
    airflow_env["AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD"] = "4"
    assert _airflow(airflow_env, "config", "get-value", "acid", "hive.compactor.delta.num.threshold").strip() == "4"
