"""Table properties are checked where they enter (metastore/table_properties.py): CREATE TABLE … TBLPROPERTIES,
ALTER TABLE … SET TBLPROPERTIES (table and partition) — booleans, ORC compression kinds and sizes with ORC's rules,
thresholds — each refusal naming the table, key, value and what is accepted; unknown keys of airflow-acid's
namespaces are warned about once, not on every later ALTER. On SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import logging
import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_acid.acid.orc_rules import MAX_BUFFER_SIZE, MEMORY_BLOCK, ORC_COMPRESSIONS
from airflow_acid.metastore.catalog import Catalog
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.table_properties import check_property

COLUMNS = [("id", "int")]


@pytest.fixture
def catalog(db) -> Catalog:
    cat = Catalog(db)
    cat.create_database("p", "/warehouse/p.db")
    return cat


@pytest.mark.parametrize("key, value, message", [
    ("NO_AUTO_COMPACTION", "maybe", "table p.t: property no_auto_compaction='maybe' is not a boolean; use 'true' "
                                    "or 'false'"),
    ("no_cleanup", "yes", "property no_cleanup='yes' is not a boolean"),
    ("orc.compress", "bogus", "property orc.compress='bogus' is not an ORC compression; use one of NONE, ZLIB, "
                              "SNAPPY, LZ4, ZSTD (any case)"),
    ("orc.compress", "LZO", "LZO is a compression Hive accepts, but ORC's C++ writer"),
    ("orc.compress.size", "8192", "property orc.compress.size='8192' must be a multiple of 65536 (64 KiB)"),
    ("orc.compress.size", "big", "property orc.compress.size='big' is not an integer"),
    ("orc.row.index.stride", "10", "must be 0 (no row index) or at least 1000"),
    ("orc.stripe.size", "0", "must be a positive integer"),
    ("orc.base.delta.ratio", "-2", "must be a positive integer"),
    ("compactorthreshold.hive.compactor.delta.num.threshold", "1.5", "is not an integer"),
    ("hive.compactor.worker.pool", " ", "names no pool"),
])
def test_bad_values_are_refused_when_set(catalog, key, value, message):
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        catalog.create_table("p", "t", COLUMNS, properties={key: value})
    assert not catalog.table_exists("p", "t")
    catalog.create_table("p", "ok", COLUMNS)
    with pytest.raises(InvalidInputError, match=re.escape(message.replace("p.t", "p.ok"))):
        catalog.alter_table_properties("p", "ok", {key: value})
    assert key.lower() not in {k.lower() for k in catalog.get_table("p", "ok").properties}


@pytest.mark.parametrize("key, value", [
    ("NO_AUTO_COMPACTION", "TRUE"), ("orc.compress", "lz4"), ("orc.compress", "Zstd"), ("orc.compress", "NONE"),
    ("orc.compress.size", str(4 * MEMORY_BLOCK)), ("orc.row.index.stride", "0"), ("orc.row.index.stride", "1000"),
    ("orc.stripe.size", "1048576"), ("team.owner", "anything goes"),
])
def test_good_values_are_stored(catalog, key, value):
    catalog.create_table("p", "t", COLUMNS, properties={key: value})
    assert value in catalog.get_table("p", "t").properties.values()


def test_partition_parameters_follow_the_same_rules(catalog):
    catalog.create_table("p", "parts", COLUMNS, partition_keys=[("ds", "string")])
    catalog.add_partition("p", "parts", {"ds": "a"})
    with pytest.raises(InvalidInputError, match="partition ds=a: property no_cleanup='perhaps' is not a boolean"):
        catalog.alter_partition_params("p", "parts", {"ds": "a"}, {"no_cleanup": "perhaps"})
    assert catalog.alter_partition_params("p", "parts", {"ds": "a"}, {"no_cleanup": "true"}).param("no_cleanup") == \
        "true"


def test_an_unknown_key_is_warned_about_once(catalog, caplog):
    key = "compactorthreshold.hive.compactor.delta.nmu.threshold"
    name = f"w{uuid.uuid4().hex[:8]}"  # warnings are once per process: a table no other test warned about
    with caplog.at_level(logging.WARNING, logger="airflow_acid.metastore.table_properties"):
        catalog.create_table("p", name, COLUMNS, properties={key: "3", "orc.bloom.filter.columns": "id"})
        catalog.alter_table_properties("p", name, {"no_auto_compaction": "true"})
        catalog.alter_table_properties("p", name, {"orc.compress": "SNAPPY"})
        catalog.alter_table_properties("p", name, {key: "4"})
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [f"table p.{name}: property {key} names no setting airflow-acid knows; check the spelling",
                        f"table p.{name}: property orc.bloom.filter.columns is not used by airflow-acid's ORC writers "
                        "(they honour orc.compress, orc.compress.size, orc.row.index.stride, orc.stripe.size); it is "
                        "stored for Hive"]


@given(st.integers(min_value=-10, max_value=MAX_BUFFER_SIZE + 3 * MEMORY_BLOCK))
def test_compress_size_is_honoured_or_refused(size):
    ok = size > 0 and size % MEMORY_BLOCK == 0 and size <= MAX_BUFFER_SIZE
    if ok:
        check_property("p.t", "orc.compress.size", str(size))
    else:
        with pytest.raises(InvalidInputError, match="orc.compress.size"):
            check_property("p.t", "orc.compress.size", str(size))


@given(st.sampled_from(["orc.compress", "ORC.COMPRESS"]), st.text(min_size=0, max_size=6))
def test_compression_kinds(key, value):
    if value.strip().upper() in ORC_COMPRESSIONS:
        check_property("p.t", key, value)
    else:
        with pytest.raises(InvalidInputError):
            check_property("p.t", key, value)


@given(st.sampled_from(["no_auto_compaction", "NO_CLEANUP"]), st.text(max_size=6))
def test_booleans(key, value):
    if value.strip().lower() in ("true", "false"):
        check_property("p.t", key, value)
    else:
        with pytest.raises(InvalidInputError, match="use 'true' or 'false'"):
            check_property("p.t", key, value)
