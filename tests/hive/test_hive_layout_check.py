"""``airflow-acid check`` against a Hive 4.2 metastore (issue 30 item 4): a table and partition registered as HMS
records them, holding files Hive wrote (the interop fixtures), checked through the Hive flavour; then the delete
delta renamed with an attempt suffix, as CDP writes it, is the error Trino misreads."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from airflow_acid.cli.commands import CHECK_FAILED_EXIT_CODE, main
from tests.external_fixtures import INTEROP_DIR, external_fixture
from tests.hive import hms

NATION = [("n_nationkey", "int"), ("n_name", "string"), ("n_regionkey", "int"), ("n_comment", "string")]
DELETE_DELTA = "delete_delta_10000001_10000001_0000"


@pytest.fixture
def engine(hive_42_url):
    e = sa.create_engine(hive_42_url)
    yield e
    e.dispose()


def test_check_hive_written_files_through_a_hive_metastore(engine, hive_42_url, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    source = external_fixture(f"{INTEROP_DIR}/trino-fullacid-nation-original-file", "interop ORC files")
    db = f"c{uuid.uuid4().hex[:8]}"
    db_id = hms.register_database(engine, db, str(tmp_path / f"{db}.db"))
    tbl_id = hms.register_table(engine, db_id, "nation", NATION, str(tmp_path / f"{db}.db" / "nation"),
                                partition_keys=[("ds", "string")])
    location = tmp_path / f"{db}.db" / "nation" / "ds=x"
    shutil.copytree(source, location)
    hms.register_partition(engine, tbl_id, ["x"], "ds=x", str(location))

    def check(*args: str):
        return CliRunner().invoke(main, ["check", f"{db}.nation", *args, "--metastore-url", hive_42_url,
                                         "--metastore-flavour", "hive", "--warehouse", str(tmp_path), "--json"])

    converted = check()
    assert converted.exit_code == 0, converted.output
    (report,) = json.loads(converted.stdout)
    assert report["partition"] == "ds=x" and report["location"] == str(location)
    assert sorted((f["problem"], f["severity"], f["path"]) for f in report["findings"]) == [
        ("missing-acid-version", "warning", DELETE_DELTA), ("originals-beside-deltas", "warning", ".")]

    (location / DELETE_DELTA / "bucket_00000").rename(location / DELETE_DELTA / "bucket_00000_1")
    renamed = check("ds=x")
    assert renamed.exit_code == CHECK_FAILED_EXIT_CODE, renamed.output
    problems = {f["problem"]: f for f in json.loads(renamed.stdout)[0]["findings"]}
    assert problems["delete-delta-attempt-suffix"]["path"] == f"{DELETE_DELTA}/bucket_00000_1"
