"""The process a compaction task runs in, for tests/operators/test_durable_compaction.py: the compaction operator
runs the given queue rows in one Spark application (SparkSubmitHookRunner); the test SIGKILLs this process while
that application runs. The acid_metastore and spark_default connections come from the environment.

Usage: python -m tests.operators.doomed_worker WORKDIR CQ_ID [CQ_ID ...]
"""

from __future__ import annotations

import sys

from airflow_acid.operators.compaction import AcidCompactionOperator
from airflow_acid.operators.spark import SparkSubmitHookRunner


def main(workdir: str, *cq_ids: str) -> None:
    op = AcidCompactionOperator(task_id="compact", compactions=[int(i) for i in cq_ids],
                                runner=SparkSubmitHookRunner(workdir=workdir))
    print(op.execute({}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
