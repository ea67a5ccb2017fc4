"""Fixtures of the statement tests (one metastore per backend and module)."""

from tests.operations.support import module_root, module_url, wh  # noqa: F401
