"""glibc malloc settings for a process that writes many small ORC files (streaming ingest commits).

The ORC C++ writer allocates each file's stream buffers and zlib states with ``malloc``: a few MB per file, freed when
the file is done. glibc hands freed memory at the top of its heap back to the kernel once more than
``M_TRIM_THRESHOLD`` (128 KiB) is free there, and serves blocks above ``M_MMAP_THRESHOLD`` with fresh ``mmap``\\ s, so
every small file page-faults its buffers in again: on the 2-core bench machine pyarrow took 1.9 ms to write a one-row
ACID event file and 3.2 ms for 10,000 events, against 0.12 and 1.1 ms with the settings below
(``python bench/bench_orc_writer_setup.py``).

:func:`keep_freed_memory_for_small_files` raises both thresholds once per process, as the ``MALLOC_TRIM_THRESHOLD_``
and ``MALLOC_MMAP_THRESHOLD_`` environment variables would at start-up. The price is memory the process keeps instead
of returning: up to :data:`TRIM_THRESHOLD` of free heap per malloc arena. Setting ``AIRFLOW_ACID_MALLOC_TUNING=0``
leaves malloc alone; other C libraries (musl, macOS) are left alone too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import platform

log = logging.getLogger(__name__)

TUNING_ENV = "AIRFLOW_ACID_MALLOC_TUNING"
TRIM_THRESHOLD = 64 * 1024 * 1024
"""Free heap glibc keeps at the top of an arena before trimming it (default 128 KiB)."""
MMAP_THRESHOLD = 4 * 1024 * 1024
"""Blocks from this size up get their own mmap (default 128 KiB, raised by glibc as mmapped blocks are freed)."""

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3


@functools.cache
def keep_freed_memory_for_small_files() -> bool:
    """Apply :data:`TRIM_THRESHOLD` and :data:`MMAP_THRESHOLD` to this process's glibc malloc (once); True when
    applied, False when switched off by ``$AIRFLOW_ACID_MALLOC_TUNING=0``, not glibc, or refused."""
    if os.environ.get(TUNING_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        applied: bool = (libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
                   and libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1)
    except (OSError, AttributeError) as exc:  # no loadable libc or no mallopt in it
        log.debug("malloc tuning not applied: %s", exc)
        return False
    if applied:
        log.debug("glibc malloc: trim threshold %d, mmap threshold %d (%s=0 to leave malloc alone)",
                  TRIM_THRESHOLD, MMAP_THRESHOLD, TUNING_ENV)
    return bool(applied)
