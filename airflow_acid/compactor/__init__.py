"""Compactor: planning of compactions (pure functions over getAcidState results; no metastore, no Spark)."""

from airflow_acid.compactor.plan import (
    PLAN_VERSION, Compaction, CompactionPlan, CompactionStep, CompactionType, NothingToCompact, OrcSettings, PlanError,
    effective_properties, not_enough_reason, partial_minor_slices, plan_compaction,
)

__all__ = ["PLAN_VERSION", "Compaction", "CompactionPlan", "CompactionStep", "CompactionType", "NothingToCompact",
           "OrcSettings", "PlanError", "effective_properties", "not_enough_reason", "partial_minor_slices",
           "plan_compaction"]
