"""The compaction job's contract: what the compactor hands the job and what the job hands back.

Plan and result documents (versioned JSON), the ORC settings of the output, where output is written, and the
:class:`Runner` protocol. It sits below both the compactor (which plans and verifies) and the Spark job (which
executes), so neither imports the other — the shape of Apache Amoro's shared plan → execute → commit module.
Depends only on the table format (``airflow_acid.acid``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_acid.acid.codes import CompactionType
    from airflow_acid.job.errors import PlanError
    from airflow_acid.job.layout import TMP_PREFIX, tmp_dir_name
    from airflow_acid.job.plan import (
        PLAN_VERSION,
        READABLE_PLAN_VERSIONS,
        Compaction,
        CompactionPlan,
        CompactionStep,
        OrcSettings,
        arrow_row_schema,
        compaction_type,
        not_enough_reason,
    )
    from airflow_acid.job.result import RESULT_VERSION, CompactionResult, JobStatus, PlanResult, StepResult
    from airflow_acid.job.runner import SPARK_CONF_PREFIX, Runner, bind_filesystem, spark_conf_of

_WHERE = {
    "CompactionType": "airflow_acid.acid.codes", "PlanError": "airflow_acid.job.errors",
    "TMP_PREFIX": "airflow_acid.job.layout", "tmp_dir_name": "airflow_acid.job.layout",
    **dict.fromkeys(("PLAN_VERSION", "READABLE_PLAN_VERSIONS", "Compaction", "CompactionPlan", "CompactionStep",
                     "OrcSettings", "arrow_row_schema", "compaction_type", "not_enough_reason"), "airflow_acid.job.plan"),
    **dict.fromkeys(("RESULT_VERSION", "CompactionResult", "JobStatus", "PlanResult", "StepResult"),
                    "airflow_acid.job.result"),
    **dict.fromkeys(("SPARK_CONF_PREFIX", "Runner", "bind_filesystem", "spark_conf_of"), "airflow_acid.job.runner"),
}


def __getattr__(name: str) -> Any:
    """The contract's names load on first use: importing one light module of the package (``job.verify``) does
    not load the plan's pyarrow and pyorc."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "PLAN_VERSION", "READABLE_PLAN_VERSIONS", "RESULT_VERSION", "SPARK_CONF_PREFIX", "TMP_PREFIX", "Compaction",
    "CompactionPlan", "CompactionResult", "CompactionStep", "CompactionType", "JobStatus", "OrcSettings", "PlanError",
    "PlanResult", "Runner", "StepResult", "arrow_row_schema", "bind_filesystem", "compaction_type", "not_enough_reason",
    "spark_conf_of", "tmp_dir_name",
]
