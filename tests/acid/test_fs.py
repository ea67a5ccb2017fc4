"""Storage contract: one recursive listing per read, relative paths with sizes, no per-file stats."""

from __future__ import annotations

import os

import fsspec
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.acid import bucket_codec
from airflow_acid.acid.event_schema import AcidKey, delete_events, insert_events
from airflow_acid.acid.event_writer import write_event_file
from airflow_acid.acid.fs import ListedFile, storage_for
from airflow_acid.acid.merge import read_acid_table
from airflow_acid.acid.writeids import ValidReaderWriteIdList

B0 = bucket_codec.encode(0)
STAT_METHODS = ("info", "exists", "isfile", "isdir", "size", "sizes", "ls", "walk", "glob", "modified", "created")


DATA_METHODS = ("find", "open", "cat_file")


class _Counting:
    """Records the listing/stat calls our code makes; what ``find``/``open``/``cat_file`` do inside is theirs."""

    def _count_init(self) -> None:
        self.calls: list[str] = []
        self._depth = 0


def _counting(base):
    def make(name, record):
        def method(self, *args, **kwargs):
            if not self._depth and (record or name == "find"):
                self.calls.append(name)
            self._depth += 1
            try:
                return getattr(base, name)(self, *args, **kwargs)
            finally:
                self._depth -= 1
        return method
    ns = {name: make(name, True) for name in STAT_METHODS}
    ns.update({name: make(name, False) for name in DATA_METHODS})
    return type(f"Counting{base.__name__}", (_Counting, base), ns)


class CountingMemory(_counting(MemoryFileSystem)):
    cachable = False

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._count_init()


class CountingLocal(_counting(LocalFileSystem)):
    cachable = False

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._count_init()


def _populate(root: str, fs) -> None:
    schema = pa.schema([("a", pa.int64())])
    write_event_file(f"{root}/base_0000002", 0, insert_events(pa.table({"a": [1, 2]}), 2, B0), filesystem=fs)
    write_event_file(f"{root}/base_0000002", 1, insert_events(pa.table({"a": [3]}), 2, bucket_codec.encode(1)),
                     filesystem=fs)
    write_event_file(f"{root}/delta_0000003_0000003_0000", 0, insert_events(pa.table({"a": [4]}), 3, B0),
                     filesystem=fs)
    write_event_file(f"{root}/delete_delta_0000004_0000004_0000", 0,
                     delete_events([AcidKey(2, B0, 0)], 4, schema), filesystem=fs)
    write_event_file(f"{root}/delta_0000001_0000001_0000", 0, insert_events(pa.table({"a": [9]}), 1, B0),
                     filesystem=fs)   # obsolete: below the base


@pytest.fixture(params=["local", "memory"])
def counted(request, tmp_path):
    if request.param == "local":
        fs = CountingLocal()
        root = str(tmp_path / "table")
        location = root
    else:
        fs = CountingMemory()
        MemoryFileSystem.store.clear()
        root = "/table"
        location = "memory://table"
    _populate(root, fs)
    fs.calls.clear()
    return fs, root, location


def test_one_listing_per_read(counted):
    fs, root, location = counted
    t = read_acid_table(location, ValidReaderWriteIdList(high_watermark=4), filesystem=fs)
    assert sorted(t["a"].to_pylist()) == [2, 3, 4]
    assert fs.calls == ["find"]


def test_listing_gives_relative_paths_and_sizes(counted):
    fs, root, location = counted
    files = storage_for(location, fs).list_files()
    assert fs.calls == ["find"]
    paths = [f.path for f in files]
    assert paths == sorted(paths)
    assert "base_0000002/bucket_00000" in paths and "base_0000002/bucket_00001" in paths
    assert "delete_delta_0000004_0000004_0000/_orc_acid_version" in paths
    assert all(isinstance(f, ListedFile) and f.size > 0 for f in files)
    real = {f.path: fs.size(f"{root}/{f.path}") for f in files}
    assert {f.path: f.size for f in files} == real


def test_url_locations():
    MemoryFileSystem.store.clear()
    fs = fsspec.filesystem("memory")
    fs.pipe("/x/y/delta_0000001_0000001_0000/bucket_00000", b"abc")
    storage = storage_for("memory://x/y")
    assert storage.list_files() == [ListedFile("delta_0000001_0000001_0000/bucket_00000", 3)]
    assert storage.url("a") == "memory://x/y/a"
    assert storage_for("memory://x/y/").root == storage.root


def test_missing_location_lists_nothing(tmp_path):
    assert storage_for(str(tmp_path / "nope")).list_files() == []


def test_atomic_write_and_partial_output_cleanup(tmp_path):
    storage = storage_for(str(tmp_path))
    storage.write_bytes_atomic("d/_orc_acid_version", b"2")
    assert [f.path for f in storage.list_files()] == ["d/_orc_acid_version"]
    with pytest.raises(RuntimeError):
        with storage.open_output("d/bucket_00000") as fh:
            fh.write(b"partial")
            raise RuntimeError("writer died")
    assert [f.path for f in storage.list_files()] == ["d/_orc_acid_version"]


@pytest.mark.parametrize("filesystem", [None, CountingLocal()], ids=["scandir", "fsspec-find"])
def test_symbolic_links_are_listed_as_nothing_and_never_followed(tmp_path, caplog, filesystem):
    outside = tmp_path / "outside"
    (outside / "delta_0000009_0000009_0000").mkdir(parents=True)
    (outside / "delta_0000009_0000009_0000" / "bucket_00000").write_bytes(b"not yours")
    (outside / "secret").write_bytes(b"x")
    table = tmp_path / "table"
    (table / "delta_0000001_0000001_0000").mkdir(parents=True)
    (table / "delta_0000001_0000001_0000" / "bucket_00000").write_bytes(b"abc")
    (table / "delta_0000009_0000009_0000").symlink_to(outside / "delta_0000009_0000009_0000", target_is_directory=True)
    (table / "delta_0000001_0000001_0000" / "bucket_00001").symlink_to(outside / "secret")
    (table / "base_0000005").symlink_to(outside, target_is_directory=True)
    with caplog.at_level("WARNING", logger="airflow_acid.acid.fs"):
        files = storage_for(str(table), filesystem).list_files()
    assert files == [ListedFile("delta_0000001_0000001_0000/bucket_00000", 3)]
    assert "ignored 3 symbolic link(s)" in caplog.text and "base_0000005" in caplog.text


def _tree(root, names: list[str]) -> None:
    for name in names:
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x" * (len(name) % 7))


TREE_NAMES = st.lists(
    st.builds(lambda parts, leaf, kind: "/".join(parts + [leaf]) + ("/" if kind else ""),
              st.lists(st.sampled_from(["base_0000001", "delta_0000002_0000002_0000", ".hive-staging", "a"]),
                       max_size=3),
              st.sampled_from(["bucket_00000", "_orc_acid_version", ".bucket_00000.crc", "x y", "\u00e9t\u00e9"]),
              st.booleans()),
    max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=TREE_NAMES)
def test_local_scandir_listing_equals_fsspec_find(tmp_path_factory, names):
    """The local fast path lists exactly what fsspec's find lists: every file, hidden ones included, with its size;
    directories (empty ones too) are not files."""
    root = tmp_path_factory.mktemp("tree") / "table"
    root.mkdir()
    clashing = {n.rstrip("/") for n in names if n.endswith("/")}
    _tree(root, [n for n in names if n.endswith("/") or not any(c.startswith(n + "/") or c == n for c in clashing)])
    fast = storage_for(str(root)).list_files()
    slow = storage_for(str(root), CountingLocal()).list_files()
    assert fast == slow


def test_local_listing_makes_no_fsspec_listing_calls(tmp_path, monkeypatch):
    _populate(str(tmp_path / "table"), LocalFileSystem())

    def refuse(self, *args, **kwargs):
        raise AssertionError("the local fast path must not call fsspec's listing")
    for name in ("find", "ls", "walk", "info"):
        monkeypatch.setattr(LocalFileSystem, name, refuse)
    files = storage_for(str(tmp_path / "table")).list_files()
    assert [f.path for f in files] == sorted(f.path for f in files)
    assert {f.path.split("/")[0] for f in files} == {
        "base_0000002", "delta_0000003_0000003_0000", "delete_delta_0000004_0000004_0000", "delta_0000001_0000001_0000"}
    assert all(f.size == (tmp_path / "table" / f.path).stat().st_size for f in files)


def test_a_directory_removed_during_the_walk_lists_as_nothing(tmp_path, monkeypatch):
    """A Cleaner removing an obsolete directory while a reader lists must not fail the reader."""
    _tree(tmp_path / "t", ["base_0000001/bucket_00000", "delta_0000002_0000002_0000/bucket_00000"])
    real = os.scandir

    def vanishing(path):
        if str(path).endswith("delta_0000002_0000002_0000"):
            raise FileNotFoundError(path)
        return real(path)
    monkeypatch.setattr("airflow_acid.acid.fs.os.scandir", vanishing)
    size = (tmp_path / "t" / "base_0000001" / "bucket_00000").stat().st_size
    assert storage_for(str(tmp_path / "t")).list_files() == [ListedFile("base_0000001/bucket_00000", size)]
