"""Hostile input (issue 9): fuzzed directory names in a table location, fuzzed partition values and table names,
SQL-looking names, corrupt ORC files and invalid table properties. Every one ends in a clear error or is handled
safely (ignored, escaped); committed rows stay readable; nothing outside the table location is read or deleted;
the metastore stays intact."""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from airflow_acid.acid.codes import CompactionState, TxnState
from airflow_acid.acid.errors import AcidFileError, AcidNameError, AcidStateError
from airflow_acid.acid.names import is_hidden
from airflow_acid.client.errors import SchemaMismatchError
from airflow_acid.client.table_io import HIVE_DEFAULT_PARTITION
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.messages import WorkerStatus
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.partitions import make_partition_name
from airflow_acid.metastore.schema import TBLS, TXNS, metadata
from tests.backends import backends
from tests.plugins.console_fixtures import close_console_warehouses
from tests.reliability.fault_env import (
    COLUMNS,
    TABLE,
    Ledger,
    Scene,
    check,
    check_no_output_of,
    check_rows,
    clear_error,
    fingerprint,
    make_warehouse,
    table_rows,
)
from tests.reliability.hostile_inputs import (
    SQL_LOOKING_NAMES,
    confusables,
    corruptions,
    directory_names,
    partition_values,
    property_items,
    table_names,
)

JUNK = b"junk planted by the reliability suite, not an ORC file\n"
READ_ERRORS = (AcidNameError, AcidFileError, AcidStateError)
"""What a read of a table location holding a hostile directory may raise (each names the directory)."""


def fuzz(examples: int) -> settings:
    """Hypothesis settings of this module: ``examples`` per test, no deadline, no example database."""
    return settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _names(exc: BaseException, name: str) -> bool:
    text = str(exc)
    return name in text or repr(name) in text or repr(name)[1:-1] in text


def _metastore_intact(wh) -> dict[str, int]:
    """Every metastore table still exists; row counts of TXNS and TBLS (to compare before/after)."""
    present = set(sa.inspect(wh.metastore.db.engine).get_table_names())
    missing = sorted(t for t in metadata.tables if t not in present)
    assert not missing, f"metastore tables gone: {missing}"
    return wh.metastore.db.run(lambda c: {t.name: c.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
                                          for t in (TXNS, TBLS)})


# --- fuzzed directory names in a table location ---------------------------------------------------------------


@dataclass
class Template:
    """A table (history, a committed major compaction waiting for the Cleaner, a later delta) saved once and
    restored before every example, metastore file included."""

    root: Path
    url: str
    rows: dict[int, str]

    @classmethod
    def build(cls, root: Path, summary) -> Template:
        url = f"sqlite:///{root / 'ms' / 'metastore.db'}"
        (root / "ms").mkdir(parents=True)
        scene = Scene.build(url, root / "area", summary)
        scene.compact("major")
        scene.ledger.insert([600, 601], "after the compaction")
        rows = dict(scene.ledger.rows)
        scene.wh.close()
        for part in ("area", "ms"):
            shutil.copytree(root / part, root / f"pristine-{part}", symlinks=True)
        return cls(root, url, rows)

    def restore(self, summary) -> Scene:
        for part in ("area", "ms"):
            shutil.rmtree(self.root / part)
            shutil.copytree(self.root / f"pristine-{part}", self.root / part, symlinks=True)
        wh = make_warehouse(self.url, self.root / "area" / "wh")
        scene = Scene(wh, self.root / "area", Ledger(wh, summary, rows=dict(self.rows)), summary)
        scene._before = scene._outside()
        return scene


def _plant_and_check(scene: Scene, name: str, plant) -> None:
    """Plant ``name`` in the table location; a read returns the committed rows or a clear error naming it; a
    Cleaner cycle deletes nothing outside the location; once the planted entry is gone the rows are all there."""
    summary = scene.summary
    target = Path(scene.location) / name
    plant(target)
    try:
        got = table_rows(scene.wh)
    except READ_ERRORS as exc:
        check(summary, _names(exc, name), f"{type(exc).__name__} does not name {name!r}: {exc}")
        summary.error(type(exc).__name__)
    else:
        summary.add("reads_checked")
        check(summary, got == scene.ledger.expected(), f"with {name!r} planted the table reads {got}")
    Cleaner(scene.ms).run_cycle()  # raising here fails the test: the Cleaner must survive any name
    scene.untouched(f"after cleaning with {name!r} planted")
    if is_hidden(name):
        check(summary, os.path.lexists(target), f"the Cleaner deleted the hidden {name!r}")
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    check_rows(summary, scene.ledger, f"after cleaning with {name!r} planted and removed")


def test_fuzzed_directory_names_are_ignored_or_refused(tmp_path, reliability_summary):
    summary = reliability_summary
    template = Template.build(tmp_path, summary)

    @fuzz(40)
    @given(name=directory_names())
    def one(name: str) -> None:
        scene = template.restore(summary)
        try:
            assume(not os.path.lexists(Path(scene.location) / name))
            summary.add("hostile_directory_names")

            def plant(target: Path) -> None:
                target.mkdir()
                (target / "bucket_00000").write_bytes(JUNK)

            _plant_and_check(scene, name, plant)
        finally:
            scene.wh.close()

    one()


@pytest.mark.parametrize("name", ["delta_0000002_0000002_0001", "stray", "base_0000001"])
def test_symlink_to_outside_is_never_followed_by_the_cleaner(name, tmp_path, reliability_summary):
    """A directory that is obsolete by name but links outside the table location: the Cleaner removes at most the
    link, never what it points to."""
    summary = reliability_summary
    scene = Template.build(tmp_path, summary).restore(summary)
    try:
        victim = scene.root / "beside"
        _plant_and_check(scene, name, lambda target: target.symlink_to(victim, target_is_directory=True))
        check(summary, (victim / "notes.txt").is_file(), "the Cleaner deleted through a symlink")
        summary.add("hostile_directory_names")
    finally:
        scene.wh.close()


# --- fuzzed partition values ------------------------------------------------------------------------------------


PARTITION_ERRORS = (InvalidInputError, SchemaMismatchError)


@pytest.mark.parametrize("empty_db_url", backends("sqlite", "postgresql", "mariadb"), indirect=True)
def test_fuzzed_partition_values_are_escaped_or_refused(empty_db_url, tmp_path, reliability_summary):
    summary = reliability_summary
    wh = make_warehouse(empty_db_url, tmp_path / "wh")
    wh.create_table("db.p", COLUMNS, partition_by=[("part", "string")])
    location = Path(wh.table("db.p").location).resolve()
    model: dict[int, str | None] = {}
    seen: set[str] = set()
    before = _metastore_intact(wh)

    def insert(value: str) -> bool:
        """Insert one row into partition ``value``; False when refused with a clear error."""
        row_id = len(model) + 1
        try:
            with wh.transaction() as txn:
                txn.insert("db.p", [{"id": row_id, "name": "fuzz"}], partition={"part": value})
        except PARTITION_ERRORS as exc:
            clear_error(summary, exc, "part")
            return False
        except OSError as exc:  # a name longer than the filesystem allows: refused by the OS, named by path
            check(summary, exc.errno == errno.ENAMETOOLONG, f"partition {value!r}: unexpected {exc!r}")
            clear_error(summary, exc, "File name too long")
            return False
        seen.add(value)
        model[row_id] = None if value == HIVE_DEFAULT_PARTITION else value
        summary.add("transactions_committed")
        part = wh.metastore.catalog.get_partition("db", "p", {"part": value})
        where = Path(part.location).resolve()
        check(summary, where.parent == location and where.name == make_partition_name({"part": value}),
              f"partition {value!r} lives at {where}, not directly under {location}")
        got = [(r["id"], r["part"]) for r in wh.read("db.p", partition={"part": value}).to_pylist()]
        check(summary, got == [(row_id, model[row_id])], f"partition {value!r} reads {got}")
        return True

    @fuzz(15)
    @given(value=partition_values())
    def one(value: str) -> None:
        assume(value not in seen)
        summary.add("hostile_partition_values")
        if not insert(value):
            return
        for other in confusables(value):
            if other not in seen:
                insert(other)
        everything = sorted((r["id"], r["part"]) for r in wh.read("db.p").to_pylist())
        summary.add("reads_checked")
        check(summary, everything == sorted(model.items()), f"the table reads {everything}, model {model}")

    try:
        one()
        after = _metastore_intact(wh)
        check(summary, after["TBLS"] == before["TBLS"], f"tables changed: {before} -> {after}")
    finally:
        wh.close()


# --- table names ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("empty_db_url", backends("sqlite", "postgresql", "mariadb"), indirect=True)
def test_hostile_table_names_are_refused_or_stay_inside_the_warehouse(empty_db_url, tmp_path, reliability_summary):
    summary = reliability_summary
    area = tmp_path / "area"
    wh = make_warehouse(empty_db_url, area / "wh")
    wh.create_table("db.keep", COLUMNS)
    with wh.transaction() as txn:
        txn.insert("db.keep", [{"id": 1, "name": "keep me"}])
    (area / "beside.txt").write_text("not part of the warehouse\n")
    root = Path(wh.location).resolve()
    outside = fingerprint(area, str(root))

    def one(name: str) -> None:
        summary.add("hostile_table_names")
        before = _metastore_intact(wh)
        try:
            info = wh.create_table(name, COLUMNS)
        except InvalidInputError as exc:
            clear_error(summary, exc, "name")
            check(summary, _metastore_intact(wh) == before, f"refused {name!r} but the metastore changed")
            return
        where = Path(info.location).resolve()
        check(summary, root in where.parents and where.name == info.name, f"table {name!r} lives at {where}")
        try:
            with wh.transaction() as txn:
                txn.insert(info.full_name, [{"id": 7, "name": name}])
        except OSError as exc:  # 255 characters of non-ASCII can still exceed a local directory name's 255 bytes
            check(summary, exc.errno == errno.ENAMETOOLONG, f"table {name!r}: unexpected {exc!r}")
            clear_error(summary, exc, "File name too long", info.name)
        else:
            check(summary, table_rows(wh, info.full_name) == [(7, name)], f"table {name!r} does not read back")
        wh.drop_table(info.full_name)
        check(summary, not os.path.lexists(where) and _metastore_intact(wh)["TBLS"] == before["TBLS"],
              f"dropping {name!r} left {where} or its catalog entry")

    for name in SQL_LOOKING_NAMES:
        one(name)

    @fuzz(25)
    @given(name=table_names())
    def fuzzed(name: str) -> None:
        one(name)

    try:
        fuzzed()
        check(summary, table_rows(wh, "db.keep") == [(1, "keep me")], "the untouched table changed")
        check(summary, fingerprint(area, str(root)) == outside, "files outside the warehouse changed")
    finally:
        wh.close()


# --- corrupt ORC as a delta's bucket file -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["truncated", "wrong_magic", "garbage", "plain_orc_in_a_delta",
                                  "acid_orc_wrong_schema"])
def test_corrupt_bucket_file_is_a_clear_error_and_the_cleaner_deletes_nothing_it_should_not(kind, tmp_path,
                                                                                            reliability_summary):
    """A current delta's bucket file is spoiled while a committed compaction waits for the Cleaner: reads and a new
    compaction fail naming the file, the Cleaner still cleans only what the earlier compaction made obsolete, and
    once the file is repaired every committed row is back."""
    summary = reliability_summary
    scene = Scene.build(f"sqlite:///{tmp_path / 'metastore.db'}", tmp_path / "area", summary)
    first = scene.compact("major")
    scene.ledger.insert([600, 601], "after the compaction")
    location = Path(scene.location)
    victim = location / "delta_0000006_0000006_0000" / "bucket_00000"
    good = victim.read_bytes()
    victim.write_bytes(corruptions(tmp_path / "spoiled")[kind](good))
    summary.add("hostile_orc_files")
    with pytest.raises(AcidFileError) as raised:
        scene.wh.read(TABLE)
    clear_error(summary, raised.value, str(victim))

    check(summary, scene.clean() == ["cleaned"], "the committed compaction was not cleaned next to a corrupt file")
    left = sorted(p.name for p in location.iterdir())
    check(summary, left == sorted([*first.outputs, victim.parent.name]), f"after cleaning the location holds {left}")
    check(summary, victim.read_bytes() != good, "the corrupt file changed")

    cq = scene.enqueue("major")
    outcome = scene.worker().run_next()
    check(summary, outcome.status == WorkerStatus.FAILED
          and f"{victim.parent.name}/{victim.name}" in (outcome.message or ""),
          f"compaction over the corrupt file: {outcome}")
    summary.error("CompactionAttemptError")
    check(summary, scene.ms.txns.txn_state(outcome.txn_id) is TxnState.ABORTED
          and scene.history_states([cq]) == [CompactionState.FAILED], "the failed attempt is not aborted/'failed'")
    check_no_output_of(summary, str(location), [outcome.txn_id], "after the failed compaction")
    check(summary, scene.clean() == [], "the Cleaner acted after the failed attempt")

    victim.write_bytes(good)  # repaired from a backup
    scene.final_check([outcome.txn_id], f"after repairing the {kind} file")


# --- table properties with invalid values -----------------------------------------------------------------------


@pytest.mark.parametrize("empty_db_url", backends("sqlite", "postgresql"), indirect=True)
def test_invalid_table_properties_are_refused_and_nothing_is_half_written(empty_db_url, tmp_path,
                                                                         reliability_summary):
    summary = reliability_summary
    wh = make_warehouse(empty_db_url, tmp_path / "wh")
    wh.create_table("db.base", COLUMNS)
    with wh.transaction() as txn:
        txn.insert("db.base", [{"id": 1, "name": "x"}])
    initiator = Initiator(wh.metastore)
    counter = iter(range(10**6))

    @fuzz(30)
    @given(item=property_items(), alter=st.booleans())
    def one(item: tuple[str, str], alter: bool) -> None:
        key, value = item
        summary.add("hostile_properties")
        before, props_before = _metastore_intact(wh), wh.table("db.base").properties
        name = f"db.t{next(counter)}"
        try:
            if alter:
                info = wh.alter_table_properties("db.base", {key: value})
            else:
                info = wh.create_table(name, COLUMNS, properties={key: value})
        except InvalidInputError as exc:  # Hive's own keys are reported lower-cased
            check(summary, key[:20].lower() in str(exc).lower(), f"the error does not name {key!r}: {exc}")
            summary.error(type(exc).__name__)
            check(summary, _metastore_intact(wh) == before and wh.table("db.base").properties == props_before,
                  f"refused {key}={value!r} but something was written")
            return
        # Accepted: the table still works and the Initiator gives a decision (an error only with a reason).
        with wh.transaction() as txn:
            txn.insert(info.full_name, [{"id": 2, "name": "y"}])
        summary.add("transactions_committed")
        for result in initiator.evaluate_table(info.database, info.name, enqueue=False):
            check(summary, bool(result.reason), f"{key}={value!r}: decision without a reason")
            if result.outcome.value == "e":
                summary.error("InitiatorDecisionError")
        if alter:
            wh.alter_table_properties("db.base", unset=[key])
        else:
            wh.drop_table(info.full_name)

    try:
        one()
        check(summary, table_rows(wh, "db.base")[0] == (1, "x"), "the base table lost its row")
    finally:
        wh.close()


# --- through the CLI: airflow-acid sql ---------------------------------------------------------------------------


def _cli_statements(keep_location: str) -> list[str]:
    """Hostile statements for ``airflow-acid sql``; none may change the keep table, its files or the metastore's
    tables (a refused statement says why in one line)."""
    props = "STORED AS ORC TBLPROPERTIES ('transactional'='true')"
    return [
        f"CREATE TABLE `t; DROP TABLE TXNS--` (id INT) {props}",
        f"CREATE TABLE db.t (id INT) {props}; DROP TABLE TXNS CASCADE",  # refused: the script never starts
        f"CREATE TABLE db.evil (id INT, name STRING) {props} LOCATION '{keep_location}'",
        f"CREATE TABLE db.evil (id INT, name STRING) {props} LOCATION '{keep_location}/../keep'",
        f"CREATE TABLE db.evil (id INT, name STRING) {props} LOCATION '../../outside'",
        "SHOW COMPACTIONS db.keep PARTITION (ds='x''; DROP TABLE \"TXNS\"; --')",
        "ALTER TABLE db.keep PARTITION (ds='../../etc') COMPACT 'major'",
        "ALTER TABLE `db.keep; DELETE FROM TXNS` COMPACT 'major'",
        "ALTER TABLE db.keep SET TBLPROPERTIES ('compactorthreshold.hive.compactor.delta.num.threshold'='-1')",
        "ALTER TABLE db.keep SET TBLPROPERTIES ('compactorthreshold.hive.compactor.delta.pct.threshold'='abc')",
        "ALTER TABLE db.keep UNSET TBLPROPERTIES ('transactional')",
        "ABORT TRANSACTIONS 1 OR 1=1",
        "SHOW LOCKS `../../etc/passwd`",
        "DESCRIBE FORMATTED `db`.`keep`.`x`",
        "SELECT * FROM TXNS",
        "DROP TABLE TXNS",
        "\x00",
        "ALTER TABLE db.keep COMPACT '" + "m" * 100_000 + "'",
    ]


def test_cli_sql_refuses_hostile_statements_clearly(tmp_path, reliability_summary):
    from click.testing import CliRunner

    from airflow_acid.cli.commands import main

    summary = reliability_summary
    url = f"sqlite:///{tmp_path / 'metastore.db'}"
    area = tmp_path / "area"
    wh = make_warehouse(url, area / "wh")
    wh.create_table("db.keep", COLUMNS)
    with wh.transaction() as txn:
        txn.insert("db.keep", [{"id": 1, "name": "keep me"}])
    (area / "beside.txt").write_text("outside the warehouse\n")
    keep_location = wh.table("db.keep").location
    before, files = _metastore_intact(wh), fingerprint(area, str(area / "nothing"))
    try:
        for statement in _cli_statements(keep_location):
            summary.add("hostile_cli_statements")
            result = CliRunner().invoke(main, ["sql", statement, "--metastore-url", url, "--warehouse",
                                               str(area / "wh")])
            where = f"airflow-acid sql {statement[:80]!r}"
            check(summary, result.exception is None or isinstance(result.exception, SystemExit),
                  f"{where} crashed: {result.exception!r}")
            errors = [line for line in result.stderr.splitlines() if line.startswith(("Error: ", "FAILED: "))]
            check(summary, result.exit_code in (1, 2) and len(errors) == 1,
                  f"{where} exit {result.exit_code}, stderr {result.stderr[-500:]!r}")
            summary.error(f"cli_exit_{result.exit_code}")
            check(summary, _metastore_intact(wh)["TBLS"] == before["TBLS"], f"{where} changed the catalog")
            check(summary, table_rows(wh, "db.keep") == [(1, "keep me")], f"{where} changed db.keep")
            check(summary, fingerprint(area, str(area / "nothing")) == files, f"{where} changed files")
    finally:
        wh.close()


# --- through the UI plugin's JSON API ----------------------------------------------------------------------------


_HOSTILE = ["t; DROP TABLE TXNS--", "x' OR '1'='1", "..", "...", "%2e%2e", "😀", "t" * 300, "keep\x00", "\\..\\x"]


def _plugin_requests() -> list[tuple[str, str, dict | None]]:
    """(method, path, JSON body) with hostile names, partitions and filters."""
    from urllib.parse import quote

    requests: list[tuple[str, str, dict | None]] = []
    for bad in _HOSTILE:
        q = quote(bad, safe="")
        requests += [
            ("GET", f"/acid/api/health/db/{q}", None),
            ("GET", f"/acid/api/health/{q}/keep", None),
            ("GET", f"/acid/api/why/db/{q}", None),
            ("GET", f"/acid/api/why/db/p?partition={q}", None),
            ("GET", f"/acid/api/why/db/p?partition=ds%3D{q}", None),
            ("GET", f"/acid/api/compactions?database=db&table={q}&partition={q}", None),
            ("GET", f"/acid/api/compactions?order_by={q}", None),
            ("GET", f"/acid/api/health?database={q}", None),
            ("POST", "/acid/api/compactions", {"database": "db", "table": bad}),
            ("POST", "/acid/api/compactions", {"database": bad, "table": "keep"}),
            ("POST", "/acid/api/compactions", {"database": "db", "table": "p", "partition": bad}),
            ("POST", "/acid/api/compactions", {"database": "db", "table": "p", "partition": f"ds={bad}"}),
        ]
    requests += [("GET", "/acid/api/why/db/p?partition=ds%3D..%2F..%2Fetc", None),
                 ("GET", "/acid/api/compactions?order_by=compactionid%3B%20DROP%20TABLE%20TXNS", None),
                 ("POST", "/acid/api/compactions", {"database": "db", "table": "p", "partition": "ds=../../etc"}),
                 ("POST", "/acid/api/compactions", {"database": "db", "table": "keep", "type": "rebalance"})]
    return requests


def test_plugin_api_answers_hostile_input_with_clear_errors(clients, tmp_path, monkeypatch, reliability_summary):
    from tests.plugins.console_support import acid_connection

    summary = reliability_summary
    url = f"sqlite:///{tmp_path / 'metastore.db'}"
    area = tmp_path / "area"
    wh = make_warehouse(url, area / "wh")
    wh.create_table("db.keep", COLUMNS)
    wh.create_table("db.p", COLUMNS, partition_by=[("ds", "string")])
    with wh.transaction() as txn:
        txn.insert("db.keep", [{"id": 1, "name": "keep me"}])
        txn.insert("db.p", [{"id": 2, "name": "me too"}], partition={"ds": "2024-01-01"})
    (area / "beside.txt").write_text("outside the warehouse\n")
    monkeypatch.setenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", acid_connection(url, area / "wh"))
    before, files = _metastore_intact(wh)["TBLS"], fingerprint(area, str(area / "nothing"))
    try:
        for method, path, body in _plugin_requests():
            summary.add("hostile_plugin_requests")
            answer = clients.admin.request(method, path, json=body)
            where = f"{method} {path[:100]} {body}"
            check(summary, answer.status_code in (200, 400, 404, 422), f"{where}: status {answer.status_code} "
                                                                       f"{answer.text[:300]}")
            if answer.status_code != 200:
                detail = answer.json().get("detail")
                check(summary, bool(detail), f"{where}: no error detail in {answer.text[:300]}")
                summary.error(f"plugin_http_{answer.status_code}")
            elif method == "POST":
                check(summary, answer.json()["accepted"] is False, f"{where} queued a compaction: {answer.json()}")
            check(summary, _metastore_intact(wh)["TBLS"] == before, f"{where} changed the catalog")
        check(summary, table_rows(wh, "db.keep") == [(1, "keep me")], "the plugin requests changed db.keep")
        check(summary, fingerprint(area, str(area / "nothing")) == files, "the plugin requests changed files")
    finally:
        close_console_warehouses(clients.admin.app)
        wh.close()
