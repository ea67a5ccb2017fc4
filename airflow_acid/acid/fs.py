"""Table storage through fsspec: one recursive listing per partition, reads and writes of files under it.

Local paths work without a URL scheme; any fsspec URL (``memory://``, ``s3://``, ``hdfs://`` …) or an explicit
``fsspec.AbstractFileSystem`` works too. Readers never stat files: sizes come from the single listing.
"""

from __future__ import annotations

import logging
import posixpath
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

import fsspec
import pyarrow as pa
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class ListedFile:
    """A file found under a table/partition directory: path relative to it (``/``-separated) and size in bytes."""

    path: str
    size: int


def _below_any(relative: str, directories: list[str]) -> bool:
    return any(relative.startswith(d + "/") for d in directories)


@dataclass(frozen=True)
class Storage:
    """A table or partition directory on some filesystem; every path argument is relative to ``root``."""

    fs: fsspec.AbstractFileSystem
    root: str

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    def full_path(self, relative: str = "") -> str:
        return posixpath.join(self.root, relative) if relative else self.root

    def url(self, relative: str = "") -> str:
        """A readable location for messages (protocol + path)."""
        path = self.full_path(relative)
        if self.is_local:
            return path
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        return f"{protocol}://{path.lstrip('/')}" if protocol else path

    def child(self, relative: str) -> Storage:
        return Storage(self.fs, self.full_path(relative))

    def list_files(self) -> list[ListedFile]:
        """Every file below ``root`` (recursively) with its size, from ONE ``find`` call; sorted by path.

        On a local filesystem symbolic links (and whatever lies below a linked directory) are skipped with a
        warning: Hive writes none, and a link could make a reader, a compaction or the Cleaner reach outside the
        table's location.
        """
        found = self.fs.find(self.root, withdirs=self.is_local, detail=True)
        prefix = self.root.rstrip("/") + "/"
        files: list[ListedFile] = []
        links: list[str] = []
        for name, info in sorted(found.items()):
            if not name.startswith(prefix):
                continue
            relative = name[len(prefix):]
            if info.get("islink") or (links and _below_any(relative, links)):
                if info.get("islink"):
                    links.append(relative)
                continue
            if info.get("type") == "directory":
                continue
            files.append(ListedFile(relative, int(info.get("size") or 0)))
        if links:
            log.warning("ignored %d symbolic link(s) under %s (links are never followed out of a table's "
                        "location): %s", len(links), self.root, ", ".join(links[:5]))
        files.sort()
        return files

    def open_input(self, relative: str, size: int | None = None) -> pa.NativeFile:
        """Random-access input for pyarrow; ``size`` from the listing spares remote filesystems a stat."""
        path = self.full_path(relative)
        if self.is_local:
            return pa.memory_map(path, "r")
        try:
            handle = self.fs.open(path, "rb", size=size) if size is not None else self.fs.open(path, "rb")
        except TypeError:
            handle = self.fs.open(path, "rb")
        return pa.PythonFile(handle, mode="r")

    def read_bytes(self, relative: str, length: int | None = None) -> bytes:
        """The first ``length`` bytes of a file (all of it when None)."""
        path = self.full_path(relative)
        data: bytes = self.fs.cat_file(path) if length is None else self.fs.cat_file(path, start=0, end=length)
        return data

    def makedirs(self, relative: str) -> None:
        self.fs.makedirs(self.full_path(relative), exist_ok=True)

    @contextmanager
    def open_output(self, relative: str) -> Iterator[IO[bytes]]:
        """Write a file at its final name; on error the partial file is removed."""
        path = self.full_path(relative)
        parent = posixpath.dirname(path)
        if parent:
            self.fs.makedirs(parent, exist_ok=True)
        handle = self.fs.open(path, "wb")
        try:
            yield handle
        except BaseException:
            handle.close()
            self.remove(relative)
            raise
        handle.close()

    def write_bytes_atomic(self, relative: str, data: bytes) -> None:
        """Write via a hidden temporary name and rename, so readers never see a half-written file."""
        path = self.full_path(relative)
        parent, name = posixpath.split(path)
        if parent:
            self.fs.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f".{name}.{uuid.uuid4().hex}.tmp")
        self.fs.pipe_file(tmp, data)
        try:
            self.fs.mv(tmp, path)
        except BaseException:
            self.fs.rm_file(tmp)
            raise

    def remove(self, relative: str) -> None:
        """Remove one file if it exists (cleanup of partial output)."""
        try:
            self.fs.rm_file(self.full_path(relative))
        except FileNotFoundError:
            pass


def storage_for(location: str, filesystem: fsspec.AbstractFileSystem | None = None) -> Storage:
    """Storage rooted at a local path or fsspec URL (or at ``location`` on the given filesystem)."""
    if filesystem is not None:
        return Storage(filesystem, filesystem._strip_protocol(location).rstrip("/") or "/")
    fs, root = url_to_fs(location)
    return Storage(fs, root.rstrip("/") or "/")
