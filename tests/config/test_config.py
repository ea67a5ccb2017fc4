"""The one configuration module: every [acid] option parsed from text, the environment in Airflow's spelling (and the
old one, with a warning), airflow.cfg for the CLI, bad values naming the option and the value, and the provider info
and docs/configuration.md generated from the one description of each option."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from airflow_acid.acid.storage_options import StorageOptions
from airflow_acid.config import AcidConfig, BacklogLimits, Budgets, InvalidSettingError, config_from_environment
from airflow_acid.config.hive import settings_from_mapping
from airflow_acid.config.options import DAG_OPTIONS, HIVE_OPTIONS, OPTIONS
from airflow_acid.config.reference import markdown, provider_options
from airflow_acid.config.sources import env_section
from airflow_acid.errors import AcidUserError
from airflow_acid.get_provider_info import get_provider_info
from airflow_acid.metastore.conf import MetastoreConf

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_airflow_cfg(tmp_path) -> dict[str, str]:
    """An environment whose AIRFLOW_HOME holds no airflow.cfg."""
    return {"AIRFLOW_HOME": str(tmp_path / "no-airflow")}


def test_settings_from_an_acid_section(caplog):
    base = MetastoreConf(txn_timeout_s=42)
    section = {"hive.compactor.delta.num.threshold": "20", "delta_pct_threshold": "0.3",
               "metastore_url": "sqlite://", "hive.compactor.delta.num.treshold": "5"}
    with caplog.at_level(logging.WARNING):
        conf = settings_from_mapping(section, base=base, source="[acid]")
    assert (conf.delta_num_threshold, conf.delta_pct_threshold, conf.txn_timeout_s) == (20, 0.3, 42)
    assert "[acid]: hive.compactor.delta.num.treshold is not a setting" in caplog.text
    with pytest.raises(InvalidSettingError, match=r"\[acid\]: setting hive.compactor.abortedtxn.threshold='-3'"):
        settings_from_mapping({"hive.compactor.abortedtxn.threshold": "-3"}, source="[acid]")


def test_events_mem_is_a_setting_under_hives_name():
    """hive.transactional.events.mem (Hive's default 10,000,000) from [acid] under its name, checked like the rest."""
    assert MetastoreConf().transactional_events_mem == 10_000_000
    assert settings_from_mapping({"hive.transactional.events.mem": "1000"}).transactional_events_mem == 1000
    with pytest.raises(InvalidSettingError, match="hive.transactional.events.mem"):
        settings_from_mapping({"hive.transactional.events.mem": "-1"}, source="[acid]")

def test_environment_variables_take_both_names_and_warn_about_unknown_ones(caplog, no_airflow_cfg):
    env = {**no_airflow_cfg, "AIRFLOW_ACID__METASTORE__COMPACTOR__HISTORY__RETENTION__SUCCEEDED": "9",
           "AIRFLOW_ACID__HIVE__TXN__XLOCK__WRITE": "false", "AIRFLOW_ACID__HIVE__TXN__TIMEOUTT": "1",
           "AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD": "7", "AIRFLOW__ACID__HIVE__TXN__TIMEOUT": "1m",
           "AIRFLOW_ACID_HOME": "/x", "PATH": "/bin"}
    with caplog.at_level(logging.WARNING), pytest.warns(DeprecationWarning):
        conf = config_from_environment(env).settings
    assert conf.history_retention_succeeded == 9 and conf.txn_xlock_write is False
    assert conf.delta_num_threshold == 7 and conf.txn_timeout_s == 60
    assert "hive.txn.timeoutt" in caplog.text and "AIRFLOW_ACID_HOME" not in caplog.text

def test_acid_section_takes_both_names_env_spelling_and_warns_about_every_unknown_key(caplog):
    section = {"hive.txn.timeout": "300s", "metastore.txn.timeout": "2m",  # default + explicit Hive 4 name
               "hive__compactor__history__retention__failed": "6",  # AIRFLOW__ACID__HIVE__COMPACTOR__… variable
               "compaction_pool": "p", "compaction_pol": "typo", "metastore.txn.timeotu": "1"}
    with caplog.at_level(logging.WARNING):
        conf = settings_from_mapping(section, other_options={"compaction_pool"})
    assert conf.txn_timeout_s == 120.0 and conf.history_retention_failed == 6
    assert "compaction_pol " in caplog.text and "metastore.txn.timeotu" in caplog.text
    assert "compaction_pool " not in caplog.text


def test_every_dag_option_is_parsed():
    section = {"compaction_pool": "acid_compaction", "compaction_pools": "etl, big,etl", "compaction_batch_size": "4",
               "alert_max_backlog": "200", "alert_max_ready_for_cleaning_age": "24h", "alert_max_initiated_age": "90",
               "compaction_budget_bytes": "10gb", "compaction_budget_core_seconds": "3600",
               "compaction_budget_pool_bytes": "20gb", "compaction_budget_table_bytes": "512m",
               "compaction_aging": "30m", "storage_options": '{"endpoint_url": "http://minio:9000", "anon": true}',
               "hive.compactor.delta.pct.threshold": "0.9",
               "spark_ui_url": "https://history.example/history/{app_id}/jobs/", "action_approval": " HITL"}
    config = AcidConfig.from_mapping(section, operators={"default_deferrable": "True"})
    assert config.action_approval == "hitl" and AcidConfig().action_approval == "off"
    assert config.spark_ui_link("app-2026 1") == "https://history.example/history/app-2026%201/jobs/"
    assert config.spark_ui_link(None) is None and AcidConfig().spark_ui_link("app-1") is None
    assert config.compaction_pool == "acid_compaction" and config.compaction_pools == ("etl", "big")
    assert config.compaction_batch_size == 4 and config.default_deferrable is True
    assert config.alert_limits == BacklogLimits(200, 86400.0, 90.0)
    assert config.budgets == Budgets(10 * 1024 ** 3, 3600.0, 20 * 1024 ** 3, 512 * 1024 ** 2, 1800.0)
    assert config.storage_options == StorageOptions(endpoint_url="http://minio:9000", anonymous=True)
    assert config.settings.delta_pct_threshold == 0.9
    assert AcidConfig.from_mapping({}) == AcidConfig()


def test_every_provider_option_parses_its_default_and_its_example():
    options = get_provider_info()["config"]["acid"]["options"]
    assert set(options) == {o.name for o in HIVE_OPTIONS + DAG_OPTIONS}
    assert set(MetastoreConf.KEYS.values()) <= set(options)
    assert options["compaction_pool"]["default"] == "default_pool"
    assert options["hive.compactor.delta.num.threshold"]["default"] == "10"
    assert options["hive.txn.timeout"]["default"] == "300s"
    # The defaults Airflow serves for the section parse back to the defaults, all options at once.
    assert AcidConfig.from_mapping({k: o["default"] for k, o in options.items()}) == AcidConfig()
    # Each option is read: its example changes the configuration.
    for name, option in options.items():
        assert AcidConfig.from_mapping({name: option["example"]}) != AcidConfig(), name


def test_airflow_getsection_values_are_taken_as_text():
    """Airflow's conf.getsection turns numbers and booleans into Python values."""
    config = AcidConfig.from_mapping({"hive.compactor.delta.num.threshold": 4, "hive.txn.xlock.write": False,
                                      "compaction_batch_size": 2, "compaction_budget_bytes": 300000,
                                      "hive.compactor.delta.pct.threshold": 0.9})
    assert (config.settings.delta_num_threshold, config.settings.txn_xlock_write) == (4, False)
    assert config.compaction_batch_size == 2 and config.budgets.bytes_per_run == 300000
    assert config.settings.delta_pct_threshold == 0.9


@pytest.mark.parametrize("option, value", [
    ("hive.compactor.delta.pct.threshold", "high"),
    ("hive.compactor.abortedtxn.threshold", "-3"),
    ("hive.txn.timeout", "soon"),
    ("compaction_batch_size", "0"),
    ("compaction_batch_size", "many"),
    ("compaction_budget_bytes", "lots"),
    ("compaction_aging", "0"),
    ("alert_max_backlog", "many"),
    ("alert_max_backlog", "-1"),
    ("alert_max_initiated_age", "soon"),
    ("alert_max_ready_for_cleaning_age", "-5m"),
    ("storage_options", "not json"),
    ("storage_options", '{"secret_access_key": "x"}'),
    ("spark_ui_url", "http://history:18080/"),
    ("spark_ui_url", "history/{app_id}"),
    ("action_approval", "yes"),
])
def test_a_bad_value_is_an_input_error_naming_the_option_and_the_value(option, value):
    with pytest.raises(InvalidSettingError) as info:
        AcidConfig.from_mapping({option: value})
    assert isinstance(info.value, AcidUserError) and info.value.exit_code == 1
    message = str(info.value)
    assert "[acid]" in message and option in message and repr(value) in message, message


def test_a_bad_default_deferrable_names_it():
    with pytest.raises(InvalidSettingError, match=r"\[operators\] default_deferrable='maybe'"):
        AcidConfig.from_mapping({}, operators={"default_deferrable": "maybe"})


def test_metastore_conf_raises_the_input_error_not_a_bare_value_error():
    with pytest.raises(InvalidSettingError, match=r"hive.compactor.delta.num.threshold='x'"):
        MetastoreConf.from_mapping({"hive.compactor.delta.num.threshold": "x"})


def test_the_old_spelling_warns_naming_the_new_one_and_the_new_one_wins(caplog):
    env = {"AIRFLOW_ACID__HIVE__COMPACTOR__DELTA__PCT__THRESHOLD": "0.5",
           "AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.PCT.THRESHOLD": "0.9", "AIRFLOW_ACID__COMPACTION_POOL": "old"}
    with caplog.at_level(logging.WARNING), pytest.warns(DeprecationWarning) as warned:
        section = env_section(env)
    assert any("write it as AIRFLOW__ACID__COMPACTION_POOL" in str(w.message) for w in warned)
    assert section == {"hive.compactor.delta.pct.threshold": "0.9", "compaction_pool": "old"}
    assert "AIRFLOW_ACID__HIVE__COMPACTOR__DELTA__PCT__THRESHOLD uses the old spelling; write it as " \
           "AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.PCT.THRESHOLD" in caplog.text


def test_the_cli_reads_airflow_cfg_and_the_environment_overrides_it(tmp_path):
    home = tmp_path / "airflow"
    home.mkdir()
    (home / "airflow.cfg").write_text("[core]\ndags_folder = /dags\n\n[acid]\nhive.compactor.delta.pct.threshold = 0.9\n"
                                      "compaction_pool = acid_compaction\nstorage_options = {\"region\": \"eu\"}\n\n"
                                      "[operators]\ndefault_deferrable = True\n")
    env = {"AIRFLOW_HOME": str(home)}
    config = config_from_environment(env)
    assert config.settings.delta_pct_threshold == 0.9 and config.compaction_pool == "acid_compaction"
    assert config.storage_options.region == "eu" and config.default_deferrable is True
    env["AIRFLOW__ACID__COMPACTION_POOL"] = "from_env"
    env["AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"] = "false"
    config = config_from_environment(env)
    assert config.compaction_pool == "from_env" and config.default_deferrable is False
    assert config.settings.delta_pct_threshold == 0.9
    moved = tmp_path / "elsewhere.cfg"
    (home / "airflow.cfg").rename(moved)
    assert config_from_environment(env).settings.delta_pct_threshold == 0.1  # no airflow.cfg: the default
    assert config_from_environment({**env, "AIRFLOW_CONFIG": str(moved)}).settings.delta_pct_threshold == 0.9


def test_a_bad_value_in_airflow_cfg_names_the_file_and_the_option(tmp_path):
    (tmp_path / "airflow.cfg").write_text("[acid]\ncompaction_batch_size = 0\n")
    with pytest.raises(InvalidSettingError) as info:
        config_from_environment({"AIRFLOW_HOME": str(tmp_path)})
    assert str(tmp_path / "airflow.cfg") in str(info.value) and "compaction_batch_size" in str(info.value)


def test_every_option_is_described_once():
    names = [(o.section, o.name) for o in OPTIONS]
    assert len(names) == len(set(names))
    assert all(o.description.strip() and o.kind in ("string", "integer", "float", "boolean") for o in OPTIONS)
    assert provider_options() == get_provider_info()["config"]["acid"]["options"]


def test_the_committed_reference_page_is_the_generated_one():
    committed = (REPO / "docs" / "configuration.md").read_text()
    assert committed == markdown(), "docs/configuration.md is stale: python -m airflow_acid.config --markdown > " \
                                    "docs/configuration.md"
    for option in OPTIONS:
        assert f"`{option.name}`" in committed or f"] {option.name}`" in committed
