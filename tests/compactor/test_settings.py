"""Compactor settings: MetastoreConf value parsing (units, ranges, booleans), the [acid]-style mapping reader,
per-table compactorthreshold.* overrides and per-request WITH OVERWRITE TBLPROPERTIES."""

from __future__ import annotations

import logging

import pytest

from airflow_acid.compactor.settings import (
    DELTA_NUM_KEY,
    DELTA_PCT_KEY,
    CompactorSettingsError,
    request_overrides,
    settings_from_mapping,
    table_thresholds,
    validate_request_properties,
)
from airflow_acid.metastore.conf import MetastoreConf


def test_conf_parses_hive_values_with_units_and_any_key_case():
    conf = MetastoreConf.from_mapping({
        "hive.compactor.aborted.txn.time.threshold": "12h", "hive.compactor.cleaner.retry.retentiontime": "5m",
        "hive.txn.opentxn.timeout": "2s", "HIVE.COMPACTOR.DELTA.NUM.THRESHOLD": "4",
        "hive.compactor.clean.aborts.using.cleaner": "FALSE", "hive.compactor.delta.pct.threshold": 0.2,
        "hive.compactor.initiator.failed.retry.time": "-1", "hive.compactor.worker.timeout": 3600})
    assert (conf.aborted_txn_time_threshold_s, conf.cleaner_retry_retention_s, conf.opentxn_timeout_ms) == \
        (43_200.0, 300.0, 2000)
    assert (conf.delta_num_threshold, conf.clean_aborts_using_cleaner, conf.delta_pct_threshold) == (4, False, 0.2)
    assert (conf.failed_retry_time_s, conf.worker_timeout_s) == (-1.0, 3600.0)


@pytest.mark.parametrize("key, value, message", [
    ("hive.compactor.delta.num.threshold", "-1", "must not be negative"),
    ("hive.compactor.delta.num.threshold", "ten", "is not a valid integer"),
    ("hive.compactor.delta.num.threshold", "1.5", "must be a whole number"),
    ("hive.compactor.delta.pct.threshold", "nan", "is not a valid number"),
    ("hive.txn.timeout", "5 parsecs", "is not a duration"),
    ("hive.compactor.compact.insert.only", "flase", "is not a boolean"),
    ("metastore.compactor.fetch.size", 50, "out of range; Hive accepts 100 to 5000"),
    ("hive.compactor.initiator.failed.compacts.threshold", "21", "out of range; Hive accepts 1 to 20"),
])
def test_conf_rejects_bad_values_naming_the_key(key, value, message):
    with pytest.raises(ValueError, match=message) as info:
        MetastoreConf.from_mapping({key: value})
    assert key in str(info.value) and repr(value) in str(info.value)


def test_settings_from_an_acid_section(caplog):
    base = MetastoreConf(txn_timeout_s=42)
    section = {"hive.compactor.delta.num.threshold": "20", "delta_pct_threshold": "0.3",
               "metastore_url": "sqlite://", "hive.compactor.delta.num.treshold": "5"}
    with caplog.at_level(logging.WARNING):
        conf = settings_from_mapping(section, base=base, source="[acid]")
    assert (conf.delta_num_threshold, conf.delta_pct_threshold, conf.txn_timeout_s) == (20, 0.3, 42)
    assert "[acid]: hive.compactor.delta.num.treshold is not a setting" in caplog.text
    with pytest.raises(CompactorSettingsError, match=r"\[acid\]: setting hive.compactor.abortedtxn.threshold='-3'"):
        settings_from_mapping({"hive.compactor.abortedtxn.threshold": "-3"}, source="[acid]")


def test_table_thresholds_prefer_compactorthreshold_properties():
    conf = MetastoreConf(delta_num_threshold=10, delta_pct_threshold=0.1)
    plain = table_thresholds(conf, {}, table="db.t")
    assert (plain.delta_num_threshold, plain.delta_pct_threshold) == (10, 0.1)
    assert plain.describe(DELTA_NUM_KEY) == f"global setting {DELTA_NUM_KEY}=10"
    props = {"COMPACTORTHRESHOLD.hive.compactor.delta.num.threshold": "4",
             "compactorthreshold.hive.compactor.delta.pct.threshold": "0.5",
             "compactorthreshold.hive.compactor.abortedtxn.threshold": "1"}  # not a per-table key in Hive
    got = table_thresholds(conf, props, table="db.t")
    assert (got.delta_num_threshold, got.delta_pct_threshold) == (4, 0.5)
    assert got.describe(DELTA_PCT_KEY) == f"table property compactorthreshold.{DELTA_PCT_KEY}=0.5"


@pytest.mark.parametrize("value, message", [("ten", "is not a number"), ("-1", "finite non-negative"),
                                            ("2.5", "whole number"), ("inf", "finite non-negative")])
def test_bad_table_threshold_names_table_and_key(value, message):
    key = f"compactorthreshold.{DELTA_NUM_KEY}"
    with pytest.raises(CompactorSettingsError, match=message) as info:
        table_thresholds(MetastoreConf(), {key: value}, table="sales.orders")
    assert f"table sales.orders: property {key}={value!r}" in str(info.value)


def test_request_overrides_split_job_conf_and_table_properties():
    table = {"compactor.spark.executor.memory": "1g", "orc.compress": "ZLIB", "transactional": "true"}
    request = {"compactor.spark.executor.memory": "4g", "compactor.spark.executor.cores": 2,
               "tblprops.orc.compress": "SNAPPY", "tblprops.compactorthreshold.hive.compactor.delta.num.threshold": 3}
    got = request_overrides(table, request, table="db.t")
    assert got.job_conf == {"spark.executor.memory": "4g", "spark.executor.cores": "2"}
    assert got.table_properties["orc.compress"] == "SNAPPY"
    assert got.table_properties[f"compactorthreshold.{DELTA_NUM_KEY}"] == "3"
    assert request_overrides(table, None, table="db.t").job_conf == {"spark.executor.memory": "1g"}


@pytest.mark.parametrize("request_props, message", [
    ({"spark.executor.memory": "4g"}, "is not understood"),
    ({"compactor.": "x"}, "names no setting"),
    ({"compactor.a": ["x"]}, "must be a string, number or boolean"),
    ({"tblprops.compactorthreshold.hive.compactor.delta.pct.threshold": "lots"}, "is not a number"),
])
def test_bad_request_properties(request_props, message):
    with pytest.raises(CompactorSettingsError, match=message) as info:
        validate_request_properties(request_props, table="db.t")
    assert "db.t" in str(info.value)
