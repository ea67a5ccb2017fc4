"""``[acid] cleaner_retention`` (issue 30 item 2): airflow-acid's name for Hive's delayed cleanup
(hive.compactor.delayed.cleanup.enabled + hive.compactor.cleaner.retention.time.seconds), honoured under both names;
the retention is the Cleaner's wait and the undo window."""

from __future__ import annotations

import logging

import pytest

from airflow_acid.config import AcidConfig
from airflow_acid.metastore.errors import InvalidSettingError


def test_unset_means_hive_defaults_delayed_cleanup_off():
    settings = AcidConfig.from_mapping({}).settings
    assert (settings.delayed_cleanup_enabled, settings.cleaner_retention_ms) == (False, 0)


@pytest.mark.parametrize(("value", "enabled", "ms"), [("1h", True, 3_600_000), ("90", True, 90_000),
                                                      ("500ms", True, 500), ("0", False, 0)])
def test_cleaner_retention_turns_delayed_cleanup_on(value, enabled, ms):
    settings = AcidConfig.from_mapping({"cleaner_retention": value}).settings
    assert (settings.delayed_cleanup_enabled, settings.cleaner_retention_ms) == (enabled, ms)


@pytest.mark.parametrize("prefix", ["hive", "metastore"])
def test_hive_names_are_honoured(prefix):
    settings = AcidConfig.from_mapping({f"{prefix}.compactor.delayed.cleanup.enabled": "true",
                                        f"{prefix}.compactor.cleaner.retention.time.seconds": "10m"}).settings
    assert (settings.delayed_cleanup_enabled, settings.cleaner_retention_ms) == (True, 600_000)
    enabled_only = AcidConfig.from_mapping({f"{prefix}.compactor.delayed.cleanup.enabled": "true"}).settings
    assert enabled_only.cleaner_retention_ms == 300_000  # Hive's default retention


def test_cleaner_retention_wins_over_the_hive_names(caplog):
    with caplog.at_level(logging.WARNING):
        settings = AcidConfig.from_mapping({"hive.compactor.delayed.cleanup.enabled": "true",
                                            "hive.compactor.cleaner.retention.time.seconds": "60",
                                            "cleaner_retention": "2h"}).settings
    assert settings.cleaner_retention_ms == 7_200_000
    assert "cleaner_retention=2h overrides" in caplog.text
    off = AcidConfig.from_mapping({"hive.compactor.delayed.cleanup.enabled": "true", "cleaner_retention": "0"})
    assert off.settings.cleaner_retention_ms == 0


@pytest.mark.parametrize("value", ["-5", "soon", "3 parsecs"])
def test_bad_values_name_the_option(value):
    with pytest.raises(InvalidSettingError, match="cleaner_retention"):
        AcidConfig.from_mapping({"cleaner_retention": value})
