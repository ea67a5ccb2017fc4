"""``airflow-acid sql`` with LOAD DATA, column DEFAULTs and views, on each backend (the statements themselves are
tested in tests/statements)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.orc as po
import pytest
from click.testing import CliRunner

from airflow_acid.cli.commands import main
from tests.services.support import unique


@pytest.fixture
def cli(module_url, module_root, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)

    def invoke(*args: str):
        return CliRunner().invoke(main, ["sql", *args, "--metastore-url", module_url, "--warehouse",
                                         str(module_root)])

    return invoke


def test_load_data(cli, tmp_path):
    t = unique("cliload")
    po.write_table(pa.table({"id": pa.array([7, 8], pa.int32())}), str(tmp_path / "000000_0"))
    result = cli("-e", f"CREATE TABLE {t} (id INT) TBLPROPERTIES ('transactional'='true'); "
                       f"LOAD DATA LOCAL INPATH '{tmp_path}' INTO TABLE {t}; SELECT ROW__ID.rowid, id FROM {t}",
                 "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out[1]["statement"] == "LOAD DATA" and "delta_0000001_0000001_0000" in out[1]["messages"][0]
    assert out[2]["rows"] == [{"rowid": 0, "id": 7}, {"rowid": 1, "id": 8}]
    (tmp_path / "bad.txt").write_text("x\n")
    bad = cli(f"LOAD DATA LOCAL INPATH '{tmp_path / 'bad.txt'}' INTO TABLE {t}")
    assert bad.exit_code != 0 and "does not match the file format of the destination table" in bad.stderr


def test_column_defaults(cli):
    t = unique("clidflt")
    result = cli("-e", f"CREATE TABLE {t} (id INT, name STRING DEFAULT 'none') TBLPROPERTIES "
                       f"('transactional'='true'); INSERT INTO {t} (id) VALUES (1); "
                       f"INSERT INTO {t} VALUES (2, DEFAULT); SELECT * FROM {t} ORDER BY id; SHOW CREATE TABLE {t}",
                 "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out[3]["rows"] == [{"id": 1, "name": "none"}, {"id": 2, "name": "none"}]
    assert out[4]["rows"][2] == {"createtab_stmt": "  `name` string DEFAULT 'none')"}


def test_views(cli):
    t, v = unique("clivt"), unique("cliv")
    result = cli("-e", f"CREATE TABLE {t} (id INT) TBLPROPERTIES ('transactional'='true'); "
                       f"INSERT INTO {t} VALUES (1), (2); CREATE VIEW {v} AS SELECT id * 2 AS twice FROM {t}; "
                       f"SELECT * FROM {v} ORDER BY twice; SHOW VIEWS LIKE '{v}'; DROP VIEW {v}", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [r["statement"] for r in out][2:] == ["CREATE VIEW", "SELECT", "SHOW VIEWS", "DROP VIEW"]
    assert out[3]["rows"] == [{"twice": 2}, {"twice": 4}] and out[4]["rows"] == [{"tab_name": v}]
