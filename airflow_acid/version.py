"""The package's version, in a module of its own: setup.cfg reads it (``attr:``) and every module that reports the
version (CLI, console, provider info, queue rows) imports it from here without importing the package's API."""

from __future__ import annotations

__version__ = "0.1.0"
