"""The catalog: databases, transactional tables, TBLPROPERTIES rules, partitions and Hive partition names."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

import airflow_acid.metastore.catalog as catalog_module
from airflow_acid.metastore.catalog import Catalog
from airflow_acid.metastore.errors import AlreadyExistsError, InvalidInputError, NoSuchObjectError
from airflow_acid.metastore.partitions import (
    escape_path_name,
    make_partition_name,
    normalize_spec,
    parse_partition_name,
    unescape_path_name,
)
from airflow_acid.metastore.schema import (
    BUCKETING_COLS,
    COLUMNS_V2,
    PARTITION_KEYS,
    PARTITION_PARAMS,
    PARTITIONS,
    SDS,
    TABLE_PARAMS,
    TBLS,
)

CATALOG_TABLES = (TBLS, SDS, COLUMNS_V2, PARTITION_KEYS, BUCKETING_COLS, TABLE_PARAMS, PARTITIONS, PARTITION_PARAMS)


def _counts(db) -> dict[str, int]:
    return db.run(lambda c: {t.name: c.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
                             for t in CATALOG_TABLES})


@pytest.fixture
def catalog(db) -> Catalog:
    cat = Catalog(db)
    cat.create_database("Sales", "/warehouse/sales.db", params={"no_auto_compaction": "false"})
    return cat


def _orders(catalog: Catalog, **kwargs):
    args = dict(partition_keys=[("ds", "string"), ("region", "STRING")], bucket_cols=["id"], num_buckets=4)
    args.update(kwargs)
    return catalog.create_table("sales", "Orders", [("id", "BIGINT"), ("amount", "decimal(10, 2)"),
                                                    ("tags", "array<string>")], **args)


def test_database_lifecycle(catalog):
    db = catalog.get_database("SALES")
    assert (db.name, db.location, db.param("NO_AUTO_COMPACTION")) == ("sales", "/warehouse/sales.db", "false")
    assert catalog.list_databases() == ["sales"]
    assert catalog.alter_database_params("sales", {"no_auto_compaction": "true", "x": None}).params == {
        "no_auto_compaction": "true"}
    with pytest.raises(AlreadyExistsError, match="database sales already exists"):
        catalog.create_database("sales", "/elsewhere")
    assert catalog.create_database("sales", "/elsewhere", if_not_exists=True).location == "/warehouse/sales.db"
    _orders(catalog)
    with pytest.raises(InvalidInputError, match=r"database sales is not empty \(tables: orders\)"):
        catalog.drop_database("sales")
    catalog.drop_database("sales", cascade=True)
    assert catalog.list_databases() == []
    with pytest.raises(NoSuchObjectError, match="database sales does not exist"):
        catalog.get_database("sales")


def test_create_and_get_table(catalog):
    created = _orders(catalog, properties={"compactorthreshold.hive.compactor.delta.num.threshold": 5,
                                           "compactor.spark.executor.memoryOverhead": "1g"})
    table = catalog.get_table("sales", "ORDERS")
    assert created == table
    assert (table.full_name, table.location, table.num_buckets, table.bucket_cols) == (
        "sales.orders", "/warehouse/sales.db/orders", 4, ["id"])
    assert [(c.name, c.type) for c in table.columns] == [("id", "bigint"), ("amount", "decimal(10,2)"),
                                                         ("tags", "array<string>")]
    assert [(k.name, k.type) for k in table.partition_keys] == [("ds", "string"), ("region", "string")]
    assert table.is_transactional and not table.is_insert_only and table.is_partitioned
    assert table.properties == {"transactional": "true",
                                "compactorthreshold.hive.compactor.delta.num.threshold": "5",
                                "compactor.spark.executor.memoryOverhead": "1g"}
    mm = catalog.create_table("sales", "events", [("e", "string")], location="s3://bucket/events/",
                              properties={"Transactional": "TRUE", "TRANSACTIONAL_PROPERTIES": "Insert_Only"})
    assert mm.is_insert_only and mm.location == "s3://bucket/events" and not mm.is_partitioned
    assert mm.num_buckets == -1
    assert catalog.list_tables("sales") == ["events", "orders"]
    catalog.drop_table("sales", "events")
    assert catalog.list_tables("sales") == ["orders"]
    assert not catalog.table_exists("sales", "events")


# (call, error class, message fragment): every bad input must fail clearly and write nothing.
BAD_INPUTS = [
    (lambda c: c.get_table("sales", "nope"), NoSuchObjectError, "table sales.nope does not exist"),
    (lambda c: c.get_table("nodb", "t"), NoSuchObjectError, "database nodb does not exist"),
    (lambda c: c.drop_table("sales", "nope"), NoSuchObjectError, "table sales.nope does not exist"),
    (lambda c: _orders(c), AlreadyExistsError, "table sales.orders already exists"),
    (lambda c: c.create_table("sales", "bad-name", [("a", "int")]), InvalidInputError, "table name 'bad-name'"),
    (lambda c: c.create_table("sales", "t" * 256, [("a", "int")]), InvalidInputError,
     r"table name 'tttt\w*'… \(256 characters\) is longer than 255 characters"),  # its directory could not exist
    (lambda c: c.create_table("sales", "t-" * 5000, [("a", "int")]), InvalidInputError,
     r"table name 't-t-[t-]*'… \(10000 characters\) is not valid"),  # quoted, not echoed whole
    (lambda c: c.create_table("sales", "t", []), InvalidInputError, "needs at least one column"),
    (lambda c: c.create_table("sales", "t", [("a", "int"), ("A", "int")]), InvalidInputError, "listed twice"),
    (lambda c: c.create_table("sales", "t", [("a", "integr")]), InvalidInputError, "'integr' is not a valid Hive type"),
    (lambda c: c.create_table("sales", "t", [("a", "int")], partition_keys=[("a", "int")]), InvalidInputError,
     "partition key a is also a column"),
    (lambda c: c.create_table("sales", "t", [("a", "int")], partition_keys=[("p", "array<int>")]),
     InvalidInputError, "must have a primitive type"),
    (lambda c: c.create_table("sales", "t", [("a", "int")], bucket_cols=["b"], num_buckets=2), InvalidInputError,
     "bucket column b is not a column"),
    (lambda c: c.create_table("sales", "t", [("a", "int")], bucket_cols=["a"], num_buckets=0), InvalidInputError,
     "num_buckets must be an integer between 1 and 4096"),
    (lambda c: c.create_table("sales", "t", [("a", "int")], num_buckets=8), InvalidInputError,
     "needs bucket columns"),
    (lambda c: c.create_table("sales", "t", [("a", "int")], properties={"transactional": "no"}),
     InvalidInputError, "use 'true' \\(an ACID table\\) or 'false' \\(a plain ORC table"),
    (lambda c: c.create_table("sales", "t", [("a", "int")],
                              properties={"transactional": "false", "transactional_properties": "default"}),
     InvalidInputError, "needs transactional=true"),
    (lambda c: c.create_table("sales", "t", [("a", "int")], properties={"transactional_properties": "split"}),
     InvalidInputError, "transactional_properties='split' is not supported"),
    (lambda c: c.create_table("sales", "t", [("a", "int")],
                              properties={"compactorthreshold.hive.compactor.delta.num.threshold": "ten"}),
     InvalidInputError, r"delta.num.threshold='ten' is not an integer"),
    (lambda c: c.create_table("sales", "t", [("a", "int")],
                              properties={"compactorthreshold.hive.compactor.delta.pct.threshold": "-0.5"}),
     InvalidInputError, "must be a finite non-negative number"),
    (lambda c: c.create_table("sales", "t", [("a", "int")],
                              properties={"compactorthreshold.hive.compactor.delta.pct.threshold": "nan"}),
     InvalidInputError, "must be a finite non-negative number"),
    (lambda c: c.create_table("sales", "t", [("a", "int")],  # accepted once; then every Initiator cycle errored
                              properties={"compactorthreshold.hive.compactor.delta.num.threshold": "9" * 400}),
     InvalidInputError, "must be a finite non-negative number"),
    (lambda c: c.create_table("sales", "t", [("a", "int")], properties={"k" * 300: "v"}), InvalidInputError,
     "is 300 characters long; the limit is 256"),
    (lambda c: c.alter_table_properties("sales", "orders", {"k" * 257: "v"}), InvalidInputError,
     "is 257 characters long; the limit is 256"),
    (lambda c: c.alter_table_properties("sales", "orders", {"TRANSACTIONAL": "false"}), InvalidInputError,
     "cannot be turned into a non-transactional one"),
    (lambda c: c.alter_table_properties("sales", "orders", unset=["transactional"]), InvalidInputError,
     "'transactional' cannot be unset"),
    (lambda c: c.alter_table_properties("sales", "orders", {"transactional_properties": "insert_only"}),
     InvalidInputError, "cannot change after creation"),
    (lambda c: c.alter_table_properties("sales", "orders", {"transactional_properties": ""}),  # found by hypothesis:
     InvalidInputError, "transactional_properties='' is not supported"),  # was stored, then could not be unset
    (lambda c: c.alter_table_properties("sales", "orders",
                                        {"compactorthreshold.hive.compactor.delta.num.threshold": "-1"}),
     InvalidInputError, "must be a finite non-negative number"),
]


def test_bad_input_gives_clear_errors_and_writes_nothing(db, catalog):
    """Every bad input raises the named error with a clear message and leaves the catalog exactly as it was."""
    _orders(catalog)
    before = _counts(db)
    properties_before = catalog.get_table("sales", "orders").properties
    for call, error, match in BAD_INPUTS:
        with pytest.raises(error, match=match):
            call(catalog)
        assert _counts(db) == before, match
    assert catalog.get_table("sales", "orders").properties == properties_before


def test_failing_create_leaves_no_rows(db, catalog, monkeypatch):
    """A failure after TBLS/SDS/COLUMNS_V2 rows were written rolls the whole create back."""
    before = _counts(db)

    def explode(conn, tbl_id, props):
        raise RuntimeError("disk full")

    monkeypatch.setattr(catalog_module, "_insert_table_params", explode)
    with pytest.raises(RuntimeError, match="disk full"):
        _orders(catalog)
    assert _counts(db) == before
    monkeypatch.undo()
    assert _orders(catalog).name == "orders"


def test_alter_table_properties(catalog):
    _orders(catalog)
    table = catalog.alter_table_properties("sales", "orders", {"Compactorthreshold.hive.compactor.delta.num.threshold":
                                                              "20", "NO_AUTO_COMPACTION": True,
                                                              "transactional": "TRUE"})
    assert table.property("no_auto_compaction") == "true"
    assert table.properties["compactorthreshold.hive.compactor.delta.num.threshold"] == "20"
    table = catalog.alter_table_properties("sales", "orders", {"transactional_properties": "DEFAULT"},
                                           unset=["no_auto_compaction"])
    assert table.property("no_auto_compaction") is None and table.property("transactional_properties") == "default"


def test_partitions(db, catalog):
    _orders(catalog)
    part = catalog.add_partition("sales", "orders", {"REGION": "eu:west", "ds": "2024-01-01"},
                                 params={"no_cleanup": "true"})
    assert part.name == "ds=2024-01-01/region=eu%3Awest"
    assert part.spec == {"ds": "2024-01-01", "region": "eu:west"}
    assert part.location == "/warehouse/sales.db/orders/ds=2024-01-01/region=eu%3Awest"
    assert part.param("NO_CLEANUP") == "true"
    other = catalog.add_partition("sales", "orders", {"ds": "2024-01-02", "region": "us"}, location="/data/x/")
    assert other.location == "/data/x"
    assert [p.name for p in catalog.list_partitions("sales", "orders")] == [part.name, other.name]
    assert catalog.get_partition("sales", "orders", part.name) == part
    assert catalog.get_partition("sales", "orders", {"ds": "2024-01-01", "region": "eu:west"}) == part
    with pytest.raises(AlreadyExistsError, match="partition ds=2024-01-02/region=us of table sales.orders already"):
        catalog.add_partition("sales", "orders", {"ds": "2024-01-02", "region": "us"})
    assert catalog.alter_partition_params("sales", "orders", part.name, {"no_cleanup": None}).params == {}
    catalog.drop_partition("sales", "orders", {"ds": "2024-01-02", "region": "us"})
    with pytest.raises(NoSuchObjectError, match="partition ds=2024-01-02/region=us of table sales.orders does not"):
        catalog.get_partition("sales", "orders", "ds=2024-01-02/region=us")
    catalog.drop_table("sales", "orders")
    assert _counts(db) == {t.name: 0 for t in CATALOG_TABLES}


def test_add_partition_if_not_exists_survives_a_concurrent_creation(db, catalog, monkeypatch):
    """Writers inserting into a new partition at once all register it. On PostgreSQL and MariaDB the loser of the
    race used to get AlreadyExistsError despite if_not_exists (three threads adding the same 200 partitions failed
    296 times), aborting its transaction; here the existence check is made stale on purpose, then real threads race.
    """
    catalog.create_table("sales", "t", [("id", "int")], partition_keys=[("p", "string")])
    first = catalog.add_partition("sales", "t", {"p": "a"})
    before = _counts(db)
    real = catalog_module._partition_row
    calls: list[str] = []

    def stale_once(conn, tbl_id, name):  # the other writer commits right after this check
        calls.append(name)
        return None if len(calls) == 1 else real(conn, tbl_id, name)

    monkeypatch.setattr(catalog_module, "_partition_row", stale_once)
    assert catalog.add_partition("sales", "t", {"p": "a"}, if_not_exists=True) == first
    assert _counts(db) == before  # its storage descriptor row was taken back
    calls.clear()
    with pytest.raises(AlreadyExistsError, match="created concurrently"):
        catalog.add_partition("sales", "t", {"p": "a"})
    assert _counts(db) == before
    monkeypatch.undo()

    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def add_all() -> None:
        barrier.wait()
        for i in range(40):
            try:
                catalog.add_partition("sales", "t", {"p": f"x{i}"}, if_not_exists=True)
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    threads = [threading.Thread(target=add_all) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(catalog.list_partitions("sales", "t")) == 41
    assert _counts(db)["SDS"] == before["SDS"] + 40


def test_partition_values_differing_only_in_case_accents_or_trailing_spaces_stay_apart(db, catalog):
    """Hive's partition names are byte-exact. Under MariaDB's default utf8mb4_general_ci ``p=a`` was the same row
    as ``p=A`` (found by the reliability suite's partition fuzzing): the second partition was never registered,
    and rows written to it were never read. Compaction requests of such partitions must not merge either."""
    from airflow_acid.metastore.compactions import CompactionQueue

    catalog.create_table("sales", "t", [("id", "int")], partition_keys=[("p", "string")])
    values = ["a", "A", "e", "é", "a ", "ss", "ß"]
    parts = [catalog.add_partition("sales", "t", {"p": v}) for v in values]
    assert [p.spec["p"] for p in parts] == values
    assert len({p.location for p in parts}) == len(values)
    for value, part in zip(values, parts):
        assert catalog.get_partition("sales", "t", {"p": value}) == part
    assert sorted(p.name for p in catalog.list_partitions("sales", "t")) == sorted(p.name for p in parts)
    queue = CompactionQueue(db)
    assert all(queue.enqueue("sales", "t", p.name).accepted for p in parts)


def test_table_and_partition_directories_never_overlap(db, catalog):
    """Found by the reliability suite through ``airflow-acid sql``: CREATE TABLE … LOCATION '<another table's
    directory>' was accepted, and the new table's first insert overwrote the other's delta_0000001_0000001_0000."""
    keep = catalog.create_table("sales", "keep", [("a", "int")])
    assert keep.location == "/warehouse/sales.db/keep"
    catalog.create_table("sales", "p", [("a", "int")], partition_keys=[("ds", "string")])
    catalog.add_partition("sales", "p", {"ds": "x"}, location="/data/p-x")
    before = _counts(db)
    for location, taken in [("/warehouse/sales.db/keep", "table sales.keep"),
                            ("/warehouse/sales.db/keep/", "table sales.keep"),
                            ("/warehouse/sales.db/other/../keep", "table sales.keep"),
                            ("/warehouse/sales.db/keep/inner", "table sales.keep"),
                            ("/warehouse", "table sales.keep"),
                            ("/data/p-x/sub", "partition ds=x of sales.p")]:
        with pytest.raises(InvalidInputError, match=f"overlaps the directory of {taken}"):
            catalog.create_table("sales", "evil", [("a", "int")], location=location)
    with pytest.raises(InvalidInputError, match="is a relative path"):
        catalog.create_table("sales", "evil", [("a", "int")], location="relative/dir")
    with pytest.raises(InvalidInputError, match="overlaps the directory of table sales.keep"):
        catalog.add_partition("sales", "p", {"ds": "y"}, location="/warehouse/sales.db/keep/ds=y")
    with pytest.raises(InvalidInputError, match="overlaps the directory of table sales.p"):
        catalog.add_partition("sales", "p", {"ds": "y"}, location="/warehouse/sales.db/p")
    assert _counts(db) == before
    assert catalog.create_table("sales", "next_door", [("a", "int")], location="/warehouse/sales.db/keep2/"
                                ).location == "/warehouse/sales.db/keep2"
    assert catalog.add_partition("sales", "p", {"ds": "y"}, location="/warehouse/sales.db/p/custom-y").location == \
        "/warehouse/sales.db/p/custom-y"
    assert catalog.create_table("sales", "s3", [("a", "int")], location="s3://bucket/a/../t").location == \
        "s3://bucket/t"


BAD_SPECS = [
    ({"ds": "1"}, "is missing region"),
    ({"ds": "1", "region": "x", "extra": "y"}, "has unknown key 'extra'"),
    ({"ds": "1", "region": ""}, "value of region is empty"),
    ({"ds": "1", "region": "a/b"}, "contains '/'"),
    ({"ds": "..", "region": "x"}, "value of ds is '..'"),
    ({"ds": "1", "region": "a\x00b"}, "contains a NUL character"),
    ({"ds": "1", "DS": "2", "region": "x"}, "names key 'ds' twice"),
    ({"ds": 1.5, "region": "x"}, "must be a string or integer"),
    ({"ds": "1", "region": "x" * 800}, "the limit is 767"),
]


def test_invalid_partition_specs_name_the_spec_and_write_nothing(db, catalog):
    _orders(catalog)
    unpartitioned = catalog.create_table("sales", "flat", [("a", "int")])
    before = _counts(db)
    for spec, match in BAD_SPECS:
        with pytest.raises(InvalidInputError, match="partition spec \\(") as info:
            catalog.add_partition("sales", "orders", spec)
        assert match in str(info.value) and "sales.orders" in str(info.value)
    with pytest.raises(InvalidInputError, match="table sales.flat is not partitioned"):
        catalog.add_partition("sales", unpartitioned.name, {"a": "1"})
    assert _counts(db) == before


def test_hive_escaping_of_partition_names():
    assert escape_path_name("a=b/c:d%e#f") == "a%3Db%2Fc%3Ad%25e%23f"
    assert escape_path_name("x\x01y{z}[]^'\"*?\\\x7f") == "x%01y%7Bz}%5B%5D%5E%27%22%2A%3F%5C%7F"
    assert escape_path_name("ümlaut space-_.") == "ümlaut space-_."
    assert make_partition_name({"DS": "2024-01-01", "h": "1"}) == "ds=2024-01-01/h=1"
    assert unescape_path_name("100%") == "100%" and unescape_path_name("%zz%41") == "%zzA"
    assert normalize_spec(["Ds", "h"], {"h": 3, "DS": "x"}, table="d.t") == {"ds": "x", "h": "3"}


@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
                       st.text(min_size=1, max_size=12).filter(lambda v: "/" not in v and v not in (".", "..")
                                                               and "\x00" not in v),
                       min_size=1, max_size=4))
def test_partition_names_round_trip(spec):
    name = make_partition_name(spec)
    assert parse_partition_name(name) == spec
    assert name.count("/") == len(spec) - 1
