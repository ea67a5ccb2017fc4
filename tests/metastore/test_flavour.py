"""The metastore flavour: detection on airflow-acid's own schema, explicit choices, and the profile's pure rules
(job ids that fit the column, commit timestamps). Hive's own schemas are exercised in tests/hive."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.metastore import Metastore
from airflow_acid.metastore.errors import HiveMetastoreError
from airflow_acid.metastore.flavour import Flavour, SchemaProfile


def test_own_schema_is_detected_as_acid_and_hive_is_refused(metastore_url):
    with Metastore(metastore_url) as ms:
        assert ms.flavour is Flavour.ACID and not ms.profile.is_hive
        assert ms.profile.decisions_table and not ms.profile.commit_time_is_timestamp
        assert "managed by airflow-acid" in ms.profile.describe()
    with Metastore(metastore_url, flavour="hive") as ms:
        with pytest.raises(HiveMetastoreError, match="not a Hive metastore"):
            ms.catalog.list_databases()


@pytest.mark.parametrize("text, expected", [(None, None), ("auto", None), ("", None), ("HIVE", Flavour.HIVE),
                                            (" acid ", Flavour.ACID), (Flavour.HIVE, Flavour.HIVE)])
def test_flavour_parse(text, expected):
    assert Flavour.parse(text) is expected


def test_flavour_parse_rejects_unknown_values():
    with pytest.raises(ValueError, match="use auto, acid or hive"):
        Flavour.parse("derby")


@given(st.text(min_size=1, max_size=200), st.integers(min_value=16, max_value=128))
def test_job_ids_fit_the_column_and_keep_short_names(name, width):
    profile = SchemaProfile(Flavour.HIVE, job_id_width=width)
    job_id = profile.job_id(name)
    assert len(job_id) <= width
    assert (job_id == name) == (len(name) <= width)
    assert profile.job_id(name) == job_id  # stable: the log line and SHOW COMPACTIONS agree


def test_long_job_names_with_a_common_head_get_distinct_ids():
    profile = SchemaProfile(Flavour.HIVE, job_id_width=32)
    head = "worker-host-compactor-sales.events.ds=2024-01-0"
    assert len({profile.job_id(head + str(i)) for i in range(10)}) == 10


def test_commit_time_is_left_to_the_column_default_only_on_hive():
    assert SchemaProfile(Flavour.ACID).commit_time_value(123) == 123
    assert SchemaProfile(Flavour.HIVE, commit_time_is_timestamp=True).commit_time_value(123) is None
