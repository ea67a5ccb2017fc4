"""Tables on an S3-compatible server (moto on loopback, s3fs): write, MINOR and MAJOR (in-process runner and
spark-submit local[2]), clean, read; streaming killed after a commit; an insert-only MAJOR whose output is empty.

What object stores change (spark/driver.py, acid/fs.py): compaction output is written in place (no rename, no
``_tmp_compactor_v`` objects), markers are single PUTs, removals are batched deletes, and streaming writes one
closed file per committed transaction.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.orc as po
import pytest

from airflow_acid.acid.names import METADATA_ACID_FILE
from airflow_acid.acid.storage_options import StorageOptions
from airflow_acid.compactor.cleaner import Cleaner
from airflow_acid.compactor.runners import SparkSubmitRunner
from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore.codes import CompactionType
from airflow_acid.spark.submit import SparkSubmitOptions
from airflow_acid.spark.units import TMP_PREFIX
from tests.compactor.worker_support import COLUMNS, history, new_table, rows
from tests.conftest import REPO


def _objects(wh) -> list[str]:
    prefix = wh.filesystem._strip_protocol(wh.location).rstrip("/") + "/"
    return sorted(p[len(prefix):] for p in wh.filesystem.find(wh.location))


def _top_dirs(wh, table: str = "db.db/t") -> set[str]:
    return {p.split("/")[2] for p in _objects(wh) if p.startswith(table + "/") and p.count("/") >= 3}


def _compact(wh, kind: CompactionType, worker: Worker) -> None:
    wh.metastore.compactions.enqueue("db", "t", None, kind)
    outcome = worker.run_next()
    assert outcome is not None and outcome.succeeded, outcome and outcome.message
    report = Cleaner(wh.metastore, filesystem=wh.filesystem).run_cycle()
    assert report.entries and all(e.status == "cleaned" for e in report.entries), report


def test_write_minor_major_clean_read_in_process(s3_wh):
    wh = s3_wh
    new_table(wh)
    history(wh)
    expected = rows(wh)
    worker = Worker(wh.metastore, filesystem=wh.filesystem)
    _compact(wh, CompactionType.MINOR, worker)
    dirs = _top_dirs(wh)
    assert rows(wh) == expected
    assert len([d for d in dirs if d.startswith("delta_")]) == 1 and \
        len([d for d in dirs if d.startswith("delete_delta_")]) == 1, dirs
    with wh.transaction() as t:
        t.insert("db.t", [{"id": 99, "name": "late"}])
    expected = sorted(expected + [(99, "late")])
    _compact(wh, CompactionType.MAJOR, worker)
    dirs = _top_dirs(wh)
    assert len(dirs) == 1 and next(iter(dirs)).startswith("base_0000006_v"), dirs
    assert rows(wh) == expected
    assert not [p for p in _objects(wh) if TMP_PREFIX in p]


def test_worker_filesystem_is_refused_by_a_runner_that_cannot_carry_it(s3_wh):
    with pytest.raises(ValueError, match="storage options"):
        Worker(s3_wh.metastore, runner=SparkSubmitRunner(), filesystem=s3_wh.filesystem)


@pytest.mark.slow
def test_major_with_spark_submit_local(s3_wh, s3_options, tmp_path):
    """The job and its executors reach the store only through FSSPEC_S3 (endpoint) and the inherited credentials."""
    wh = s3_wh
    new_table(wh)
    history(wh)
    expected = rows(wh)
    runner = SparkSubmitRunner(SparkSubmitOptions(master="local[2]", storage_options=s3_options),
                               workdir=str(tmp_path / "jobs"), timeout_s=300)
    _compact(wh, CompactionType.MAJOR, Worker(wh.metastore, runner=runner, filesystem=wh.filesystem))
    dirs = _top_dirs(wh)
    assert len(dirs) == 1 and next(iter(dirs)).startswith("base_"), dirs
    assert rows(wh) == expected
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "jobs").rglob("spark-submit.log"))
    assert os.environ["AWS_SECRET_ACCESS_KEY"] not in logs


STREAM_AND_DIE = textwrap.dedent("""
    import os, sys
    from airflow_acid.metastore import Metastore
    from airflow_acid.warehouse import AcidWarehouse
    from airflow_acid.acid.storage_options import StorageOptions
    from tests.compactor.worker_support import CONF
    url, location, endpoint = sys.argv[1:4]
    wh = AcidWarehouse(Metastore(url, CONF), location, init=False,
                       storage_options=StorageOptions(endpoint_url=endpoint))
    conn = wh.streaming_connection("db.t", batch_size=5)
    for i in range(3):
        conn.write([{"id": i, "name": f"s{i}"}])
        conn.commit()
    conn.write([{"id": 100, "name": "never committed"}])
    os._exit(9)   # killed: no close, no abort, the batch's files never finished
""")


def test_streaming_writer_killed_after_commits_loses_nothing(s3_wh, s3_options, tmp_path):
    wh = s3_wh
    new_table(wh)
    url = f"sqlite:///{tmp_path / 'metastore.db'}"  # the s3_wh fixture's metastore
    proc = subprocess.run([sys.executable, "-c", STREAM_AND_DIE, url, wh.location, s3_options.endpoint_url],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 9, proc.stderr[-2000:]
    assert rows(wh) == [(0, "s0"), (1, "s1"), (2, "s2")]
    # one closed delta per committed transaction; no side files (nothing relies on a flush)
    assert not [p for p in _objects(wh) if p.endswith("_flush_length")]
    assert sorted(d for d in _top_dirs(wh)) == ["delta_0000001_0000001", "delta_0000002_0000002",
                                               "delta_0000003_0000003"]


def _empty_orc() -> bytes:
    buf = io.BytesIO()
    po.write_table(pa.table({"id": pa.array([], pa.int32()), "name": pa.array([], pa.string())}), buf)
    return buf.getvalue()


def test_insert_only_major_with_empty_output_stays_listed(s3_wh):
    """Every visible input file is empty: the base has no data file, only ``_metadata_acid`` keeps it listed."""
    wh = s3_wh
    wh.create_table("db.t", COLUMNS, transactional_properties="insert_only")
    for i in range(2):  # two deltas (a major needs more than one), each write's file emptied before it commits
        with wh.transaction() as t:
            t.insert("db.t", [{"id": i, "name": "x"}])
            written = [p for p in _objects(wh) if p.startswith(f"db.db/t/delta_000000{i + 1}_")]
            assert len(written) == 1
            wh.filesystem.pipe_file(f"{wh.location}/{written[0]}", _empty_orc())
    _compact(wh, CompactionType.MAJOR, Worker(wh.metastore, filesystem=wh.filesystem))
    objects = [p for p in _objects(wh) if p.startswith("db.db/t/")]
    assert len(objects) == 1 and objects[0].endswith("/" + METADATA_ACID_FILE), objects
    marker = json.loads(wh.filesystem.cat_file(f"{wh.location}/{objects[0]}"))
    assert marker == {"thisFileVersion": "0", "dataFormat": "compacted"}
    assert rows(wh) == []


def test_storage_options_refuse_secrets_and_map_per_store():
    with pytest.raises(ValueError, match="credentials"):
        StorageOptions.from_mapping({"secret": "x"})
    with pytest.raises(ValueError, match="credentials"):
        StorageOptions.parse_pairs(["aws_secret_access_key=x"])
    opts = StorageOptions.parse_pairs(["endpoint=http://h:9000", "region=eu-1", "anon=true", "profile=p"])
    assert opts.fsspec_kwargs("s3") == {"endpoint_url": "http://h:9000", "client_kwargs": {"region_name": "eu-1"},
                                        "anon": True, "profile": "p"}
    assert opts.fsspec_kwargs("gs") == {"endpoint_url": "http://h:9000", "token": "anon", "project": "p"}
    assert opts.fsspec_kwargs("file") == {}
    env = opts.environment(["s3"])
    assert list(env) == ["FSSPEC_S3"] and json.loads(env["FSSPEC_S3"])["endpoint_url"] == "http://h:9000"


def test_cli_keeps_the_warehouse_url_and_takes_storage_options(s3_bucket, s3_options, tmp_path, monkeypatch):
    """``--warehouse s3://…`` is a URL, not the local folder ``./s3:/…``; the endpoint comes from the options."""
    from click.testing import CliRunner

    from airflow_acid.cli import main

    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'metastore.db'}"
    assert CliRunner().invoke(main, ["init", "--metastore-url", url]).exit_code == 0
    monkeypatch.setenv("AIRFLOW__ACID__STORAGE_OPTIONS", json.dumps({"region": "us-east-1"}))
    result = CliRunner().invoke(main, [
        "sql", "CREATE TABLE t (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')",
        "--metastore-url", url, "--warehouse", f"{s3_bucket}/warehouse",
        "--storage-option", f"endpoint_url={s3_options.endpoint_url}"])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "s3:").exists()
    from airflow_acid.metastore import Metastore

    with Metastore(url) as ms:
        assert ms.catalog.get_table("default", "t").location.startswith(f"{s3_bucket}/warehouse/")
    bad = CliRunner().invoke(main, ["health", "--metastore-url", url, "--warehouse", f"{s3_bucket}/warehouse",
                                    "--storage-option", "secret_access_key=x"])
    assert bad.exit_code != 0 and "credentials" in bad.output
