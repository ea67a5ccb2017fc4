"""Virtual environments of other Airflow/Spark/Python combinations, made with uv and cached between runs.

One environment per requirement set under ``$AIRFLOW_ACID_COMPAT_CACHE`` (default ``~/.cache/airflow-acid-compat``),
named after a hash of the interpreter, the requirements and this checkout's setup.cfg: a second run reuses it, a
changed requirement or setup.cfg builds a new one. Nothing is written into the repository.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REQUIRE_ENV = "AIRFLOW_ACID_REQUIRE_COMPAT"
"""Set in CI: a missing interpreter or an unreachable package index fails the matrix instead of skipping it."""


@dataclass(frozen=True)
class Combo:
    """One combination: a Python version, the requirements installed with it, and whether this checkout is installed
    into it (editable, with its dependencies) or only its executors' packages are."""

    name: str
    python: str
    requirements: tuple[str, ...]
    install_project: bool = True


def cache_root() -> Path:
    return Path(os.environ.get("AIRFLOW_ACID_COMPAT_CACHE") or Path.home() / ".cache" / "airflow-acid-compat")


def uv() -> str:
    found = shutil.which("uv", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        unavailable("uv is not installed (pip install uv)")
    return str(found)


def unavailable(reason: str) -> None:
    """Skip locally; fail where the matrix must run (CI)."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"compatibility matrix cannot run: {reason}")
    pytest.skip(reason)


def find_python(version: str) -> str:
    """An interpreter of ``version`` (``3.10``): uv's discovery (no download), else pyenv's or the system's."""
    done = subprocess.run([uv(), "python", "find", "--no-python-downloads", version], capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    candidates = sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / f"{version}.*" / "bin" / f"python{version}")))
    candidates += [p for p in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}") if os.path.exists(p)]
    if not candidates:
        unavailable(f"no Python {version} interpreter on this machine (uv python install {version})")
    return candidates[-1]


def _key(combo: Combo, python: str) -> str:
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True).stdout
    text = "\n".join([version, *combo.requirements, str(combo.install_project), str(REPO),
                      (REPO / "setup.cfg").read_text() if combo.install_project else ""])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


STALE_AFTER_S = 7 * 24 * 3600
"""An environment of an earlier requirement set is removed once unused this long: another checkout (a concurrent
CI run in another clone) may be using one built for its own path right now."""


def _remove_stale(root: Path, combo: Combo, *, keep: Path) -> None:
    """Remove environments of ``combo``'s earlier requirement sets that no run has used for a week."""
    for stale in root.glob(f"{combo.name}-*"):
        stamp = stale / ".complete"
        used = stamp.stat().st_mtime if stamp.exists() else stale.stat().st_mtime
        if stale != keep and time.time() - used > STALE_AFTER_S:
            shutil.rmtree(stale, ignore_errors=True)


_BUILDS: dict[Combo, Future[Path]] = {}
_BUILDS_LOCK = threading.Lock()
BUILDERS = 2
"""Environments built at once in the background: each mostly waits on the package index and the disk."""


def start_building(combos: list[Combo]) -> None:
    """Build ``combos``' environments in background threads (a run that will need them starts this at collection:
    downloads and builds then overlap the tests before the matrix's). :func:`compat_venv` waits for a build started
    here; a skip or failure of the build reaches the test that asks for it."""
    pool = ThreadPoolExecutor(BUILDERS, thread_name_prefix="compat-venv")
    with _BUILDS_LOCK:
        for combo in combos:
            if combo not in _BUILDS:
                _BUILDS[combo] = pool.submit(_build, combo)
    pool.shutdown(wait=False)


def compat_venv(combo: Combo) -> Path:
    """The environment of ``combo`` (built on first use, or waited for when :func:`start_building` builds it;
    reused afterwards); returns its directory."""
    with _BUILDS_LOCK:
        started = _BUILDS.get(combo)
    if started is not None:
        return started.result()
    return _build(combo)


def _build(combo: Combo) -> Path:
    python = find_python(combo.python)
    root = cache_root()
    venv = root / f"{combo.name}-{_key(combo, python)}"
    stamp = venv / ".complete"
    if stamp.exists():
        stamp.touch()  # in use: not stale for other checkouts' runs
        return venv
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale(root, combo, keep=venv)
    started = time.monotonic()
    subprocess.run([uv(), "venv", "-q", "--python", python, str(venv)], check=True)
    args = [uv(), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *combo.requirements]
    if combo.install_project:
        args += ["-e", str(REPO)]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        if "Failed to fetch" in done.stderr or "error sending request" in done.stderr:
            unavailable(f"the package index is unreachable: {done.stderr[-500:]}")
        pytest.fail(f"{combo.name}: {' '.join(combo.requirements)} does not install:\n{done.stderr[-4000:]}")
    stamp.write_text(f"built in {time.monotonic() - started:.0f} s\n")
    return venv
