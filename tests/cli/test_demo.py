"""The README's main-job command (`airflow-acid demo`) runs on the embedded default and shows real results."""

from __future__ import annotations

from click.testing import CliRunner

from airflow_acid.cli.commands import main


def test_demo_runs_twice_on_embedded_default(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    for run in range(2):  # re-runnable: the demo database is recreated
        result = CliRunner().invoke(main, ["demo", "--warehouse", str(tmp_path / "wh")])
        assert result.exit_code == 0, result.output
        out = result.output
        assert "demo.sales rows at S1 (before the delete): 12 rows" in out
        assert "demo.sales rows at S2 (now): 7 rows" in out
        assert "demo.customers rows now: 7 rows" in out and "demo.audit_log rows now: 2 rows" in out
        assert "aborted (its rows never reach the shared file)" in out and "ignored (write id not visible" in out
        assert "aborted (nothing reached storage: no delta directory)" in out
        assert "re-reading demo.customers sees customer 8 too: 8 rows" in out
        assert "demo.events rows now (written by Spark): 10 rows" in out
        if run == 0:  # ids restart only in a fresh metastore
            for name in ("delete_delta_0000003_0000003_0001", "delta_0000003_0000003_0001",  # MERGE update branch
                         "delta_0000002_0000004", "delta_0000005_0000005"):              # streaming batches
                assert name in out
    wh = tmp_path / "wh"
    assert (wh / "metastore.db").is_file()
    assert (wh / "demo.db" / "sales" / "ds=2024-01-03" / "delta_0000002_0000004" / "bucket_00000").is_file()
    assert not list((wh / "demo.db").rglob("*_flush_length"))
    assert not (wh / "demo.db" / "sales" / "ds=2024-01-03" / "delta_0000005_0000005").exists()


def test_init_creates_metastore(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    result = CliRunner().invoke(main, ["init", "--metastore-url", url])
    assert result.exit_code == 0, result.output
    assert "metastore ready" in result.output


def test_status_shows_tables_and_compaction_history(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_ACID_METASTORE_URL", raising=False)
    wh = str(tmp_path / "wh")
    assert CliRunner().invoke(main, ["demo", "--warehouse", wh]).exit_code == 0
    result = CliRunner().invoke(main, ["status", "--warehouse", wh])
    assert result.exit_code == 0, result.output
    assert "demo.customers: 8 rows" in result.output and "demo.sales: 7 rows" in result.output
    assert "SHOW COMPACTIONS" in result.output
