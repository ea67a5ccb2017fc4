"""Catalog statements on each backend: no implicit database, ``default`` in a fresh warehouse, CREATE / DROP
DATABASE, USE and name resolution, SHOW DATABASES / TABLES with Hive's patterns, DROP TABLE (rows and files removed,
refused while the table is in use)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import LockType, OperationType
from airflow_acid.metastore.errors import AlreadyExistsError, InvalidInputError, NoSuchObjectError
from airflow_acid.metastore.locks import LockComponent
from airflow_acid.metastore.schema import (
    COMPACTION_QUEUE,
    COMPLETED_TXN_COMPONENTS,
    NEXT_WRITE_ID,
    PARTITIONS,
    TABLE_PARAMS,
    TBLS,
    TXN_TO_WRITE_ID,
)
from airflow_acid.services import request_compaction
from airflow_acid.statements import StatementExecutor, parse_statement
from airflow_acid.statements.catalog import hive_pattern
from tests.services.support import COLUMNS, inserts, unique


def run(ex: StatementExecutor, text: str):
    return ex.run(parse_statement(text))


def names(result) -> list[str]:
    return [r[0] for r in result.rows]


def test_a_fresh_warehouse_has_default_and_never_creates_a_database_implicitly(wh):
    """First in the module: the module's metastore is fresh on each backend."""
    ex = StatementExecutor(wh)
    assert "default" not in wh.metastore.catalog.list_databases()  # no catalog row yet …
    assert names(run(ex, "SHOW DATABASES")) == ["default"]  # … but Hive's default is there
    assert names(run(ex, "SHOW TABLES")) == []
    with pytest.raises(NoSuchObjectError, match=r"^table default\.nosuch does not exist$"):
        run(ex, "SELECT * FROM nosuch")
    assert run(ex, "DROP TABLE IF EXISTS nosuch").messages == ["table default.nosuch does not exist"]
    with pytest.raises(NoSuchObjectError, match=r"^table default\.nosuch does not exist$"):
        run(ex, "DROP TABLE nosuch")  # Hive's "table not found", not "database default does not exist"
    with pytest.raises(NoSuchObjectError, match="^Database does not exist: sales"):
        run(ex, "CREATE TABLE sales.x (id INT)")
    assert "sales" not in wh.metastore.catalog.list_databases()
    with pytest.raises(NoSuchObjectError, match=r"table sales\.x does not exist \(database sales does not exist\)"):
        run(ex, "SELECT * FROM sales.x")
    run(ex, "CREATE TABLE first (id INT)")  # default's row is written with its first table
    assert names(run(ex, "SHOW TABLES")) == ["first"]
    assert wh.metastore.catalog.get_database("default").location == str(wh.location)


def test_create_use_show_and_drop_database(wh, tmp_path):
    ex = StatementExecutor(wh)
    db = unique("sales")
    result = run(ex, f"CREATE DATABASE {db} COMMENT 'all sales' LOCATION '{tmp_path / 'elsewhere'}'")
    info = wh.metastore.catalog.get_database(db)
    assert result.messages == [f"database {db} created at {info.location}"]
    assert (info.description, info.location) == ("all sales", str(tmp_path / "elsewhere"))
    assert run(ex, f"CREATE DATABASE IF NOT EXISTS {db}").messages == [f"database {db} already exists"]
    with pytest.raises(AlreadyExistsError, match=f"Database {db} already exists"):
        run(ex, f"CREATE SCHEMA {db}")
    other = unique("other")
    run(ex, f"CREATE SCHEMA {other}")
    assert wh.metastore.catalog.get_database(other).location.endswith(f"{other}.db")

    assert {db, other, "default"} <= set(names(run(ex, "SHOW DATABASES")))
    assert names(run(ex, f"SHOW DATABASES LIKE '{db}|{other}'")) == sorted([db, other])
    assert names(run(ex, f"SHOW SCHEMAS LIKE '{db[:3].upper()}*'")) == [db]  # Hive's patterns ignore case

    assert run(ex, f"USE {db}").messages == [f"current database: {db}"]
    run(ex, "CREATE TABLE orders (id INT, name STRING)")
    run(ex, "CREATE TABLE returns (id INT, name STRING)")
    run(ex, "INSERT INTO orders VALUES (1, 'a'), (2, 'b')")
    run(ex, "INSERT INTO returns SELECT * FROM orders WHERE id = 2")
    assert wh.read(f"{db}.returns").to_pylist() == [{"id": 2, "name": "b"}]
    assert run(ex, "SELECT o.id FROM orders o JOIN returns r ON o.id = r.id").rows == [[2]]
    assert run(ex, "WITH orders AS (SELECT 7 AS id) SELECT id FROM orders").rows == [[7]]  # a CTE stays a CTE
    run(ex, "UPDATE orders SET name = 'z' WHERE id = 1")
    run(ex, "DESCRIBE orders")
    assert names(run(ex, "SHOW TABLES")) == ["orders", "returns"]
    assert names(run(ex, "SHOW TABLES 'ret*'")) == ["returns"]
    assert names(run(ex, f"SHOW TABLES IN {db} LIKE 'x*|ORD*'")) == ["orders"]
    assert names(run(ex, f"SHOW TABLES FROM {other}")) == []
    with pytest.raises(NoSuchObjectError, match="Database does not exist: nosuchdb"):
        run(ex, "SHOW TABLES IN nosuchdb")
    with pytest.raises(NoSuchObjectError, match="Database does not exist: nosuchdb"):
        run(ex, "USE nosuchdb")
    assert ex.database == db
    run(ex, "USE default")
    with pytest.raises(NoSuchObjectError, match="table default.orders does not exist"):
        run(ex, "SELECT * FROM orders")

    with pytest.raises(InvalidInputError, match=f"Database {db} is not empty. One or more tables exist "
                                                r"\(orders, returns\)"):
        run(ex, f"DROP DATABASE {db}")
    with pytest.raises(InvalidInputError, match="is not empty"):
        run(ex, f"DROP DATABASE {db} RESTRICT")
    assert wh.metastore.catalog.list_tables(db) == ["orders", "returns"]
    location = wh.table(f"{db}.orders").location
    assert run(ex, f"DROP DATABASE {db} CASCADE").messages == [f"database {db} dropped with 2 table(s)"]
    assert db not in wh.metastore.catalog.list_databases()
    assert not (tmp_path / "elsewhere").exists() and not __import__("os").path.exists(location)
    run(ex, f"DROP SCHEMA {other}")
    with pytest.raises(NoSuchObjectError, match=f"Database does not exist: {other}"):
        run(ex, f"DROP DATABASE {other}")
    assert run(ex, f"DROP DATABASE IF EXISTS {other}").messages == [f"database {other} does not exist"]
    with pytest.raises(InvalidInputError, match="Can not drop default database"):
        run(ex, "DROP DATABASE default")


def _rows(wh, table: sa.Table, where) -> int:
    return wh.metastore.db.run(lambda conn: conn.execute(sa.select(sa.func.count()).select_from(table).where(where))
                               .scalar_one(), what="count rows")


def test_drop_table_removes_its_rows_and_files(wh):
    ex = StatementExecutor(wh)
    db = unique("dropdb")
    run(ex, f"CREATE DATABASE {db}")
    info = wh.create_table(f"{db}.t", COLUMNS, partition_by=[("ds", "string")],
                           properties={"no_auto_compaction": "true"})
    inserts(wh, f"{db}.t", {"ds": "x"}, batches=2)
    request_compaction(wh, f"{db}.t", "ds=x", "major")
    wh.create_table(f"{db}.keep", COLUMNS)
    inserts(wh, f"{db}.keep", batches=1)
    root = wh.io.storage(info.location)
    assert root[0].exists(root[1])
    assert _rows(wh, PARTITIONS, PARTITIONS.c.TBL_ID.in_(sa.select(TBLS.c.TBL_ID).where(TBLS.c.TBL_NAME == "t")))

    assert run(ex, f"DROP TABLE {db}.t PURGE").messages == [f"table {db}.t dropped"]
    assert not root[0].exists(root[1])
    assert wh.metastore.catalog.list_tables(db) == ["keep"]
    for table, where in [(COMPACTION_QUEUE, COMPACTION_QUEUE.c.CQ_DATABASE == db),
                         (COMPLETED_TXN_COMPONENTS, sa.and_(COMPLETED_TXN_COMPONENTS.c.CTC_DATABASE == db,
                                                            COMPLETED_TXN_COMPONENTS.c.CTC_TABLE == "t")),
                         (TXN_TO_WRITE_ID, sa.and_(TXN_TO_WRITE_ID.c.T2W_DATABASE == db,
                                                   TXN_TO_WRITE_ID.c.T2W_TABLE == "t")),
                         (NEXT_WRITE_ID, sa.and_(NEXT_WRITE_ID.c.NWI_DATABASE == db, NEXT_WRITE_ID.c.NWI_TABLE == "t"))]:
        assert _rows(wh, table, where) == 0, table.name
    assert _rows(wh, PARTITIONS, PARTITIONS.c.TBL_ID.notin_(sa.select(TBLS.c.TBL_ID))) == 0
    assert _rows(wh, TABLE_PARAMS, TABLE_PARAMS.c.TBL_ID.notin_(sa.select(TBLS.c.TBL_ID))) == 0
    assert wh.read(f"{db}.keep").num_rows == 3  # the other table is untouched

    with pytest.raises(NoSuchObjectError, match=f"table {db}.t does not exist"):
        run(ex, f"DROP TABLE {db}.t")
    assert run(ex, f"DROP TABLE IF EXISTS {db}.t").messages == [f"table {db}.t does not exist"]
    run(ex, f"CREATE TABLE {db}.t (id INT)")  # the name is free again, its directory fresh
    assert wh.read(f"{db}.t").num_rows == 0


def test_drop_table_is_refused_while_the_table_is_in_use(wh):
    ex = StatementExecutor(wh)
    db = unique("busy")
    run(ex, f"CREATE DATABASE {db}")
    run(ex, f"CREATE TABLE {db}.t (id INT, name STRING)")
    inserts(wh, f"{db}.t", batches=1)
    location = wh.table(f"{db}.t").location

    txn = wh.transaction()
    txn.insert(f"{db}.t", [{"id": 99, "name": "open"}])
    with pytest.raises(InvalidInputError, match=rf"cannot drop table {db}\.t now: open transaction\(s\) "
                                                rf"{txn.txn_id} write it.*nothing was changed"):
        run(ex, f"DROP TABLE {db}.t")
    assert wh.metastore.catalog.table_exists(db, "t") and wh.io.storage(location)[0].exists(location)
    txn.commit()

    lock = wh.metastore.locks.lock([LockComponent(db, "t", lock_type=LockType.SHARED_READ,
                                                  operation=OperationType.SELECT)], user="reader", host="h")
    with pytest.raises(InvalidInputError, match=rf"lock\(s\) {lock.lock_id} are held or wanted on it"):
        run(ex, f"DROP TABLE {db}.t")
    wh.metastore.locks.unlock(lock.lock_id)
    assert wh.read(f"{db}.t").num_rows == 4
    run(ex, f"CREATE TABLE {db}.u (id INT)")
    txn = wh.transaction()
    txn.insert(f"{db}.t", [{"id": 98, "name": "open"}])
    with pytest.raises(InvalidInputError, match=rf"cannot drop database {db} now: table {db}\.t is in use"):
        run(ex, f"DROP DATABASE {db} CASCADE")
    assert wh.metastore.catalog.list_tables(db) == ["t", "u"]  # neither was dropped
    txn.abort()
    run(ex, f"DROP TABLE {db}.t")
    assert not wh.metastore.catalog.table_exists(db, "t")


def test_drop_holds_an_exclusive_lock_that_makes_a_later_writer_wait(wh):
    """The in-use check and the drop run under the DROP's EXCLUSIVE lock (as Hive's DROP): a writer asking for its
    lock in between waits behind it, so it cannot write into a table being removed; the lock goes with the DROP."""
    from airflow_acid.acid.codes import LockState
    from airflow_acid.statements.ddl_lock import exclusive_lock

    ex = StatementExecutor(wh)
    db = unique("race")
    run(ex, f"CREATE DATABASE {db}")
    run(ex, f"CREATE TABLE {db}.t (id INT, name STRING)")
    with exclusive_lock(ex, f"drop table {db}.t", db, "t") as held:
        writer = wh.metastore.locks.lock([LockComponent(db, "t", lock_type=LockType.SHARED_WRITE,
                                                        operation=OperationType.INSERT)],
                                         user="writer", host="h", wait=False)
        assert writer.state is LockState.WAITING
        assert wh.metastore.catalog.in_use(db, "t") is not None  # the waiting writer counts …
        wh.metastore.locks.unlock(writer.lock_id)
        info = wh.metastore.catalog.drop_table(db, "t", refuse_in_use=True, holding=held)  # … the DROP's own not
        assert info is not None and info.name == "t"
    assert wh.metastore.locks.show_locks(db=db) == []


@pytest.mark.parametrize("pattern, matched", [
    ("*", ["a_b", "abc", "orders", "x.y"]),
    ("a*", ["a_b", "abc"]),
    ("a_b", ["a_b"]),  # '_' is literal in Hive's SHOW patterns
    ("x.y|ord*", ["orders", "x.y"]),
    ("ABC", ["abc"]),
    ("b*", []),
])
def test_hive_show_patterns(pattern, matched):
    regex = hive_pattern(pattern)
    assert [n for n in ["a_b", "abc", "orders", "x.y"] if regex.fullmatch(n)] == matched


def test_add_show_and_drop_partitions(wh, tmp_path):
    ex = StatementExecutor(wh)
    db = unique("parts")
    run(ex, f"CREATE DATABASE {db}")
    run(ex, f"USE {db}")
    run(ex, "CREATE TABLE t (id INT, name STRING) PARTITIONED BY (ds STRING, hr INT) "
            "TBLPROPERTIES ('no_auto_compaction'='true')")
    elsewhere = tmp_path / "elsewhere"
    result = run(ex, f"ALTER TABLE t ADD PARTITION (ds='a', hr=1) PARTITION (ds='a', hr=2) LOCATION '{elsewhere}'")
    location = wh.table(f"{db}.t").location
    assert result.messages == [f"partition ds=a/hr=1 of {db}.t added at {location}/ds=a/hr=1",
                               f"partition ds=a/hr=2 of {db}.t added at {elsewhere}"]
    assert elsewhere.is_dir()
    with pytest.raises(InvalidInputError, match="partition ds=a/hr=1 of table .* already exists; use ADD IF NOT"):
        run(ex, "ALTER TABLE t ADD PARTITION (ds='b', hr=1) PARTITION (ds='a', hr=1)")
    assert [p.name for p in wh.metastore.catalog.list_partitions(db, "t")] == ["ds=a/hr=1", "ds=a/hr=2"]  # none added
    run(ex, "ALTER TABLE t ADD IF NOT EXISTS PARTITION (ds='a', hr=1) PARTITION (ds='b', hr=1)")
    inserts(wh, f"{db}.t", {"ds": "b", "hr": "1"}, batches=1)

    assert names(run(ex, "SHOW PARTITIONS t")) == ["ds=a/hr=1", "ds=a/hr=2", "ds=b/hr=1"]
    assert names(run(ex, "SHOW PARTITIONS t PARTITION (ds='a')")) == ["ds=a/hr=1", "ds=a/hr=2"]
    assert names(run(ex, f"SHOW PARTITIONS {db}.t PARTITION (hr=1)")) == ["ds=a/hr=1", "ds=b/hr=1"]
    with pytest.raises(InvalidInputError, match="unknown key 'day'"):
        run(ex, "SHOW PARTITIONS t PARTITION (day='a')")
    run(ex, "CREATE TABLE flat (id INT)")
    with pytest.raises(InvalidInputError, match="is not a partitioned table"):
        run(ex, "SHOW PARTITIONS flat")
    described = run(ex, "DESCRIBE FORMATTED t PARTITION (ds='b', hr=1)").rows
    assert ["Partition Value:", "[b, 1]", ""] in described

    with pytest.raises(NoSuchObjectError, match="partition ds=z/hr=1 of table .* does not exist; use DROP IF EXISTS"):
        run(ex, "ALTER TABLE t DROP PARTITION (ds='a', hr=1), PARTITION (ds='z', hr=1)")
    assert len(wh.metastore.catalog.list_partitions(db, "t")) == 3  # nothing dropped
    txn = wh.transaction()
    txn.insert(f"{db}.t", [{"id": 5, "name": "x"}], {"ds": "b", "hr": "1"})
    with pytest.raises(InvalidInputError, match=rf"cannot drop partition ds=b/hr=1 .* open transaction\(s\) "
                                                rf"{txn.txn_id} write it"):
        run(ex, "ALTER TABLE t DROP PARTITION (ds='b', hr=1)")
    txn.commit()
    b_root = wh.metastore.catalog.get_partition(db, "t", {"ds": "b", "hr": "1"}).location
    assert run(ex, "ALTER TABLE t DROP IF EXISTS PARTITION (ds='b', hr=1), PARTITION (ds='z', hr=1) PURGE"
               ).messages == [f"partition ds=b/hr=1 of {db}.t dropped"]
    assert not __import__("os").path.exists(b_root)
    run(ex, "ALTER TABLE t DROP PARTITION (ds='a', hr=2)")
    assert not elsewhere.exists()
    assert names(run(ex, "SHOW PARTITIONS t")) == ["ds=a/hr=1"]
    assert wh.read(f"{db}.t").num_rows == 0


def test_show_tblproperties(wh):
    ex = StatementExecutor(wh)
    db = unique("props")
    run(ex, f"CREATE DATABASE {db}")
    run(ex, f"CREATE TABLE {db}.t (id INT) COMMENT 'c' TBLPROPERTIES ('no_auto_compaction'='true')")
    result = run(ex, f"SHOW TBLPROPERTIES {db}.t")
    assert result.columns == ["prpt_name", "prpt_value"]
    props = dict((r[0], r[1]) for r in result.rows)
    assert props["transactional"] == "true" and props["no_auto_compaction"] == "true" and props["comment"] == "c"
    assert [r[0] for r in result.rows] == sorted(props)
    assert run(ex, f"SHOW TBLPROPERTIES {db}.t ('NO_AUTO_COMPACTION')").rows == [["true"]]
    assert run(ex, f"SHOW TBLPROPERTIES {db}.t ('nope')").rows == \
        [[f"Table {db}.t does not have property: nope"]]
    with pytest.raises(NoSuchObjectError, match=f"table {db}.nosuch does not exist"):
        run(ex, f"SHOW TBLPROPERTIES {db}.nosuch")


def test_create_transactional_table_and_create_table_like(wh, tmp_path):
    ex = StatementExecutor(wh)
    db = unique("like")
    run(ex, f"CREATE DATABASE {db}")
    run(ex, f"USE {db}")
    run(ex, "CREATE TRANSACTIONAL TABLE src (id INT COMMENT 'k', name STRING) PARTITIONED BY (ds STRING) "
            "CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC TBLPROPERTIES ('no_auto_compaction'='true')")
    src = wh.table(f"{db}.src")
    assert src.is_transactional and not src.is_insert_only and src.property("no_auto_compaction") == "true"
    with pytest.raises(Exception, match="CREATE TRANSACTIONAL TABLE makes a full ACID table"):
        run(ex, "CREATE TRANSACTIONAL TABLE mm (id INT) TBLPROPERTIES ('transactional_properties'='insert_only')")
    inserts(wh, f"{db}.src", {"ds": "a"}, batches=1)
    wh.metastore.catalog.alter_table_properties(db, "src", {"numRows": "3"})

    result = run(ex, f"CREATE TABLE copy LIKE src LOCATION '{tmp_path / 'copy'}' TBLPROPERTIES ('orc.compress'='ZLIB')")
    copy = wh.table(f"{db}.copy")
    assert result.messages == [f"table {db}.copy created at {copy.location}"]
    assert [(c.name, c.type, c.comment) for c in copy.columns] == [(c.name, c.type, c.comment) for c in src.columns]
    assert [k.name for k in copy.partition_keys] == ["ds"]
    assert (copy.bucket_cols, copy.num_buckets, copy.is_transactional) == (["id"], 2, True)
    assert copy.property("no_auto_compaction") == "true" and copy.property("orc.compress") == "ZLIB"
    assert copy.property("numRows") is None and copy.location == str(tmp_path / "copy")
    assert wh.read(f"{db}.copy").num_rows == 0  # the structure, never the rows
    assert run(ex, "CREATE TABLE IF NOT EXISTS copy LIKE src").messages == [f"table {db}.copy already exists"]
    with pytest.raises(NoSuchObjectError, match=f"table {db}.nosuch does not exist"):
        run(ex, "CREATE TABLE other LIKE nosuch")


def test_show_create_table_reads_back(wh, tmp_path):
    ex = StatementExecutor(wh)
    db = unique("showc")
    run(ex, f"CREATE DATABASE {db}")
    run(ex, f"CREATE TABLE {db}.t (id INT COMMENT 'it\\'s the key', tags ARRAY<STRING>) COMMENT 'all' "
            "PARTITIONED BY (ds STRING) CLUSTERED BY (id) INTO 4 BUCKETS STORED AS ORC "
            "TBLPROPERTIES ('no_auto_compaction'='true')")
    info = wh.table(f"{db}.t")
    result = run(ex, f"SHOW CREATE TABLE {db}.t")
    assert result.columns == ["createtab_stmt"]
    lines = [r[0] for r in result.rows]
    assert lines[:3] == [f"CREATE TABLE `{db}`.`t`(", "  `id` int COMMENT 'it\\'s the key',", "  `tags` array<string>)"]
    assert lines[3:11] == ["COMMENT 'all'", "PARTITIONED BY (", "  `ds` string)", "CLUSTERED BY (", "  id)",
                           "INTO 4 BUCKETS", "ROW FORMAT SERDE", "  'org.apache.hadoop.hive.ql.io.orc.OrcSerde'"]
    assert f"  '{info.location}'" in lines and "  'transactional'='true'," in lines
    assert lines[-1].endswith(")") and lines[-1].startswith("  '")

    again = "\n".join(lines).replace(f"`{db}`.`t`", f"`{db}`.`t2`").replace(info.location, str(tmp_path / "t2"))
    run(ex, again)  # the statement creates the table again
    copy = wh.table(f"{db}.t2")
    assert [(c.name, c.type, c.comment) for c in copy.columns] == [(c.name, c.type, c.comment) for c in info.columns]
    assert (copy.partition_keys, copy.bucket_cols, copy.num_buckets) == \
        (info.partition_keys, info.bucket_cols, info.num_buckets)
    assert {k: v for k, v in copy.properties.items()} == info.properties


def test_create_table_as_select(wh):
    ex = StatementExecutor(wh)
    db = unique("ctas")
    run(ex, f"CREATE DATABASE {db}")
    run(ex, f"USE {db}")
    run(ex, "CREATE TABLE src (id INT, amount DECIMAL(10,2), name STRING)")
    run(ex, "INSERT INTO src VALUES (1, 1.50, 'a'), (2, 2.25, 'b'), (3, 3.00, 'c')")
    result = run(ex, "CREATE TABLE big STORED AS ORC TBLPROPERTIES ('transactional'='true', 'no_auto_compaction'="
                     "'true') AS SELECT id, amount, upper(name) AS name, id * 2 FROM src WHERE id > 1")
    info = wh.table(f"{db}.big")
    assert result.messages[0] == f"table {db}.big created at {info.location}"
    assert "2 row(s) inserted" in result.messages[1]
    assert [(c.name, c.type) for c in info.columns] == [("id", "int"), ("amount", "decimal(10,2)"),
                                                        ("name", "string"), ("_c3", "int")]
    assert info.is_transactional and info.property("no_auto_compaction") == "true"
    assert sorted(wh.read(f"{db}.big").to_pylist(), key=lambda r: r["id"]) == [
        {"id": 2, "amount": __import__("decimal").Decimal("2.25"), "name": "B", "_c3": 4},
        {"id": 3, "amount": __import__("decimal").Decimal("3.00"), "name": "C", "_c3": 6}]

    with pytest.raises(Exception, match=f"table {db}.big already exists"):
        run(ex, "CREATE TABLE big AS SELECT 1 AS x")
    assert run(ex, "CREATE TABLE IF NOT EXISTS big AS SELECT 1 AS x").messages == [f"table {db}.big already exists"]
    with pytest.raises(Exception, match="nope"):  # compiled before anything is created
        run(ex, "CREATE TABLE bad AS SELECT nope FROM src")
    with pytest.raises(InvalidInputError, match="duplicate column name"):
        run(ex, "CREATE TABLE bad AS SELECT id, id FROM src")
    with pytest.raises(NoSuchObjectError, match="Database does not exist: nosuchdb"):
        run(ex, "CREATE TABLE nosuchdb.x AS SELECT 1 AS x")
    assert not wh.metastore.catalog.table_exists(db, "bad")
    assert wh.metastore.txns.show_transactions() == [] or all(
        t.state.display != "OPEN" for t in wh.metastore.txns.show_transactions())


def test_drop_table_keeps_an_external_tables_files(wh, tmp_path):
    ex = StatementExecutor(wh)
    db = unique("ext")
    run(ex, f"CREATE DATABASE {db}")
    location = tmp_path / "external"
    location.mkdir()
    (location / "000000_0").write_bytes(b"someone else's file")
    run(ex, f"CREATE TABLE {db}.e (id INT) LOCATION '{location}' TBLPROPERTIES ('transactional'='false', "
            "'EXTERNAL'='TRUE')")
    assert run(ex, f"DROP TABLE {db}.e PURGE").messages == [f"table {db}.e dropped; its files are kept (external "
                                                           "table)"]
    assert not wh.metastore.catalog.table_exists(db, "e")
    assert (location / "000000_0").read_bytes() == b"someone else's file"


def test_describe_database(wh, tmp_path):
    ex = StatementExecutor(wh)
    db = unique("descdb")
    run(ex, f"CREATE DATABASE {db} COMMENT 'the sales' LOCATION '{tmp_path / 'd'}'")
    wh.metastore.catalog.alter_database_params(db, {"no_auto_compaction": "true"})
    plain = run(ex, f"DESCRIBE DATABASE {db}")
    assert plain.columns[:3] == ["db_name", "comment", "location"] and plain.columns[-1] == "parameters"
    assert plain.records()[0] | {"owner_name": None} == {
        "db_name": db, "comment": "the sales", "location": str(tmp_path / "d"), "managedlocation": "",
        "owner_name": None, "owner_type": "USER", "connector_name": "", "remote_dbname": "", "parameters": ""}
    assert run(ex, f"DESC SCHEMA EXTENDED {db}").records()[0]["parameters"] == "{no_auto_compaction=true}"
    assert run(ex, "DESCRIBE DATABASE default").rows[0][0] == "default"
    with pytest.raises(NoSuchObjectError, match="Database does not exist: nosuchdb"):
        run(ex, "DESCRIBE DATABASE nosuchdb")
