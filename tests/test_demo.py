"""The README's main-job command (`airflow-acid demo`) runs on the embedded default and shows real results."""

from __future__ import annotations

from click.testing import CliRunner

from airflow_acid.cli import main


def test_demo_runs_twice_on_embedded_default(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    for run in range(2):  # re-runnable: the demo table is recreated
        result = CliRunner().invoke(main, ["demo", "--warehouse", str(tmp_path / "wh")])
        assert result.exit_code == 0, result.output
        assert "rows at S1 (before the delete): 9 rows" in result.output
        assert "rows at S2 (now): 7 rows" in result.output
        assert "aborted (invisible" in result.output and "ignored (write id not visible" in result.output
        assert "delta_0000004_0000004_0000" in result.output  # dropping the table reset its write ids
        assert "re-reading sees row 200 too: 8 rows" in result.output
    assert (tmp_path / "wh" / "metastore.db").is_file()


def test_init_creates_metastore(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    result = CliRunner().invoke(main, ["init", "--metastore-url", url])
    assert result.exit_code == 0, result.output
    assert "metastore ready" in result.output
