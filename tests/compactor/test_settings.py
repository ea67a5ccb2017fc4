"""Compactor settings: MetastoreConf value parsing (units, ranges, booleans), per-table compactorthreshold.*
overrides and per-request WITH OVERWRITE TBLPROPERTIES (the [acid] section reader: tests/test_config.py)."""

from __future__ import annotations

import logging
import re

import pytest

from airflow_acid.compactor.errors import CompactorSettingsError
from airflow_acid.compactor.settings import (
    DELTA_NUM_KEY,
    DELTA_PCT_KEY,
    request_overrides,
    table_thresholds,
    validate_request_properties,
)
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import InvalidSettingError


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
    with pytest.raises(InvalidSettingError, match=message) as info:
        MetastoreConf.from_mapping({key: value})
    assert key in str(info.value) and repr(value) in str(info.value)



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


# --- issue 16 item 5: metastore.* and hive.* names, unknown names, MR-era job settings -------------------------


def test_every_setting_has_its_metastore_and_hive_name_with_one_default():
    for f in MetastoreConf.__dataclass_fields__.values():
        names = MetastoreConf.names_of(f.name)
        assert all(MetastoreConf.field_of(n) == f.name for n in names)
        if MetastoreConf.key_of(f.name).startswith(("hive.", "metastore.")):
            assert {n.split(".", 1)[0] for n in names} >= {"hive", "metastore"}, names
    conf = MetastoreConf.from_mapping({"metastore.compactor.history.retention.succeeded": 7,
                                       "METASTORE.TXN.TIMEOUT": "10m", "hive.compactor.fetch.size": 200})
    assert (conf.history_retention_succeeded, conf.txn_timeout_s, conf.compactor_fetch_size) == (7, 600.0, 200)


def test_history_retention_attempted_is_did_not_initiate():
    for name in ("hive.compactor.history.retention.attempted", "metastore.compactor.history.retention.did.not.initiate"):
        assert MetastoreConf.from_mapping({name: "5"}).history_retention_did_not_initiate == 5


def test_metastore_name_wins_unless_it_only_repeats_the_default(caplog):
    both = {"hive.txn.timeout": "20s", "metastore.txn.timeout": "40s"}
    with caplog.at_level(logging.WARNING):
        assert MetastoreConf.from_mapping(both).txn_timeout_s == 40.0
    assert "metastore.txn.timeout wins" in caplog.text
    # an [acid] section lists the default under the hive.* name; an explicit metastore.* value wins over it, and an
    # explicit hive.* value wins over a metastore.* entry that only repeats the default
    assert MetastoreConf.from_mapping({"hive.txn.timeout": "300s", "metastore.txn.timeout": "1m"}).txn_timeout_s == 60
    assert MetastoreConf.from_mapping({"metastore.txn.timeout": "300", "hive.txn.timeout": "1m"}).txn_timeout_s == 60




def test_hive4_defaults_xlock_write_true():
    assert MetastoreConf().txn_xlock_write is True


def test_table_thresholds_take_the_metastore_name_too():
    props = {"compactorthreshold.metastore.compactor.delta.num.threshold": "4"}
    assert table_thresholds(MetastoreConf(), props, table="db.t").delta_num_threshold == 4


def test_mr_job_settings_map_to_spark_or_are_named_in_a_warning(caplog):
    from airflow_acid.compactor.job_conf import job_queue, spark_job_conf

    table = {"compactor.mapreduce.map.memory.mb": "3072", "compactor.mapreduce.map.cpu.vcores": "2",
             "compactor.mapreduce.job.queuename": "table-q", "compactor.mapreduce.reduce.memory.mb": "1"}
    request = {"compactor.mapred.job.queue.name": "request-q"}
    with caplog.at_level(logging.WARNING):
        conf = spark_job_conf({k.split(".", 1)[1]: v for k, v in table.items()},
                              queue=job_queue(table, request, "global-q"), where="db.t")
    assert conf["spark.executor.memory"] == "3072m" and conf["spark.executor.cores"] == "2"
    assert conf["spark.yarn.queue"] == "request-q"
    assert "compactor.mapreduce.reduce.memory.mb" in caplog.text and "db.t" in caplog.text
    assert job_queue(table, {}, "global-q") == "table-q" and job_queue({}, {}, "global-q") == "global-q"
    explicit = spark_job_conf({"spark.executor.memory": "8g", "mapreduce.map.memory.mb": "1024"})
    assert explicit["spark.executor.memory"] == "8g"


def test_unknown_compactorthreshold_table_property_is_warned_about(warehouse, caplog):
    with caplog.at_level(logging.WARNING):
        warehouse.create_table("t", [("id", "int")], properties={
            "compactorthreshold.metastore.compactor.delta.num.threshold": "4",
            "compactorthreshold.hive.compactor.delta.num.treshold": "5"})
    assert "compactorthreshold.hive.compactor.delta.num.treshold names no setting" in caplog.text
    assert "compactorthreshold.metastore.compactor.delta.num.threshold names" not in caplog.text


@pytest.mark.parametrize(("given", "expected"), [({}, None), ({"hive.compactor.worker.threads": ""}, None),
                                                 ({"hive.compactor.worker.threads": "0"}, 0),
                                                 ({"metastore.compactor.worker.threads": "3"}, 3)])
def test_worker_threads_unset_zero_or_a_count(given, expected):
    assert MetastoreConf.from_mapping(given).worker_threads == expected


def test_worker_threads_rejects_a_negative_or_fractional_count():
    with pytest.raises(ValueError, match="worker.threads"):
        MetastoreConf.from_mapping({"hive.compactor.worker.threads": "-1"})
    with pytest.raises(ValueError, match="whole number"):
        MetastoreConf.from_mapping({"hive.compactor.worker.threads": "1.5"})


@pytest.mark.parametrize("key, value, message", [
    ("tblprops.orc.compress", "bogus", "request property tblprops.orc.compress: table db.t: property "
                                       "orc.compress='bogus' is not an ORC compression"),
    ("tblprops.orc.compress.size", "8192", "must be a multiple of 65536"),
    ("tblprops.no_auto_compaction", "maybe", "is not a boolean"),
])
def test_request_table_properties_follow_the_table_property_rules(key, value, message):
    with pytest.raises(CompactorSettingsError, match=re.escape(message)):
        validate_request_properties({key: value}, table="db.t")
    assert validate_request_properties({"tblprops.orc.compress": "LZ4"}, table="db.t") == \
        {"tblprops.orc.compress": "LZ4"}
