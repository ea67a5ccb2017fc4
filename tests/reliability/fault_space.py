"""No space left on the output path (fault 4), two ways.

* ``tmpfs`` — a real small filesystem: ``mount -t tmpfs -o size=…`` (needs root and a sandbox that allows mounts;
  :func:`small_tmpfs` raises :class:`MountNotPermitted` otherwise), filled up with a file beside the warehouse.
* ``quota`` — the same warehouse through fsspec: :class:`QuotaFileSystem` (protocol ``acidquota://``) is the local
  filesystem with a byte budget; once it is spent every write fails with ``OSError(ENOSPC)``. Table locations
  are ``acidquota://`` URLs, so writers, the compaction engine, the Worker and the Cleaner all go through it.
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.local import LocalFileOpener, LocalFileSystem

PROTOCOL = "acidquota"


class MountNotPermitted(RuntimeError):
    """This process may not mount a tmpfs (not root, or the sandbox forbids it)."""


@contextmanager
def small_tmpfs(path: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the duration of the block."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        raise MountNotPermitted("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise MountNotPermitted(f"mount -t tmpfs refused: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(path: Path) -> int:
    """Write ``path`` until its filesystem is full; returns the bytes written."""
    written = 0
    with open(path, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
                written += 65536
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return written


class Quota:
    """The byte budget of every :class:`QuotaFileSystem` (None = unlimited)."""

    def __init__(self) -> None:
        self.remaining: int | None = None
        self.refused = 0
        self._lock = threading.Lock()

    def spend(self, n: int, path: str) -> None:
        with self._lock:
            if self.remaining is None:
                return
            if n > self.remaining:
                self.refused += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            self.remaining -= n


QUOTA = Quota()


class _QuotaFile(LocalFileOpener):
    def write(self, data, *args, **kwargs):
        QUOTA.spend(len(data), self.path)
        return self.f.write(data, *args, **kwargs)


class QuotaFileSystem(LocalFileSystem):
    """The local filesystem under ``acidquota://``, whose writes draw on :data:`QUOTA`."""

    protocol = PROTOCOL

    @classmethod
    def _strip_protocol(cls, path):
        path = str(path)
        if path.startswith(f"{PROTOCOL}://"):
            path = path[len(PROTOCOL) + 3:]
        return super()._strip_protocol(path)

    def _open(self, path, mode="rb", block_size=None, **kwargs):
        path = self._strip_protocol(path)
        if "w" in mode or "a" in mode or "x" in mode:
            if self.auto_mkdir:
                self.makedirs(self._parent(path), exist_ok=True)
            return _QuotaFile(path, mode, fs=self, **kwargs)
        return super()._open(path, mode, block_size=block_size, **kwargs)


fsspec.register_implementation(PROTOCOL, QuotaFileSystem, clobber=True)


def quota_url(path: Path) -> str:
    return f"{PROTOCOL}://{path}"


class SmallSpace:
    """Where the warehouse of a no-space test lives (``area``, ``warehouse`` URL or None for ``area/wh``), and how
    to use the space up and give it back; ``kind`` is ``tmpfs`` (skipped where mounts are refused) or ``quota``."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        if kind == "tmpfs":
            self._mount = small_tmpfs(tmp_path / "small", "1m")
            try:
                mount = self._mount.__enter__()
            except MountNotPermitted as exc:
                pytest.skip(f"{exc}; the quota variant covers no-space faults here")
            self.area, self._filler = mount / "area", mount / "filler"
            self.warehouse = None
        else:
            self._mount = None
            self.area = tmp_path / "area"
            self.warehouse = quota_url(self.area / "wh")

    def exhaust(self, leave: int = 0) -> None:
        """Use the space up, all but ``leave`` bytes."""
        if self.kind == "tmpfs":
            size = fill(self._filler)
            os.truncate(self._filler, max(0, size - leave))
        else:
            QUOTA.remaining = leave

    def release(self) -> None:
        """Give the space back."""
        if self.kind == "tmpfs":
            self._filler.unlink(missing_ok=True)
        else:
            QUOTA.remaining = None

    def close(self) -> None:
        self.release()
        if self._mount is not None:
            self._mount.__exit__(None, None, None)
