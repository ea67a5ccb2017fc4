"""``airflow-acid check TABLE [PARTITION]`` on each backend (issue 30 item 4): a table as the writers leave it gives no
finding and exit code 0; a delete delta renamed the way CDP names its files gives the error (exit code 4), in the
table and in ``--json``; warnings alone keep exit code 0; unknown tables and partitions are refused (exit code 1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest
from click.testing import CliRunner

from airflow_acid.cli.commands import CHECK_FAILED_EXIT_CODE, main
from tests.services.support import COLUMNS, delete, inserts, unique


@pytest.fixture
def cli(module_url, module_root, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)

    def invoke(*args: str):
        return CliRunner().invoke(main, ["check", *args, "--metastore-url", module_url, "--warehouse",
                                         str(module_root)])

    return invoke


def _partition_dir(wh, table: str, partition: str) -> Path:
    db, name = table.split(".")
    return Path(wh.metastore.catalog.get_partition(db, name, partition).location)


def _only(path: Path, prefix: str) -> Path:
    (found,) = [p for p in path.iterdir() if p.name.startswith(prefix)]
    return found


def test_check_a_good_table_then_a_cdp_named_delete_delta(cli, wh):
    table = f"cli.{unique('chk')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    inserts(wh, table, {"ds": "a"}, batches=2)
    inserts(wh, table, {"ds": "b"}, batches=1, start=100)
    delete(wh, table, 0)

    good = cli(table)
    assert good.exit_code == 0, good.output
    assert f"no findings in 2 directories of {table}" in good.stdout
    assert json.loads(cli(table, "--json").stdout) == [
        {"database": "cli", "table": table.split(".")[1], "partition": p,
         "location": str(_partition_dir(wh, table, p)), "findings": []} for p in ("ds=a", "ds=b")]

    delete_delta = _only(_partition_dir(wh, table, "ds=a"), "delete_delta_")
    os.rename(delete_delta / "bucket_00000", delete_delta / "bucket_00000_3")
    bad = cli(table)
    assert bad.exit_code == CHECK_FAILED_EXIT_CODE, bad.output
    assert "delete-delta-attempt-suffix" in bad.stdout and "ds=a/delete_delta_" in bad.stdout
    assert "deleted rows reappear in Trino" in " ".join(bad.stdout.split())
    reports = json.loads(cli(table, "--json").stdout)
    (finding,) = reports[0]["findings"]
    assert (reports[0]["partition"], finding["problem"], finding["severity"], finding["path"]) == \
        ("ds=a", "delete-delta-attempt-suffix", "error", f"{delete_delta.name}/bucket_00000_3")
    assert [m["engine"] for m in finding["misread_by"]] == ["Hive", "Trino"]
    assert reports[1]["findings"] == []

    only_b = cli(table, "ds=b", "--json")
    assert only_b.exit_code == 0 and [r["partition"] for r in json.loads(only_b.stdout)] == ["ds=b"]
    assert cli(table, "ds=a", "--json").exit_code == CHECK_FAILED_EXIT_CODE


def test_warnings_alone_exit_zero(cli, wh):
    table = f"cli.{unique('chw')}"
    info = wh.create_table(table, COLUMNS)
    inserts(wh, table, batches=1)
    delta = _only(Path(info.location), "delta_")
    (delta / "_orc_acid_version").unlink()
    po.write_table(pa.table({"id": pa.array([5], pa.int32()), "name": ["x"]}), str(Path(info.location) / "000000_0"))
    result = cli(table)
    assert result.exit_code == 0, result.output
    assert "missing-acid-version" in result.stdout and "originals-beside-deltas" in result.stdout
    (report,) = json.loads(cli(table, "--json").stdout)
    assert sorted((f["problem"], f["severity"]) for f in report["findings"]) == [
        ("missing-acid-version", "warning"), ("originals-beside-deltas", "warning")]


def test_unknown_table_and_partition_are_refused(cli, wh):
    table = f"cli.{unique('chu')}"
    wh.create_table(table, COLUMNS, partition_by=[("ds", "string")])
    assert cli(f"cli.{unique('nosuch')}").exit_code == 1
    missing = cli(table, "ds=zzz")
    assert missing.exit_code == 1 and missing.stderr.startswith("Error: ")
