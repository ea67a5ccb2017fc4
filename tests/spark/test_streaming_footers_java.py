"""Streaming files cut at each flush length, read by ORC's Java reader as Hive reads them (issue 29 item 7).

Both streaming paths (pyarrow stripes, pyorc rows) write a file with several stripes per flush; each flushed prefix is
opened by orc-core from the pyspark wheel (``java/ReadOrcAcidFooter.java``) twice: as a file of its own, and as the
whole file read up to the flush length (``maxLength``, Hive's way to honour ``bucket_N_flush_length``). Java must see
``hive.acid.key.index`` name the last key of every stripe it reads, the stats of those rows and ``hive.acid.version``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pyspark
import pytest

from airflow_acid.acid import streaming_event_writer
from airflow_acid.acid.event_writer import format_key_index
from tests.acid.streaming_files import acid_footer_of, write_flushed_stream

JAVA_SOURCE = Path(__file__).parent / "java" / "ReadOrcAcidFooter.java"


def _java_footers(args: list[str], work: Path) -> dict[str, dict[str, list[str]]]:
    """ONE javac and ONE JVM for all arguments: per argument, its lines' values by kind (meta, lastkeys, rows)."""
    if shutil.which("javac") is None:
        pytest.fail("javac is not on PATH: install a JDK (CI installs one) to run the Java ORC reader test")
    jars = str(Path(pyspark.__file__).parent / "jars" / "*")
    classes = work / "classes"
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", jars, str(JAVA_SOURCE)], check=True,
                   capture_output=True, timeout=180)
    out = subprocess.run(["java", "-cp", f"{classes}:{jars}", "ReadOrcAcidFooter", *args], check=True,
                         capture_output=True, text=True, timeout=180).stdout
    seen: dict[str, dict[str, list[str]]] = {}
    for line in out.splitlines():
        arg, kind, value = line.split("\t", 2)
        seen.setdefault(arg, {}).setdefault(kind, []).append(value)
    return seen


@pytest.mark.slow
def test_java_reads_the_acid_metadata_of_every_flushed_prefix(tmp_path, monkeypatch):
    expected: dict[str, tuple[list[str], str, int]] = {}
    for mode, min_rows in (("stripes", 0), ("rows", 10**9)):
        with monkeypatch.context() as patch:
            patch.setattr(streaming_event_writer, "piece_min_rows", lambda min_rows=min_rows: min_rows)
            data, lengths = write_flushed_stream(tmp_path / mode / "delta_0000001_0000004", patch)
        whole = tmp_path / mode / "delta_0000001_0000004" / "bucket_00000"
        for i, length in enumerate(lengths):
            keys, meta = acid_footer_of(data[:length])
            prefix = tmp_path / f"{mode}_flush{i}.orc"
            prefix.write_bytes(data[:length])
            wanted = sorted(f"{name}={value.decode()}" for name, value in meta.items())
            for arg in (str(prefix), f"{whole}@{length}"):
                expected[arg] = (wanted, format_key_index(keys), sum(map(int, meta["hive.acid.stats"].decode().split(","))))
    seen = _java_footers(list(expected), tmp_path)
    for arg, (meta, last_keys, rows) in expected.items():
        assert seen[arg]["lastkeys"] == [last_keys], arg
        assert seen[arg]["meta"] == meta, arg
        assert f"hive.acid.key.index={last_keys}" in seen[arg]["meta"], arg
        assert seen[arg]["rows"] == [str(rows)], arg
