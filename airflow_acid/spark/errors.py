"""Errors of the Spark submission layer."""

from __future__ import annotations

from airflow_acid.errors import AcidError


class SparkSubmitError(AcidError, RuntimeError):
    """spark-submit failed before the job wrote its result."""


__all__ = ["SparkSubmitError"]
