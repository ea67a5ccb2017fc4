"""Compactor: Hive's compactor threads as plain Python over the metastore, the table format and the Spark engine.

Planning (``plan``, pure), the Initiator (``initiator``, with the pure decision in ``decision``), the Worker
(``worker``, running plans through a pluggable ``runners.Runner``), the Cleaner (``cleaner``) and the HouseKeeper
(``housekeeper``). No Airflow imports: the Airflow layer wraps these classes.
"""

from airflow_acid.compactor.plan import (
    PLAN_VERSION, Compaction, CompactionPlan, CompactionStep, CompactionType, NothingToCompact, OrcSettings, PlanError,
    effective_properties, not_enough_reason, partial_minor_slices, plan_compaction,
)

__all__ = ["PLAN_VERSION", "Compaction", "CompactionPlan", "CompactionStep", "CompactionType", "NothingToCompact",
           "OrcSettings", "PlanError", "effective_properties", "not_enough_reason", "partial_minor_slices",
           "plan_compaction"]
