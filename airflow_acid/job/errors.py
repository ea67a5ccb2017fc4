"""Errors of the compaction job's plan document."""

from __future__ import annotations

from airflow_acid.errors import AcidInputError


class PlanError(AcidInputError):
    """A plan document or a planning input is invalid; the message names the field or directory."""


__all__ = ["PlanError"]
