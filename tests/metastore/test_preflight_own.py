"""``preflight`` on airflow-acid's own metastore (every backend): it says what it is — the own schema at its
revision — and is ready at the current revision, not ready at another or on an empty database."""

from __future__ import annotations

import json

import sqlalchemy as sa
from click.testing import CliRunner

from airflow_acid.cli.commands import main
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.init import head_revision
from airflow_acid.metastore.preflight import Drift, DriftKind, compare, normalise_type
from airflow_acid.services.preflight import KNOWN_ISSUES, CompactionSettings, Kind, run_preflight


def _run(url: str):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return run_preflight(conn, CompactionSettings(), head_revision())
    finally:
        engine.dispose()


def test_own_schema_is_named_with_its_revision(empty_db_url):
    empty = _run(empty_db_url)
    assert empty.kind is Kind.UNKNOWN and not empty.ready
    assert "airflow-acid init" in empty.blockers[0].fix

    Metastore(empty_db_url).init().close()
    report = _run(empty_db_url)
    assert report.kind is Kind.ACID and report.ready and report.drift == [] and report.known_issues == []
    assert report.describe() == f"airflow-acid's own metastore schema at revision {head_revision()}"
    assert not [f for f in report.findings if f.topic == "two compactors"]

    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0001_old'"))
    engine.dispose()
    old = _run(empty_db_url)
    assert not old.ready and old.blockers[0].message.endswith(f"at revision 0001_old, this version needs "
                                                               f"{head_revision()}")
    result = CliRunner().invoke(main, ["preflight", "--metastore-url", empty_db_url, "--json"])
    assert result.exit_code == 1, result.output
    answer = json.loads(result.stdout)
    assert answer["kind"] == "acid" and answer["revision"] == "0001_old" and answer["verdict"] == "not ready"


def test_compare_reports_each_difference():
    table = {"columns": {"A": {"type": "bigint", "nullable": False}, "B": {"type": "varchar(10)", "nullable": True}},
             "primary_key": ["A"], "indexes": [{"name": "I1", "columns": ["B"], "unique": False}],
             "foreign_keys": [], "unique": [{"name": "U1", "columns": ["A", "B"]}]}
    live = {"columns": {"A": {"type": "bigint", "nullable": True}, "C": {"type": "int", "nullable": True},
                        "D": {"type": "int", "nullable": False, "default": True},
                        "E": {"type": "int", "nullable": False, "default": False}},
            "primary_key": [], "indexes": [{"name": "auto_1", "columns": ["B"], "unique": False}],
            "foreign_keys": [], "unique": [{"name": "U1", "columns": ["B", "A"]}]}
    assert compare({"tables": {"T": table, "GONE": table}}, {"tables": {"T": live}}) == [
        Drift(DriftKind.MISSING_TABLE, "GONE"),
        Drift(DriftKind.NULLABILITY, "T", "A", "NOT NULL", "NULL"),
        Drift(DriftKind.MISSING_COLUMN, "T", "B", expected="varchar(10)"),
        Drift(DriftKind.EXTRA_COLUMN, "T", "C", actual="int"),
        Drift(DriftKind.EXTRA_COLUMN, "T", "D", actual="int"),
        Drift(DriftKind.REQUIRED_EXTRA_COLUMN, "T", "E", actual="int"),
        Drift(DriftKind.PRIMARY_KEY, "T", None, "(A)", "none"),
        Drift(DriftKind.UNIQUE_CHANGED, "T", "U1", "(A, B)", "(B, A)"),
    ]  # the index under an engine-made name with the same columns counts as present


def test_type_spellings_fold():
    from sqlalchemy.dialects import mysql, postgresql

    assert normalise_type(mysql.BIGINT(display_width=20), mysql.dialect()) == "bigint"
    assert normalise_type(mysql.VARCHAR(767, charset="latin1", collation="latin1_bin"), mysql.dialect()) == \
        "varchar(767)"
    assert normalise_type(postgresql.INTEGER(), postgresql.dialect()) == "int"
    assert normalise_type(postgresql.BYTEA(), postgresql.dialect()) == "binary data"


def test_known_issue_windows():
    issue = next(i for i in KNOWN_ISSUES if i.key == "HIVE-29572")
    assert issue.affects("4.0.0") and issue.affects("4.2.0") and not issue.affects("3.1.3")
    assert issue.window() == "4.0.0 and later (fix proposed, merge not verified)"


def test_acid_options_read_when_present():
    from dataclasses import dataclass

    from airflow_acid.cli.commands import _optional_setting

    @dataclass(frozen=True)
    class Scope:
        patterns: tuple[str, ...] = ()

        @property
        def explicit(self) -> bool:
            return bool(self.patterns)

        def describe(self) -> str:
            return "scope=" + ",".join(self.patterns)

    @dataclass
    class Config:
        mode: str = "active"
        scope: Scope = Scope()

    assert _optional_setting(object(), "mode") is None  # a release without the option
    assert _optional_setting(Config(), "mode") == "active"
    assert _optional_setting(Config(), "scope") is None
    assert _optional_setting(Config(scope=Scope(("sales",))), "scope") == "scope=sales"
