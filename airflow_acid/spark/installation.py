"""Whether the local pyspark installation is one release: its Python files and its jars.

The Spark provider (6.0 on) depends on ``pyspark-client``, which ships the same ``pyspark`` import package without
jars and overwrites pyspark's Python files when the two are of different releases (pyspark 4.3.0 + pyspark-client
4.2.0 gives ``pyspark.__version__ == "4.2.0"`` with 4.3.0 jars). spark-submit then runs one release's JVM with
another's Python driver. Read from the files, without importing pyspark (the operator checks before submitting).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

_JAR = re.compile(r"spark-core_[0-9.]+-(?P<version>.+)\.jar$")
_VERSION = re.compile(r"""__version__(?:\s*:\s*str)?\s*=\s*['"](?P<version>[^'"]+)['"]""")


@dataclass(frozen=True)
class PysparkInstallation:
    """The release of pyspark's Python files and of its jars (None: no jars, a pyspark-client-only install)."""

    python_release: str
    jars_release: str | None

    @property
    def consistent(self) -> bool:
        return self.jars_release is None or self.python_release == self.jars_release

    @property
    def same_minor(self) -> bool:
        """Both of one feature release (4.2.0 and 4.2.1): the driver and the JVM speak the same protocol."""
        return self.jars_release is None or _minor(self.python_release) == _minor(self.jars_release)

    def problem(self) -> str:
        """What is wrong and what to do ("" when consistent)."""
        if self.consistent:
            return ""
        return (f"pyspark's Python files are release {self.python_release} but its jars (spark-submit's Spark) are "
                f"{self.jars_release}: pyspark-client {self.python_release}, which the Spark provider installs, "
                f"overwrote pyspark's files. Install both on one release, e.g. pip install "
                f"'pyspark=={self.jars_release}' 'pyspark-client=={self.jars_release}'")


def _minor(release: str) -> tuple[str, ...]:
    return tuple(release.split(".")[:2])


def pyspark_installation(root: str | Path | None = None) -> PysparkInstallation | None:
    """The installation at ``root`` (default: the importable ``pyspark`` package); None without pyspark."""
    if root is None:
        spec = importlib.util.find_spec("pyspark")
        if spec is None or not spec.submodule_search_locations:
            return None
        root = next(iter(spec.submodule_search_locations))
    base = Path(root)
    try:
        match = _VERSION.search((base / "version.py").read_text())
    except OSError:
        return None
    if match is None:
        return None
    jars = sorted(m.group("version") for jar in base.glob("jars/spark-core_*.jar") if (m := _JAR.search(jar.name)))
    return PysparkInstallation(match.group("version"), jars[-1] if jars else None)


__all__ = ["PysparkInstallation", "pyspark_installation"]
