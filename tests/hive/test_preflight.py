"""``airflow-acid preflight`` on Hive's own schema (4.0.0 and 4.2.0, PostgreSQL and MariaDB, loaded as schematool
loads it): a correct database shows no drift and is ready; a dropped index, a dropped foreign key, a dropped unique
constraint and a changed column type are each reported exactly; Hive's compactor mutexes and ``[acid] mode`` decide
the two-compactors finding; the committed reference files are what Hive's scripts give."""

from __future__ import annotations

import json
import time

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from airflow_acid.cli.commands import main
from airflow_acid.metastore import hive_reference
from airflow_acid.metastore.init import head_revision
from airflow_acid.metastore.preflight import Drift, DriftKind
from airflow_acid.services.preflight import CompactionSettings, Kind, Severity, run_preflight
from tests.backends import SERVER_BACKENDS
from tests.hive import generate_reference
from tests.hive.conftest import load_hive_database

PREFLIGHT_MATRIX = [pytest.param((backend, version), marks=pytest.mark.servers, id=f"{backend}-{version}")
                    for backend in SERVER_BACKENDS for version in ("4.0.0", "4.2.0")]
SHADOW = CompactionSettings(mode="shadow")


@pytest.fixture(params=PREFLIGHT_MATRIX)
def hive_db(request):
    """(engine, version) of a fresh database holding exactly Hive's schema of that version."""
    url, drop = load_hive_database(*request.param)
    engine = sa.create_engine(url)
    try:
        yield engine, request.param[1]
    finally:
        engine.dispose()
        drop()


def _preflight(engine, settings=SHADOW):
    with engine.connect() as conn:
        return run_preflight(conn, settings, head_revision())


def _q(engine, name: str) -> str:
    return engine.dialect.identifier_preparer.quote(name)


def test_correct_then_damaged_schema(hive_db):
    engine, version = hive_db
    report = _preflight(engine)
    assert report.kind is Kind.HIVE and report.facts.hive_version == version
    assert report.reference is not None and version in report.reference
    assert report.drift == []
    assert report.ready, report.to_json()["reasons"]

    reference = hive_reference.load(version, engine.dialect.name)["tables"]
    index = reference["COMPLETED_TXN_COMPONENTS"]["indexes"][0]["name"]
    fk = next(f["name"] for f in reference["TBLS"]["foreign_keys"] if f["referred_table"] == "DBS")

    def q(name: str) -> str:
        return _q(engine, name)

    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.exec_driver_sql(f"DROP INDEX {q(index)}")
            conn.exec_driver_sql(f"ALTER TABLE {q('TBLS')} DROP CONSTRAINT {q(fk)}")
            conn.exec_driver_sql(f"ALTER TABLE {q('DBS')} DROP CONSTRAINT {q('UNIQUE_DATABASE')}")
            conn.exec_driver_sql(f"ALTER TABLE {q('TXNS')} ALTER COLUMN {q('TXN_AGENT_INFO')} TYPE varchar(64)")
        else:
            conn.exec_driver_sql(f"DROP INDEX {q(index)} ON {q('COMPLETED_TXN_COMPONENTS')}")
            conn.exec_driver_sql(f"ALTER TABLE {q('TBLS')} DROP FOREIGN KEY {q(fk)}")
            conn.exec_driver_sql(f"ALTER TABLE {q('DBS')} DROP INDEX {q('UNIQUE_DATABASE')}")
            conn.exec_driver_sql(f"ALTER TABLE {q('TXNS')} MODIFY {q('TXN_AGENT_INFO')} varchar(64) NULL")

    damaged = _preflight(engine)
    assert sorted(damaged.drift, key=lambda d: (d.table, d.kind.value)) == [
        Drift(DriftKind.MISSING_INDEX, "COMPLETED_TXN_COMPONENTS", index,
              expected="(CTC_DATABASE, CTC_TABLE, CTC_PARTITION)"),
        Drift(DriftKind.MISSING_UNIQUE, "DBS", "UNIQUE_DATABASE", expected="(NAME, CTLG_NAME)"),
        Drift(DriftKind.MISSING_FOREIGN_KEY, "TBLS", fk, expected="(DB_ID) → DBS(DB_ID)"),
        Drift(DriftKind.COLUMN_TYPE, "TXNS", "TXN_AGENT_INFO", expected="varchar(128)", actual="varchar(64)"),
    ]
    assert not damaged.ready
    (reason,) = damaged.to_json()["reasons"]
    assert "4 difference(s)" in reason and f"missing index COMPLETED_TXN_COMPONENTS.{index}" in reason
    assert "column type TXNS.TXN_AGENT_INFO: expected varchar(128), found varchar(64)" in reason


def test_known_issues_own_tables_and_unknown_version(hive_db):
    engine, version = hive_db
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {_q(engine, 'ACID_INITIATOR_DECISIONS')} (AID_ID BIGINT PRIMARY KEY)")
        conn.exec_driver_sql(f"ALTER TABLE {_q(engine, 'TXNS')} ADD COLUMN {_q(engine, 'X_NOTE')} varchar(10)")
    report = _preflight(engine)
    assert {i.key for i in report.known_issues} == {"HIVE-29572", "HIVE-28240", "HIVE-29186", "HIVE-30026",
                                                    "HIVE-29720"}
    assert [d.kind for d in report.drift] == [DriftKind.EXTRA_TABLE, DriftKind.EXTRA_COLUMN] and report.ready
    assert any("ACID_INITIATOR_DECISIONS" in f.message and f.severity is Severity.NOTE for f in report.findings)

    with engine.begin() as conn:  # a NOT NULL column without a default breaks Hive's inserts into HIVE_LOCKS
        conn.exec_driver_sql(f"ALTER TABLE {_q(engine, 'HIVE_LOCKS')} ADD COLUMN {_q(engine, 'X_REQ')} bigint NOT NULL")
    required = _preflight(engine)
    assert Drift(DriftKind.REQUIRED_EXTRA_COLUMN, "HIVE_LOCKS", "X_REQ", actual="bigint") in required.drift
    assert not required.ready

    with engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE {_q(engine, 'VERSION')} SET {_q(engine, 'SCHEMA_VERSION')} = '9.9.9'"))
    unknown = _preflight(engine)
    assert unknown.reference is None and unknown.drift == [] and unknown.ready
    assert any(f.topic == "schema" and "no reference of Hive 9.9.9" in f.message and f.severity is Severity.WARNING
               for f in unknown.findings)


@pytest.mark.parametrize("hive_db", PREFLIGHT_MATRIX[:1] + PREFLIGHT_MATRIX[3:], indirect=True)
def test_two_compactors(hive_db):
    engine, _ = hive_db
    assert not [f for f in _preflight(engine).findings if f.topic == "two compactors"]  # shadow: never
    active = _preflight(engine, CompactionSettings())
    (finding,) = [f for f in active.findings if f.topic == "two compactors"]
    assert finding.severity is Severity.WARNING and "HIVE-28662" in finding.message and active.ready

    aux = sa.table("AUX_TABLE", sa.column("MT_KEY1"), sa.column("MT_KEY2"), sa.column("MT_COMMENT"))
    with engine.begin() as conn:  # Hive's Initiator released its mutex a minute ago
        conn.execute(sa.insert(aux).values(MT_KEY1="Initiator", MT_KEY2=int(time.time() * 1000) - 60_000,
                                           MT_COMMENT=None))
    busy = _preflight(engine, CompactionSettings(mode="active"))
    (finding,) = [f for f in busy.findings if f.topic == "two compactors"]
    assert finding.severity is Severity.BLOCKER and "Initiator mutex released 1 min ago" in finding.message
    assert "hive.compactor.initiator.on=false" in finding.fix and not busy.ready
    assert _preflight(engine, CompactionSettings(mode="active", scope="sales.*")).ready  # a scope: no overlap claim


@pytest.mark.parametrize("hive_db", PREFLIGHT_MATRIX[-1:], indirect=True)
def test_cli_json_and_table(hive_db, monkeypatch):
    engine, version = hive_db
    monkeypatch.setenv("AIRFLOW__ACID__MODE", "shadow")  # read when [acid] mode exists; absent otherwise
    url = engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["preflight", "--metastore-url", url, "--json"])
    answer = json.loads(result.stdout)
    assert answer["kind"] == "hive" and answer["hive_version"] == version and answer["drift"] == []
    assert result.exit_code == (0 if answer["ready"] else 1), result.output
    assert {i["key"] for i in answer["known_issues"]} >= {"HIVE-29572", "HIVE-29720"}

    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE TXNS MODIFY TXN_HOST varchar(64) NOT NULL")
    result = CliRunner().invoke(main, ["preflight", "--metastore-url", url])
    assert result.exit_code == 1, result.output
    assert "column type" in result.output and "TXN_HOST" in result.output and "varchar(64)" in result.output
    assert "verdict: not ready" in result.output


@pytest.mark.slow
@pytest.mark.servers
def test_committed_reference_is_what_hives_scripts_give():
    assert generate_reference.main(check=True) == 0, "regenerate: PYTHONPATH=. python -m tests.hive.generate_reference"
