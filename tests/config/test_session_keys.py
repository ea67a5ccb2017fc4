"""How SET keys are classified (Hive settings, keys of HiveServer2 or Hive's engine, unknown), and the [acid]
section reading Hive's HiveServer2-only keys without calling them unknown."""

from __future__ import annotations

import logging

import pytest

from airflow_acid.config import settings_from_mapping
from airflow_acid.config.session_keys import KeyKind, classify


@pytest.mark.parametrize("key, kind", [
    ("hive.txn.timeout", KeyKind.SETTING),
    ("METASTORE.COMPACTOR.WORKER.THREADS", KeyKind.SETTING),
    ("hive.support.concurrency", KeyKind.ACKNOWLEDGED),
    ("hive.txn.manager", KeyKind.ACKNOWLEDGED),
    ("hive.compactor.initiator.on", KeyKind.ACKNOWLEDGED),
    ("hive.compactor.cleaner.on", KeyKind.ACKNOWLEDGED),
    ("hive.exec.dynamic.partition.mode", KeyKind.ACKNOWLEDGED),
    ("mapreduce.job.queuename", KeyKind.ACKNOWLEDGED),
    ("hive.compactor.no.such.key", KeyKind.UNKNOWN),
    ("hive.txn.no.such.key", KeyKind.UNKNOWN),
    ("team.owner", KeyKind.UNKNOWN),
])
def test_classify(key, kind):
    assert classify(key).kind is kind


def test_the_acid_section_reads_hiveserver2_keys_without_calling_them_unknown(caplog):
    with caplog.at_level(logging.WARNING):
        conf = settings_from_mapping({"hive.compactor.initiator.on": "true", "hive.txn.manager": "x",
                                      "hive.compactor.worker.threads": "2", "hive.compactor.bogus": "1"})
    assert conf.worker_threads == 2
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "hive.compactor.bogus is not a setting airflow-acid knows" in warned[0]
