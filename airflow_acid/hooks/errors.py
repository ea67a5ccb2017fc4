"""Errors of the Airflow connection hook, under the project's :class:`~airflow_acid.errors.AcidError` root."""

from __future__ import annotations

from airflow_acid.errors import AcidUnavailableError


class AcidMetastoreConnectionError(AcidUnavailableError, ValueError):
    """An ``acid_metastore`` connection does not say which database to use (a configuration to fix: not retried)."""


__all__ = ["AcidMetastoreConnectionError"]
