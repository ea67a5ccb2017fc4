"""glibc malloc tuning for processes writing many small ORC files: applied once, switchable off, glibc only, and the
real effect (freed memory below the trim threshold stays in the heap) checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from airflow_acid.acid import malloc_tuning
from airflow_acid.acid.malloc_tuning import MMAP_THRESHOLD, TRIM_THRESHOLD, TUNING_ENV, keep_freed_memory_for_small_files


class _FakeLibc:
    def __init__(self, answer: int = 1) -> None:
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return self.answer


@pytest.fixture
def fake_libc(monkeypatch):
    libc = _FakeLibc()
    monkeypatch.setattr(malloc_tuning.ctypes, "CDLL", lambda _name: libc)
    monkeypatch.setattr(malloc_tuning.platform, "libc_ver", lambda: ("glibc", "2.36"))
    monkeypatch.delenv(TUNING_ENV, raising=False)
    keep_freed_memory_for_small_files.cache_clear()
    yield libc
    keep_freed_memory_for_small_files.cache_clear()


def test_applies_both_thresholds_once_per_process(fake_libc):
    assert keep_freed_memory_for_small_files() is True
    assert keep_freed_memory_for_small_files() is True
    assert fake_libc.calls == [(-1, TRIM_THRESHOLD), (-3, MMAP_THRESHOLD)]


@pytest.mark.parametrize("value", ["0", "false", "OFF", " no "])
def test_switched_off_by_the_environment(fake_libc, monkeypatch, value):
    monkeypatch.setenv(TUNING_ENV, value)
    assert keep_freed_memory_for_small_files() is False
    assert fake_libc.calls == []


def test_other_c_libraries_are_left_alone(fake_libc, monkeypatch):
    monkeypatch.setattr(malloc_tuning.platform, "libc_ver", lambda: ("", ""))
    assert keep_freed_memory_for_small_files() is False
    assert fake_libc.calls == []


def test_a_refused_setting_reports_not_applied(fake_libc):
    fake_libc.answer = 0
    assert keep_freed_memory_for_small_files() is False


def test_an_unloadable_libc_reports_not_applied(fake_libc, monkeypatch):
    def refuse(_name):
        raise OSError("no libc here")

    monkeypatch.setattr(malloc_tuning.ctypes, "CDLL", refuse)
    assert keep_freed_memory_for_small_files() is False


_PROBE = textwrap.dedent("""
    import ctypes, sys
    from airflow_acid.acid.malloc_tuning import keep_freed_memory_for_small_files

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallinfo2.restype = MallInfo2
    applied = keep_freed_memory_for_small_files()
    size = 3 * 1024 * 1024
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)  # touch it: the pages are really there
    libc.free(block)
    print(applied, libc.mallinfo2().fordblks >= size)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc behaviour")
@pytest.mark.parametrize("env, expected", [(None, "True True"), ("0", "False False")])
def test_freed_blocks_stay_in_the_heap_once_applied(env, expected, monkeypatch):
    """A freed 3 MiB block stays as free heap (no mmap/munmap or trim per small ORC file) only when tuned."""
    import os
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != TUNING_ENV}
    if env is not None:
        environment[TUNING_ENV] = env
    out = subprocess.run([sys.executable, "-c", _PROBE], env=environment, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected
